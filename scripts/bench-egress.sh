#!/usr/bin/env bash
# Egress proxy benchmark (issue 33, item 6): curl downloads MB megabytes from a loopback origin (Python's
# http.server, a process of its own) directly, through the proxy's CONNECT tunnel and through its forward GET, in
# turn each round, medians; the proxy's CPU per GB relayed; HAProxy as a plain TCP relay for scale; the time of a small
# first request. Run twice: the relay as shipped (splice, through a pipe in the kernel) and the copying relay (the JVM
# without the export that lets it read a socket's descriptor): each against direct in its own run.
# Needs curl and python3 (HAProxy optional: apt-get install haproxy). Usage: scripts/bench-egress.sh [MB] [ROUNDS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/common.sh
. "$root/scripts/common.sh"
crucible_find_jdk
crucible_build_jar "$root"
megabytes="${1:-200}"
rounds="${2:-9}"
classes="$root/crucible-core/target/classes:$root/crucible-core/target/test-classes"
if [ ! -f "$root/crucible-core/target/test-classes/dev/crucible/egress/proxy/EgressBench.class" ]; then
  (cd "$root" && ./mvnw -B -ntp -q -pl crucible-core test-compile)
fi
echo "== the relay as shipped"
"$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED --add-exports java.base/sun.nio.ch=ALL-UNNAMED \
  -cp "$classes" dev.crucible.egress.proxy.EgressBench "$megabytes" "$rounds"
echo "== the copying relay (before issue 33), for comparison"
"$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "$classes" dev.crucible.egress.proxy.EgressBench \
  "$megabytes" "$rounds"
