"""Each specialist's learned preferences over the values of its knobs, trained with rank rewards.

A policy is a table of logits per knob name and value. Knob names recur across the tasks of an
operator family (BLOCK, VEC, ROWS_PER_BLOCK...), so a policy saved per GPU architecture and family
warm-starts the next run of any task of that family.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

from sandbox import SPECIALISTS, Knob

from ..files import write_atomic

LEARNING_RATE = 0.5
LOGIT_LIMIT = 6.0


@dataclass
class Policy:
    logits: dict[str, dict[str, float]] = field(default_factory=dict)

    def weights(self, knob: Knob, temperature: float) -> list[float]:
        table = self.logits.get(knob.name, {})
        raw = [table.get(v, 0.0) / max(temperature, 1e-3) for v in knob.values]
        top = max(raw)
        return [math.exp(r - top) for r in raw]

    def sample(self, knob: Knob, rng: random.Random, temperature: float = 1.0, avoid: str | None = None) -> str:
        options = [(v, w) for v, w in zip(knob.values, self.weights(knob, temperature)) if v != avoid]
        if not options:
            return knob.default
        values, weights = zip(*options)
        return rng.choices(values, weights)[0]

    def log_prob(self, knob: Knob, value: str) -> float:
        weights = self.weights(knob, 1.0)
        return math.log(weights[knob.values.index(value)] / sum(weights))

    def update(self, knob: str, value: str, advantage: float, rate: float = LEARNING_RATE) -> None:
        table = self.logits.setdefault(knob, {})
        table[value] = max(-LOGIT_LIMIT, min(LOGIT_LIMIT, table.get(value, 0.0) + rate * advantage))


@dataclass
class PolicyBook:
    """One policy per specialist."""

    policies: dict[str, Policy] = field(default_factory=lambda: {s: Policy() for s in SPECIALISTS})
    runs: int = 0  # how many runs trained it

    def __getitem__(self, specialist: str) -> Policy:
        return self.policies.setdefault(specialist, Policy())

    @staticmethod
    def path(root: Path, arch: str, family: str) -> Path:
        return root / arch / f"{family}.json"

    @classmethod
    def load(cls, path: Path) -> "PolicyBook":
        if not path.exists():
            return cls()
        data = json.loads(path.read_text())
        return cls(policies={s: Policy(t) for s, t in data["policies"].items()}, runs=data.get("runs", 0))

    def save(self, path: Path) -> None:
        data = {"runs": self.runs, "policies": {s: p.logits for s, p in self.policies.items()}}
        write_atomic(path, json.dumps(data, indent=1, sort_keys=True).encode())
