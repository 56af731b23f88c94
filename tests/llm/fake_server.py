"""A scripted OpenAI-compatible HTTP server on localhost, for testing the LLM client for real.

Each chat request consumes the next step of the script; the last step repeats when the script runs
out (unless `repeat_last=False`, when the server answers 500 "script ran out"):

    with FakeOpenAI([status(429, retry_after=2), answer("hi")]) as server:
        LLMConfig(base_url=server.base_url, model="test-model")
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

ErrorBody = dict[str, Any] | str | None


@dataclass(frozen=True)
class Step:
    """One scripted reply. `kind` is "answer", "status", "hang", "malformed", "empty", "raw", "drip" or "huge"."""

    kind: str
    text: str = ""
    finish_reason: str = "stop"
    prompt_tokens: int = 10
    completion_tokens: int = 20
    usage: bool = True  # False: leave `usage` out of the answer
    code: int = 200
    retry_after: float | str | None = None
    body: ErrorBody = None
    seconds: float = 0.0
    content_type: str = "application/json"
    data: bytes = b""  # "raw": the exact body
    interval: float = 0.0  # "drip": seconds between bytes
    size: int = 0  # "huge": bytes of body


def answer(text: str, finish_reason: str = "stop", prompt_tokens: int = 10, completion_tokens: int = 20,
           usage: bool = True) -> Step:
    """A normal chat.completion."""
    return Step("answer", text=text, finish_reason=finish_reason, prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens, usage=usage)


def truncated(text: str, prompt_tokens: int = 10, completion_tokens: int = 20) -> Step:
    """An answer cut off at max_tokens (finish_reason "length")."""
    return answer(text, "length", prompt_tokens, completion_tokens)


def status(code: int, retry_after: float | str | None = None, body: ErrorBody = None) -> Step:
    """An HTTP error; `body` a dict (sent as JSON) or a str, by default an OpenAI-style error."""
    return Step("status", code=code, retry_after=retry_after, body=body)


def hang(seconds: float, text: str = "late answer") -> Step:
    """Wait `seconds` (or until the server stops), then answer `text`."""
    return Step("hang", text=text, seconds=seconds)


def malformed(content_type: str = "application/json") -> Step:
    """200 with a body that is not JSON (under a JSON or, say, a "text/html" content type)."""
    return Step("malformed", content_type=content_type)


def empty() -> Step:
    """A chat.completion with no choices."""
    return Step("empty")


def raw(data: bytes, content_type: str = "application/json", code: int = 200) -> Step:
    """Exactly these bytes as the body (not UTF-8, JSON of the wrong shape...), by default with 200."""
    return Step("raw", data=data, content_type=content_type, code=code)


def json_reply(value: Any) -> Step:
    """200 with any JSON value as the body: a chat completion with a field broken, a list, a string..."""
    return raw(json.dumps(value).encode())


def drip(interval: float = 0.5, text: str = "late answer") -> Step:
    """200 and the headers at once, then the body of a normal answer one byte every `interval` seconds."""
    return Step("drip", text=text, interval=interval)


def huge(size: int) -> Step:
    """200 with a body of `size` bytes, sent as fast as the client reads: a chat completion whose text never ends."""
    return Step("huge", size=size)


def completion_json(step: Step, model: str) -> dict[str, Any]:
    """The chat.completion body for an answer step."""
    choices = [] if step.kind == "empty" else [{
        "index": 0, "finish_reason": step.finish_reason,
        "message": {"role": "assistant", "content": step.text},
    }]
    data: dict[str, Any] = {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                            "model": model, "choices": choices}
    if step.usage:
        data["usage"] = {"prompt_tokens": step.prompt_tokens, "completion_tokens": step.completion_tokens,
                         "total_tokens": step.prompt_tokens + step.completion_tokens}
    return data


def error_json(code: int, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "fake_error", "param": None, "code": code}}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        fake = self.server.fake
        if self.path.rstrip("/") != "/v1/models":
            return self._send(404, error_json(404, f"no route GET {self.path}"))
        fake.record(self, None)
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in fake.models]
        self._send(200, {"object": "list", "data": data})

    def do_POST(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        text = self.rfile.read(length).decode("utf-8", "replace")
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._send(404, error_json(404, f"no route POST {self.path}"))
        try:
            body = json.loads(text)
        except json.JSONDecodeError:
            body = text
        step = fake.record(self, body)
        self._play(step, body.get("model", "") if isinstance(body, dict) else "")

    def _play(self, step: Step | None, model: str) -> None:
        if step is None:
            return self._send(500, error_json(500, "fake server: the script ran out"))
        if step.kind == "status":
            headers = {"Retry-After": str(step.retry_after)} if step.retry_after is not None else {}
            body = step.body if step.body is not None else error_json(step.code, f"fake error {step.code}")
            return self._send(step.code, body, headers)
        if step.kind == "malformed":
            return self._send(200, '{"id": "chatcmpl-fake", "choices": [ this is not JSON', {},
                              step.content_type)
        if step.kind == "raw":
            return self._send(step.code, step.data, {}, step.content_type)
        if step.kind == "drip":
            return self._drip(json.dumps(completion_json(step, model)).encode(), step.interval)
        if step.kind == "huge":
            return self._huge(step.size)
        if step.kind == "hang":
            self.server.fake.stopping.wait(step.seconds)
        self._send(200, completion_json(step, model))

    def _drip(self, data: bytes, interval: float) -> None:
        try:
            self._headers(200, len(data), {}, "application/json")
            for i in range(len(data)):
                if self.server.fake.stopping.wait(interval):
                    return
                self.wfile.write(data[i:i + 1])
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _huge(self, size: int) -> None:
        head = b'{"id": "chatcmpl-fake", "object": "chat.completion", "choices": [{"message": {"content": "'
        block = b"x" * 65536
        sent = 0
        try:
            self._headers(200, size, {}, "application/json")
            self.wfile.write(head)
            for sent in range(len(head), size, len(block)):
                if self.server.fake.stopping.is_set():
                    break
                self.wfile.write(block[:size - sent])
            else:
                sent = size
        except (BrokenPipeError, ConnectionResetError):  # the client stopped reading: the point
            pass
        self.server.fake.huge_sent.append(sent)

    def _send(self, code: int, body: dict[str, Any] | str | bytes, headers: dict[str, str] | None = None,
              content_type: str = "application/json") -> None:
        data = body if isinstance(body, bytes) else (json.dumps(body) if isinstance(body, dict) else body).encode()
        try:
            self._headers(code, len(data), headers or {}, content_type)
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout): fine
            pass

    def _headers(self, code: int, length: int, headers: dict[str, str], content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(length))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() must not wait for a hanging handler
    fake: FakeOpenAI


class FakeOpenAI:
    """The server: `base_url`, and what it was asked in `requests` (chat bodies) and `paths`."""

    def __init__(self, steps: list[Step], models: tuple[str, ...] = ("test-model",), repeat_last: bool = True):
        if not steps:
            raise ValueError("FakeOpenAI needs at least one step")
        self.steps = list(steps)
        self.models = models
        self.repeat_last = repeat_last
        self.requests: list[Any] = []  # the parsed JSON body of every chat request
        self.headers: list[dict[str, str]] = []  # the headers of every chat request
        self.paths: list[str] = []  # "METHOD /path" of every request, chat and models
        self.huge_sent: list[int] = []  # bytes a "huge" step wrote before the client stopped reading
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._base_url = ""
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._base_url, "start the server first"
        return self._base_url

    def start(self, port: int = 0) -> FakeOpenAI:
        """Serve on `port` (0: any free one)."""
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.fake = self
        host, port = self._server.server_address[:2]
        self._base_url = f"http://{host}:{port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True, name="fake-openai")
        self._thread.start()
        return self

    def stop(self) -> None:
        """Quick: wakes any hanging handler and does not wait for it."""
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def record(self, handler: BaseHTTPRequestHandler, body: Any) -> Step | None:
        """Note the request; for a chat request, consume and return the next step."""
        with self._lock:
            self.paths.append(f"{handler.command} {handler.path}")
            if handler.command != "POST":
                return None
            self.requests.append(body)
            self.headers.append({k.lower(): v for k, v in handler.headers.items()})
            index = len(self.requests) - 1
            if index < len(self.steps):
                return self.steps[index]
            return self.steps[-1] if self.repeat_last else None
