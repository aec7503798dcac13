#!/usr/bin/python3
"""Start-up of the CLI and the server, against the JVM's floor measured in the same run.

Runs each case in turn, round after round (so a noisy neighbour hits all cases alike), and prints the median
wall time of each with its ratio to `./crucible --help`:

  help            ./crucible --help: a JVM start and picocli, nothing of the sandbox (the floor)
  run             ./crucible run hello.py: as users run it (start-up cache on)
  run, no cache   the same with CRUCIBLE_AOT=0 (no JDK AOT cache, full JIT): the start-up before issue 11
  serve           ./crucible serve until its first answer to POST /v1/execute (start-up cache on)

Usage: scripts/bench-startup.py [ROUNDS]   (default 7; the JAR and its cache are built first if stale)
"""
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
CRUCIBLE = os.path.join(ROOT, "crucible")


def timed(argv, env=None):
    start = time.monotonic()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.monotonic() - start
    if done.returncode != 0:
        sys.exit(f"bench-startup: {' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()[-400:]}")
    return elapsed


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_first_answer():
    port = free_port()
    body = json.dumps({"language": "python", "code": "print(1)"}).encode()
    start = time.monotonic()
    server = subprocess.Popen([CRUCIBLE, "serve", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            if server.poll() is not None:
                sys.exit("bench-startup: crucible serve exited before answering")
            try:
                request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/execute", data=body,
                                                 headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(request, timeout=5) as answer:
                    if json.load(answer).get("status") == "ok":
                        return time.monotonic() - start
            except OSError:
                time.sleep(0.01)
    finally:
        server.terminate()
        server.wait()


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    with tempfile.TemporaryDirectory() as tmp:
        hello = os.path.join(tmp, "hello.py")
        with open(hello, "w") as f:
            f.write("print('hello')\n")
        timed([CRUCIBLE, "--version"])  # builds the JAR and the start-up cache if they are stale
        def no_caches():
            with tempfile.TemporaryDirectory() as empty:
                return timed([CRUCIBLE, "run", hello], env=dict(os.environ, CRUCIBLE_AOT="0", XDG_CACHE_HOME=empty))

        cases = {
            "help": lambda: timed([CRUCIBLE, "--help"]),
            "run": lambda: timed([CRUCIBLE, "run", hello]),
            "run, no caches": no_caches,
            "serve (first answer)": serve_first_answer,
        }
        times = {name: [] for name in cases}
        for _ in range(rounds):
            for name, case in cases.items():
                times[name].append(case())
    floor = statistics.median(times["help"])
    print(f"start-up, median of {rounds} rounds ({os.cpu_count()} cores):")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:<22} {median * 1000:7.0f} ms   {median / floor:5.2f} x help")


if __name__ == "__main__":
    main()
