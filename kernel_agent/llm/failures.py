"""How an LLM call fails, and what is worth another attempt: the error types the client raises, the
retryable classes, the wait before a retry (`Retry-After`, else exponential backoff with jitter), and
one line describing a failed attempt in the server's own words."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .deadline import DeadlinePassed
from .reply import MalformedResponse

if TYPE_CHECKING:
    import openai

RETRY_AFTER_CAP_S = 60.0
RETRY_STATUSES = (408, 429)  # besides every 5xx
SERVER_WORDS = 300  # characters of a server's error message quoted


class LLMError(RuntimeError):
    """The LLM could not give an answer."""


class LLMUnavailable(LLMError):
    """Unreachable, refused, or out of retries; the message says what to check."""


class LLMBudgetExhausted(LLMError):
    """The run's token budget is spent."""


class OutOfTime(Exception):
    """The call's time ran out before another attempt could start."""


class AnswerCutOff(Exception):
    """The connection broke while the answer's body was being read."""


def sdk():
    """The openai package, imported when a model is first used: it is a second of every command's start
    otherwise, `--no-llm` runs and `--help` included."""
    import openai

    return openai


def is_malformed(exc: BaseException) -> bool:
    """A response that is not what an OpenAI-compatible server sends."""
    return isinstance(exc, (MalformedResponse, sdk().APIResponseValidationError))


def is_retryable(exc: BaseException) -> bool:
    """Worth another attempt: rate limits, 5xx, timeouts (APITimeoutError is an APIConnectionError),
    lost connections, malformed bodies."""
    openai = sdk()
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in RETRY_STATUSES or exc.status_code >= 500
    return isinstance(exc, (openai.APIConnectionError, DeadlinePassed, AnswerCutOff)) or is_malformed(exc)


def retry_after_s(exc: BaseException | None) -> float | None:
    """The seconds of the error response's `Retry-After` header, if it has one in seconds."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    try:
        seconds = float(value) if value is not None else None
    except ValueError:  # an HTTP date: fall back to backoff
        return None
    return seconds if seconds is not None and seconds >= 0 else None


@dataclass
class BackoffWait:
    """The wait after a failed attempt: `Retry-After` when the server sends one, else exponential
    backoff with jitter."""

    base_s: float = 0.5
    factor: float = 2.0
    cap_s: float = 30.0
    rng: random.Random = field(default_factory=random.Random)

    def delay(self, attempt: int, exc: BaseException | None) -> float:
        """Seconds to wait after attempt number `attempt` (from 1) failed with `exc`."""
        told = retry_after_s(exc)
        if told is not None:
            return min(told, RETRY_AFTER_CAP_S)
        ceiling = min(self.cap_s, self.base_s * self.factor ** (attempt - 1))
        return self.rng.uniform(ceiling / 2, ceiling)


def server_message(exc: openai.APIStatusError) -> str:
    """The server's own words: `error.message` of an OpenAI-style body, else the SDK's message."""
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, dict) else error
        if message:
            return str(message)[:SERVER_WORDS]
    return exc.message[:SERVER_WORDS]


def describe(exc: BaseException, timeout_s: float) -> str:
    """One line about a failed attempt."""
    openai = sdk()
    if isinstance(exc, DeadlinePassed):
        return f"{exc} (timeout)"
    if isinstance(exc, openai.APITimeoutError):
        return f"no answer within {timeout_s:g} s (timeout)"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        return f"could not connect ({cause or exc})"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {server_message(exc)}"
    if is_malformed(exc):
        return f"malformed response ({str(exc)[:SERVER_WORDS]})"
    return f"{type(exc).__name__}: {str(exc)[:SERVER_WORDS]}"
