"""The Crucible HTTP API, typed: stateless runs (streamed or not), runtimes, evaluation, rewards, sessions (cells,
files, commands and processes, ports and previews, network lock, pause, fork, snapshots, commit) and tool calls.

    from crucible_client import Crucible
    crucible = Crucible()  # $CRUCIBLE_URL (default http://127.0.0.1:8080), $CRUCIBLE_TOKEN
    print(crucible.execute("python", "print(6 * 7)")["stdout"])  # 42
    with crucible.create_session() as session:
        session.run("x = 41")
        print(session.run("x + 1")["result"])  # 42

Answers are the API's JSON as dicts, typed by `crucible_client.wire` (TypedDicts generated from the server's OpenAPI
document by scripts/wire.py); every refusal is a CrucibleError with the API's
`code`; one that says when to ask again (Retry-After) is asked again first.
"""

import json
import os
import time
import urllib.parse
from typing import Any, Dict, Iterator, List, Optional, Union

from ._http import _bytes, _request, _stream
from . import wire

JSON = Dict[str, Any]


class Crucible:
    """A client of one server. Thread-safe (each call opens its own connection)."""

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, timeout: float = 120) -> None:
        self.url = (url or os.environ.get("CRUCIBLE_URL") or "http://127.0.0.1:8080").rstrip("/")
        self.token = token if token is not None else os.environ.get("CRUCIBLE_TOKEN")
        self.timeout = timeout

    def _call(self, method: str, path: str, body: Any = None, timeout: Optional[float] = None) -> Any:
        return _request(self.url + path, self.token, method, body, timeout or self.timeout)

    # -- stateless --

    def execute(self, language: str, code: str, **options: Any) -> wire.ExecuteResult:
        """Runs a program in a fresh sandbox to its end; `options`: stdin, args, files, limits, image, network,
        isolation."""
        return self._call("POST", "/v1/execute", {"language": language, "code": code, **options})

    def execute_stream(self, language: str, code: str, **options: Any) -> Iterator[JSON]:
        """Runs a program, its output as it comes ({"type": "stdout"|"stderr", "data"}), then {"type": "result"}."""
        return _stream(self.url + "/v1/execute", self.token, {"language": language, "code": code, **options},
                       self.timeout)

    def runtimes(self) -> List[wire.Runtime]:
        return self._call("GET", "/v1/runtimes")

    def evaluate(self, language: str, code: str, testcases: List[JSON], **options: Any) -> wire.EvaluateResult:
        """Judges a program against test cases ({code?, stdin?, expect?}); `options`: compare, run_all_cases, limits."""
        return self._call("POST", "/v1/evaluate", {"language": language, "code": code, "testcases": testcases,
                                                   **options})

    def reward(self, messages: List[JSON], **options: Any) -> wire.RewardResult:
        """Scores one completion: {score, metrics}; `options`: expected_output, test_cases, language, timeout_ms."""
        return self._call("POST", "/v1/reward", {"messages": messages, **options})

    def reward_batch(self, items: List[JSON]) -> JSON:
        """Scores many completions in one call, in parallel on the server: {results, mean_score}."""
        return self._call("POST", "/v1/reward/batch", {"items": items})

    def health(self) -> JSON:
        return self._call("GET", "/healthz")

    # -- sessions --

    def create_session(self, language: Optional[str] = None, **options: Any) -> "Session":
        """A new session; `options`: limits, idle_timeout_s, restore, image, network, on_idle, snapshot, isolation."""
        body = {k: v for k, v in {"language": language, **options}.items() if v is not None}
        info = self._call("POST", "/v1/sessions", body)
        return Session(self, info["id"], info)

    def session(self, session_id: str) -> "Session":
        """A handle on an existing session (nothing is asked of the server until a call)."""
        return Session(self, session_id)

    def sessions(self) -> List[wire.Session]:
        return self._call("GET", "/v1/sessions")["sessions"]

    def snapshots(self) -> List[wire.Snapshot]:
        return self._call("GET", "/v1/snapshots")["snapshots"]

    def delete_snapshot(self, name: str) -> None:
        self._call("DELETE", "/v1/snapshots/" + urllib.parse.quote(name, safe=""))

    # -- dataset evaluations run by the server --

    def start_evaluation(self, fmt: str, problems: str, samples: Optional[str] = None,
                         **options: Any) -> wire.Evaluation:
        """Runs a dataset (`crucible eval dataset`) on the server in the background: `fmt` humaneval, mbpp or stdio,
        the problems and samples files as their JSONL text; `options` k, timeout_ms, image."""
        body = {"format": fmt, "problems": problems, **options}
        if samples is not None:
            body["samples"] = samples
        return self._call("POST", "/v1/evaluations", body)

    def evaluation_runs(self) -> List[wire.Evaluation]:
        """This token's evaluations, newest first."""
        return self._call("GET", "/v1/evaluations")["evaluations"]

    def evaluation_run(self, evaluation_id: str) -> wire.Evaluation:
        return self._call("GET", "/v1/evaluations/" + urllib.parse.quote(evaluation_id, safe=""))

    def await_evaluation(self, evaluation_id: str, every_s: float = 1.0) -> wire.Evaluation:
        """Asks every `every_s` until the evaluation is no longer running; answers it."""
        while True:
            run = self.evaluation_run(evaluation_id)
            if run["state"] != "running":
                return run
            time.sleep(every_s)

    def evaluation_results(self, evaluation_id: str) -> List[JSON]:
        """Its results file so far (`--out`'s lines): one object a judged sample, then `{"summary": ...}`."""
        text = _request(self.url + "/v1/evaluations/" + urllib.parse.quote(evaluation_id, safe="") + "/results",
                        self.token, "GET", None, self.timeout, raw=True)
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def delete_evaluation(self, evaluation_id: str) -> None:
        """Stops the evaluation if it goes on, and deletes it with its files."""
        self._call("DELETE", "/v1/evaluations/" + urllib.parse.quote(evaluation_id, safe=""))

    # -- tools --

    def tools(self, fmt: str = "openai", tool_set: str = "all") -> List[JSON]:
        """The tool definitions as the server renders them: openai, openai-functions, anthropic or mcp."""
        query = urllib.parse.urlencode({"format": fmt, "set": tool_set})
        return self._call("GET", "/v1/tools?" + query)

    def call_tool(self, name: str, arguments: Union[str, JSON], session_id: Optional[str] = None) -> JSON:
        """Runs one tool call as a model made it: {content, is_error, result?} (a model's mistake is an outcome)."""
        return self._call("POST", "/v1/tools/call", {"name": name, "arguments": arguments, "session_id": session_id})


class Session:
    """One session: a persistent interpreter in a sandbox of its own, and everything in that sandbox. A context
    manager that deletes the session at its end."""

    def __init__(self, client: Crucible, session_id: str, info: Optional[wire.Session] = None) -> None:
        self.client = client
        self.id = session_id
        self.info = info

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.delete()

    def _path(self, rest: str = "") -> str:
        return "/v1/sessions/" + urllib.parse.quote(self.id, safe="") + rest

    def _call(self, method: str, rest: str, body: Any = None) -> Any:
        return self.client._call(method, self._path(rest), body)

    def run(self, code: str, mode: Optional[str] = None, timeout_ms: Optional[int] = None) -> wire.CellResult:
        """Runs one cell: {status, stdout, stderr, result, display, error, …}."""
        return self._call("POST", "/execute", {"code": code, "mode": mode, "timeout_ms": timeout_ms})

    def refresh(self) -> wire.Session:
        self.info = self._call("GET", "")
        return self.info

    def interrupt(self) -> bool:
        return self._call("POST", "/interrupt")["interrupted"]

    def restart(self) -> wire.Session:
        self.info = self._call("POST", "/restart")
        return self.info

    def delete(self) -> None:
        self._call("DELETE", "")

    # -- files: a relative path is under /workspace, an absolute one any path of the session's file system --

    def _file(self, path: str) -> str:
        if path.startswith("/"):
            return self.client.url + self._path("/files?path=" + urllib.parse.quote(path, safe=""))
        return self.client.url + self._path("/files/" + urllib.parse.quote(path))

    def write_file(self, path: str, data: Union[bytes, str]) -> None:
        _bytes(self._file(path), self.client.token, "PUT", data.encode("utf-8") if isinstance(data, str) else data,
               self.client.timeout)

    def read_file(self, path: str) -> bytes:
        return _bytes(self._file(path), self.client.token, "GET", None, self.client.timeout)

    def read_text(self, path: str) -> str:
        return self.read_file(path).decode("utf-8")

    def list_files(self, directory: str = "") -> List[wire.FileEntry]:
        query = "?dir=" + urllib.parse.quote(directory, safe="") if directory else ""
        return self._call("GET", "/files" + query)["files"]

    def delete_file(self, path: str) -> None:
        _request(self._file(path), self.client.token, "DELETE", None, self.client.timeout)

    # -- commands and processes --

    @staticmethod
    def _command(command: Union[str, List[str]], options: Dict[str, Any]) -> JSON:
        body = {"command": command} if isinstance(command, str) else {"argv": list(command)}
        body.update({k: v for k, v in options.items() if v is not None})
        return body

    def command(self, command: Union[str, List[str]], **options: Any) -> wire.CommandResult:
        """Runs a shell line (or an argv list) to its end; `options`: env, cwd, timeout_ms, stdin, user."""
        return self._call("POST", "/commands", self._command(command, options))

    def command_stream(self, command: Union[str, List[str]], **options: Any) -> Iterator[JSON]:
        """Runs a command, its output as it comes, then {"type": "result", "result"}."""
        return _stream(self.client.url + self._path("/commands"), self.client.token,
                       self._command(command, options), self.client.timeout)

    def start_process(self, command: Union[str, List[str]], stdin_open: bool = False,
                      pty: Optional[JSON] = None, **options: Any) -> wire.ProcessInfo:
        """Starts a command in the background: the process, at once."""
        body = self._command(command, options)
        body.update({"background": True, "stdin_open": stdin_open, "pty": pty})
        return self._call("POST", "/commands", body)

    def processes(self) -> List[wire.ProcessInfo]:
        return self._call("GET", "/processes")["processes"]

    def process_output(self, pid: int, start: int = 0, wait_ms: int = 0) -> wire.ProcessOutput:
        return self._call("GET", f"/processes/{pid}/output?from={start}&wait_ms={wait_ms}")

    def write_stdin(self, pid: int, data: str, close: bool = False) -> JSON:
        return self._call("POST", f"/processes/{pid}/stdin", {"data": data, "close": close})

    def signal(self, pid: int, signal: str = "TERM") -> bool:
        return self._call("POST", f"/processes/{pid}/signal", {"signal": signal})["signalled"]

    # -- ports and network --

    def ports(self) -> List[wire.PortInfo]:
        return self._call("GET", "/ports")["ports"]

    def preview(self, port: int, ttl_s: int = 3600) -> wire.Preview:
        """A signed link to `port` a browser opens without a token."""
        return self._call("POST", "/previews", {"port": port, "ttl_s": ttl_s})

    def lock_network(self, allow: Optional[List[str]] = None) -> wire.Session:
        """Narrows the session's egress for good; none (the default) locks it."""
        self.info = self._call("POST", "/network", {"allow": allow or []})
        return self.info

    # -- pause, fork, snapshot, commit --

    def pause(self) -> wire.PauseResult:
        return self._call("POST", "/pause")

    def resume(self) -> wire.PauseResult:
        return self._call("POST", "/resume")

    def fork(self, count: int = 1) -> List["Session"]:
        forked = self._call("POST", "/fork", {"count": count})
        return [Session(self.client, f["id"], f) for f in forked["forks"]]

    def snapshot(self, name: str) -> wire.Snapshot:
        """A named, durable snapshot: client.create_session(snapshot=name) makes sessions from it."""
        return self._call("POST", "/snapshots", {"name": name})

    def commit(self, tag: str) -> wire.CommitResult:
        """A session in an image, committed as a new image `tag`."""
        return self._call("POST", "/commit", {"tag": tag})
