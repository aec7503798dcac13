#!/usr/bin/env bash
# The long soak: 10,000 requests at concurrency 16, every 10th hostile (timeouts, fork and memory bombs,
# output floods), against a fresh server; prints verdicts, 5xx count, and what was left behind afterwards.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
requests="${1:-10000}"
CRUCIBLE_BENCH_PORT=18182 "$root/scripts/bench-server.sh" -c 16 -n "$requests" --rounds 1 --warmup 16 --hostile-every 10
sleep 3
left=0
for p in /proc/[0-9]*; do
  uid=$(awk '/^Uid:/{print $2}' "$p/status" 2>/dev/null || true)
  state=$(awk '/^State:/{print $2}' "$p/status" 2>/dev/null || true)
  if [ -n "$uid" ] && [ "$uid" -ge 61000 ] && [ "$uid" -lt 62000 ] && [ "$state" != Z ]; then left=$((left + 1)); fi
done
groups=$(find /sys/fs/cgroup/*/ -maxdepth 6 -type d -name 'run-*' 2>/dev/null | wc -l)
echo "after the soak: sandbox processes left: $left; run cgroups left: $groups"
