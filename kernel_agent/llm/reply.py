"""A chat completion body checked field by field: bytes in, a `Reply` out, or `MalformedResponse`.

The body is untrusted input. The SDK builds its response objects without validating them (a
`"content": 5` or a string `usage` would reach the caller as is), so the client reads the raw bytes,
capped, and checks here every field it uses.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

MAX_BODY_BYTES = 4 * 2**20  # a 4096-token answer is ~20 KB of JSON; 4 MiB is far past any real one
MAX_TOKENS = 2**31  # a token count above this is garbage, not a count


class MalformedResponse(Exception):
    """The server answered 200 with something that is not a chat completion."""


@dataclass(frozen=True)
class Reply:
    text: str
    finish_reason: str | None
    prompt_tokens: int | None  # None: the server did not say
    completion_tokens: int | None


def read_capped(chunks: Iterable[bytes], limit: int = MAX_BODY_BYTES) -> bytes:
    """The body, or MalformedResponse as soon as it passes `limit` bytes (the rest is never read)."""
    body = bytearray()
    for chunk in chunks:
        body += chunk
        if len(body) > limit:
            raise MalformedResponse(f"the body is over {limit // 2**20} MiB; stopped reading it")
    return bytes(body)


def parse_reply(body: bytes) -> Reply:
    """The text, finish reason and token counts of a chat completion body."""
    try:
        data = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise MalformedResponse(f"the body is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise MalformedResponse(f"the body is not JSON ({exc.msg} at char {exc.pos}): {_start(body)}") from None
    if not isinstance(data, dict):
        raise MalformedResponse(f"the body is a JSON {_kind(data)}, not an object: {_start(body)}")
    if "choices" not in data and "error" in data:
        raise MalformedResponse(f"the server answered 200 with an error: {_start(json.dumps(data['error']).encode())}")
    choices = _field(data, "choices", list)
    if not choices:  # no answer at all: an empty text, for the caller to judge
        return Reply("", None, *_usage(data))
    choice = _field({"choices[0]": choices[0]}, "choices[0]", dict)
    message = _field(choice, "message", dict, where="choices[0].")
    text = _field(message, "content", str, where="choices[0].message.")
    finish_reason = _field(choice, "finish_reason", str, where="choices[0].", optional=True)
    return Reply(text, finish_reason, *_usage(data))


def _usage(data: dict[str, Any]) -> tuple[int | None, int | None]:
    usage = _field(data, "usage", dict, optional=True)
    if usage is None:
        return None, None
    return (_count(usage, "prompt_tokens"), _count(usage, "completion_tokens"))


def _count(usage: dict[str, Any], key: str) -> int | None:
    value = usage.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_TOKENS:
        raise MalformedResponse(f"usage.{key} is {_shown(value)}, not a count of tokens")
    return value


def _field(data: dict[str, Any], key: str, kind: type, where: str = "", optional: bool = False) -> Any:
    """`data[key]` if it is a `kind` (or None/absent when `optional`), else MalformedResponse."""
    value = data.get(key)
    if isinstance(value, kind) or (optional and value is None):
        return value
    got = "missing" if key not in data else f"a JSON {_kind(value)} ({_shown(value)})"
    raise MalformedResponse(f"{where}{key} is {got}, not a JSON {_kind(kind())}")


def _kind(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _shown(value: Any) -> str:
    return json.dumps(value)[:60]


def _start(body: bytes) -> str:
    return repr(body[:120].decode("utf-8", "replace"))
