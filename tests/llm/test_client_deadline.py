"""A call is bounded as a whole: a server that drips or says nothing is cut off at the attempt's
limit (timeout_s), the call's (max_attempts * timeout_s) or the caller's deadline, whichever is first."""

from __future__ import annotations

import threading
import time

import pytest

from kernel_agent.llm.client import LLMClient
from kernel_agent.llm.failures import LLMUnavailable
from kernel_agent.llm.settings import LLMConfig
from tests.llm.fake_server import FakeOpenAI, answer, drip, hang, status
from tests.llm.support import MESSAGES, client_for


def timed_failure(client: LLMClient, deadline: float | None = None) -> tuple[float, str]:
    began = time.monotonic()
    with pytest.raises(LLMUnavailable) as caught:
        client.complete(MESSAGES, deadline=deadline)
    return time.monotonic() - began, str(caught.value)


def call_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "kagent-llm-call"]


def test_a_dripping_server_is_cut_off_at_timeout_s_not_when_the_drip_ends(sleeps):
    with FakeOpenAI([drip(0.5)]) as server:  # the whole answer would take ~2 minutes
        seconds, message = timed_failure(client_for(server.base_url, sleeps, timeout_s=2.0, max_attempts=1))
        assert 1.9 <= seconds <= 3.0, seconds
        assert "no complete answer within 2 s (timeout)" in message and "1 attempt" in message
        waited = time.monotonic() + 3
        while call_threads() and time.monotonic() < waited:  # the abandoned read stops at its next byte
            time.sleep(0.05)
        assert not call_threads()


def test_the_callers_deadline_cuts_a_call_short(sleeps):
    with FakeOpenAI([drip(0.5)]) as server:
        client = client_for(server.base_url, sleeps)  # 120 s an attempt, 5 attempts
        seconds, message = timed_failure(client, deadline=time.monotonic() + 1.5)
    assert 1.4 <= seconds <= 2.5, seconds
    assert "the run's time limit" in message and len(server.requests) == 1


def test_a_silent_server_is_cut_off_at_the_deadline(sleeps):
    with FakeOpenAI([hang(60)]) as server:
        seconds, _ = timed_failure(client_for(server.base_url, sleeps), deadline=time.monotonic() + 1.0)
    assert 0.9 <= seconds <= 2.0, seconds


def test_no_attempt_starts_after_the_deadline(sleeps):
    with FakeOpenAI([answer("too late")]) as server:
        seconds, message = timed_failure(client_for(server.base_url, sleeps), deadline=time.monotonic() - 1)
    assert seconds < 0.5 and server.requests == [] and "no time left" in message


def test_backoff_never_sleeps_past_the_deadline(sleeps):
    with FakeOpenAI([status(503, retry_after=30), answer("after the wait")]) as server:
        _, message = timed_failure(client_for(server.base_url, sleeps), deadline=time.monotonic() + 5)
    assert sleeps.delays == [] and len(server.requests) == 1
    assert "1 attempt" in message and "stopped by the run's time limit" in message


def test_the_whole_call_lasts_at_most_max_attempts_times_timeout_s():
    with FakeOpenAI([status(503, retry_after=1.5)]) as server:
        client = LLMClient(LLMConfig(base_url=server.base_url, model="test-model", timeout_s=1.0, max_attempts=3))
        assert client.call_limit_s() == 3.0
        seconds, message = timed_failure(client)  # waits 1.5 s once; a second wait would end at 3 s
    assert 1.4 <= seconds <= 2.5 and len(server.requests) == 2
    assert "stopped by the call's limit of 3 s" in message


def test_call_limit_is_the_sooner_of_its_own_and_the_deadline(sleeps):
    client = client_for("http://127.0.0.1:9/v1", sleeps, timeout_s=10.0, max_attempts=3)
    assert client.call_limit_s() == 30.0
    assert 4.0 < client.call_limit_s(time.monotonic() + 5) <= 5.0
    assert client.call_limit_s(time.monotonic() - 5) == 0.0
