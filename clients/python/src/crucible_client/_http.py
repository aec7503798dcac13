"""The HTTP core every part of the client calls through: JSON in and out, the API's errors as CrucibleError, and a
refusal that says when to ask again (429 or 503 with Retry-After) asked again. Standard library only."""

import json
import random
import time
import urllib.error
import urllib.request
from typing import Any, Dict, Iterator, Optional

#: How many times a refusal with Retry-After is asked again, and the longest wait it may ask for (seconds).
RETRIES = 3
MAX_RETRY_WAIT_S = 30.0


class CrucibleError(Exception):
    """An error answer of the server (`status`, `code` as in {"error": {code, message}}, `retry_after_s` when it
    said), or no answer (status 0: `connection_failed`, `timeout`)."""

    def __init__(self, status: int, code: str, message: str, retry_after_s: Optional[float] = None) -> None:
        super().__init__(f"{status} {code}: {message}" if status else f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after_s = retry_after_s


def _open(url: str, token: Optional[str], method: str, data: Optional[bytes], headers: Dict[str, str],
          timeout: float, retries: int = RETRIES) -> Any:
    """Sends one request; the open 2xx response (the caller closes it), after the retries Retry-After allows."""
    headers = dict(headers)
    headers.setdefault("Accept", "application/json")
    headers["X-Crucible-Request"] = "1"  # no browser sends it cross-site
    if token:
        headers["Authorization"] = f"Bearer {token}"
    for attempt in range(retries + 1):
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            return urllib.request.urlopen(request, timeout=timeout)
        except urllib.error.HTTPError as e:
            error = _error_of(e)
            wait = error.retry_after_s
            if e.code not in (429, 503) or wait is None or attempt >= retries or wait > MAX_RETRY_WAIT_S:
                raise error from None
            time.sleep(wait * (1 + random.random() / 5))  # jitter: one burst's callers do not all come back at once
        except TimeoutError as e:
            raise CrucibleError(0, "timeout", f"no answer from {url} within {timeout} s") from e
        except (urllib.error.URLError, OSError) as e:
            raise CrucibleError(0, "connection_failed", f"cannot reach Crucible at {url}: {e}") from None
    raise AssertionError("unreachable")


def _error_of(e: urllib.error.HTTPError) -> CrucibleError:
    payload = e.read()
    code, message = f"http_{e.code}", payload.decode("utf-8", "replace")
    try:
        error = json.loads(payload)["error"]
        code, message = error["code"], error["message"]
    except (ValueError, KeyError, TypeError):
        pass
    retry = e.headers.get("Retry-After") if e.headers else None
    retry_after = float(retry) if retry is not None and retry.strip().isdigit() else None
    return CrucibleError(e.code, code, message, retry_after)


def _request(url: str, token: Optional[str], method: str = "GET", body: Any = None, timeout: float = 120,
             raw: bool = False, retries: int = RETRIES) -> Any:
    """A JSON call: `body` sent as JSON (None: no body); the answer's JSON (its text with `raw`)."""
    data = None
    headers = {}
    if body is not None:
        data = json.dumps(body).encode("utf-8")
        headers["Content-Type"] = "application/json"
    with _open(url, token, method, data, headers, timeout, retries) as response:
        payload = response.read()
    return payload.decode("utf-8") if raw else (json.loads(payload) if payload else {})


def _bytes(url: str, token: Optional[str], method: str = "GET", data: Optional[bytes] = None,
           timeout: float = 120) -> bytes:
    """Raw bytes in (`data`, as application/octet-stream) and out."""
    headers = {"Accept": "*/*"}
    if data is not None:
        headers["Content-Type"] = "application/octet-stream"
    with _open(url, token, method, data, headers, timeout) as response:
        return response.read()


def _stream(url: str, token: Optional[str], body: Any, timeout: float = 120) -> Iterator[Dict[str, Any]]:
    """A streamed answer (NDJSON): its events, one JSON object a line, as they come."""
    data = json.dumps(body).encode("utf-8")
    with _open(url, token, "POST", data, {"Content-Type": "application/json", "Accept": "application/x-ndjson"},
               timeout) as response:
        for line in response:
            line = line.strip()
            if line.startswith(b"{"):
                yield json.loads(line)
