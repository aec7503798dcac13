#!/usr/bin/python3
"""Bursts against a running Crucible (issue 50): N requests fired at once, as a training loop fires them.

Phases, each reported with p50/p99 of what was answered and the refusals by status and code:
  creates   N x (POST /v1/sessions + its first cell), then every session deleted
  executes  N x POST /v1/execute
  tenants   a quiet token's sequential executes alone, then beside another token's burst of N: p50/p99 and the ratio
  cpu       the same with a burst whose programs each compute for about 100 ms (a test suite's, not print(1))
Then what is left: sessions listed per token (must be 0) and the server's queues (/readyz).
Standard library only. Usage: bench-burst.py URL N BURST_TOKEN QUIET_TOKEN; BURST_PHASES=tenants,cpu (say) runs
only those phases, BURST_QUIET=200 the quiet token's executes in each half.
"""
import os
import concurrent.futures
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request


def call(url, method, path, token, body=None, timeout=600):
    """(status, parsed JSON or text, seconds, Retry-After)."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if token:
        headers["Authorization"] = "Bearer " + token
    start = time.perf_counter()
    request = urllib.request.Request(url + path, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            raw, status, retry = r.read(), r.status, None
    except urllib.error.HTTPError as e:
        raw, status, retry = e.read(), e.code, e.headers.get("Retry-After")
    except Exception as e:  # a reset connection or a hang past the timeout: counted, never hidden
        return 0, f"{type(e).__name__}: {e}", time.perf_counter() - start, None
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = raw.decode("utf-8", "replace")
    return status, parsed, time.perf_counter() - start, retry


def pct(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] * 1000


def tally(name, results, n):
    ok = [r for r in results if r[0] in (200, 201)]
    refused = {}
    for status, body, _, retry in results:
        if status not in (200, 201):
            code = body.get("error", {}).get("code") if isinstance(body, dict) else str(body)[:60]
            key = f"{status} {code}" + ("" if status in (429, 503) and retry else " (no Retry-After)"
                                        if status in (429, 503) else "")
            refused[key] = refused.get(key, 0) + 1
    times = [r[2] for r in ok]
    print(f"{name:<10} n={n:<5} answered {len(ok):<5} p50 {pct(times, 50):8.1f} ms  p99 {pct(times, 99):8.1f} ms"
          f"  refused {json.dumps(refused, sort_keys=True)}")
    # explained: a refusal that says when to come back, or the disk full (507, refused before anything was written)
    unexplained = sum(v for k, v in refused.items() if not (k.startswith("429 ") or k.startswith("503 ")
                                                            or k == "507 data_dir_full") or "no Retry-After" in k)
    return unexplained


def burst(n, fn):
    with concurrent.futures.ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(lambda i: fn(i), range(n)))


CPU_CODE = "print(sum(i * i for i in range(1_500_000)))"


def main():
    url, n, burst_token, quiet_token = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    phases = os.environ.get("BURST_PHASES", "creates,executes,tenants,cpu").split(",")
    unexplained = 0
    made = []

    def create(i):
        status, body, took, retry = call(url, "POST", "/v1/sessions", burst_token, {"language": "python"})
        if status != 201:
            return status, body, took, retry
        made.append(body["id"])
        s2, b2, t2, r2 = call(url, "POST", f"/v1/sessions/{body['id']}/execute", burst_token, {"code": "6 * 7"})
        return s2, b2, took + t2, r2

    if "creates" in phases:
        started = time.perf_counter()
        unexplained += tally("creates", burst(n, create), n)
        print(f"{'':<10} {len(made)} sessions in {time.perf_counter() - started:.1f} s")
        for sid in list(made):
            call(url, "DELETE", f"/v1/sessions/{sid}", burst_token)

    if "executes" in phases:
        unexplained += tally("executes", burst(n, lambda i: call(url, "POST", "/v1/execute", burst_token,
                                                                  {"language": "python", "code": "print(1)"})), n)

    def quiet(k):
        # a process of its own: the burst's threads in this one would hold its interpreter lock, not the server
        out = subprocess.run([sys.executable, __file__, "--quiet", url, quiet_token, str(k)], check=True,
                             capture_output=True, text=True).stdout
        return [float(x) for x in out.split()]

    samples = int(os.environ.get("BURST_QUIET", "200"))  # a p99 of 50 is the worst of them: too noisy to compare

    def tenants(name, code):
        alone = quiet(samples)
        with concurrent.futures.ThreadPoolExecutor(max_workers=n + 1) as pool:
            loud = [pool.submit(call, url, "POST", "/v1/execute", burst_token, {"language": "python", "code": code})
                    for _ in range(n)]
            time.sleep(0.2)  # the burst lines up first
            beside = quiet(samples)
            loud_results = [f.result() for f in loud]
        p50a, p99a, p50b, p99b = pct(alone, 50), pct(alone, 99), pct(beside, 50), pct(beside, 99)
        print(f"{name:<10} quiet alone p50 {p50a:.1f} ms p99 {p99a:.1f} ms; beside the burst p50 {p50b:.1f} ms"
              f" p99 {p99b:.1f} ms  ratio p50 {p50b / p50a:.2f}x p99 {p99b / p99a:.2f}x")
        return tally(name + " burst", loud_results, n)

    if "tenants" in phases:
        unexplained += tenants("tenants", "print(1)")
    if "cpu" in phases:
        unexplained += tenants("cpu", CPU_CODE)

    left = sum(len(call(url, "GET", "/v1/sessions", t)[1].get("sessions", [])) for t in (burst_token, quiet_token))
    queues = call(url, "GET", "/readyz", None)[1].get("queues", {})
    print(f"left       sessions {left}; queues {json.dumps(queues, sort_keys=True)}")
    print(f"unexplained failures: {unexplained}")
    sys.exit(1 if unexplained or left else 0)


if __name__ == "__main__":
    if sys.argv[1] == "--quiet":  # URL TOKEN K: K sequential executes, their seconds one per line
        for _ in range(int(sys.argv[4])):
            print(call(sys.argv[2], "POST", "/v1/execute", sys.argv[3], {"language": "python", "code": "print(2)"})[2])
    else:
        main()
