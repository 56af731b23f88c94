"""Shared fixtures; GPU tests carry the `gpu` marker and are skipped where no GPU and CuPy exist."""

from __future__ import annotations

import importlib.util

import pytest

from tests.paths import LAYERNORM


def _gpu_available() -> bool:
    if importlib.util.find_spec("cupy") is None:
        return False
    from sandbox import detect_arch

    return detect_arch() is not None


GPU = _gpu_available()


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="needs a CUDA GPU and CuPy")
    for item in items:
        if "gpu" in item.keywords and not GPU:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Each test session compiles into its own cache, so results never depend on an old one."""
    monkeypatch.setenv("KAGENT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(autouse=True)
def _no_llm_from_the_machine(tmp_path_factory, monkeypatch):
    """No LLM endpoint or config of the machine running the tests leaks into them."""
    for name in ("KAGENT_LLM_MODEL", "KAGENT_LLM_TOKEN_BUDGET", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    empty = tmp_path_factory.getbasetemp() / "no-llm.toml"
    empty.write_text("")
    monkeypatch.setenv("KAGENT_CONFIG", str(empty))


@pytest.fixture(scope="session")
def layernorm():
    from kernel_agent.task import load_task

    return load_task(LAYERNORM)
