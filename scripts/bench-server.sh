#!/usr/bin/env bash
# Starts `crucible serve` on a free port, reports the time from start to the first answer and the idle RSS,
# runs `crucible bench` against it (arguments are passed on), and stops it. Example:
#   scripts/bench-server.sh -c 4 -n 400
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
port="${CRUCIBLE_BENCH_PORT:-18181}"
log="$(mktemp)"
start=$(date +%s%N)
"$root/crucible" serve --port "$port" 2>"$log" &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null; rm -f "$log"' EXIT
until curl -sf -o /dev/null -X POST "http://127.0.0.1:$port/v1/execute" -H 'Content-Type: application/json' \
      -d '{"language":"python","code":"print(1)"}'; do
  kill -0 $server 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.02
done
first=$(( ($(date +%s%N) - start) / 1000000 ))
sleep 2
rss=$(curl -s "http://127.0.0.1:$port/healthz" | sed -n 's/.*"rss_bytes":\([0-9]*\).*/\1/p')
echo "server: first answer ${first} ms after ./crucible serve was started (JAR already built); idle rss $((rss / 1048576)) MiB"
# the zygote (docs/zygote.md) is its own process: its resident memory and how much of it is shared with its children
for pid in $(pgrep -f "Crucible's Python zygote" || true); do
  # the zygote itself, not its bwrap nor the warm sandboxes forked from it (same command line): its parent is bwrap
  [ "$(ps -o comm= -p "$(ps -o ppid= -p "$pid" | tr -d ' ')" 2>/dev/null)" = bwrap ] || continue
  awk -v pid="$pid" '/^VmRSS/ {rss=$2} /^RssAnon/ {anon=$2} END {printf "zygote (pid %s): idle rss %.1f MiB, of which %.1f MiB private (anonymous)\n", pid, rss/1024, anon/1024}' "/proc/$pid/status"
done
"$root/crucible" bench --url "http://127.0.0.1:$port" "$@"
