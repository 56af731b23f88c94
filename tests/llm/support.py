"""What the LLM tests share: the messages they send, a sleep that records, a client for a URL."""

from __future__ import annotations

import socket

from kernel_agent.llm.client import LLMClient
from kernel_agent.llm.settings import LLMConfig

MESSAGES = [{"role": "system", "content": "You write CUDA."}, {"role": "user", "content": "Write a kernel."}]


class Recorder:
    """A stand-in for time.sleep that keeps the delays."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def client_for(url: str, sleeps: Recorder, **settings) -> LLMClient:
    return LLMClient(LLMConfig(base_url=url, model="test-model", **settings), sleep=sleeps)


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
