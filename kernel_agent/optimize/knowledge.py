"""The one failure knowledge base, with two kinds of rule.

Knob rules: which knob values, alone or in pairs, always led to which failure class. They are derived
from every verdict (this run's, and earlier runs' of the same task from the store), prune proposals
before anything is compiled, and need two failures and no success (a success matching one removes it).
Compile rules: "do not ..." sentences distilled from compiler logs (`compile_rules.py`), counted by
how often they were hit. Both are shown in the report and quoted in every prompt.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from sandbox import Status

from ..seams import Candidate
from .compile_rules import rules_from_compile_log

MIN_FAILURES = 2


@dataclass
class Rule:
    kernel: str
    conditions: tuple[tuple[str, str], ...]
    status: Status
    failures: int
    pruned: int = 0

    def matches(self, candidate: Candidate) -> bool:
        values = candidate.values
        return candidate.kernel == self.kernel and all(values.get(k) == v for k, v in self.conditions)

    def text(self) -> str:
        when = " and ".join(f"{k}={v}" for k, v in self.conditions) or "any knob values"
        return f"{self.kernel}: {when} -> {self.status.value} ({self.failures} failures, no success)"

    def as_dont(self) -> str:
        if not self.conditions:
            return f"do not reuse {self.kernel} as it is: {self.status.value} in all {self.failures} tries"
        when = " with ".join(f"{k}={v}" for k, v in self.conditions)
        return f"do not use {when} in {self.kernel}: {self.status.value} in {self.failures} of {self.failures} tries"


@dataclass
class KnowledgeBase:
    observations: dict[Candidate, Status] = field(default_factory=dict)
    compile_rules: Counter = field(default_factory=Counter)  # "do not ..." text -> times a log showed it
    _pruned: Counter = field(default_factory=Counter)
    _rules: list[Rule] | None = None  # derived from the observations when next asked

    @property
    def rules(self) -> list[Rule]:
        """Derived once per change of the observations, not per observation: a warm start feeds in
        every earlier run's verdicts one by one."""
        if self._rules is None:
            self._rules = self._derive()
        return self._rules

    def observe(self, candidate: Candidate, status: Status) -> None:
        self.observations[candidate] = status
        self._rules = None

    def learn_from(self, candidate: Candidate, status: Status, log: str = "", knobs: bool = True) -> None:
        """A verdict: its knob values become evidence for knob rules (unless `knobs` is False), and a
        compile error's log adds the compile rules it shows."""
        if knobs:
            self.observe(candidate, status)
        if status is Status.compile_error:
            for rule in rules_from_compile_log(log):
                self.compile_rules[rule.text] += 1

    def as_dont(self, compile_rules: int = 10) -> list[str]:
        """Every rule as a "do not ..." line with its evidence, for a prompt: the knob rules, then the
        compile rules hit most often."""
        return [f"{rule.as_dont()} (pruned {rule.pruned} proposals)" for rule in self.rules] + \
            [f"{text} (hit {hits} times)" for text, hits in self.compile_rules.most_common(compile_rules)]

    def blocking_rule(self, candidate: Candidate) -> Rule | None:
        for rule in self.rules:
            if rule.matches(candidate):
                return rule
        return None

    def count_pruned(self, rule: Rule) -> None:
        self._pruned[(rule.kernel, rule.conditions)] += 1
        rule.pruned = self._pruned[(rule.kernel, rule.conditions)]

    def _derive(self) -> list[Rule]:
        seen: dict[tuple, list[Status]] = defaultdict(list)
        for candidate, status in self.observations.items():
            values = sorted(candidate.knobs)
            for size in (0, 1, 2):
                for condition in itertools.combinations(values, size):
                    seen[(candidate.kernel, condition)].append(status)
        rules = []
        for (kernel, condition), statuses in seen.items():
            if Status.ok in statuses or len(statuses) < MIN_FAILURES:
                continue
            if not condition and set(statuses) != {Status.compile_error}:
                continue  # a whole kernel is ruled out only when it never compiles
            status = Counter(statuses).most_common(1)[0][0]
            rule = Rule(kernel, condition, status, len(statuses), self._pruned[(kernel, condition)])
            rules.append(rule)
        rules.sort(key=lambda r: (len(r.conditions), -r.failures, r.conditions))
        # a rule adds nothing when a more general one (fewer conditions) already covers it
        kept: list[Rule] = []
        for rule in rules:
            if not any(k.kernel == rule.kernel and set(k.conditions) < set(rule.conditions) for k in kept):
                kept.append(rule)
        return kept
