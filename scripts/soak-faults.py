#!/usr/bin/python3
"""The fault soak (issue 25): N requests (10,000 by default) against a fresh `crucible serve`, while a chaos thread
stops (SIGSTOP, then SIGCONT) and kills (SIGKILL) zygotes, warm-pool agents and session interpreters at random.

The mix: Python runs (warm pool and zygote children), Bash and JavaScript runs, hostile runs (a busy loop, a fork
bomb, a memory hog, an output flood), session calls (cells, file uploads and downloads, deletes), runs in an image
(`--image REF`, an image of the server's store) and runs with egress to a test host in a network namespace this script
makes (`--egress`, as root). It checks that every request is answered within its deadline (its timeout_ms plus the
5 s grace, `Limits.GRACE_MS`), that every answer is a right one, a verdict its program earns, or a sandbox error
saying why, and that no sandbox process or run cgroup is left after the server stops. It prints the figures.

    sudo scripts/soak-faults.py -n 10000 --image soak/debian:1 --egress
"""
import argparse
import collections
import http.client
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRACE_MS = 5_000
NETNS = "crucible-soak"
HOST_ADDR, NS_ADDR = "10.239.254.1", "10.239.254.2"  # outside the tests' 10.231.0.0/16 (NetnsHost)


def proc_cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def proc_comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def proc_ppid(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def descendants(root):
    children = collections.defaultdict(list)
    for name in os.listdir("/proc"):
        if name.isdigit():
            children[proc_ppid(int(name))].append(int(name))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def targets(server_pid):
    """The parts the chaos hits, by kind: pids of zygotes, warm-pool agents and session interpreters."""
    found = collections.defaultdict(list)
    for pid in descendants(server_pid):
        if proc_comm(pid) not in ("python3", "node"):
            continue
        line = proc_cmdline(pid)
        parent = proc_comm(proc_ppid(pid))
        if "Crucible's Python zygote" in line:
            found["zygote" if parent == "bwrap" else "zygote_child"].append(pid)
        elif "_crucible_agent" in line or "Warm-pool agent" in line:
            found["pool_agent"].append(pid)
        elif "session agent" in line:
            found["interpreter"].append(pid)
    return found


class Chaos(threading.Thread):
    def __init__(self, server_pid, stop):
        super().__init__(daemon=True)
        self.server_pid, self.stop, self.done = server_pid, stop, collections.Counter()

    def run(self):
        rng = random.Random(25)
        while not self.stop.is_set():
            time.sleep(rng.uniform(0.5, 2.0))
            found = targets(self.server_pid)
            kinds = [k for k in ("zygote", "pool_agent", "zygote_child", "interpreter") if found[k]]
            if not kinds:
                continue
            kind = rng.choice(kinds)
            pid = rng.choice(found[kind])
            if rng.random() < 0.5:
                self.signal(pid, signal.SIGKILL, kind + " kill")
            else:
                self.signal(pid, signal.SIGSTOP, kind + " stop")
                time.sleep(rng.uniform(2.0, 6.0))
                self.signal(pid, signal.SIGCONT, None)

    def signal(self, pid, sig, what):
        try:
            os.kill(pid, sig)
            if what:
                self.done[what] += 1
        except ProcessLookupError:
            pass


def make_test_host():
    """A test host of our own: a network namespace with an address, an HTTP server in it (as the tests' hosts)."""
    run = lambda *a: subprocess.run(a, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run("ip", "netns", "del", NETNS)
    run("ip", "link", "del", "csoak0")
    subprocess.run(["ip", "netns", "add", NETNS], check=True)
    subprocess.run(["ip", "link", "add", "csoak0", "type", "veth", "peer", "name", "csoak1"], check=True)
    subprocess.run(["ip", "link", "set", "csoak1", "netns", NETNS], check=True)
    subprocess.run(["ip", "addr", "add", HOST_ADDR + "/30", "dev", "csoak0"], check=True)
    subprocess.run(["ip", "link", "set", "csoak0", "up"], check=True)
    subprocess.run(["ip", "netns", "exec", NETNS, "ip", "addr", "add", NS_ADDR + "/30", "dev", "csoak1"], check=True)
    subprocess.run(["ip", "netns", "exec", NETNS, "ip", "link", "set", "csoak1", "up"], check=True)
    subprocess.run(["ip", "netns", "exec", NETNS, "ip", "link", "set", "lo", "up"], check=True)
    web = tempfile.mkdtemp(prefix="crucible-soak-web-")
    with open(os.path.join(web, "hello.txt"), "w") as f:
        f.write("hello from the test host\n")
    server = subprocess.Popen(["ip", "netns", "exec", NETNS, "/usr/bin/python3", "-m", "http.server", "8000",
                               "--bind", NS_ADDR, "--directory", web], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://{NS_ADDR}:8000/hello.txt", timeout=1).read()
            break
        except OSError:
            time.sleep(0.05)
    return server


def drop_test_host(server):
    server.terminate()
    server.wait()
    subprocess.run(["ip", "netns", "del", NETNS], check=False)
    subprocess.run(["ip", "link", "del", "csoak0"], check=False, stderr=subprocess.DEVNULL)


class Client:
    def __init__(self, port):
        self.port, self.conn = port, None

    def call(self, method, path, body=None, headers=None, timeout=60):
        for attempt in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
                h = {"Content-Type": "application/json"} if isinstance(body, (dict, list)) else {}
                h.update(headers or {})
                data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
                self.conn.request(method, path, body=data, headers=h)
                r = self.conn.getresponse()
                return r.status, r.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.conn = None  # an idle keep-alive connection the server closed: sent again once
                if attempt:
                    raise
            except (OSError, http.client.HTTPException):
                self.conn = None
                raise


def one(client, i, rng, args, sessions, stats):
    """Sends request i; returns (kind, deadline_ms, status, ok)."""
    roll = rng.random()
    if roll < 0.45:
        code, want = f"print({i} * 2)", f"{i * 2}\n"
        st, body = client.call("POST", "/v1/execute", {"language": "python", "code": code,
                                                         "limits": {"timeout_ms": 3000}})
        return check_run("python", 3000, st, body, want)
    if roll < 0.52:
        st, body = client.call("POST", "/v1/execute", {"language": "bash", "code": f"echo $(( {i} + 1 ))",
                                                         "limits": {"timeout_ms": 3000}})
        return check_run("bash", 3000, st, body, f"{i + 1}\n")
    if roll < 0.57:
        st, body = client.call("POST", "/v1/execute", {"language": "javascript", "code": f"console.log({i} - 1)",
                                                         "limits": {"timeout_ms": 5000}})
        return check_run("javascript", 5000, st, body, f"{i - 1}\n")
    if roll < 0.67:
        name, code, verdicts = rng.choice([
            ("loop", "while True: pass", {"timeout"}),
            ("forks", "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass", {"timeout", "runtime_error"}),
            ("hog", "x = []\nwhile True: x.append(bytearray(1 << 24))", {"memory_limit", "timeout"}),  # slow when busy
            ("flood", "import sys\nwhile True: sys.stdout.write('x' * 65536)", {"output_limit"})])
        st, body = client.call("POST", "/v1/execute", {"language": "python", "code": code,
                                                         "limits": {"timeout_ms": 1000}})
        return check_run("hostile-" + name, 1000, st, body, None, verdicts)
    if roll < 0.82:
        return session_call(client, i, rng, sessions)
    if roll < 0.92 and args.image:
        st, body = client.call("POST", "/v1/execute", {"language": "python", "image": args.image,
                                                         "code": f"import sys\nprint({i}, sys.version_info[0])",
                                                         "limits": {"timeout_ms": 5000}})
        return check_run("image", 5000, st, body, f"{i} 3\n")
    if args.egress:
        code = ("import urllib.request\nprint(urllib.request.urlopen('http://%s:8000/hello.txt', timeout=3)"
                ".read().decode(), end='')" % NS_ADDR)
        st, body = client.call("POST", "/v1/execute", {"language": "python", "code": code,
                                                         "network": {"allow": [f"{NS_ADDR}:8000"]},
                                                         "limits": {"timeout_ms": 5000}})
        return check_run("egress", 5000, st, body, "hello from the test host\n")
    st, body = client.call("POST", "/v1/execute", {"language": "python", "code": "print('x')",
                                                     "limits": {"timeout_ms": 3000}})
    return check_run("python", 3000, st, body, "x\n")


def error_code(body):
    try:
        return json.loads(body)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return ""


def check_run(kind, timeout, st, body, want, verdicts=None):
    if st != 200:
        return kind, timeout, f"http {st} {error_code(body)}", False
    r = json.loads(body)
    status = r.get("status")
    if status == "sandbox_error":  # our fault, said so: allowed under chaos when it names the part, counted
        message = r.get("message") or ""
        return kind, timeout, "sandbox_error", any(w in message for w in ("zygote", "did not take", "did not end"))
    if status == "runtime_error" and r.get("signal") == 9:  # the chaos SIGKILLed the program's own process
        return kind, timeout, "killed by the chaos", True
    if verdicts is not None:
        return kind, timeout, status, status in verdicts
    return kind, timeout, status, status == "ok" and r.get("stdout") == want


def session_call(client, i, rng, sessions):
    me = threading.get_ident()
    sid = sessions.get(me)
    if sid is None or rng.random() < 0.05:
        if sid is not None:
            client.call("DELETE", f"/v1/sessions/{sid}")
        st, body = client.call("POST", "/v1/sessions", {"language": "python"})
        if st != 201:
            return "session", 5000, f"http {st}", st in (429, 503, 507)
        sid = sessions[me] = json.loads(body)["id"]
    if rng.random() < 0.3:
        data = f"file {i}\n".encode()
        st, answer = client.call("PUT", f"/v1/sessions/{sid}/files/f{i % 7}.txt", data)
        if st not in (200, 201):
            return "session-file", 5000, f"http {st} {error_code(answer)}", False
        st, got = client.call("GET", f"/v1/sessions/{sid}/files/f{i % 7}.txt")
        return "session-file", 5000, f"http {st}", st == 200 and got == data
    st, body = client.call("POST", f"/v1/sessions/{sid}/execute", {"code": f"print({i} % 97)", "timeout_ms": 3000})
    if st != 200:
        return "session", 3000, f"http {st}", False
    r = json.loads(body)
    status = r.get("status")
    if status == "timeout":  # a stopped interpreter: replaced, said so
        return "session", 3000, "timeout (restarted)", "restarted" in json.dumps(r.get("error"))
    return "session", 3000, status, status == "ok" and r.get("stdout") == f"{i % 97}\n" or status == "runtime_error"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=10_000)
    ap.add_argument("-c", type=int, default=8, help="concurrent clients")
    ap.add_argument("--image", help="an image of the server's store to run some requests in")
    ap.add_argument("--egress", action="store_true", help="make a test host in a network namespace and reach it")
    ap.add_argument("--data-dir", help="the server's data dir (default: a fresh temporary one)")
    ap.add_argument("--port", type=int, default=18183)
    args = ap.parse_args()

    host = make_test_host() if args.egress else None
    data = args.data_dir or tempfile.mkdtemp(prefix="crucible-soak-data-")
    os.chmod(data, 0o755)
    argv = [os.path.join(ROOT, "crucible"), "serve", "--port", str(args.port), "--data-dir", data,
            "--max-concurrent", "4", "--max-queued", "64", "--pool", "python=2,javascript=1"]
    if args.egress:
        argv += ["--egress-allow", f"{NS_ADDR}:8000"]
    log = open(os.path.join(data, "serve.log"), "w")
    server = subprocess.Popen(argv, stderr=log, stdout=subprocess.DEVNULL)
    try:
        return soak(args, server, host, data)
    finally:
        if server.poll() is None:
            server.kill()
        if host:
            drop_test_host(host)


def soak(args, server, host, data):
    client = Client(args.port)
    for _ in range(600):
        if server.poll() is not None:
            sys.exit("the server did not start: see " + os.path.join(data, "serve.log"))
        try:
            if client.call("GET", "/readyz")[0] == 200:
                break
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.1)
    stop = threading.Event()
    chaos = Chaos(server.pid, stop)
    results, late, wrong = collections.Counter(), [], []
    lock = threading.Lock()
    counter = iter(range(args.n))
    sessions = {}
    started = time.time()

    def worker(seed):
        rng = random.Random(seed)
        c = Client(args.port)
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            t0 = time.monotonic()
            try:
                kind, timeout, status, ok = one(c, i, rng, args, sessions, results)
            except Exception as e:  # no answer at all
                kind, timeout, status, ok = "?", 0, f"no answer: {e!r}", False
            ms = (time.monotonic() - t0) * 1000
            with lock:
                results[(kind, status)] += 1
                if ms > timeout + GRACE_MS:
                    late.append((i, kind, status, int(ms)))
                if not ok:
                    wrong.append((i, kind, status))

    chaos.start()
    threads = [threading.Thread(target=worker, args=(s,)) for s in range(args.c)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    elapsed = time.time() - started
    _, metrics = client.call("GET", "/metrics")
    replaced = [l for l in metrics.decode().splitlines() if l.startswith("crucible_part_replacements_total")
                and not l.endswith(" 0.0")]
    server.send_signal(signal.SIGTERM)
    server.wait(60)
    time.sleep(3)
    left = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/status") as f:
                    st = f.read()
                uid = int(st.split("Uid:")[1].split()[0])
                state = st.split("State:")[1].split()[0]
                if 61000 <= uid < 65000 and state != "Z":
                    left += 1
            except (OSError, IndexError, ValueError):
                pass
    groups = subprocess.run("find /sys/fs/cgroup/ -maxdepth 6 -type d -name 'run-*' 2>/dev/null | wc -l",
                            shell=True, capture_output=True, text=True).stdout.strip()
    print(f"soak-faults: {args.n} requests at concurrency {args.c} in {elapsed:.0f} s ({args.n / elapsed:.0f}/s)")
    for (kind, status), n in sorted(results.items()):
        print(f"  {kind:13} {status:22} {n}")
    print("chaos: " + ", ".join(f"{k} {v}" for k, v in sorted(chaos.done.items())))
    print("replaced (server's metrics): " + ("; ".join(replaced) or "none"))
    print(f"answered past their deadline (timeout + {GRACE_MS} ms): {len(late)} {late[:5]}")
    print(f"wrong or unexplained answers: {len(wrong)} {[w[:3] for w in wrong[:20]]}")
    print(f"after the server stopped: sandbox processes left {left}, run cgroups left {groups}")
    return 0 if not late and not wrong and left == 0 and groups == "0" else 1


if __name__ == "__main__":
    sys.exit(main())
