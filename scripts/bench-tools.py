#!/usr/bin/env python3
"""What a tool call costs over a plain run: alternating POST /v1/execute and POST /v1/tools/call (run_code) of the
same program against a running server, warm-up dropped, p50/p90 of each and their ratio (same run, same machine).

Usage: scripts/bench-tools.py [--url http://127.0.0.1:8080] [--token T] [-n 500] [--warmup 100]
"""
import argparse
import http.client
import json
import statistics
import time
import urllib.parse

parser = argparse.ArgumentParser()
parser.add_argument("--url", default="http://127.0.0.1:8080")
parser.add_argument("--token")
parser.add_argument("-n", type=int, default=500)
parser.add_argument("--warmup", type=int, default=100)
args = parser.parse_args()
target = urllib.parse.urlparse(args.url)
connection = http.client.HTTPConnection(target.hostname, target.port or 80)
headers = {"Content-Type": "application/json"}
if args.token:
    headers["Authorization"] = f"Bearer {args.token}"


def post(path, body):
    start = time.perf_counter()
    connection.request("POST", path, json.dumps(body), headers)
    response = connection.getresponse()
    data = response.read()
    if response.status != 200:
        raise SystemExit(f"{path}: HTTP {response.status}: {data[:200]!r}")
    return (time.perf_counter() - start) * 1000, json.loads(data)


execute, tool = [], []
for i in range(args.warmup + args.n):
    a_ms, a = post("/v1/execute", {"language": "python", "code": "print(1)"})
    b_ms, b = post("/v1/tools/call", {"name": "run_code", "arguments": {"code": "print(1)"}})
    if a["stdout"] != "1\n" or b["content"][0]["text"] != "1\n":
        raise SystemExit(f"unexpected answers: {a} {b}")
    if i >= args.warmup:
        execute.append(a_ms)
        tool.append(b_ms)


def p90(xs):
    return statistics.quantiles(xs, n=10)[-1]


print(f"/v1/execute     p50 {statistics.median(execute):.2f} ms  p90 {p90(execute):.2f} ms  (n={args.n})")
print(f"/v1/tools/call  p50 {statistics.median(tool):.2f} ms  p90 {p90(tool):.2f} ms")
print(f"ratio tools/call : execute (p50) = {statistics.median(tool) / statistics.median(execute):.3f}")
