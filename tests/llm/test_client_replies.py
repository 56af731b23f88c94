"""A 200 reply that is not a usable chat completion is a retried, then failed, call: never a crash.

Each broken shape is served twice (both attempts of one call fail with LLMUnavailable), then a good
answer (the next call succeeds): the client neither crashes nor hands the proposer a non-string.
"""

from __future__ import annotations

import json
import time

import pytest

from kernel_agent.llm.failures import LLMUnavailable
from kernel_agent.llm.reply import MAX_BODY_BYTES
from tests.llm.fake_server import (
    FakeOpenAI,
    Step,
    answer,
    completion_json,
    huge,
    json_reply,
    raw,
)
from tests.llm.support import MESSAGES, client_for


def good() -> dict:
    return completion_json(answer("fine"), "test-model")


def with_message(**message) -> dict:
    data = good()
    data["choices"][0]["message"] = message
    return data


def with_usage(usage) -> dict:
    return {**good(), "usage": usage}


BROKEN: dict[str, Step] = {
    "not-utf8": raw(json.dumps(good()).encode().replace(b"fine", b"fi\xff\xfene")),
    "content-number": json_reply(with_message(role="assistant", content=5)),
    "content-null": json_reply(with_message(role="assistant", content=None)),
    "content-list": json_reply(with_message(role="assistant", content=[{"type": "text", "text": "fine"}])),
    "choices-object": json_reply({**good(), "choices": {"0": good()["choices"][0]}}),
    "choices-string": json_reply({**good(), "choices": "fine"}),
    "choice-string": json_reply({**good(), "choices": ["fine"]}),
    "message-missing": json_reply({**good(), "choices": [{"index": 0, "finish_reason": "stop"}]}),
    "finish-reason-number": json_reply({**good(), "choices": [{**good()["choices"][0], "finish_reason": 7}]}),
    "usage-strings": json_reply(with_usage({"prompt_tokens": "10", "completion_tokens": "20"})),
    "usage-negative": json_reply(with_usage({"prompt_tokens": -10, "completion_tokens": 20})),
    "usage-bool": json_reply(with_usage({"prompt_tokens": True, "completion_tokens": 20})),
    "usage-list": json_reply(with_usage([10, 20])),
    "json-list": json_reply([good()]),
    "json-string": json_reply("fine"),
    "json-number": json_reply(42),
    "json-null": json_reply(None),
    "error-with-200": json_reply({"error": {"message": "model overloaded, try later"}}),
    "huge": huge(4 * MAX_BODY_BYTES),
}


@pytest.mark.parametrize("shape", BROKEN, ids=str)
def test_a_broken_reply_is_retried_then_fails_as_unavailable(sleeps, shape):
    with FakeOpenAI([BROKEN[shape], BROKEN[shape], answer("fine")], repeat_last=False) as server:
        client = client_for(server.base_url, sleeps, max_attempts=2)
        with pytest.raises(LLMUnavailable) as caught:
            client.complete(MESSAGES)
        message = str(caught.value)
        assert "malformed response" in message and "2 attempts" in message, message
        assert len(server.requests) == 2 and len(sleeps.delays) == 1  # retried once
        assert (client.calls, client.tokens_used) == (0, 0)
        done = client.complete(MESSAGES)  # the server is sane again: so is the client
    assert (done.text, done.attempts, client.calls) == ("fine", 1, 1)


def test_a_200_error_body_quotes_the_server(sleeps):
    with FakeOpenAI([BROKEN["error-with-200"]]) as server, \
            pytest.raises(LLMUnavailable, match="model overloaded, try later"):
        client_for(server.base_url, sleeps, max_attempts=1).complete(MESSAGES)


def test_missing_token_counts_inside_usage_are_estimated(sleeps):
    with FakeOpenAI([json_reply(with_usage({"prompt_tokens": None, "total_tokens": 30}))]) as server:
        done = client_for(server.base_url, sleeps).complete([{"role": "user", "content": "y" * 80}])
    assert (done.text, done.prompt_tokens, done.completion_tokens) == ("fine", 20, 1)


def test_a_huge_body_is_not_read_to_the_end(sleeps):
    size = 256 * 2**20
    with FakeOpenAI([huge(size)]) as server:
        with pytest.raises(LLMUnavailable, match="over 4 MiB"):
            client_for(server.base_url, sleeps, max_attempts=1).complete(MESSAGES)
        server.stop()  # ends a handler still writing
        waited = time.monotonic() + 5
        while not server.huge_sent and time.monotonic() < waited:  # the handler notes it as it ends
            time.sleep(0.01)
    assert len(server.huge_sent) == 1 and server.huge_sent[0] < 64 * 2**20  # the rest sat in socket buffers


@pytest.mark.parametrize("code", [401, 500])
def test_an_error_status_with_a_body_that_is_not_utf8_is_reported(sleeps, code):
    with FakeOpenAI([raw(b'{"error": {"message": "bad \xff\xfe key"}}', code=code)]) as server, \
            pytest.raises(LLMUnavailable, match=f"HTTP {code}: bad \ufffd\ufffd key"):
        client_for(server.base_url, sleeps, max_attempts=2).complete(MESSAGES)
