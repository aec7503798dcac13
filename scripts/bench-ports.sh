#!/usr/bin/env bash
# The ports proxy against the direct path, in one run (issue 50 item 5). Starts `crucible serve` on loopback (a data
# dir of its own, no spare sessions), one session running a small threaded HTTP/1.1 server (Python's http.server:
# GET /small = a 60-byte JSON, GET /big = MB megabytes from memory with a Content-Length), and the very same server
# script on the host's loopback, outside any sandbox: the direct baseline (same code, same interpreter, same kernel
# loopback; the session's copy runs with "cpus": 2, as many cores as the host's copy may take, so neither is held to
# less). One client (Python's http.client, one kept-alive connection per side, the same code for both) sends N small
# GETs per side in alternating rounds (p50/p99 of each, after WARMUP each), then GETs /big ROUNDS times per side in
# turn (the median MB/s of each). Also from inside the session (the client run as a session command against
# 127.0.0.1:PORT there): the same server with no proxy and no host in between, for reference; and GET /livez over the
# proxy's client connection: the server's own HTTP floor (Jetty, Javalin, the filters), which every proxied request pays.
# Usage: scripts/bench-ports.sh [N] [MB] [ROUNDS] [WARMUP]   (default 2000 small GETs, 50 MB, 7 rounds, 500)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/common.sh
. "$root/scripts/common.sh"
crucible_find_jdk
crucible_build_jar "$root"
requests="${1:-2000}"
megabytes="${2:-50}"
rounds="${3:-7}"
warmup="${4:-500}"
work="$(mktemp -d)"
chmod 755 "$work"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
hostport="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
cleanup() {
  [ -n "${server:-}" ] && kill -TERM "$server" 2>/dev/null && wait "$server" 2>/dev/null
  [ -n "${direct:-}" ] && kill -TERM "$direct" 2>/dev/null && wait "$direct" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/srv.py" <<'EOF'
import http.server, socketserver, sys
BIG = bytes(range(256)) * (int(sys.argv[2]) << 12)
SMALL = b'{"ok": true, "what": "a small answer of a session\'s server"}'
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # head and body are two writes: without it the body waits for a delayed ACK
    def log_message(self, *args):
        pass
    def do_GET(self):
        body = BIG if self.path.endswith("/big") else SMALL
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream" if body is BIG else "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
EOF

cat >"$work/client.py" <<'EOF'
import http.client, json, sys, time
def connect(host, port):
    c = http.client.HTTPConnection(host, port, timeout=120)
    c.connect()
    return c
RECONNECTS = {}
def small(c, prefix, n, leaf="/small"):
    out = []
    for i in range(n):
        t = time.perf_counter_ns()
        try:
            c.request("GET", prefix + leaf)
            r = c.getresponse()
        except http.client.RemoteDisconnected:  # the server let the kept-alive connection go: counted, asked again
            RECONNECTS[prefix] = RECONNECTS.get(prefix, 0) + 1
            c.close()
            c.request("GET", prefix + leaf)
            r = c.getresponse()
        r.read()
        if r.status != 200:
            sys.exit(f"bench-ports: {prefix}{leaf} answered {r.status}")
        out.append((time.perf_counter_ns() - t) / 1e3)
    return out
BUF = bytearray(1 << 20)
def big(c, prefix):
    t = time.perf_counter_ns()
    c.request("GET", prefix + "/big")
    r = c.getresponse()
    total, view = 0, memoryview(BUF)
    while True:
        n = r.readinto(view)
        if not n:
            break
        total += n
    if r.status != 200 or total != int(r.getheader("Content-Length")):
        sys.exit(f"bench-ports: {prefix}/big answered {r.status} with {total} bytes")
    return total / 1e6 / ((time.perf_counter_ns() - t) / 1e9)
if __name__ == "__main__" and sys.argv[1] == "inside":  # run in the session: the same server, no proxy
    port, n, rounds, warmup = (int(a) for a in sys.argv[2:6])
    c = connect("127.0.0.1", port)
    small(c, "", warmup)
    lat = small(c, "", n)
    rates = [big(c, "") for _ in range(rounds)]
    print(json.dumps({"lat": lat, "rates": rates}))
EOF

cat >"$work/bench.py" <<'EOF'
import json, statistics, sys, urllib.request
sys.path.insert(0, sys.argv[1])
from client import connect, small, big, RECONNECTS
api, hostport, sid, port, n, rounds, warmup = sys.argv[2], int(sys.argv[3]), sys.argv[4], *map(int, sys.argv[5:9])
proxied = connect("127.0.0.1", api)
direct = connect("127.0.0.1", hostport)
prefix = f"/v1/sessions/{sid}/ports/{port}"
small(proxied, prefix, warmup); small(direct, "", warmup); small(proxied, "", warmup, "/livez")
lat = {"direct": [], "proxy": [], "floor": []}
for _ in range(rounds):
    lat["direct"] += small(direct, "", n // rounds)
    lat["proxy"] += small(proxied, prefix, n // rounds)
    lat["floor"] += small(proxied, "", n // rounds, "/livez")
big(direct, ""); big(proxied, prefix)
rate = {"direct": [], "proxy": []}
for _ in range(rounds):
    rate["direct"].append(big(direct, ""))
    rate["proxy"].append(big(proxied, prefix))
req = urllib.request.Request(f"http://127.0.0.1:{api}/v1/sessions/{sid}/commands", method="POST",
    headers={"Content-Type": "application/json"}, data=json.dumps({"argv": ["python3", "/workspace/client.py",
    "inside", str(port), str(n), str(rounds), str(warmup)], "timeout_ms": 600000}).encode())
inside = json.loads(json.loads(urllib.request.urlopen(req, timeout=700).read())["stdout"])
lat["in session"], rate["in session"] = inside["lat"], inside["rates"]
def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]
print(f"{'path':<12}{'p50 us':>10}{'p99 us':>10}{'MB/s (median)':>16}")
for k in ("direct", "proxy", "in session"):
    print(f"{k:<12}{q(lat[k], .5):>10.0f}{q(lat[k], .99):>10.0f}{statistics.median(rate[k]):>16.0f}")
print(f"{'GET /livez':<12}{q(lat['floor'], .5):>10.0f}{q(lat['floor'], .99):>10.0f}{'-':>16}"
      "   (the server's own HTTP floor: no proxy, no session)")
d, p = lat["direct"], lat["proxy"]
print(f"proxy / direct: latency p50 {q(p, .5) / q(d, .5):.2f}x, p99 {q(p, .99) / q(d, .99):.2f}x;"
      f" throughput {statistics.median(rate['proxy']) / statistics.median(rate['direct']):.2f}x;"
      f" the proxy over the floor: p50 +{q(p, .5) - q(lat['floor'], .5):.0f} us")
if RECONNECTS:
    print(f"connections the servers closed while kept alive (the request asked again, its time counted): {RECONNECTS}")
EOF

"$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED ${BENCH_PORTS_JAVA_OPTS:-} \
  -jar "$root/crucible-cli/target/crucible.jar" serve --port "$port" --data-dir "$work/data" --session-spares 0 \
  2>"$work/server.log" &
server=$!
python3 "$work/srv.py" "$hostport" "$megabytes" &
direct=$!
until curl -sf -o /dev/null "http://127.0.0.1:$port/livez"; do
  kill -0 "$server" 2>/dev/null || { cat "$work/server.log"; exit 1; }
  sleep 0.1
done
api="http://127.0.0.1:$port/v1/sessions"
sid="$(curl -sf "$api" -H 'Content-Type: application/json' -d '{"language": "python", "limits": {"cpus": 2}}' \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')"
for f in srv.py client.py; do
  curl -sf -o /dev/null -X PUT --data-binary "@$work/$f" "$api/$sid/files/$f"
done
curl -sf -o /dev/null "$api/$sid/commands" -H 'Content-Type: application/json' \
  -d "{\"argv\": [\"python3\", \"/workspace/srv.py\", \"8000\", \"$megabytes\"], \"background\": true}"
until curl -sf "$api/$sid" | grep -q '"port":8000'; do sleep 0.1; done
until curl -sf -o /dev/null "http://127.0.0.1:$hostport/small"; do sleep 0.1; done
echo "ports proxy vs direct: $requests small GETs per side ($warmup warm-up), GET of $megabytes MB x $rounds rounds per side"
python3 "$work/bench.py" "$work" "$port" "$hostport" "$sid" 8000 "$requests" "$rounds" "$warmup"
curl -sf -o /dev/null -X DELETE "$api/$sid" || true
