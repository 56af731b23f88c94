"""One kernel file's candidates as a matrix of knob-value indices, so that "the untried candidate nearest
this parent, by what the policies learned" is a few array operations instead of a Python loop over
every candidate (a recorded space holds thousands; the agent asks after most batches)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import numpy as np

from ..seams import Candidate
from .space import Space


class Neighbourhood:
    def __init__(self, space: Space, label: str):
        kernel = space.kernels[label]
        self.names = list(kernel.knobs)
        self.values = [list(kernel.knobs[name].values) for name in self.names]
        self.specialists = [kernel.knobs[name].specialist for name in self.names]
        positions = [{value: i for i, value in enumerate(values)} for values in self.values]
        self.members = [c for c in space.all() if c.kernel == label]
        rows = [[positions[j].get(c.values.get(name, ""), -1) for j, name in enumerate(self.names)]
                for c in self.members]
        self.matrix = np.array(rows, dtype=np.int32).reshape(len(self.members), len(self.names))

    def ranked(self, parent: Candidate, logits: Callable[[str, str], dict[str, float]], learned_weight: float,
               rng: random.Random) -> Iterator[Candidate]:
        """Every member, best first by (learned preference x weight - knobs changed from `parent`); ties in
        a random order drawn from `rng`. `logits(specialist, knob)` is that knob's table of logits."""
        if not self.members:
            return iter(())
        values = parent.values
        row = np.array([self.values[j].index(values[name]) if values.get(name) in self.values[j] else -1
                        for j, name in enumerate(self.names)], dtype=np.int32)
        distance = (self.matrix != row).sum(axis=1)
        learned = np.zeros(len(self.members))
        for j, (name, specialist) in enumerate(zip(self.names, self.specialists)):
            table = logits(specialist, name)
            per_value = np.array([table.get(v, 0.0) for v in self.values[j]] + [0.0])  # index -1: unknown value
            learned += per_value[self.matrix[:, j]]
        score = learned_weight * learned - distance
        shuffle = np.random.default_rng(rng.getrandbits(64)).permutation(len(self.members))
        order = shuffle[np.argsort(-score[shuffle], kind="stable")]
        return (self.members[i] for i in order)
