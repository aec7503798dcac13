#!/usr/bin/env bash
# The E2B benchmark of issue 28, driven by the official @e2b/code-interpreter SDK (clients/node-tests/e2b-bench.mjs):
# a fresh `crucible serve` on a free loopback port with one token, then Sandbox.create() to the first runCode('1+1'),
# runCode('1+1') on a live sandbox against the same cell through /v1/sessions/{id}/execute, and commands.run('echo hi').
# usage: scripts/bench-e2b.sh [-n N]     (needs a build, and clients/node-tests installed: npm ci there)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
key="e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
log="$(mktemp)"
CRUCIBLE_TOKENS="$key" "$root/crucible" serve --port "$port" 2>"$log" &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null; rm -f "$log"' EXIT
until curl -sf -o /dev/null "http://127.0.0.1:$port/healthz"; do
  kill -0 $server 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.05
done
cd "$root/clients/node-tests"
E2B_API_URL="http://127.0.0.1:$port" E2B_SANDBOX_URL="http://127.0.0.1:$port" E2B_API_KEY="$key" \
  node e2b-bench.mjs "$@"
