"""Credentials stay secret: URL userinfo becomes the API key and is never shown; keys are registered
with sandbox.redact; prompts and error messages are redacted; hints name flags that exist."""

from __future__ import annotations

import base64
import re

import pytest
import typer.main

from kernel_agent.cli import app
from kernel_agent.llm.client import LLMClient
from kernel_agent.llm.failures import LLMUnavailable
from kernel_agent.llm.settings import LLMConfig, load_llm_config
from sandbox import redact
from sandbox.redact import MASK
from tests.llm.fake_server import FakeOpenAI, answer, status
from tests.llm.support import MESSAGES, client_for, free_port


def with_userinfo(url: str, userinfo: str) -> str:
    return url.replace("http://", f"http://{userinfo}@", 1)


def test_url_credentials_become_the_bearer_key_and_never_show(sleeps):
    with FakeOpenAI([answer("ok"), status(503)]) as server:
        url = with_userinfo(server.base_url, "alice:url-pass%2Fword-0451")
        config = LLMConfig(base_url=url, model="test-model", api_key="not-needed")
        client = LLMClient(config, sleep=sleeps)
        assert client.complete(MESSAGES).text == "ok"
        with pytest.raises(LLMUnavailable) as caught:
            client.complete(MESSAGES)
    # sent as the key OpenAI-compatible servers read, not as basic auth (which would replace it)
    assert server.headers[0]["authorization"] == "Bearer url-pass/word-0451"
    assert config.display_url == server.base_url
    message = str(caught.value)
    assert server.base_url in message and "url-pass" not in message and "alice" not in message
    assert redact("it said url-pass/word-0451 and url-pass%2Fword-0451", env={}) == f"it said {MASK} and {MASK}"


def test_a_lone_user_name_is_the_key_and_a_configured_key_wins(sleeps):
    with FakeOpenAI([answer("ok")]) as server:
        client_for(with_userinfo(server.base_url, "sk-in-the-url-77"), sleeps).complete(MESSAGES)
        LLMClient(LLMConfig(base_url=with_userinfo(server.base_url, "bob:other-pass-88"), model="test-model",
                            api_key="sk-configured-99"), sleep=sleeps).complete(MESSAGES)
    assert [h["authorization"] for h in server.headers] == ["Bearer sk-in-the-url-77", "Bearer sk-configured-99"]
    assert not any(h["authorization"].startswith("Basic") for h in server.headers)
    assert base64.b64encode(b"bob:other-pass-88").decode() not in str(server.headers)


def test_a_key_from_the_config_file_is_registered_and_the_placeholder_is_not(tmp_path):
    file = tmp_path / "config.toml"
    file.write_text('[llm]\nmodel = "m"\napi_key = "sk-from-the-file-0123"\n')
    assert load_llm_config(config_file=file, env={}).api_key == "sk-from-the-file-0123"
    assert redact("key=sk-from-the-file-0123", env={}) == f"key={MASK}"
    load_llm_config(model="m", base_url="http://localhost:8000/v1", env={"HOME": str(tmp_path)})
    assert redact("the key is not-needed", env={}) == "the key is not-needed"


def test_prompts_and_server_echoes_are_redacted(sleeps):
    key = "sk-echoed-by-the-server-4242"
    leaky = [{"role": "user", "content": f"the compile log said: token {key} rejected"}]
    body = {"error": {"message": f"invalid api key {key}"}}
    with FakeOpenAI([answer("ok"), status(401, body=body)]) as server:
        client = LLMClient(LLMConfig(base_url=server.base_url, model="test-model", api_key=key), sleep=sleeps)
        client.complete(leaky)
        with pytest.raises(LLMUnavailable) as caught:
            client.complete(MESSAGES)
    assert server.requests[0]["messages"][0]["content"] == f"the compile log said: token {MASK} rejected"
    assert key not in str(caught.value) and f"invalid api key {MASK}" in str(caught.value)


def optimize_flags() -> set[str]:
    command = typer.main.get_command(app).commands["optimize"]  # type: ignore[attr-defined]
    return {opt for param in command.params for opt in param.opts if opt.startswith("--")}


def test_hints_name_only_flags_that_exist(sleeps):
    messages = []
    for code in (401, 404):
        with FakeOpenAI([status(code)]) as server:
            with pytest.raises(LLMUnavailable) as caught:
                client_for(server.base_url, sleeps).complete(MESSAGES)
            messages.append(str(caught.value))
    with FakeOpenAI([answer("unused")], models=("other",)) as server:
        messages.append(client_for(server.base_url, sleeps).probe()[1])
    with pytest.raises(LLMUnavailable) as caught:
        client_for(f"http://127.0.0.1:{free_port()}/v1", sleeps, max_attempts=1).complete(MESSAGES)
    messages.append(str(caught.value))
    named = {flag for message in messages for flag in re.findall(r"--[a-z][a-z-]*", message)}
    assert named and named <= optimize_flags(), (named - optimize_flags(), messages)
    assert all("OPENAI_API_KEY" in m for m in messages[:1]) and "KAGENT_LLM_MODEL" in messages[1]


def test_a_password_holding_an_at_sign_is_taken_whole():
    config = LLMConfig(base_url="http://carol:pass@word-2718@llm.example:8443/v1", model="m")
    assert (config.display_url, config.request_url) == ("http://llm.example:8443/v1",) * 2
    assert config.request_key == "pass@word-2718"
