#!/usr/bin/python3
"""The HTTP floor against the JDK's own web server, in the same run (issue 33's request-floor row).

Starts `./crucible serve` and `jwebserver` (the JDK's, serving a 16-byte file) on free ports, holds one keep-alive
connection to each, sends each 1,000 warm-up requests, then alternating rounds of GET /healthz and GET of the file,
and prints the p50 and p90 of each and the ratio of the p50s. GET /livez (liveness: nothing measured, a constant
answer) is timed too: /healthz reads the process's memory and every part's state. Both answers are small; the client is the same; so the
ratio is what Crucible's HTTP stack (Jetty, Javalin, the browser guard, the route table, metrics, JSON) costs against
the JDK's minimal server.

Then, with a connection per call (a client that keeps none alive), a session cell `x + 1` and GET /healthz.

Usage: scripts/bench-floor.py [REQUESTS_PER_ROUND] [ROUNDS]   (default 400 and 5)
"""
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
CRUCIBLE = os.path.join(ROOT, "crucible")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def java_home():
    for candidate in [os.environ.get("JAVA_HOME", "")] + sorted(
            os.path.join("/usr/lib/jvm", d) for d in os.listdir("/usr/lib/jvm")):
        if candidate and os.path.exists(os.path.join(candidate, "bin", "jwebserver")):
            return candidate
    sys.exit("bench-floor: no JDK with bin/jwebserver (JAVA_HOME or /usr/lib/jvm)")


def await_answer(port, path, process, name):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"bench-floor: {name} exited before answering")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", path)
            answer = connection.getresponse()
            answer.read()
            connection.close()
            if answer.status == 200:
                return
        except OSError:
            pass
        time.sleep(0.05)
    sys.exit(f"bench-floor: {name} did not answer {path} within 60 s")


def timed(connection, path, count):
    times = []
    for _ in range(count):
        start = time.perf_counter_ns()
        connection.request("GET", path)
        answer = connection.getresponse()
        answer.read()
        times.append(time.perf_counter_ns() - start)
        if answer.status != 200:
            sys.exit(f"bench-floor: GET {path} answered {answer.status}")
    return times


def per_call(port, method, path, body, count):
    """Each request on a connection of its own (a client that does not keep connections alive)."""
    times = []
    for _ in range(count):
        start = time.perf_counter_ns()
        connection = http.client.HTTPConnection("127.0.0.1", port)
        connection.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
        answer = connection.getresponse()
        answer.read()
        connection.close()
        times.append(time.perf_counter_ns() - start)
        if answer.status != 200:
            sys.exit(f"bench-floor: {method} {path} answered {answer.status}")
    return times


def session(port):
    connection = http.client.HTTPConnection("127.0.0.1", port)
    connection.request("POST", "/v1/sessions", body="{}", headers={"Content-Type": "application/json"})
    created = json.loads(connection.getresponse().read())
    path = f"/v1/sessions/{created['id']}/execute"
    connection.request("POST", path, body='{"code": "x = 1"}', headers={"Content-Type": "application/json"})
    connection.getresponse().read()
    connection.close()
    return path


def pct(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] / 1e6


def main():
    per_round = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    subprocess.run([CRUCIBLE, "--version"], check=True, stdout=subprocess.DEVNULL)  # builds what is stale
    with tempfile.TemporaryDirectory() as files:
        os.chmod(files, 0o755)
        with open(os.path.join(files, "small"), "w") as f:
            f.write("0123456789abcde\n")
        crucible_port, jdk_port = free_port(), free_port()
        crucible = subprocess.Popen([CRUCIBLE, "serve", "--port", str(crucible_port)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        jdk = subprocess.Popen([os.path.join(java_home(), "bin", "jwebserver"), "-b", "127.0.0.1", "-p",
                                str(jdk_port), "-d", files, "-o", "none"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            await_answer(crucible_port, "/healthz", crucible, "crucible serve")
            await_answer(jdk_port, "/small", jdk, "jwebserver")
            ours = http.client.HTTPConnection("127.0.0.1", crucible_port)
            theirs = http.client.HTTPConnection("127.0.0.1", jdk_port)
            timed(ours, "/healthz", 1000)
            timed(ours, "/livez", 1000)
            timed(theirs, "/small", 1000)
            mine, live, jdks = [], [], []
            for _ in range(rounds):
                mine += timed(ours, "/healthz", per_round)
                live += timed(ours, "/livez", per_round)
                jdks += timed(theirs, "/small", per_round)
            print(f"HTTP floor, one keep-alive client each, {per_round * rounds} requests each after 1,000 warm-up, "
                  f"{rounds} alternating rounds:")
            print(f"  GET /healthz, crucible serve   p50 {pct(mine, 50):.3f} ms   p90 {pct(mine, 90):.3f} ms")
            print(f"  GET /livez, crucible serve     p50 {pct(live, 50):.3f} ms   p90 {pct(live, 90):.3f} ms")
            print(f"  GET a 16-byte file, jwebserver p50 {pct(jdks, 50):.3f} ms   p90 {pct(jdks, 90):.3f} ms")
            print(f"  ratio (p50): /healthz {pct(mine, 50) / pct(jdks, 50):.2f}, /livez {pct(live, 50) / pct(jdks, 50):.2f}")
            cell = session(crucible_port)
            cell_body = '{"code": "x + 1"}'
            per_call(crucible_port, "POST", cell, cell_body, 300)
            per_call(crucible_port, "GET", "/healthz", None, 300)
            cells, floors = [], []
            for _ in range(rounds):
                cells += per_call(crucible_port, "POST", cell, cell_body, per_round // 2)
                floors += per_call(crucible_port, "GET", "/healthz", None, per_round // 2)
            print(f"a connection per call (a new TCP connection for each request), {per_round // 2 * rounds} each:")
            print(f"  GET /healthz                   p50 {pct(floors, 50):.3f} ms   p90 {pct(floors, 90):.3f} ms")
            print(f"  a session cell x + 1           p50 {pct(cells, 50):.3f} ms   p90 {pct(cells, 90):.3f} ms")
        finally:
            for process in (crucible, jdk):
                process.terminate()
                process.wait()


if __name__ == "__main__":
    main()
