#!/usr/bin/env bash
# Bursts (issue 50): starts `crucible serve` with two tokens on a data dir of its own, fires N session creates (+ first
# cell), N executes, a two-tenant run (a quiet token's p50/p99 alone and beside another token's burst of N) and N
# E2B Sandbox.create + commands.run through the official SDK; prints p50/p99 per phase, refusals by reason, and what is
# left (sessions, sandboxes, session directories, cgroups). Extra arguments go to `crucible serve`. Examples:
#   scripts/bench-burst.sh 300
#   BURST_PHASES=tenants,cpu scripts/bench-burst.sh 300     # only the two-tenant runs (creates,executes,tenants,cpu,e2b)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
n="${1:-100}"; shift || true
port="${CRUCIBLE_BENCH_PORT:-18183}"
data="$(mktemp -d /var/tmp/crucible-burst.XXXXXX)"
log="$data.log"
e2b_key="e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')"
. "$root/scripts/bench-serve.sh"
trap 'kill -TERM ${server:-0} 2>/dev/null; wait ${server:-0} 2>/dev/null; rm -rf "$data" "$log"' EXIT
CRUCIBLE_DATA_DIR="$data" CRUCIBLE_TOKENS="burst-token,quiet-token,$e2b_key" bench_serve "$port" "$log" "$@"
cgroups_before=$(find /sys/fs/cgroup -maxdepth 3 -type d -name 'crucible*' 2>/dev/null | wc -l)
status=0
/usr/bin/python3 "$root/scripts/bench-burst.py" "http://127.0.0.1:$port" "$n" burst-token quiet-token || status=1
[[ ",${BURST_PHASES:-e2b}," != *,e2b,* ]] || (cd "$root/clients/node-tests" && E2B_API_URL="http://127.0.0.1:$port" E2B_SANDBOX_URL="http://127.0.0.1:$port" \
  E2B_API_KEY="$e2b_key" node e2b-burst.mjs "$n") || status=1
sleep 2 # sessions deleted are ended in the background
dirs=$(find "$data/sessions" -mindepth 1 -maxdepth 1 -not -name '.*' 2>/dev/null | wc -l)
spares=$(curl -s -H "Authorization: Bearer burst-token" "http://127.0.0.1:$port/metrics" | sed -n 's/^crucible_sessions_spares \([0-9]*\).*/\1/p')
cgroups_after=$(find /sys/fs/cgroup -maxdepth 3 -type d -name 'crucible*' 2>/dev/null | wc -l)
echo "left       session directories $dirs, of which spares made ahead (made for no one) ${spares:-?}; crucible cgroups $cgroups_before before, $cgroups_after after"
for d in $(find "$data/sessions" -mindepth 1 -maxdepth 1 -not -name '.*' 2>/dev/null); do
  echo "           $(basename "$d"): $(ls "$d" | tr '\n' ' ')"
done
echo "server log: $(grep -c ' 500 \|SEVERE\|Exception' "$log" || true) lines of 500s or exceptions"
exit $status
