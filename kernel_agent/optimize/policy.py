"""Each specialist's learned preferences over the values of its knobs, trained with rank rewards.

A policy is a table of logits per knob name and value. Knob names recur across the tasks of an
operator family (BLOCK, VEC, ROWS_PER_BLOCK...), so a policy saved per GPU architecture and family
warm-starts the next run of any task of that family.
"""

from __future__ import annotations

import fcntl
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
    def load(cls, path: Path) -> PolicyBook:
        """The book saved at `path` (an empty one if there is none); PolicyError if it is unreadable."""
        if not path.exists():
            return cls()
        try:
            data = json.loads(path.read_text())
            book = cls(policies={s: Policy({k: {v: float(w) for v, w in t.items()} for k, t in table.items()})
                                 for s, table in data["policies"].items()}, runs=int(data.get("runs", 0)))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise PolicyError(f"{path}: not a policy file kagent can read ({type(exc).__name__}: {exc})") from None
        return book

    def save(self, path: Path) -> None:
        data = {"runs": self.runs, "policies": {s: p.logits for s, p in self.policies.items()}}
        write_atomic(path, json.dumps(data, indent=1, sort_keys=True).encode())

    def learned_since(self, start: PolicyBook) -> PolicyBook:
        """What this book learned after it was `start`: the change of every logit."""
        delta = PolicyBook(runs=self.runs - start.runs)
        for name, policy in self.policies.items():
            before = start[name].logits
            for knob, table in policy.logits.items():
                for value, logit in table.items():
                    change = logit - before.get(knob, {}).get(value, 0.0)
                    if change:
                        delta[name].logits.setdefault(knob, {})[value] = change
        return delta

    def merge_into(self, path: Path, start: PolicyBook) -> None:
        """Add what this book learned since `start` to the book at `path`, under a lock: two runs that
        share a policies folder both keep their updates (the later no longer overwrites the earlier)."""
        delta = self.learned_since(start)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_name(path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                current = PolicyBook.load(path)
            except PolicyError:
                current = PolicyBook()  # unreadable: replaced by what this run knows
            for name, policy in delta.policies.items():
                for knob, table in policy.logits.items():
                    for value, change in table.items():
                        current[name].update(knob, value, change, rate=1.0)
            current.runs += delta.runs
            current.save(path)


class PolicyError(ValueError):
    """A policy file that cannot be read; the message names it."""
