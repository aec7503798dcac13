#!/usr/bin/env bash
# The E2B benchmark (issues 28 and 50), driven by the official @e2b/code-interpreter SDK (clients/node-tests/e2b-bench.mjs)
# against a fresh `crucible serve` on a free loopback port with one token: Sandbox.create() to the end of its first
# runCode('1+1') and to the end of its first commands.run('echo hi'), against Crucible's own POST /v1/sessions and its
# first execute with a spare and without, in turns in one run, each split into its phases; then runCode, the native
# execute and commands.run on a live sandbox. Every create waits for the server's spares to be ready first.
# usage: scripts/bench-e2b.sh [-n N] [--node]   (--node: the server also keeps a JavaScript spare, and the `node`
#        template is timed against a native JavaScript session; needs a build and clients/node-tests installed: npm ci)
# Sandboxes are started: run it under `flock /tmp/crucible-test.lock` on a shared machine.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
key="e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
spares=python=1
count=1
for a in "$@"; do
  if [ "$a" = --node ]; then spares=python=1,node=1; count=2; fi
done
log="$(mktemp)"
. "$root/scripts/bench-serve.sh"
trap 'kill -TERM ${server:-0} 2>/dev/null; wait ${server:-0} 2>/dev/null; rm -f "$log"' EXIT
CRUCIBLE_TOKENS="$key" bench_serve "$port" "${BENCH_LOG:-$log}" --session-spares "$spares"
cd "$root/clients/node-tests"
E2B_API_URL="http://127.0.0.1:$port" E2B_SANDBOX_URL="http://127.0.0.1:$port" E2B_API_KEY="$key" \
  node e2b-bench.mjs --spares "$count" "$@"
