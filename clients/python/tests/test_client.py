"""The typed client (Crucible, Session) against a real server: every part of the API it wraps, and its errors."""

import time

import pytest

from crucible_client import Crucible, CrucibleError


def test_runs_streamed_or_not_runtimes_and_a_refusal_as_a_typed_error(crucible: Crucible) -> None:
    assert crucible.execute("python", "print(6 * 7)")["stdout"] == "42\n"
    events = list(crucible.execute_stream("python", "for i in range(3): print(i, flush=True)"))
    assert "".join(e["data"] for e in events if e["type"] == "stdout") == "0\n1\n2\n"
    assert events[-1]["type"] == "result" and events[-1]["result"]["status"] == "ok"
    assert any(r["language"] == "python" for r in crucible.runtimes())
    with pytest.raises(CrucibleError) as refused:
        crucible.execute("cobol", "x")
    assert (refused.value.status, refused.value.code) == (400, "unknown_language")
    with pytest.raises(CrucibleError) as unauthorized:
        Crucible(crucible.url, "wrong-token").runtimes()
    assert unauthorized.value.code == "unauthorized"


def test_evaluation_and_rewards(crucible: Crucible) -> None:
    judged = crucible.evaluate("python", "print(int(input()) * 2)", [{"stdin": "2", "expect": "4"},
                                                                     {"stdin": "3", "expect": "7"}], run_all_cases=True)
    assert (judged["passed"], judged["total"]) == (1, 2)
    messages = [{"role": "assistant", "content": "```python\nprint(int(input()) + 1)\n```"}]
    assert crucible.reward(messages, test_cases=[{"input": "1", "expected_output": "2"}])["score"] == 1
    batch = crucible.reward_batch([{"messages": messages, "test_cases": [{"input": "1", "expected_output": "3"}]}])
    assert batch["results"][0]["score"] == 0


def test_a_dataset_evaluated_by_the_server(crucible: Crucible) -> None:
    import json
    problems = json.dumps({"task_id": "t/0", "prompt": "def one():\n", "entry_point": "one",
                           "test": "def check(candidate):\n    assert candidate() == 1\n",
                           "canonical_solution": "    return 1\n"})
    samples = "\n".join(json.dumps({"task_id": "t/0", "completion": c}) for c in ("    return 1\n", "    return 2\n"))
    started = crucible.start_evaluation("humaneval", problems, samples, k=[1], timeout_ms=5000)
    assert started["state"] == "running" and started["total"] == 2
    run = crucible.await_evaluation(started["id"], every_s=0.1)
    assert run["state"] == "done" and run["passed"] == 1
    assert run["summary"]["pass_at_k"]["pass@1"] == 0.5
    results = crucible.evaluation_results(started["id"])
    assert sorted((r["sample"], r["passed"]) for r in results if "task_id" in r) == [(0, True), (1, False)]
    assert "summary" in results[-1]
    assert any(r["id"] == started["id"] for r in crucible.evaluation_runs())
    with pytest.raises(CrucibleError) as refused:
        crucible.start_evaluation("cobol", problems)
    assert refused.value.status == 400 and refused.value.code == "invalid_request"
    crucible.delete_evaluation(started["id"])
    with pytest.raises(CrucibleError) as gone:
        crucible.evaluation_run(started["id"])
    assert gone.value.code == "not_found"


def test_a_session_cells_files_commands_processes_ports_and_previews(crucible: Crucible) -> None:
    with crucible.create_session("python") as s:
        s.run("x = 41")
        assert s.run("x + 1")["result"] == "42"
        s.write_file("data/in.txt", "3 4 5")
        assert s.read_text("data/in.txt") == "3 4 5"
        s.write_file("/workspace/bin.dat", b"\x00\xff\x07")
        assert s.read_file("bin.dat") == b"\x00\xff\x07"
        assert any(f["path"] == "data/in.txt" for f in s.list_files("data"))
        s.delete_file("bin.dat")
        with pytest.raises(CrucibleError) as missing:
            s.read_file("bin.dat")
        assert missing.value.code == "file_not_found"
        done = s.command("cat data/in.txt; exit 3")
        assert (done["exit_code"], done["stdout"]) == (3, "3 4 5")
        streamed = list(s.command_stream(["sh", "-c", "echo one; echo two >&2"]))
        assert [(e["type"], e["data"]) for e in streamed if e["type"] != "result"] == [("stdout", "one\n"),
                                                                                       ("stderr", "two\n")]
        cat = s.start_process(["cat"], stdin_open=True)
        s.write_stdin(cat["pid"], "echoed\n", close=True)
        output = s.process_output(cat["pid"], 0, wait_ms=5000)
        deadline = time.monotonic() + 30
        while not output["ended"] and time.monotonic() < deadline:
            output = s.process_output(cat["pid"], 0, wait_ms=1000)
        assert output["stdout"] == "echoed\n"
        sleeper = s.start_process("sleep 600")
        assert s.signal(sleeper["pid"], "KILL") is True
        assert any(p["pid"] == sleeper["pid"] for p in s.processes())
        s.start_process(["python3", "-m", "http.server", "8124", "--bind", "127.0.0.1"])
        deadline = time.monotonic() + 60
        while 8124 not in [p["port"] for p in s.ports()]:
            assert time.monotonic() < deadline, "the server in the session did not listen"
            time.sleep(0.1)
        assert "/v1/previews/" in s.preview(8124, ttl_s=60)["url"]
        assert s.lock_network()["id"] == s.id
        assert s.refresh()["state"] == "running"
    with pytest.raises(CrucibleError) as gone:
        s.run("1")
    assert gone.value.code == "session_not_found"


def test_pause_fork_snapshot_and_a_refused_commit(crucible: Crucible) -> None:
    with crucible.create_session("python", restore="replay") as s:
        s.run("y = 5")
        assert s.pause()["keeps"] == "replay"
        assert s.resume()["restored"] == "replay"
        forks = s.fork(2)
        try:
            assert [f.run("y + 1")["result"] for f in forks] == ["6", "6"]
        finally:
            for f in forks:
                f.delete()
        assert s.snapshot("py-typed")["name"] == "py-typed"
        assert "py-typed" in [x["name"] for x in crucible.snapshots()]
        with crucible.create_session(snapshot="py-typed") as made:
            assert made.info is not None and made.info["restored"] == "replay"
            assert made.run("y")["result"] == "5"
        crucible.delete_snapshot("py-typed")
        with pytest.raises(CrucibleError) as refused:
            s.commit("local/never:1")
        assert (refused.value.status, refused.value.code) == (422, "commit_unavailable")


def test_tool_calls_with_the_servers_definitions(crucible: Crucible) -> None:
    assert any(t["function"]["name"] == "run_code" for t in crucible.tools("openai"))
    ran = crucible.call_tool("run_code", {"code": "print(2 ** 10)"})
    assert ran["is_error"] is False and ran["content"][0]["text"] == "1024\n"
