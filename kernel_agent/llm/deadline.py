"""Run a blocking call in a worker thread and stop waiting for it at a deadline.

An HTTP client's timeout bounds each read, not the request: a server that sends one byte every few
seconds never times out. Waiting on a thread with a timeout bounds the whole call. The abandoned
call is told to stop (`cancelled`) and a daemon thread never keeps the process alive.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class DeadlinePassed(Exception):
    """The call was still running at its deadline and was abandoned."""

    def __init__(self, seconds: float):
        super().__init__(f"no complete answer within {round(seconds, 1):g} s")
        self.seconds = seconds  # what the call was given


class Cancelled(Exception):
    """Raised inside an abandoned call that noticed it was abandoned; nobody waits for it."""


class _Outcome(Generic[T]):
    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: T | None = None
        self.error: BaseException | None = None


def call_before(call: Callable[[threading.Event], T], deadline: float) -> T:
    """`call(cancelled)`'s result or exception, or DeadlinePassed at `deadline` (time.monotonic()).

    `call` should check `cancelled` between the pieces of its work and stop once it is set."""
    cancelled = threading.Event()
    outcome: _Outcome[T] = _Outcome()

    def run() -> None:
        try:
            outcome.value = call(cancelled)
        except BaseException as exc:
            outcome.error = exc
        finally:
            outcome.done.set()

    given = max(0.0, deadline - time.monotonic())
    threading.Thread(target=run, daemon=True, name="kagent-llm-call").start()
    try:
        finished = outcome.done.wait(given)
    except BaseException:  # Ctrl-C while waiting: the call is abandoned too
        cancelled.set()
        raise
    if not finished:
        cancelled.set()
        raise DeadlinePassed(given)
    if outcome.error is not None:
        raise outcome.error
    return outcome.value  # type: ignore[return-value]  # set when no error was
