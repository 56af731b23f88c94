"""The LLM client against a real HTTP server on localhost; sleeps are recorded, not slept."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from kernel_agent.llm.failures import BackoffWait, LLMBudgetExhausted, LLMUnavailable
from kernel_agent.llm.settings import LLMConfig, LLMConfigError, load_llm_config
from tests.llm.fake_server import (
    FakeOpenAI,
    answer,
    empty,
    hang,
    malformed,
    status,
    truncated,
)
from tests.llm.support import MESSAGES, Recorder, client_for, free_port

# ---- answers


def test_normal_answer_counts_tokens(sleeps):
    with FakeOpenAI([answer("__global__ void k() {}", prompt_tokens=12, completion_tokens=34)]) as server:
        client = client_for(server.base_url, sleeps, temperature=0.3, max_tokens=100)
        done = client.complete(MESSAGES)
    assert done.text == "__global__ void k() {}"
    assert (done.prompt_tokens, done.completion_tokens, done.finish_reason, done.attempts) == (12, 34, "stop", 1)
    assert done.seconds > 0
    assert (client.tokens_used, client.calls) == (46, 1)
    assert sleeps.delays == []
    body = server.requests[0]
    assert body["model"] == "test-model" and body["messages"] == MESSAGES
    assert (body["temperature"], body["max_tokens"]) == (0.3, 100)
    assert server.headers[0]["authorization"] == "Bearer not-needed"  # a local server needs no key


def test_truncated_answer_passes_length_through(sleeps):
    with FakeOpenAI([truncated("__global__ void k() { int i")]) as server:
        done = client_for(server.base_url, sleeps).complete(MESSAGES)
    assert (done.text, done.finish_reason, done.attempts) == ("__global__ void k() { int i", "length", 1)


def test_no_choices_gives_empty_text(sleeps):
    with FakeOpenAI([empty()]) as server:
        done = client_for(server.base_url, sleeps).complete(MESSAGES)
    assert (done.text, done.finish_reason, done.attempts) == ("", None, 1)
    assert len(server.requests) == 1


def test_missing_usage_is_estimated(sleeps):
    with FakeOpenAI([answer("x" * 40, usage=False)]) as server:
        client = client_for(server.base_url, sleeps)
        done = client.complete([{"role": "user", "content": "y" * 80}])
    assert (done.prompt_tokens, done.completion_tokens) == (20, 10)
    assert client.tokens_used == 30


# ---- retries


def test_429_waits_exactly_retry_after(sleeps):
    with FakeOpenAI([status(429, retry_after=2), answer("ok")]) as server:
        done = client_for(server.base_url, sleeps).complete(MESSAGES)
    assert done.text == "ok" and done.attempts == 2
    assert sleeps.delays == [2.0]
    assert len(server.requests) == 2


def test_retry_after_is_capped_at_60_s(sleeps):
    with FakeOpenAI([status(503, retry_after=3600), answer("ok")]) as server:
        done = client_for(server.base_url, sleeps).complete(MESSAGES)
    assert done.text == "ok"
    assert sleeps.delays == [60.0]


def test_500_twice_then_answer_backs_off(sleeps):
    with FakeOpenAI([status(500), status(500), answer("third time")]) as server:
        client = client_for(server.base_url, sleeps)
        done = client.complete(MESSAGES)
    assert (done.text, done.attempts) == ("third time", 3)
    assert len(server.requests) == 3
    first, second = sleeps.delays
    assert 0.25 <= first <= 0.5 and 0.5 <= second <= 1.0  # base 0.5 s, doubling, with jitter
    assert client.calls == 1 and client.tokens_used == 30


def test_hang_past_timeout_then_answer(sleeps):
    with FakeOpenAI([hang(10), answer("after the hang")]) as server:
        began = time.perf_counter()
        done = client_for(server.base_url, sleeps, timeout_s=0.5).complete(MESSAGES)
        elapsed = time.perf_counter() - began
    assert (done.text, done.attempts) == ("after the hang", 2)
    assert len(server.requests) == 2 and len(sleeps.delays) == 1
    assert elapsed < 3.0


@pytest.mark.parametrize("content_type", ["application/json", "text/html"])
def test_malformed_body_then_answer(sleeps, content_type):
    with FakeOpenAI([malformed(content_type), answer("parsed")]) as server:
        done = client_for(server.base_url, sleeps).complete(MESSAGES)
    assert (done.text, done.attempts) == ("parsed", 2)
    assert len(server.requests) == 2


def test_all_attempts_failing_names_url_and_attempts(sleeps):
    with FakeOpenAI([status(503)]) as server:  # the last step repeats
        client = client_for(server.base_url, sleeps, max_attempts=3)
        with pytest.raises(LLMUnavailable) as caught:
            client.complete(MESSAGES)
    message = str(caught.value)
    assert server.base_url in message and "3 attempts" in message and "503" in message
    assert "OPENAI_BASE_URL" in message
    assert len(server.requests) == 3 and len(sleeps.delays) == 2
    assert client.calls == 0 and client.tokens_used == 0


def test_malformed_every_time_says_so(sleeps):
    with FakeOpenAI([malformed()]) as server, pytest.raises(LLMUnavailable, match="malformed response") as caught:
        client_for(server.base_url, sleeps, max_attempts=2).complete(MESSAGES)
    assert "2 attempts" in str(caught.value) and len(server.requests) == 2


@pytest.mark.parametrize("code, words", [(400, "rejected"), (401, "OPENAI_API_KEY"), (403, "OPENAI_API_KEY"),
                                         (404, "test-model")])
def test_client_errors_fail_at_once(sleeps, code, words):
    body = {"error": {"message": f"server says {code}"}}
    with FakeOpenAI([status(code, body=body), answer("never reached")]) as server, \
            pytest.raises(LLMUnavailable) as caught:
        client_for(server.base_url, sleeps).complete(MESSAGES)
    message = str(caught.value)
    assert words in message and f"server says {code}" in message and server.base_url in message
    assert len(server.requests) == 1 and sleeps.delays == []


def test_unreachable_port_fails_quickly(sleeps):
    url = f"http://127.0.0.1:{free_port()}/v1"
    began = time.perf_counter()
    with pytest.raises(LLMUnavailable) as caught:
        client_for(url, sleeps, timeout_s=2.0).complete(MESSAGES)
    assert time.perf_counter() - began < 3.0
    message = str(caught.value)
    assert url in message and "5 attempts" in message and "could not connect" in message
    assert len(sleeps.delays) == 4


def test_script_can_run_out(sleeps):
    with FakeOpenAI([answer("once")], repeat_last=False) as server:
        client = client_for(server.base_url, sleeps, max_attempts=1)
        assert client.complete(MESSAGES).text == "once"
        with pytest.raises(LLMUnavailable, match="script ran out"):
            client.complete(MESSAGES)


# ---- budget


def test_token_budget_stops_the_next_call(sleeps):
    with FakeOpenAI([answer("a"), answer("b")]) as server:
        client = client_for(server.base_url, sleeps, token_budget=30)
        assert client.complete(MESSAGES).text == "a"
        assert client.tokens_used == 30
        with pytest.raises(LLMBudgetExhausted, match="30 of 30"):
            client.complete(MESSAGES)
    assert len(server.requests) == 1  # the refused call never reached the server


def test_budget_allows_calls_until_spent(sleeps):
    with FakeOpenAI([answer("a")]) as server:
        client = client_for(server.base_url, sleeps, token_budget=50)
        client.complete(MESSAGES)
        client.complete(MESSAGES)  # 30 < 50: still allowed, ends at 60
        with pytest.raises(LLMBudgetExhausted):
            client.complete(MESSAGES)
    assert (client.calls, client.tokens_used, len(server.requests)) == (2, 60, 2)


# ---- probe


def test_probe_finds_the_model(sleeps):
    with FakeOpenAI([answer("unused")], models=("other", "test-model")) as server:
        ok, said = client_for(server.base_url, sleeps).probe()
    assert ok
    assert "test-model" in said and server.base_url in said and "other" in said
    assert server.paths == ["GET /v1/models"] and server.requests == []


def test_probe_reports_a_missing_model(sleeps):
    with FakeOpenAI([answer("unused")], models=("llama3",)) as server:
        ok, said = client_for(server.base_url, sleeps).probe()
    assert not ok and "test-model" in said and "llama3" in said


def test_probe_unreachable_is_false_and_quick(sleeps):
    url = f"http://127.0.0.1:{free_port()}/v1"
    began = time.perf_counter()
    ok, said = client_for(url, sleeps).probe()
    assert not ok and url in said and "server running" in said
    assert time.perf_counter() - began < 3.0 and sleeps.delays == []


# ---- backoff


def test_backoff_doubles_up_to_the_cap():
    wait = BackoffWait(base_s=0.5, factor=2.0, cap_s=30.0, rng=random.Random(0))
    delays = [wait.delay(n, ConnectionError()) for n in range(1, 10)]
    ceilings = [min(30.0, 0.5 * 2 ** (n - 1)) for n in range(1, 10)]
    assert all(c / 2 <= d <= c for d, c in zip(delays, ceilings))
    assert max(delays) <= 30.0 and delays[-1] >= 15.0


# ---- config


def write_config(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_config_precedence_args_over_env_over_file(tmp_path):
    file = write_config(tmp_path / "config.toml", """
[llm]
model = "file-model"
base_url = "http://file:1/v1"
api_key = "file-key"
token_budget = 100
timeout_s = 30
max_attempts = 2
temperature = 0.7
max_tokens = 1000
""")
    env = {"KAGENT_LLM_MODEL": "env-model", "OPENAI_BASE_URL": "http://env:2/v1", "KAGENT_LLM_TOKEN_BUDGET": "200"}
    config = load_llm_config(model="arg-model", config_file=file, env=env)
    assert config == LLMConfig(model="arg-model", base_url="http://env:2/v1", api_key="file-key", token_budget=200,
                               timeout_s=30, max_attempts=2, temperature=0.7, max_tokens=1000)
    only_file = load_llm_config(config_file=file, env={})
    assert (only_file.model, only_file.base_url, only_file.token_budget) == ("file-model", "http://file:1/v1", 100)
    args = load_llm_config(model="m", base_url="http://arg:3/v1", api_key="k", token_budget=5, config_file=file,
                           env=env)
    assert (args.base_url, args.api_key, args.token_budget) == ("http://arg:3/v1", "k", 5)


def test_config_file_from_kagent_config(tmp_path):
    file = write_config(tmp_path / "elsewhere.toml", '[llm]\nmodel = "from-env-path"\n')
    assert load_llm_config(env={"KAGENT_CONFIG": str(file)}).model == "from-env-path"
    home = tmp_path / "home"
    (home / ".config" / "kagent").mkdir(parents=True)
    write_config(home / ".config" / "kagent" / "config.toml", '[llm]\nmodel = "from-home"\n')
    assert load_llm_config(env={"HOME": str(home)}).model == "from-home"


def test_config_none_without_a_model(tmp_path):
    assert load_llm_config(env={"HOME": str(tmp_path)}) is None
    assert load_llm_config(base_url="http://x/v1", env={"HOME": str(tmp_path)}) is None
    file = write_config(tmp_path / "c.toml", '[llm]\nbase_url = "http://x/v1"\n')
    assert load_llm_config(config_file=file, env={}) is None


def test_config_key_placeholder_only_for_custom_urls(tmp_path):
    env = {"HOME": str(tmp_path)}
    assert load_llm_config(model="m", base_url="http://localhost:8000/v1", env=env).api_key == "not-needed"
    assert load_llm_config(model="m", env=env).api_key is None
    assert load_llm_config(model="m", env={**env, "OPENAI_API_KEY": "sk-x"}).api_key == "sk-x"


@pytest.mark.parametrize("text, words", [
    ("[llm\nmodel = 'x'", "not valid TOML"),
    ("[llm]\nmodel = 'x'\ntimeout_s = 'soon'", "timeout_s"),
    ("[llm]\nmodel = 'x'\nmax_attempts = 0", "max_attempts"),
    ("[llm]\nmodel = 'x'\nmax_attempts = 50", ("max_attempts must be 1 to 10 (HTTP attempts per call, each up to "
                                                 "timeout_s long) (got 50)")),
    ("[llm]\nmodel = 'x'\nmodle = 'y'", "modle"),
    ("llm = 3", "table"),
])
def test_config_bad_file_names_file_and_key(tmp_path, text, words):
    file = write_config(tmp_path / "bad.toml", text)
    with pytest.raises(LLMConfigError) as caught:
        load_llm_config(config_file=file, env={})
    assert str(file) in str(caught.value) and words in str(caught.value)


def test_config_bad_env_value_names_the_variable(tmp_path):
    with pytest.raises(LLMConfigError, match="KAGENT_LLM_TOKEN_BUDGET"):
        load_llm_config(model="m", env={"HOME": str(tmp_path), "KAGENT_LLM_TOKEN_BUDGET": "lots"})


def test_config_named_file_must_exist(tmp_path):
    with pytest.raises(LLMConfigError, match="not found"):
        load_llm_config(config_file=tmp_path / "missing.toml", env={})


def test_a_local_server_is_waited_for_longer_unless_told_otherwise(tmp_path):
    env = {"HOME": str(tmp_path)}
    assert load_llm_config(model="m", base_url="http://127.0.0.1:8765/v1", env=env).timeout_s == 600
    assert load_llm_config(model="m", base_url="http://localhost:8000/v1", env=env).timeout_s == 600
    assert load_llm_config(model="m", base_url="https://api.example.com/v1", env=env).timeout_s == 120
    assert load_llm_config(model="m", base_url="http://127.0.0.1:1/v1", timeout_s=45, env=env).timeout_s == 45
    file = write_config(tmp_path / "c.toml", "[llm]\nmodel = 'm'\ntimeout_s = 30\n")
    assert load_llm_config(base_url="http://127.0.0.1:1/v1", config_file=file, env=env).timeout_s == 30


@pytest.mark.parametrize("model, url, small", [
    ("qwen2.5-coder-1.5b-instruct", "https://api.example.com/v1", True),
    ("Llama-3.1-8B-Instruct", None, True),
    ("Qwen2.5-Coder-32B-Instruct", "http://127.0.0.1:8000/v1", False),
    ("gpt-4o", None, False),
    ("qwen", "http://127.0.0.1:8765/v1", True),  # a local alias that says nothing: served on this machine
])
def test_small_model_prompts_follow_the_models_size(model, url, small):
    from kernel_agent.llm.settings import is_small_model
    assert is_small_model(model, url) is small


def test_each_call_has_a_seed_of_its_own_so_a_re_ask_can_differ():
    with FakeOpenAI([answer("a"), answer("b")]) as server:
        client = client_for(server.base_url, Recorder(), api_key="k", max_attempts=1)
        client.complete(MESSAGES)
        client.complete(MESSAGES, temperature=0.7)
        seeds = [body["seed"] for body in server.requests]
    assert seeds == [1, 2]


def test_a_run_with_another_seed_asks_with_other_seeds():
    """`optimize --seed 1` samples the model anew (the same prompts, other request seeds); --seed 0's stay."""
    from kernel_agent.llm.client import SEED_STRIDE, LLMClient
    with FakeOpenAI([answer("a"), answer("b")]) as server:
        config = client_for(server.base_url, Recorder(), api_key="k", max_attempts=1).config
        client = LLMClient(config, seed=1)
        client.complete(MESSAGES)
        client.complete(MESSAGES)
        seeds = [body["seed"] for body in server.requests]
    assert seeds == [SEED_STRIDE + 1, SEED_STRIDE + 2]
