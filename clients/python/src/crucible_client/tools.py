"""Crucible as a "run code" tool for LLM agents, shaped like replit-code-exec's client, so its users can switch:

    import crucible_client
    code_exec = crucible_client.build_code_exec("http://127.0.0.1:8080", token)
    reply = openai_client.chat.completions.create(model=..., messages=messages, tools=code_exec.openai_tools)
    messages += [reply.choices[0].message] + code_exec.from_response(reply)

`openai_schema` is the legacy `functions` entry (as replit-code-exec's), `openai_tools` the `tools` list,
`anthropic_schema` / `anthropic_tools` the same for Anthropic. `from_response` runs every tool call of an OpenAI
chat completion (`tool_calls`, or the legacy `function_call`) or an Anthropic message (`tool_use` blocks) and returns
the messages to append. It never raises for what the model wrote: no tool call, an unknown tool, arguments that are not
JSON, a missing `code`, even an unreachable server all come back as results the model can read.
"""

import json
import urllib.parse

from ._http import CrucibleError, _request


def code_exec(url, bearer_token, code, files=None, interpreter_mode=False, timeout=120):
    """replit-code-exec's `code_exec`, unchanged: POST to Crucible's /replit/eval, get stdout and stderr as text.

    `url` is the server (http://host:port) or its /replit/eval address.
    """
    target = url.rstrip("/")
    if not target.endswith("/replit/eval"):
        target += "/replit/eval"
    body = {"code": code}
    if files:
        body["files"] = files
    if interpreter_mode:
        body["interpreter_mode"] = True
    return _request(target, bearer_token, "POST", body, timeout, raw=True)


class CodeExec:
    """The tools, their schemas and `from_response`, bound to one server (and, with `session=True`, one session)."""

    def __init__(self, url, token=None, session=False, language="python", timeout=120, snapshot=None):
        self.url = url.rstrip("/")
        self.snapshot_name = snapshot  # with session=True: the session is made from this snapshot
        self.token = token
        self.session = session
        self.language = language
        self.timeout = timeout
        self.session_id = None
        self._tools = {}

    # -- schemas (fetched from the server once: the same definitions every Crucible client uses) --

    def tools(self, fmt):
        """The tool list in `fmt`: "openai", "openai-functions", "anthropic" or "mcp"."""
        if fmt not in self._tools:
            tool_set = "session" if self.session else "stateless"
            query = urllib.parse.urlencode({"format": fmt, "set": tool_set})
            self._tools[fmt] = _request(f"{self.url}/v1/tools?{query}", self.token, timeout=self.timeout)
        return self._tools[fmt]

    @property
    def openai_schema(self):
        """The main tool as a legacy `functions` entry: functions=[code_exec.openai_schema]."""
        return self.tools("openai-functions")[0]

    @property
    def openai_tools(self):
        """For tools= of a Chat Completions request."""
        return self.tools("openai")

    @property
    def anthropic_schema(self):
        """The main tool for tools=[...] of an Anthropic Messages request."""
        return self.tools("anthropic")[0]

    @property
    def anthropic_tools(self):
        return self.tools("anthropic")

    # -- running --

    def __call__(self, code):
        """Runs `code` with the main tool and returns the text a model would get."""
        name = "run_in_session" if self.session else "run_code"
        return self._text(self.call(name, {"code": code}))

    def call(self, name, arguments):
        """One tool call: {"content": [...], "is_error": bool, "result"?}. Never raises."""
        try:
            session_id = self._session_id() if self.session else None
            body = {"name": name, "arguments": arguments, "session_id": session_id}
            return _request(f"{self.url}/v1/tools/call", self.token, "POST", body, self.timeout)
        except CrucibleError as e:
            return {"content": [{"type": "text", "text": f"Crucible could not run the call ({e.code}): {e.message}"}],
                    "is_error": True}

    def _session_id(self):
        if self.session_id is None:
            body = {"snapshot": self.snapshot_name} if self.snapshot_name else {"language": self.language}
            answer = _request(f"{self.url}/v1/sessions", self.token, "POST", body, self.timeout)
            self.session_id = answer["id"]
        return self.session_id

    def run_command(self, command=None, argv=None, env=None, cwd=None, timeout_ms=None, stdin=None):
        """Runs a shell line (or an argv) in this object's session, beside its interpreter, to its end:
        {"exit_code", "signal", "stdout", "stderr", "timed_out", ...}. Raises CrucibleError for a refusal."""
        body = {k: v for k, v in {"command": command, "argv": argv, "env": env, "cwd": cwd, "timeout_ms": timeout_ms,
                                  "stdin": stdin}.items() if v is not None}
        return _request(f"{self.url}/v1/sessions/{self._session_id()}/commands", self.token, "POST", body,
                        self.timeout)

    def start_process(self, command=None, argv=None, env=None, cwd=None, timeout_ms=None, stdin=None,
                      stdin_open=False):
        """Starts a command in this object's session in the background and returns the process at once:
        {"pid", "running", "exit_code", ...}. It runs on until it ends, is signalled, its timeout_ms passes (none
        when not given) or the session's sandbox ends; its output is kept for process_output."""
        body = {k: v for k, v in {"command": command, "argv": argv, "env": env, "cwd": cwd, "timeout_ms": timeout_ms,
                                  "stdin": stdin, "stdin_open": stdin_open or None}.items() if v is not None}
        body["background"] = True
        return _request(f"{self.url}/v1/sessions/{self._session_id()}/commands", self.token, "POST", body,
                        self.timeout)

    def ports(self):
        """The TCP ports something listens on in this object's session now: [{"port", "path"}]."""
        return _request(f"{self.url}/v1/sessions/{self._session_id()}/ports", self.token, "GET", None,
                        self.timeout)["ports"]

    def preview(self, port, ttl_s=3600):
        """A signed link a browser opens without a token, to `port` of this object's session, for ttl_s seconds:
        {"url", "port", "expires_at", "host"?}."""
        return _request(f"{self.url}/v1/sessions/{self._session_id()}/previews", self.token, "POST",
                        {"port": int(port), "ttl_s": int(ttl_s)}, self.timeout)

    def processes(self):
        """This object's session's background processes, running and ended, oldest first."""
        return _request(f"{self.url}/v1/sessions/{self._session_id()}/processes", self.token, "GET", None,
                        self.timeout)["processes"]

    def process_output(self, pid, start=0, wait_ms=0):
        """A background process's output from offset `start` (0: the oldest kept; then the previous answer's
        "next"): {"stdout", "stderr", "next", "missed_bytes", "ended", "process"}, waiting up to wait_ms for a
        first byte."""
        return _request(f"{self.url}/v1/sessions/{self._session_id()}/processes/{int(pid)}/output"
                        f"?from={int(start)}&wait_ms={int(wait_ms)}", self.token, "GET", None,
                        max(self.timeout, wait_ms / 1000 + 10))

    def write_stdin(self, pid, data, close=False):
        """Writes text to a background process's stdin (started with stdin_open=True), then closes it if asked."""
        return _request(f"{self.url}/v1/sessions/{self._session_id()}/processes/{int(pid)}/stdin", self.token,
                        "POST", {"data": data, "close": close}, self.timeout)["written"]

    def signal_process(self, pid, signal="TERM"):
        """Sends a signal ("TERM", "KILL", "INT", ... or a number) to a background process's group; False when it
        had already ended."""
        return _request(f"{self.url}/v1/sessions/{self._session_id()}/processes/{int(pid)}/signal", self.token,
                        "POST", {"signal": signal}, self.timeout)["signalled"]

    def pause(self):
        """Pauses the session: its memory released (behind gVisor saved whole first), its files kept. The answer's
        "keeps" says what a resume brings back: "memory", "replay" or "files". The next call resumes it."""
        return _request(f"{self.url}/v1/sessions/{self._session_id()}/pause", self.token, "POST", {}, self.timeout)

    def fork(self, count=1):
        """Forks the session into `count` new ones, each with its own copy of its files (and, behind gVisor, of its
        memory); the answer's "forks" are their sessions, paused until their first call."""
        return _request(f"{self.url}/v1/sessions/{self._session_id()}/fork", self.token, "POST", {"count": count},
                        self.timeout)

    def snapshot(self, name):
        """Takes a named, durable snapshot of the session: CodeExec(url, token, session=True, snapshot=name) starts
        new sessions from it. Behind gVisor the session is left paused (its next call brings it back)."""
        return _request(f"{self.url}/v1/sessions/{self._session_id()}/snapshots", self.token, "POST", {"name": name},
                        self.timeout)

    def commit(self, tag):
        """Commits this session (one made in an image) as a new image `tag`: its /workspace as one layer over its
        image. Sessions made in the new image start with those files."""
        return _request(f"{self.url}/v1/sessions/{self._session_id()}/commit", self.token, "POST", {"tag": tag},
                        self.timeout)

    def snapshots(self):
        """This token's snapshots, oldest first."""
        return _request(f"{self.url}/v1/snapshots", self.token, "GET", None, self.timeout)["snapshots"]

    def delete_snapshot(self, name):
        return _request(f"{self.url}/v1/snapshots/{urllib.parse.quote(name, safe='')}", self.token, "DELETE", None,
                        self.timeout)

    def resume(self):
        """Resumes a paused session now; the answer's "restored" says what came back."""
        return _request(f"{self.url}/v1/sessions/{self._session_id()}/resume", self.token, "POST", {}, self.timeout)

    def close(self):
        """Deletes the session this object started, if any."""
        if self.session_id is not None:
            try:
                _request(f"{self.url}/v1/sessions/{self.session_id}", self.token, "DELETE", None, self.timeout)
            except CrucibleError:
                pass
            self.session_id = None

    def from_response(self, response):
        """Runs every tool call of `response` and returns the messages to append to the conversation.

        `response`: an OpenAI chat completion or message, or an Anthropic message — a dict, a JSON string, or the
        vendor SDK's object (anything with model_dump()). OpenAI gives one {"role": "tool"} message per call ({"role":
        "function"} for a legacy function_call); Anthropic one {"role": "user"} message of tool_result blocks.
        """
        response = _as_dict(response)
        if response is None:
            return [_note("The reply given to from_response is not a JSON object, so no tool was run.")]
        message = _openai_message(response)
        if message is not None:
            return self._from_openai(message)
        if isinstance(response.get("content"), list):
            return self._from_anthropic(response["content"])
        return [_note("The reply is neither an OpenAI chat completion nor an Anthropic message, so no tool was run.")]

    def _from_openai(self, message):
        out = []
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            outcome = self.call(function.get("name") or "", function.get("arguments"))
            out.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": self._text(outcome, True)})
        legacy = message.get("function_call")
        if not out and isinstance(legacy, dict):
            outcome = self.call(legacy.get("name") or "", legacy.get("arguments"))
            out.append({"role": "function", "name": legacy.get("name") or "", "content": self._text(outcome, True)})
        if not out:
            out.append(_note("The reply has no tool call, so no code was run. To run code, call "
                             f"{self._main_tool()} with it."))
        return out

    def _from_anthropic(self, blocks):
        results = []
        for block in blocks:
            block = _as_dict(block) or {}
            if block.get("type") != "tool_use":
                continue
            outcome = self.call(block.get("name") or "", block.get("input"))
            parts = [{"type": "text", "text": self._text(outcome)}]
            for c in outcome.get("content", []):
                if c.get("type") == "image":
                    parts.append({"type": "image", "source": {"type": "base64", "media_type": c["mime_type"],
                                                              "data": c["data"]}})
            result = {"type": "tool_result", "tool_use_id": block.get("id", ""), "content": parts}
            if outcome.get("is_error"):
                result["is_error"] = True
            results.append(result)
        if not results:
            return [_note(f"The reply has no tool_use block, so no code was run. To run code, use the "
                          f"{self._main_tool()} tool.")]
        return [{"role": "user", "content": results}]

    def _main_tool(self):
        return "run_in_session" if self.session else "run_code"

    @staticmethod
    def _text(outcome, name_images=False):
        content = outcome.get("content", [])
        text = "\n".join(c.get("text", "") for c in content if c.get("type") == "text")
        images = sum(1 for c in content if c.get("type") == "image")
        if images and name_images:
            text += f"\n[{images} image(s) made, e.g. a figure; this reply format cannot show them]"
        if outcome.get("is_error") and not text.startswith("Error"):
            text = "Error: " + text
        return text


def build_code_exec(url, token=None, session=False, language="python", timeout=120):
    """The Crucible tools for a model, like replit-code-exec's build_code_exec.

    url: the Crucible server, e.g. http://127.0.0.1:8080. token: its bearer token, or None.
    session: False for stateless runs (run_code); True for a persistent session (run_in_session and file tools),
    started on first use in `language`; close() deletes it.
    """
    return CodeExec(url, token, session, language, timeout)


def _as_dict(value):
    if isinstance(value, dict):
        return value
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    for method in ("model_dump", "to_dict", "dict"):
        if hasattr(value, method):
            try:
                dumped = getattr(value, method)()
            except TypeError:
                continue
            if isinstance(dumped, dict):
                return dumped
    return None


def _openai_message(response):
    if isinstance(response.get("choices"), list):
        choices = response["choices"]
        return (_as_dict(choices[0]) or {}).get("message") or {} if choices else {}
    if "tool_calls" in response or "function_call" in response:
        return response
    if response.get("role") == "assistant" and not isinstance(response.get("content"), list):
        return response
    return None


def _note(text):
    return {"role": "user", "content": "[crucible] " + text}
