#!/usr/bin/env bash
# Batch throughput over a cluster on this machine: the same `crucible eval dataset --url` run (HumanEval canonical
# solutions and wrong ones, as ClusterIT builds them) against one replica directly, then behind HAProxy with 1, 2 and 3
# replicas; prints samples/s and the ratios. A benchmark, not a test: run it on purpose, on an otherwise idle host.
#   scripts/bench-cluster.sh [-n SAMPLES] [--max-concurrent N]
# Needs haproxy (apt-get install haproxy). Loopback only; everything it starts is stopped at the end.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
samples_n=1000
max_concurrent=""
while [ $# -gt 0 ]; do
  case "$1" in
    -n) samples_n="$2"; shift 2 ;;
    --max-concurrent) max_concurrent="$2"; shift 2 ;;
    *) echo "usage: $0 [-n SAMPLES] [--max-concurrent N]" >&2; exit 2 ;;
  esac
done
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || { echo "haproxy is not installed: apt-get install haproxy" >&2; exit 1; }
haproxy_bin="$(command -v haproxy || echo /usr/sbin/haproxy)"
work="$(mktemp -d)"
chmod 755 "$work"
base_port="${CRUCIBLE_BENCH_PORT:-18501}"
balancer_port=$((base_port + 10))
pids=()
haproxy_pid=""
cleanup() {
  set +e # a stopped process's status must not end the clean-up half-way
  [ -n "$haproxy_pid" ] && kill "$haproxy_pid" 2>/dev/null && wait "$haproxy_pid" 2>/dev/null
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

problems="$root/crucible-cli/src/test/resources/HumanEval.jsonl.gz"
python3 - "$problems" "$samples_n" > "$work/samples.jsonl" <<'EOF'
import gzip, json, sys
problems = [json.loads(l) for l in gzip.open(sys.argv[1], "rt")]
wrong = ["    return None\n", "    raise ValueError('wrong on purpose')\n", "    import sys\n    sys.exit(0)\n"]
for i in range(int(sys.argv[2])):
    p, j = i % len(problems), i // len(problems)
    right = p % 9 != 4 and (j == 0 if p % 4 == 0 else (p * 7 + j * 3) % 5 != 0)
    print(json.dumps({"task_id": problems[p]["task_id"], "completion": problems[p]["canonical_solution"] if right else wrong[i % 3]}))
EOF

serve_args=(--pool python=2,javascript=0)
[ -n "$max_concurrent" ] && serve_args+=(--max-concurrent "$max_concurrent")
for i in 0 1 2; do
  mkdir -p "$work/replica-$i"
  "$root/crucible" serve --port $((base_port + i)) --data-dir "$work/replica-$i" "${serve_args[@]}" >/dev/null 2>"$work/replica-$i.log" &
  pids+=($!)
done
for i in 0 1 2; do
  until curl -sf -o /dev/null "http://127.0.0.1:$((base_port + i))/healthz"; do
    kill -0 "${pids[$i]}" 2>/dev/null || { cat "$work/replica-$i.log"; exit 1; }
    sleep 0.1
  done
done

balance() { # N: HAProxy over the first N replicas
  [ -n "$haproxy_pid" ] && { kill "$haproxy_pid"; wait "$haproxy_pid" 2>/dev/null || true; haproxy_pid=""; }
  {
    printf 'global\n    maxconn 2000\ndefaults\n    mode http\n    timeout connect 2s\n    timeout client 120s\n'
    printf '    timeout server 120s\n    retries 2\n    option redispatch\n'
    printf 'frontend batch\n    bind 127.0.0.1:%d\n    default_backend crucible\n' "$balancer_port"
    printf 'backend crucible\n    balance roundrobin\n    option httpchk\n'
    printf '    http-check send meth GET uri /healthz ver HTTP/1.1 hdr Host 127.0.0.1\n    http-check expect status 200\n'
    printf '    default-server inter 500ms fall 2 rise 1\n'
    for i in $(seq 0 $(($1 - 1))); do printf '    server r%d 127.0.0.1:%d check\n' "$i" $((base_port + i)); done
  } > "$work/haproxy.cfg"
  "$haproxy_bin" -db -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 </dev/null &
  haproxy_pid=$!
  until curl -sf -o /dev/null "http://127.0.0.1:$balancer_port/healthz"; do sleep 0.1; done
  sleep 1 # every server's first check
}

run() { # URL NAME: one dataset run; prints samples/s
  local out="$work/$2.jsonl"
  "$root/crucible" eval dataset --format humaneval --problems "$problems" --samples "$work/samples.jsonl" --k 1,10 \
    --out "$out" --url "$1" >"$out.summary" 2>"$out.stderr" || { cat "$out.stderr" >&2; exit 1; }
  sed -n 's/.*"samples_per_second":\([0-9.]*\).*/\1/p' "$out.summary"
}

echo "host: $(nproc) cores; $samples_n samples per run; replicas: ${serve_args[*]}" >&2
balance 3
run "http://127.0.0.1:$balancer_port" warmup >/dev/null # every replica's JIT and pool warmed once
direct=$(run "http://127.0.0.1:$base_port" direct)
printf '%-28s %8.1f samples/s  %5.2f per core\n' "1 replica, no balancer" "$direct" "$(awk "BEGIN{print $direct / $(nproc)}")"
for n in 1 2 3; do
  balance "$n"
  rate=$(run "http://127.0.0.1:$balancer_port" "haproxy-$n")
  printf '%-28s %8.1f samples/s  %5.2f x direct\n' "$n replica(s) behind HAProxy" "$rate" "$(awk "BEGIN{print $rate / $direct}")"
done
