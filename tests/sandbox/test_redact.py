"""Secrets are masked in any text kagent stores, prints or sends: environment keys, URL credentials."""

from sandbox import redact, register_secret, strip_url_credentials
from sandbox.redact import MASK, environment_secrets

ENV = {"OPENAI_API_KEY": "sk-live-0123456789", "HF_TOKEN": "hf_abcdefghijkl", "KAGENT_LLM_TOKEN_BUDGET": "2000000",
       "HOME": "/home/me", "DEBUG_AUTH": "true"}


def test_values_of_secret_named_variables_are_masked_and_ordinary_values_kept():
    log = "HOME=/home/me OPENAI_API_KEY=sk-live-0123456789 HF_TOKEN=hf_abcdefghijkl budget 2000000 true"
    masked = redact(log, env=ENV)
    assert "sk-live" not in masked and "hf_abc" not in masked
    assert masked == f"HOME=/home/me OPENAI_API_KEY={MASK} HF_TOKEN={MASK} budget 2000000 true"
    assert environment_secrets(ENV) == {"sk-live-0123456789", "hf_abcdefghijkl"}


def test_url_credentials_are_masked_in_text_and_stripped_from_a_url():
    assert redact("POST https://alice:s3cr3t@llm.example/v1/chat", env={}) == f"POST https://{MASK}@llm.example/v1/chat"
    assert strip_url_credentials("https://alice:s3cr3t@llm.example:8443/v1") == "https://llm.example:8443/v1"
    assert strip_url_credentials("http://127.0.0.1:8765/v1") == "http://127.0.0.1:8765/v1"
    assert strip_url_credentials("https://u:pa@ss@host/v1?to=a@b") == "https://host/v1?to=a@b"
    assert redact("see https://u:pa@ss@host/v1 now", env={}) == f"see https://{MASK}@host/v1 now"


def test_a_registered_secret_is_masked_from_then_on():
    assert redact("key-from-a-config-file-42", env={}) == "key-from-a-config-file-42"
    register_secret("key-from-a-config-file-42")
    assert redact("the key key-from-a-config-file-42.", env={}) == f"the key {MASK}."
