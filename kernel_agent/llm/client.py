"""A chat client for any OpenAI-compatible server, with retries, backoff and a token budget.

The SDK's own retries are off: tenacity retries rate limits, server errors, timeouts, lost
connections and malformed bodies, honouring `Retry-After`. Client errors (400, 401, 403, 404) fail at
once. Every failure surfaces as an `LLMError` whose message says what to check.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import openai
import pydantic
from openai.types.chat import ChatCompletion
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from .config import NO_KEY, LLMConfig

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
PROBE_TIMEOUT_S = 5.0
RETRY_AFTER_CAP_S = 60.0
RETRY_STATUSES = (408, 429)  # besides every 5xx
HINT = "is the server running? check OPENAI_BASE_URL / --llm-base-url"


@dataclass
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None  # "stop", "length" (truncated)...
    seconds: float
    attempts: int  # HTTP attempts it took


class LLMError(RuntimeError):
    """The LLM could not give an answer."""


class LLMUnavailable(LLMError):
    """Unreachable, refused, or out of retries; the message says what to check."""


class LLMBudgetExhausted(LLMError):
    """The run's token budget is spent."""


class MalformedResponse(Exception):
    """The server answered 200 with something that is not a chat completion."""


MALFORMED = (openai.APIResponseValidationError, json.JSONDecodeError, pydantic.ValidationError, MalformedResponse)
RETRYABLE = (openai.APIConnectionError, *MALFORMED)  # APITimeoutError is an APIConnectionError


def is_retryable(exc: BaseException) -> bool:
    """Worth another attempt: rate limits, 5xx, timeouts, lost connections, malformed bodies."""
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in RETRY_STATUSES or exc.status_code >= 500
    return isinstance(exc, RETRYABLE)


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
    """A tenacity wait: `Retry-After` when the server sends one, else exponential backoff with jitter."""

    base_s: float = 0.5
    factor: float = 2.0
    cap_s: float = 30.0
    rng: random.Random = field(default_factory=random.Random)

    def __call__(self, retry_state: RetryCallState) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        told = retry_after_s(exc)
        if told is not None:
            return min(told, RETRY_AFTER_CAP_S)
        ceiling = min(self.cap_s, self.base_s * self.factor ** (retry_state.attempt_number - 1))
        return self.rng.uniform(ceiling / 2, ceiling)


def server_message(exc: openai.APIStatusError) -> str:
    """The server's own words: `error.message` of an OpenAI-style body, else the SDK's message."""
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, dict) else error
        if message:
            return str(message)
    return exc.message


def describe(exc: BaseException, timeout_s: float) -> str:
    """One line about a failed attempt."""
    if isinstance(exc, openai.APITimeoutError):
        return f"no answer within {timeout_s:g} s (timeout)"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        return f"could not connect ({cause or exc})"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {server_message(exc)}"
    if isinstance(exc, MALFORMED):
        return f"malformed response ({type(exc).__name__}: {str(exc)[:200]})"
    return f"{type(exc).__name__}: {exc}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class LLMClient:
    """Chat completions against one model; counts calls and tokens across a run."""

    def __init__(self, config: LLMConfig, sleep: Callable[[float], None] = time.sleep):
        self.config = config
        self.base_url = config.base_url or DEFAULT_BASE_URL
        self.tokens_used = 0
        self.calls = 0
        self.wait = BackoffWait()
        self._sleep = sleep
        self._client = openai.OpenAI(base_url=self.base_url, api_key=config.api_key or NO_KEY,
                                     timeout=config.timeout_s, max_retries=0)

    def complete(self, messages: list[dict[str, str]]) -> Completion:
        """One chat completion, retried as needed; raises LLMBudgetExhausted or LLMUnavailable."""
        self._check_budget()
        began = time.perf_counter()
        attempts = 0

        def attempt() -> ChatCompletion:
            nonlocal attempts
            attempts += 1
            return self._send(messages)

        try:
            response = self._retrying()(attempt)
        except (openai.APIError, *RETRYABLE) as exc:
            raise self._failure(exc, attempts) from exc
        completion = self._completion(response, messages, time.perf_counter() - began, attempts)
        self.calls += 1
        self.tokens_used += completion.prompt_tokens + completion.completion_tokens
        return completion

    def probe(self) -> tuple[bool, str]:
        """(True, what answers) or (False, why not), for `kagent doctor`. Never raises."""
        timeout_s = min(PROBE_TIMEOUT_S, self.config.timeout_s)
        try:
            return self._probe(timeout_s)
        except Exception as exc:  # a doctor must report, not crash
            hint = HINT if isinstance(exc, openai.APIConnectionError) else "check the URL, the key and the server"
            return False, f"cannot list the models at {self.base_url}: {describe(exc, timeout_s)}; {hint}"

    def _probe(self, timeout_s: float) -> tuple[bool, str]:
        page = self._client.with_options(timeout=timeout_s, max_retries=0).models.list()
        data = getattr(page, "data", None)
        if not isinstance(data, list):
            return False, f"{self.base_url}/models gave no model list; is it an OpenAI-compatible endpoint?"
        served = [str(getattr(m, "id", m)) for m in data]
        shown = ", ".join(served[:10]) + (f" (+{len(served) - 10} more)" if len(served) > 10 else "")
        if served and self.config.model not in served:
            return False, (f"the server at {self.base_url} is up but does not serve model {self.config.model!r}; "
                           f"served models: {shown}; check KAGENT_LLM_MODEL / --llm-model")
        return True, f"model {self.config.model} answers at {self.base_url}; served models: {shown or 'none listed'}"

    def _check_budget(self) -> None:
        budget = self.config.token_budget
        if budget is not None and self.tokens_used >= budget:
            raise LLMBudgetExhausted(f"token budget spent: {self.tokens_used} of {budget} tokens used "
                                     f"in {_plural(self.calls, 'call')}")

    def _retrying(self) -> Retrying:
        return Retrying(stop=stop_after_attempt(self.config.max_attempts), wait=self.wait,
                        retry=retry_if_exception(is_retryable), sleep=self._sleep, reraise=True,
                        before_sleep=self._log_retry)

    def _log_retry(self, retry_state: RetryCallState) -> None:
        exc = retry_state.outcome.exception()
        delay = retry_state.next_action.sleep if retry_state.next_action else 0.0
        log.info("LLM attempt %d failed: %s; retrying in %.1f s", retry_state.attempt_number,
                 describe(exc, self.config.timeout_s), delay)

    def _send(self, messages: list[dict[str, str]]) -> ChatCompletion:
        response = self._client.chat.completions.create(
            model=self.config.model, messages=messages, temperature=self.config.temperature,
            max_tokens=self.config.max_tokens)
        if not isinstance(response, pydantic.BaseModel):  # the SDK hands back raw text it could not parse
            raise MalformedResponse(f"expected a chat completion, got {str(response)[:200]!r}")
        return response

    def _completion(self, response: ChatCompletion, messages: list[dict[str, str]],
                    seconds: float, attempts: int) -> Completion:
        choices = getattr(response, "choices", None) or []
        first = choices[0] if choices else None
        message = getattr(first, "message", None)
        text = getattr(message, "content", None) or ""
        usage = getattr(response, "usage", None)
        if usage is not None and usage.prompt_tokens is not None and usage.completion_tokens is not None:
            prompt_tokens, completion_tokens = usage.prompt_tokens, usage.completion_tokens
        else:  # the server kept quiet: about four characters a token
            prompt_tokens = sum(len(str(m.get("content") or "")) for m in messages) // 4
            completion_tokens = len(text) // 4
        return Completion(text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                          finish_reason=getattr(first, "finish_reason", None), seconds=seconds, attempts=attempts)

    def _failure(self, exc: Exception, attempts: int) -> LLMUnavailable:
        """The LLMUnavailable for the last error, with what to check."""
        model, url = self.config.model, self.base_url
        if isinstance(exc, openai.APIStatusError) and not is_retryable(exc):
            code, said = exc.status_code, server_message(exc)
            if code in (401, 403):
                key = "no API key is set" if self.config.api_key in (None, NO_KEY) else "check the key"
                return LLMUnavailable(f"the server at {url} refused the request (HTTP {code}: {said}); "
                                      f"{key} (OPENAI_API_KEY / --llm-api-key)")
            if code == 404:
                return LLMUnavailable(f"the server at {url} has no model {model!r} or no such endpoint "
                                      f"(HTTP 404: {said}); check the model name (KAGENT_LLM_MODEL / --llm-model) "
                                      f"and that the URL ends in /v1")
            return LLMUnavailable(f"the server at {url} rejected the request for model {model!r} "
                                  f"(HTTP {code}: {said})")
        hint = f"is {url} an OpenAI-compatible endpoint (usually ending in /v1)?" if isinstance(exc, MALFORMED) \
            else HINT
        return LLMUnavailable(f"no answer from model {model!r} at {url} after {_plural(attempts, 'attempt')}; "
                              f"last error: {describe(exc, self.config.timeout_s)}; {hint}")
