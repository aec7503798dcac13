"""Tests of the tools (CodeExec) and rewards against a real Crucible server.

Run: CRUCIBLE_URL=http://127.0.0.1:8080 [CRUCIBLE_TOKEN=...] python3 -m pytest clients/python/tests
(./run-tests runs them against a server on a free port, from AgentToolsTest, the package installed in a venv.)
"""

import json
import os
import unittest

import crucible_client

URL = os.environ.get("CRUCIBLE_URL")
TOKEN = os.environ.get("CRUCIBLE_TOKEN")


def openai_completion(*calls, legacy=None):
    message = {"role": "assistant", "content": None}
    if calls:
        message["tool_calls"] = [{"id": f"call_{i}", "type": "function",
                                  "function": {"name": name, "arguments": arguments}}
                                 for i, (name, arguments) in enumerate(calls)]
    if legacy:
        message["function_call"] = {"name": legacy[0], "arguments": legacy[1]}
    return {"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "message": message,
                                                                          "finish_reason": "tool_calls"}]}


def anthropic_message(*uses, text="Let me compute that."):
    content = [{"type": "text", "text": text}]
    content += [{"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": tool_input}
                for i, (name, tool_input) in enumerate(uses)]
    return {"id": "msg_1", "type": "message", "role": "assistant", "content": content, "stop_reason": "tool_use"}


@unittest.skipUnless(URL, "CRUCIBLE_URL is not set: these tests need a running Crucible server")
class CodeExecTest(unittest.TestCase):
    def setUp(self):
        self.code_exec = crucible_client.build_code_exec(URL, TOKEN)

    def test_openai_schema_carries_the_whole_guidance(self):
        schema = self.code_exec.openai_schema
        self.assertEqual(schema["name"], "run_code")
        self.assertEqual(schema["parameters"]["required"], ["code"])
        self.assertIn("python", schema["parameters"]["properties"]["language"]["enum"])
        description = schema["description"]
        # what replit-code-exec's schema lost: everything after the first line
        self.assertGreater(len(description.splitlines()), 5)
        for advice in ("no Markdown code fences", "print()", "no network", "Limits"):
            self.assertIn(advice, description)
        tools = self.code_exec.openai_tools
        self.assertEqual(tools[0]["type"], "function")
        self.assertEqual(tools[0]["function"], schema)

    def test_anthropic_schema(self):
        schema = self.code_exec.anthropic_schema
        self.assertEqual(schema["name"], "run_code")
        self.assertEqual(schema["input_schema"]["type"], "object")
        self.assertEqual(schema["description"], self.code_exec.openai_schema["description"])

    def test_openai_tool_calls_run_and_fences_are_removed(self):
        completion = openai_completion(
            ("run_code", json.dumps({"code": "```python\nprint(6 * 7)\n```"})),
            ("run_code", json.dumps({"code": "console.log('js ' + [1, 2].length)", "language": "javascript"})))
        messages = self.code_exec.from_response(completion)
        self.assertEqual(messages, [{"role": "tool", "tool_call_id": "call_0", "content": "42\n"},
                                    {"role": "tool", "tool_call_id": "call_1", "content": "js 2\n"}])

    def test_legacy_function_call(self):
        messages = self.code_exec.from_response(openai_completion(legacy=("run_code", '{"code": "print(2 ** 10)"}')))
        self.assertEqual(messages, [{"role": "function", "name": "run_code", "content": "1024\n"}])

    def test_anthropic_tool_use(self):
        messages = self.code_exec.from_response(anthropic_message(("run_code", {"code": "print(sum(range(10)))"})))
        self.assertEqual(len(messages), 1)
        self.assertEqual(messages[0]["role"], "user")
        result = messages[0]["content"][0]
        self.assertEqual(result["type"], "tool_result")
        self.assertEqual(result["tool_use_id"], "toolu_0")
        self.assertEqual(result["content"][0], {"type": "text", "text": "45\n"})
        self.assertNotIn("is_error", result)

    def test_a_failing_program_is_a_result_with_its_status(self):
        messages = self.code_exec.from_response(openai_completion(
            ("run_code", json.dumps({"code": "print('before')\nraise ValueError('boom')"}))))
        content = messages[0]["content"]
        self.assertTrue(content.startswith("before\n[stderr]\n"), content)
        self.assertIn("ValueError: boom", content)
        self.assertIn("exit code 1", content)

    def test_bad_input_becomes_tool_results_not_exceptions(self):
        self.assertEqual(self.code_exec.from_response(openai_completion())[0]["role"], "user")
        self.assertIn("no tool call", self.code_exec.from_response(openai_completion())[0]["content"])
        self.assertIn("no tool_use", self.code_exec.from_response(anthropic_message())[0]["content"])
        unknown, not_json, no_code = self.code_exec.from_response(openai_completion(
            ("rm_rf", "{}"), ("run_code", "{print(1)"), ("run_code", '{"language": "python"}')))
        self.assertIn("no tool named 'rm_rf'", unknown["content"])
        self.assertIn("not valid JSON", not_json["content"])
        self.assertIn("needs 'code'", no_code["content"])
        for m in (unknown, not_json, no_code):
            self.assertTrue(m["content"].startswith("Error: "), m)
        result = self.code_exec.from_response(anthropic_message(("run_code", {"cod": "print(1)"})))[0]["content"][0]
        self.assertTrue(result["is_error"])
        self.assertIn("not a JSON object", self.code_exec.from_response("not json")[0]["content"])

    def test_an_unreachable_server_is_a_tool_result_too(self):
        offline = crucible_client.build_code_exec("http://127.0.0.1:9", TOKEN, timeout=5)
        messages = offline.from_response(openai_completion(("run_code", '{"code": "print(1)"}')))
        self.assertIn("connection_failed", messages[0]["content"])

    def test_calling_it_directly(self):
        self.assertEqual(self.code_exec("print('direct')"), "direct\n")

    def test_replit_code_exec_function(self):
        self.assertEqual(crucible_client.code_exec(URL, TOKEN, "print(open('a.txt').read())", files={"a.txt": "hi"}),
                         "hi\n")
        self.assertEqual(crucible_client.code_exec(URL, TOKEN, "1 + 1", interpreter_mode=True), "2\n")

    def test_a_wrong_token_is_a_clear_error(self):
        if not TOKEN:
            self.skipTest("the server runs without tokens")
        with self.assertRaises(crucible_client.CrucibleError) as caught:
            crucible_client.build_code_exec(URL, "wrong-token").openai_schema
        self.assertEqual((caught.exception.status, caught.exception.code), (401, "unauthorized"))


@unittest.skipUnless(URL, "CRUCIBLE_URL is not set: these tests need a running Crucible server")
class SessionTest(unittest.TestCase):
    def setUp(self):
        self.code_exec = crucible_client.build_code_exec(URL, TOKEN, session=True)

    def tearDown(self):
        self.code_exec.close()

    def test_state_and_files_persist_between_replies(self):
        names = [t["function"]["name"] for t in self.code_exec.openai_tools]
        self.assertEqual(names[0], "run_in_session")
        self.assertIn("write_file", names)
        first = self.code_exec.from_response(openai_completion(
            ("run_in_session", json.dumps({"code": "import math\nr = 2"})),
            ("write_file", json.dumps({"path": "data/x.txt", "content": "3 4 5"}))))
        self.assertIn("Wrote 5 bytes", first[1]["content"])
        second = self.code_exec.from_response(anthropic_message(
            ("run_in_session", {"code": "round(math.pi * r ** 2, 2), open('data/x.txt').read().split()"}),
            ("read_file", {"path": "data/x.txt"})))
        results = second[0]["content"]
        self.assertIn("(12.57, ['3', '4', '5'])", results[0]["content"][0]["text"])
        self.assertEqual(results[1]["content"][0]["text"], "3 4 5")
        command = self.code_exec.run_command("cat data/x.txt; exit 5")
        self.assertEqual((command["exit_code"], command["stdout"]), (5, "3 4 5"))
        self.assertEqual(self.code_exec.run_command(argv=["sh", "-c", "echo $V"], env={"V": "v"})["stdout"], "v\n")
        with self.assertRaises(crucible_client.CrucibleError) as refused:
            self.code_exec.run_command(argv=[])
        self.assertEqual(refused.exception.code, "invalid_request")
        process = self.code_exec.start_process("read x; echo \"bg $x\" >&2", stdin_open=True)
        self.assertTrue(process["running"])
        self.assertIn(process["pid"], [p["pid"] for p in self.code_exec.processes()])
        self.assertEqual(self.code_exec.write_stdin(process["pid"], "in\n", close=True), 3)
        output, stderr = {"next": 0, "ended": False}, ""
        for _ in range(12):
            output = self.code_exec.process_output(process["pid"], output["next"], wait_ms=5000)
            stderr += output["stderr"]
            if output["ended"]:
                break
        self.assertEqual((stderr, output["process"]["exit_code"]), ("bg in\n", 0))
        sleeper = self.code_exec.start_process(argv=["sleep", "600"])
        self.assertTrue(self.code_exec.signal_process(sleeper["pid"], "KILL"))
        server = self.code_exec.start_process(argv=["python3", "-m", "http.server", "8124", "--bind", "127.0.0.1"])
        for _ in range(600):  # a wait for the state, not a sleep: ends as soon as the server listens
            if 8124 in [p["port"] for p in self.code_exec.ports()]:
                break
            self.code_exec.process_output(server["pid"], 0, wait_ms=100)
        self.assertIn(8124, [p["port"] for p in self.code_exec.ports()])
        link = self.code_exec.preview(8124, ttl_s=60)
        self.assertIn("/v1/previews/", link["url"])
        self.assertEqual(link["port"], 8124)
        with self.assertRaises(crucible_client.CrucibleError) as unknown:
            self.code_exec.process_output(999999)
        self.assertEqual(unknown.exception.code, "process_not_found")
        paused = self.code_exec.pause()
        self.assertEqual((paused["state"], paused["keeps"]), ("paused", "files"))
        self.assertEqual(self.code_exec.resume()["restored"], "files")
        self.assertIn("3 4 5", self.code_exec("print(open('data/x.txt').read())"))  # its files came back with it
        forked = self.code_exec.fork(1)
        self.assertEqual(len(forked["forks"]), 1)
        fork_id = forked["forks"][0]["id"]
        copy = crucible_client._request(f"{URL}/v1/sessions/{fork_id}/files/data/x.txt", TOKEN, raw=True)
        crucible_client._request(f"{URL}/v1/sessions/{fork_id}", TOKEN, "DELETE", raw=True)
        self.assertEqual(copy, "3 4 5")
        taken = self.code_exec.snapshot("py-client")
        self.assertEqual((taken["name"], taken["keeps"]), ("py-client", "files"))
        self.assertIn("py-client", [s["name"] for s in self.code_exec.snapshots()])
        child = crucible_client.CodeExec(URL, TOKEN, session=True, snapshot="py-client")
        try:
            self.assertIn("3 4 5", child("print(open('data/x.txt').read())"))
        finally:
            child.close()
        self.code_exec.delete_snapshot("py-client")
        with self.assertRaises(crucible_client.CrucibleError) as refused:
            self.code_exec.commit("local/never:1")  # a session on the host's file system is no image
        self.assertEqual((refused.exception.status, refused.exception.code), (422, "commit_unavailable"))
        self.assertEqual(self.code_exec.snapshots(), [])
        session_id = self.code_exec.session_id
        self.assertRegex(session_id, "^[0-9a-f]{32}$")
        self.code_exec.close()
        with self.assertRaises(crucible_client.CrucibleError) as caught:
            crucible_client._request(f"{URL}/v1/sessions/{session_id}", TOKEN)
        self.assertEqual(caught.exception.status, 404)


SEED_MESSAGES = [
    {"role": "user", "content": "Write a Python function to calculate the factorial of a number."},
    {"role": "assistant", "content": """Here's a Python function to calculate the factorial of a number:

```python
def factorial(n):
    if n == 0 or n == 1:
        return 1
    else:
        return n * factorial(n - 1)

# Test the function
print(factorial(5))  # Should output 120
```

This function uses recursion to calculate the factorial. For n = 5, it computes 5 * 4 * 3 * 2 * 1 = 120."""},
]


@unittest.skipUnless(URL, "CRUCIBLE_URL is not set: these tests need a running Crucible server")
class RewardTest(unittest.TestCase):
    """The reward seed's examples (reward-kit's e2b code execution reward guide) with only the import changed, and
    the call shapes of TRL's reward functions and verl's compute_score (the frameworks cannot be installed here: no
    PyPI; their documented signatures are what these calls follow)."""

    def test_the_seeds_example_runs_by_changing_its_import(self):
        from crucible_client import e2b_code_execution_reward
        result = e2b_code_execution_reward(messages=SEED_MESSAGES, expected_output="120", language="python",
                                           api_key="your_e2b_api_key", timeout=10, url=URL, token=TOKEN)
        self.assertEqual(result.score, 1.0)
        reasons = {name: metric.reason for name, metric in result.metrics.items()}
        self.assertIn("def factorial", reasons["extracted_code"])
        self.assertEqual(result.metrics["expected_output"].reason, "120")
        self.assertEqual(result.metrics["execution_result"].score, 1.0)

    def test_the_seeds_automatic_output_extraction(self):
        messages = [{"role": "user", "content": "Write a Python function to find the sum of a list. "
                                                "Expected output: 15 (for [1,2,3,4,5])"},
                    {"role": "assistant", "content": "```python\ndef sum_list(numbers):\n    return sum(numbers)\n\n"
                                                     "print(sum_list([1, 2, 3, 4, 5]))\n```"}]
        result = crucible_client.local_code_execution_reward(messages=messages, original_messages=messages,
                                                             language="python", url=URL, token=TOKEN)
        self.assertEqual(result.metrics["expected_output"].reason, "15")
        self.assertEqual(result.score, 1.0)

    def test_a_wrong_or_crashing_answer_scores_low_with_its_reason(self):
        wrong = crucible_client.code_execution_reward(
            [{"role": "assistant", "content": "```python\nraise ValueError('no')\n```"}], expected_output="1",
            url=URL, token=TOKEN)
        self.assertEqual(wrong.score, 0.0)
        self.assertIn("ValueError", wrong.metrics["execution_result"].reason)

    def test_batch_and_test_cases(self):
        results = crucible_client.code_execution_rewards([
            {"messages": [{"role": "assistant", "content": "```python\nprint(int(input()) * 2)\n```"}],
             "test_cases": [{"input": "2", "expected_output": "4"}, {"input": "5", "expected_output": "10"}]},
            {"messages": [{"role": "assistant", "content": "```python\nprint(int(input()) + 2)\n```"}],
             "test_cases": [{"input": "2", "expected_output": "4"}, {"input": "5", "expected_output": "10"}]},
        ], url=URL, token=TOKEN)
        self.assertEqual([r.score for r in results], [1.0, 0.5])

    def test_trl_reward_function_call_shape(self):
        reward_func = crucible_client.trl_reward_func(URL, TOKEN)
        # standard format: completions are strings, dataset columns arrive as keyword lists
        scores = reward_func(completions=["```python\nprint(2 + 2)\n```", "```python\nprint(5)\n```"],
                             prompts=["Print 2 + 2. Expected output: 4", "Print 2 + 2. Expected output: 4"],
                             completion_ids=[[1], [2]], trainer_state=None)
        self.assertEqual(scores[0], 1.0)
        self.assertLess(scores[1], 1.0)
        # conversational format, with an expected_output column
        scores = reward_func([[{"role": "assistant", "content": "```python\nprint('hi')\n```"}]],
                             prompts=[[{"role": "user", "content": "Say hi."}]], expected_output=["hi"])
        self.assertEqual(scores, [1.0])

    def test_verl_compute_score_call_shape(self):
        tests = json.dumps({"inputs": ["2\n", "5\n"], "outputs": ["4\n", "10\n"]})
        self.assertEqual(crucible_client.verl_compute_score(
            "codecontests", "```python\nprint(int(input()) * 2)\n```", tests, {"language": "python"},
            url=URL, token=TOKEN), 1.0)
        self.assertEqual(crucible_client.verl_compute_score(
            "codecontests", "```python\nprint(0)\n```", {"inputs": ["2\n"], "outputs": ["4\n"]}, None,
            url=URL, token=TOKEN), 0.0)
        self.assertEqual(crucible_client.verl_compute_score("toy", "print(6 * 7)", "42", url=URL, token=TOKEN), 1.0)


if __name__ == "__main__":
    unittest.main()
