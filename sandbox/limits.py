"""How long, how much memory and how large a source one compile may take; defaults from the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

_VARIABLES = {"timeout_s": "KAGENT_COMPILE_TIMEOUT_S", "memory_mb": "KAGENT_COMPILE_MEMORY_MB",
              "max_source_kb": "KAGENT_MAX_SOURCE_KB"}


@dataclass(frozen=True)
class CompileLimits:
    """Limits on one compile. A kernel over one fails with a compile error naming it, and that result
    is not cached (a larger limit may pass)."""

    timeout_s: float = 60.0
    """Wall-clock seconds for one compile, after which its worker is killed ($KAGENT_COMPILE_TIMEOUT_S)."""
    memory_mb: int = 4096
    """Address space of the compile worker process while it compiles, MiB ($KAGENT_COMPILE_MEMORY_MB)."""
    max_source_kb: int = 1024
    """Size of the source together with the local files it includes, KiB ($KAGENT_MAX_SOURCE_KB)."""

    def __post_init__(self) -> None:
        for name in _VARIABLES:
            if not getattr(self, name) > 0:
                raise ValueError(f"compile limit {name} must be positive, not {getattr(self, name)!r}")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> CompileLimits:
        """The defaults, each replaced by its environment variable where set; a value that is not a
        positive number is a ValueError naming the variable."""
        env = os.environ if env is None else env
        chosen: dict[str, float | int] = {}
        for name, variable in _VARIABLES.items():
            text = env.get(variable, "").strip()
            if not text:
                continue
            try:
                chosen[name] = float(text) if name == "timeout_s" else int(text)
            except ValueError:
                raise ValueError(f"{variable}={text!r} is not a number") from None
            if not chosen[name] > 0:
                raise ValueError(f"{variable}={text!r} must be positive")
        return cls(**chosen)  # type: ignore[arg-type]

    @property
    def memory_bytes(self) -> int:
        return self.memory_mb << 20

    @property
    def max_source_bytes(self) -> int:
        return self.max_source_kb << 10

    def explain(self, limit: str, detail: str = "") -> str:
        """The log line for a compile stopped by `limit` ("time", "memory" or "crash")."""
        if limit == "time":
            return (f"error: compile limit: the compile ran past {self.timeout_s:g} s and was stopped "
                    f"(set {_VARIABLES['timeout_s']} to allow longer compiles)")
        if limit == "memory":
            return (f"error: compile limit: the compile ran out of its {self.memory_mb} MiB of memory "
                    f"(set {_VARIABLES['memory_mb']} to allow more){detail}")
        return (f"error: the compile worker died{detail}; a compile that needs more than its "
                f"{self.memory_mb} MiB of memory can end like this (set {_VARIABLES['memory_mb']} to allow more)")
