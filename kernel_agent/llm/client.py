"""A chat client for any OpenAI-compatible server, with retries, backoff, deadlines and a token budget.

The SDK's own retries are off: tenacity retries rate limits, server errors, timeouts, lost
connections and malformed bodies, honouring `Retry-After`. Client errors (400, 401, 403, 404) fail at
once. Each attempt is bounded as a whole (timeout_s, `deadline.py`), not per read, and so is the call
(max_attempts * timeout_s, or the caller's deadline if sooner): no attempt starts after it, a running
one is abandoned at it, no backoff wait passes it. Replies are read raw, capped and checked field by
field (`reply.py`). Every failure surfaces as an `LLMError` whose message says what to check; prompts
and messages pass through `sandbox.redact`, so neither carries a credential.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, cast

from tenacity import RetryCallState, Retrying, retry_if_exception

from sandbox import redact

from ..seams import Completion
from .deadline import Cancelled, call_before
from .failures import (
    AnswerCutOff,
    BackoffWait,
    LLMBudgetExhausted,
    LLMUnavailable,
    OutOfTime,
    describe,
    is_malformed,
    is_retryable,
    sdk,
    server_message,
)
from .grammar import request_fields
from .reply import MalformedResponse, Reply, parse_reply, read_capped
from .settings import DEFAULT_BASE_URL, NO_KEY, LLMConfig

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 5.0
READ_GRACE_S = 1.0  # the SDK's per-read timeout trails the attempt's deadline, which is what ends a wait
HINT = "is the server running? check --llm-base-url / OPENAI_BASE_URL"
KEY_HINT = "OPENAI_API_KEY or the config file's [llm] api_key"
MODEL_HINT = "--llm MODEL, KAGENT_LLM_MODEL or the config file's [llm] model"
SEED_STRIDE = 100_000  # request seeds of runs with another --seed start this far apart
SEED_LIMIT = 2**31  # request seeds wrap below this: servers read them as 32-bit (llama.cpp) or 64-bit integers


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class LLMClient:
    """Chat completions against one model; counts calls and tokens across a run."""

    def __init__(self, config: LLMConfig, sleep: Callable[[float], None] = time.sleep, seed: int = 0):
        self.config = config
        self.seed = seed  # the run's: its calls send seeds of their own, SEED_STRIDE apart from another seed's
        self.base_url = config.display_url or DEFAULT_BASE_URL  # as shown: without credentials
        self.tokens_used = 0
        self.calls = 0
        self.wait = BackoffWait()
        self._sleep = sleep
        self._client = sdk().OpenAI(base_url=config.request_url, api_key=config.request_key,
                                     timeout=config.timeout_s, max_retries=0)

    def call_limit_s(self, deadline: float | None = None) -> float:
        """The most seconds a call started now may take: max_attempts * timeout_s, or less before `deadline`."""
        own = self.config.max_attempts * self.config.timeout_s
        return max(0.0, min(own, deadline - time.monotonic())) if deadline is not None else own

    def complete(self, messages: list[dict[str, str]], deadline: float | None = None,
                 temperature: float | None = None, max_tokens: int | None = None,
                 grammar: str | None = None) -> Completion:
        """One chat completion, retried as needed, done by `deadline` (a time.monotonic() value) and
        by the call's own limit; raises LLMBudgetExhausted or LLMUnavailable. `temperature` and
        `max_tokens` override the config's for this call (max_tokens only downwards); `grammar` (GBNF,
        `grammar.py`) constrains the answer where the config says the server takes one."""
        self._check_budget()
        began = time.monotonic()
        end = began + self.call_limit_s(deadline)
        sent = [{**m, "content": redact(m["content"])} for m in messages]
        attempts = 0
        # a seed of its own for each call (its HTTP retries keep it): a server that seeds every request
        # alike (llama.cpp's) would give a re-ask the same answer, word for word, even when hotter; and
        # runs with another --seed ask with other seeds (another sample of the same prompts)
        sampling = {"temperature": self.config.temperature if temperature is None else temperature,
                    "max_tokens": min(self.config.max_tokens, max_tokens or self.config.max_tokens),
                    "seed": (self.seed * SEED_STRIDE + self.calls + 1) % SEED_LIMIT}
        extra = request_fields(self.config.grammar, grammar)

        def attempt() -> Reply:
            nonlocal attempts
            if time.monotonic() >= end:
                raise OutOfTime
            attempts += 1
            return self._attempt(sent, min(time.monotonic() + self.config.timeout_s, end), sampling, extra)

        try:
            reply = self._retrying(end)(attempt)
        except OutOfTime:
            raise self._out_of_time(began, deadline, attempts) from None
        except Exception as exc:  # whatever a broken server makes of an attempt: retried, then reported
            raise self._failure(exc, attempts, began, deadline) from exc
        completion = self._completion(reply, sent, time.monotonic() - began, attempts)
        self.calls += 1
        self.tokens_used += completion.prompt_tokens + completion.completion_tokens
        return completion

    def _retrying(self, end: float) -> Retrying:
        """tenacity's retry loop: retryable errors only, at most max_attempts, and no wait that would
        reach `end`. Stop and wait read the same planned delay per attempt, so it does not matter in
        which order a tenacity version asks them."""
        planned: dict[int, float] = {}

        def delay(state: RetryCallState) -> float:
            number = state.attempt_number
            if number not in planned:
                planned[number] = self.wait.delay(number, state.outcome.exception() if state.outcome else None)
            return planned[number]

        def stop(state: RetryCallState) -> bool:
            return state.attempt_number >= self.config.max_attempts or time.monotonic() + delay(state) >= end

        return Retrying(stop=stop, wait=delay, retry=retry_if_exception(is_retryable), sleep=self._sleep,
                        reraise=True, before_sleep=self._log_retry)

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        log.info("LLM attempt %d failed: %s; retrying in %.1f s", state.attempt_number,
                 redact(describe(exc, self.config.timeout_s)) if exc else "?", wait)

    def probe(self) -> tuple[bool, str]:
        """(True, what answers) or (False, why not), for `kagent doctor`. Never raises."""
        timeout_s = min(PROBE_TIMEOUT_S, self.config.timeout_s)
        try:
            return call_before(lambda _: self._probe(timeout_s), time.monotonic() + timeout_s)
        except Exception as exc:
            hint = HINT if isinstance(exc, sdk().APIConnectionError) else "check the URL, the key and the server"
            return False, redact(f"cannot list the models at {self.base_url}: {describe(exc, timeout_s)}; {hint}")

    def _probe(self, timeout_s: float) -> tuple[bool, str]:
        page = self._client.with_options(timeout=timeout_s, max_retries=0).models.list()
        data = getattr(page, "data", None)
        if not isinstance(data, list):
            return False, f"{self.base_url}/models gave no model list; is it an OpenAI-compatible endpoint?"
        served = [redact(str(getattr(m, "id", m)))[:100] for m in data]
        shown = ", ".join(served[:10]) + (f" (+{len(served) - 10} more)" if len(served) > 10 else "")
        if served and self.config.model not in served:
            return False, (f"the server at {self.base_url} is up but does not serve model {self.config.model!r}; "
                           f"served models: {shown}; check {MODEL_HINT}")
        return True, f"model {self.config.model} answers at {self.base_url}; served models: {shown or 'none listed'}"

    def _check_budget(self) -> None:
        budget = self.config.token_budget
        if budget is not None and self.tokens_used >= budget:
            raise LLMBudgetExhausted(f"token budget spent: {self.tokens_used} of {budget} tokens used "
                                     f"in {_plural(self.calls, 'call')}")

    def _attempt(self, messages: list[dict[str, str]], deadline: float, sampling: dict[str, float],
                 extra: dict[str, str]) -> Reply:
        """One HTTP attempt, given up at `deadline` however the server dribbles."""
        read_timeout_s = max(0.0, deadline - time.monotonic()) + READ_GRACE_S
        return call_before(lambda cancelled: self._post(messages, read_timeout_s, cancelled, sampling, extra),
                           deadline)

    def _post(self, messages: list[dict[str, str]], timeout_s: float, cancelled: threading.Event,
              sampling: dict[str, float], extra: dict[str, str]) -> Reply:
        """Runs in the attempt's thread: the request, the raw body (capped) and its checked fields."""
        with self._client.chat.completions.with_streaming_response.create(
                model=self.config.model, messages=cast("list[ChatCompletionMessageParam]", messages),
                temperature=sampling["temperature"], max_tokens=int(sampling["max_tokens"]),
                seed=int(sampling["seed"]), timeout=timeout_s, extra_body=extra or None) as response:
            try:
                body = read_capped(_until_cancelled(response.iter_bytes(), cancelled))
            except (MalformedResponse, Cancelled):
                raise
            except Exception as exc:  # the HTTP library's own (a broken connection): it varies by SDK version
                raise AnswerCutOff(f"the connection broke while reading the answer ({type(exc).__name__}: "
                                   f"{exc})") from exc
        return parse_reply(body)

    def _completion(self, reply: Reply, messages: list[dict[str, str]], seconds: float, attempts: int) -> Completion:
        prompt_tokens, completion_tokens = reply.prompt_tokens, reply.completion_tokens
        if prompt_tokens is None or completion_tokens is None:  # the server kept quiet: about four characters a token
            prompt_tokens = sum(len(m["content"]) for m in messages) // 4
            completion_tokens = len(reply.text) // 4
        return Completion(text=reply.text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                          finish_reason=reply.finish_reason, seconds=seconds, attempts=attempts)

    def _why_stopped(self, began: float, deadline: float | None) -> str:
        own = self.config.max_attempts * self.config.timeout_s
        if deadline is not None and deadline < began + own:
            return "the run's time limit"
        return f"the call's limit of {own:g} s (max_attempts * timeout_s)"

    def _out_of_time(self, began: float, deadline: float | None, attempts: int) -> LLMUnavailable:
        when = f"after {_plural(attempts, 'attempt')}" if attempts else "before the first attempt"
        return LLMUnavailable(f"no time left to ask model {self.config.model!r} at {self.base_url}: "
                              f"{self._why_stopped(began, deadline)} was reached {when}")

    def _failure(self, exc: Exception, attempts: int, began: float, deadline: float | None) -> LLMUnavailable:
        """The LLMUnavailable for the last error, with what to check; no credential in it."""
        return LLMUnavailable(redact(self._failure_text(exc, attempts, began, deadline)))

    def _failure_text(self, exc: Exception, attempts: int, began: float, deadline: float | None) -> str:
        model, url = self.config.model, self.base_url
        if isinstance(exc, sdk().APIStatusError) and not is_retryable(exc):
            code, said = exc.status_code, server_message(exc)
            if code in (401, 403):
                key = "no API key is set" if self.config.request_key == NO_KEY else "check the key"
                return f"the server at {url} refused the request (HTTP {code}: {said}); {key} ({KEY_HINT})"
            if code == 404:
                return (f"the server at {url} has no model {model!r} or no such endpoint (HTTP 404: {said}); "
                        f"check the model name ({MODEL_HINT}) and that the URL ends in /v1")
            return f"the server at {url} rejected the request for model {model!r} (HTTP {code}: {said})"
        hint = f"is {url} an OpenAI-compatible endpoint (usually ending in /v1)?" if is_malformed(exc) \
            else HINT
        stopped = ""
        if is_retryable(exc) and attempts < self.config.max_attempts:  # time ran out before the attempts did
            stopped = f", stopped by {self._why_stopped(began, deadline)}"
        return (f"no answer from model {model!r} at {url} after {_plural(attempts, 'attempt')} in "
                f"{time.monotonic() - began:.1f} s{stopped}; last error: {describe(exc, self.config.timeout_s)}; "
                f"{hint}")


def _until_cancelled(chunks: Iterable[bytes], cancelled: threading.Event) -> Iterator[bytes]:
    """The chunks, until the attempt is abandoned: then Cancelled ends the thread's read."""
    for chunk in chunks:
        if cancelled.is_set():
            raise Cancelled
        yield chunk
