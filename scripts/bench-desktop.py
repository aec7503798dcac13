#!/usr/bin/python3
"""A desktop session's figures (issue 54) against a running server: session create to first screenshot, a
screenshot's latency and size, an action's round trip, and a plain command in the same session as the baseline
(an action is xdotool run as one of the session's commands, after one that reads the screen's size).

Usage: scripts/bench-desktop.py [URL]   (default http://127.0.0.1:8080; a token in CRUCIBLE_TOKEN if the server
needs one). The server needs the desktop packages and sessions with a root of their own (docs/desktop.md).
"""
import json, os, statistics, sys, time, urllib.request

B = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080"
AUTH = {"Authorization": "Bearer " + os.environ["CRUCIBLE_TOKEN"]} if os.environ.get("CRUCIBLE_TOKEN") else {}


def post(path, body=None, raw=False):
    data = json.dumps(body).encode() if body is not None else b""
    h = dict(AUTH, **({"Content-Type": "application/json"} if body is not None else {"X-Crucible-Request": "1"}))
    r = urllib.request.urlopen(urllib.request.Request(B + path, data=data, headers=h, method="POST"), timeout=120)
    b = r.read()
    return b if raw else json.loads(b)


def q(xs):
    return f"median {statistics.median(xs):.1f} ms, p90 {sorted(xs)[int(len(xs) * 0.9)]:.1f} ms"


t0 = time.perf_counter()
sid = post("/v1/sessions", {"language": "python", "limits": {"memory_mb": 2048, "pids": 1024}})["id"]
try:
    t1 = time.perf_counter()
    post(f"/v1/sessions/{sid}/desktop", {"width": 1024, "height": 768})
    t2 = time.perf_counter()
    post(f"/v1/sessions/{sid}/desktop/screenshot", raw=True)
    t3 = time.perf_counter()
    print(f"create session {1000 * (t1 - t0):.0f} ms; start desktop {1000 * (t2 - t1):.0f} ms; first screenshot"
          f" {1000 * (t3 - t2):.0f} ms; create to first screenshot {1000 * (t3 - t0):.0f} ms")
    time.sleep(3)  # XFCE drawn: the screenshots below are of a whole desktop
    shots, sizes, acts, cmds = [], [], [], []
    for i in range(20):
        a = time.perf_counter()
        sizes.append(len(post(f"/v1/sessions/{sid}/desktop/screenshot", raw=True)))
        shots.append(1000 * (time.perf_counter() - a))
    for i in range(30):
        a = time.perf_counter()
        post(f"/v1/sessions/{sid}/desktop/actions", {"actions": [{"action": "mouse_move", "coordinate": [100 + i, 100]}]})
        acts.append(1000 * (time.perf_counter() - a))
    for i in range(30):
        a = time.perf_counter()
        post(f"/v1/sessions/{sid}/commands", {"command": "true"})
        cmds.append(1000 * (time.perf_counter() - a))
    print(f"screenshot 1024x768: {q(shots)}; {statistics.median(sizes) / 1024:.0f} KiB")
    print(f"one action (mouse_move): {q(acts)}")
    print(f"baseline, a command 'true' in the same session: {q(cmds)}; action/command ratio"
          f" {statistics.median(acts) / statistics.median(cmds):.2f}")
finally:
    urllib.request.urlopen(urllib.request.Request(B + f"/v1/sessions/{sid}", headers=AUTH, method="DELETE"))
