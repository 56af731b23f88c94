"""Where the LLM is and how to call it: explicit arguments > environment > the config file.

The config file is TOML, by default `$KAGENT_CONFIG` or `~/.config/kagent/config.toml`:

    [llm]
    model = "qwen2.5-coder-32b"
    base_url = "http://localhost:8000/v1"   # vLLM, Ollama, llama.cpp, SGLang... or omit for api.openai.com
    token_budget = 2_000_000
    timeout_s = 300                          # per HTTP attempt (default 120, 600 for a server on this machine)
    grammar = "llama.cpp"                    # the server decodes under kagent's answer grammars (or "vllm")

Credentials in the URL (`https://user:key@host/v1`) are not sent as HTTP basic auth (the SDK's
HTTP client would, replacing the `Authorization: Bearer` header OpenAI-compatible servers read):
they are taken off the URL and the password (or a lone user name) becomes the API key, unless a key
is set too, which then wins. Either way both are registered with `sandbox.register_secret`, so that
no log, prompt or stored file shows them; `display_url` is the form to store or show.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import pydantic

from sandbox import redact, register_secret

from .grammar import GrammarDialect

NO_KEY = "not-needed"  # local servers accept any key, but the SDK insists on one
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT_S = 120.0
LOCAL_TIMEOUT_S = 600.0  # a model on this machine's CPU: 1-4 minutes an answer is usual
LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}
SMALL_MODEL_B = 8.0  # models of at most this many billion parameters get the small-model prompts
MAX_ATTEMPTS = 10  # each may take timeout_s: more would only stall a run
FILE_KEYS = ("model", "base_url", "api_key", "timeout_s", "max_attempts", "token_budget", "temperature",
             "max_tokens", "grammar")
ENV_KEYS = {"base_url": "OPENAI_BASE_URL", "api_key": "OPENAI_API_KEY", "model": "KAGENT_LLM_MODEL",
            "token_budget": "KAGENT_LLM_TOKEN_BUDGET"}


class LLMConfigError(ValueError):
    """A malformed config file or a bad value; the message names where it came from."""


class LLMConfig(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    base_url: str | None = None  # None: the SDK's default (api.openai.com)
    api_key: str | None = None
    model: str = pydantic.Field(min_length=1)
    timeout_s: float = pydantic.Field(DEFAULT_TIMEOUT_S, gt=0)  # per HTTP attempt, all of it (not per read)
    max_attempts: int = 5  # HTTP attempts per call, the first one included; a call takes at most
    # max_attempts * timeout_s, the waits between attempts included
    token_budget: int | None = pydantic.Field(None, ge=0)  # prompt + completion tokens of a whole run
    temperature: float = pydantic.Field(0.2, ge=0)
    max_tokens: int = pydantic.Field(4096, ge=1)  # per completion
    grammar: GrammarDialect = "off"  # how the server takes an answer grammar (grammar.py): off, llama.cpp, vllm

    @pydantic.field_validator("max_attempts")
    @classmethod
    def _attempts_in_range(cls, value: int) -> int:
        if not 1 <= value <= MAX_ATTEMPTS:
            raise ValueError(f"max_attempts must be 1 to {MAX_ATTEMPTS} (HTTP attempts per call, each up to "
                             f"timeout_s long)")
        return value

    def model_post_init(self, context: Any) -> None:
        """The key and the URL's credentials are secrets from now on: masked wherever kagent writes."""
        if self.api_key != NO_KEY:
            register_secret(self.api_key)
        for secret in url_secrets(self.base_url):
            register_secret(secret)

    @property
    def display_url(self) -> str | None:
        """`base_url` without its credentials: what may be stored, shown or logged (None: the default URL)."""
        return without_credentials(self.base_url) if self.base_url else None

    @property
    def request_url(self) -> str:
        """The URL the client sends to: without credentials (they travel as the API key)."""
        return without_credentials(self.base_url or DEFAULT_BASE_URL)

    @property
    def request_key(self) -> str:
        """The API key sent as `Authorization: Bearer`: the configured key, else the URL's credential."""
        if self.api_key and self.api_key != NO_KEY:
            return self.api_key
        return url_credential(self.base_url) or self.api_key or NO_KEY


def without_credentials(url: str) -> str:
    """`url` with everything up to the last `@` of its host part dropped (a password may hold an `@`)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def url_credential(url: str | None) -> str | None:
    """The key a URL carries: its password, or its user name when it has no password."""
    parts = urlsplit(url or "")
    value = parts.password or parts.username
    return unquote(value) if value else None


def url_secrets(url: str | None) -> set[str]:
    """Every form of the credentials in `url`: the userinfo, the password or lone user name, raw and decoded."""
    parts = urlsplit(url or "")
    if "@" not in parts.netloc:
        return set()
    userinfo = parts.netloc.rsplit("@", 1)[0]
    raw = parts.password or parts.username or ""
    return {value for value in (userinfo, raw, unquote(raw)) if value}


def default_config_path(env: Mapping[str, str]) -> Path:
    """`$KAGENT_CONFIG`, else `~/.config/kagent/config.toml` (home taken from `env` where it says)."""
    if env.get("KAGENT_CONFIG"):
        return Path(env["KAGENT_CONFIG"]).expanduser()
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return home / ".config" / "kagent" / "config.toml"


def read_config_file(path: Path) -> dict[str, Any]:
    """The `[llm]` table of a TOML file; {} when the file has none."""
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise LLMConfigError(f"{path}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LLMConfigError(f"{path}: cannot read it: {exc}") from None
    table = data.get("llm", {})
    if not isinstance(table, dict):
        raise LLMConfigError(f"{path}: `llm` must be a table ([llm]), got {type(table).__name__}")
    unknown = sorted(set(table) - set(FILE_KEYS))
    if unknown:
        raise LLMConfigError(f"{path}: [llm] has unknown key {unknown[0]!r}; known keys: {', '.join(FILE_KEYS)}")
    return table


def _file_values(config_file: Path | None, env: Mapping[str, str]) -> tuple[dict[str, Any], Path | None]:
    """The file's values and its path; a missing default file is no error, a named one is."""
    path = config_file or default_config_path(env)
    named = config_file is not None or bool(env.get("KAGENT_CONFIG"))
    if not path.exists():
        if named:
            raise LLMConfigError(f"{path}: config file not found")
        return {}, None
    return read_config_file(path), path


def is_loopback(url: str | None) -> bool:
    """Whether `url` points at this machine (a local server: slow on a CPU, so waited for longer)."""
    try:
        host = urlsplit(url or "").hostname
    except ValueError:
        return False
    return host is not None and (host in LOOPBACK_HOSTS or host.startswith("127."))


def model_size_b(model: str) -> float | None:
    """The parameter count a model's name states, in billions (`qwen2.5-coder-1.5b` -> 1.5), or None."""
    sizes = [float(m.group(1)) for m in re.finditer(r"(?<![\w.])(\d+(?:\.\d+)?)\s*[bB](?![a-zA-Z])", model)]
    return sizes[-1] if sizes else None


def is_small_model(model: str, base_url: str | None) -> bool:
    """Small-model prompts for a model whose name says <= SMALL_MODEL_B billion parameters, or, when the
    name says nothing (a local server's alias such as "qwen"), for a model served on this machine."""
    size = model_size_b(model)
    return size <= SMALL_MODEL_B if size is not None else is_loopback(base_url)


def load_llm_config(model: str | None = None, base_url: str | None = None, api_key: str | None = None,
                    token_budget: int | None = None, timeout_s: float | None = None, config_file: Path | None = None,
                    env: Mapping[str, str] | None = None, grammar: str | None = None) -> LLMConfig | None:
    """The merged config, or None when no model is configured anywhere. Unless set, an attempt may take
    DEFAULT_TIMEOUT_S, or LOCAL_TIMEOUT_S for a server on this machine."""
    env = os.environ if env is None else env
    table, path = _file_values(config_file, env)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key, value in table.items():
        values[key], sources[key] = value, f"{path}: [llm] {key}"
    for key, name in ENV_KEYS.items():
        if env.get(name):
            values[key], sources[key] = env[name], f"environment variable {name}"
    arguments = {"model": model, "base_url": base_url, "api_key": api_key, "token_budget": token_budget,
                 "timeout_s": timeout_s, "grammar": grammar}
    for key, value in arguments.items():
        if value is not None:
            values[key], sources[key] = value, f"argument {key}"
    if not values.get("model"):
        return None
    if values.get("base_url") and not values.get("api_key"):
        values["api_key"], sources["api_key"] = NO_KEY, "placeholder key"
    if "timeout_s" not in values and is_loopback(values.get("base_url")):
        values["timeout_s"], sources["timeout_s"] = LOCAL_TIMEOUT_S, "the default for a local server"
    return _validate(values, sources)


def _validate(values: dict[str, Any], sources: dict[str, str]) -> LLMConfig:
    try:
        return LLMConfig.model_validate(values)
    except pydantic.ValidationError as exc:
        error = exc.errors()[0]
        key = str(error["loc"][0]) if error["loc"] else "?"
        where = sources.get(key, key)
        shown = "" if key == "api_key" else f" (got {redact(repr(error.get('input')))})"  # never echo a key
        said = error["msg"].removeprefix("Value error, ")
        raise LLMConfigError(f"{where}: {said}{shown}") from None
