"""Fixtures of the LLM tests."""

from __future__ import annotations

import pytest

from tests.llm.support import Recorder


@pytest.fixture
def sleeps() -> Recorder:
    return Recorder()
