"""Where the LLM is and how to call it: explicit arguments > environment > the config file.

The config file is TOML, by default `$KAGENT_CONFIG` or `~/.config/kagent/config.toml`:

    [llm]
    model = "qwen2.5-coder-32b"
    base_url = "http://localhost:8000/v1"   # vLLM, Ollama, llama.cpp, SGLang... or omit for api.openai.com
    token_budget = 2_000_000
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pydantic

NO_KEY = "not-needed"  # local servers accept any key, but the SDK insists on one
FILE_KEYS = ("model", "base_url", "api_key", "timeout_s", "max_attempts", "token_budget", "temperature",
             "max_tokens")
ENV_KEYS = {"base_url": "OPENAI_BASE_URL", "api_key": "OPENAI_API_KEY", "model": "KAGENT_LLM_MODEL",
            "token_budget": "KAGENT_LLM_TOKEN_BUDGET"}


class LLMConfigError(ValueError):
    """A malformed config file or a bad value; the message names where it came from."""


class LLMConfig(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    base_url: str | None = None  # None: the SDK's default (api.openai.com)
    api_key: str | None = None
    model: str = pydantic.Field(min_length=1)
    timeout_s: float = pydantic.Field(120.0, gt=0)  # per call
    max_attempts: int = pydantic.Field(5, ge=1)  # HTTP attempts per call, the first one included
    token_budget: int | None = pydantic.Field(None, ge=0)  # prompt + completion tokens of a whole run
    temperature: float = pydantic.Field(0.2, ge=0)
    max_tokens: int = pydantic.Field(4096, ge=1)  # per completion


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


def load_llm_config(model: str | None = None, base_url: str | None = None, api_key: str | None = None,
                    token_budget: int | None = None, config_file: Path | None = None,
                    env: Mapping[str, str] | None = None) -> LLMConfig | None:
    """The merged config, or None when no model is configured anywhere."""
    env = os.environ if env is None else env
    table, path = _file_values(config_file, env)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key, value in table.items():
        values[key], sources[key] = value, f"{path}: [llm] {key}"
    for key, name in ENV_KEYS.items():
        if env.get(name):
            values[key], sources[key] = env[name], f"environment variable {name}"
    arguments = {"model": model, "base_url": base_url, "api_key": api_key, "token_budget": token_budget}
    for key, value in arguments.items():
        if value is not None:
            values[key], sources[key] = value, f"argument {key}"
    if not values.get("model"):
        return None
    if values.get("base_url") and not values.get("api_key"):
        values["api_key"], sources["api_key"] = NO_KEY, "placeholder key"
    return _validate(values, sources)


def _validate(values: dict[str, Any], sources: dict[str, str]) -> LLMConfig:
    try:
        return LLMConfig.model_validate(values)
    except pydantic.ValidationError as exc:
        error = exc.errors()[0]
        key = str(error["loc"][0]) if error["loc"] else "?"
        where = sources.get(key, key)
        shown = "" if key == "api_key" else f" (got {error.get('input')!r})"  # never echo a key
        raise LLMConfigError(f"{where}: {error['msg']}{shown}") from None
