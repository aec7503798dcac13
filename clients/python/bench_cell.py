"""A session cell (x + 1) through the client against the same cell through raw urllib, in one process, call by call
alternating; prints medians and the ratio. $CRUCIBLE_URL, $CRUCIBLE_TOKEN; args: [iterations per round] [rounds]."""

import json
import statistics
import sys
import time
import urllib.request

from crucible_client import Crucible

iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 200
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
crucible = Crucible()
session = crucible.create_session()
session.run("x = 41")
url = f"{crucible.url}/v1/sessions/{session.id}/execute"
headers = {"Content-Type": "application/json", "X-Crucible-Request": "1"}
if crucible.token:
    headers["Authorization"] = f"Bearer {crucible.token}"


def raw() -> None:
    request = urllib.request.Request(url, data=json.dumps({"code": "x + 1"}).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        assert json.loads(response.read())["result"] == "42"


def client() -> None:
    assert session.run("x + 1")["result"] == "42"


def timed(f) -> float:
    t = time.perf_counter()
    f()
    return (time.perf_counter() - t) * 1000


for _ in range(50):
    raw()
    client()
raw_ms, client_ms = [], []
for _ in range(rounds):  # call by call, alternating, so that both see the same noise
    a, b = [], []
    for i in range(iterations):
        if i % 2 == 0:
            a.append(timed(raw))
            b.append(timed(client))
        else:
            b.append(timed(client))
            a.append(timed(raw))
    raw_ms.append(statistics.median(a))
    client_ms.append(statistics.median(b))
session.delete()
a, b = statistics.median(raw_ms), statistics.median(client_ms)
print(f"Python: a session cell, {iterations} x {rounds} rounds, medians: raw urllib {a:.3f} ms, the client {b:.3f} ms: "
      f"{b / a:.3f}x, {b - a:.3f} ms over (goal: within 10% plus 0.2 ms, i.e. <= {a * 1.1 + 0.2:.3f} ms)")
