"""`kagent export`: the datasets TRL reads, from kagent's samples (`samples.py`), split by task so that
a model is always evaluated on tasks it did not train on.

- `sft.{train,test}.jsonl`: conversational prompt/completion pairs whose answer became a correct
  kernel, fastest first, each (prompt, answer) once;
- `preference.{train,test}.jsonl`: prompt/chosen/rejected triples from answers to the same prompt, the
  better one chosen: a correct kernel over any failure, a faster correct one over a slower one, a
  failure of a later class over an earlier one (`rewards.LADDER`);
- `prompts.{train,test}.jsonl`: each first prompt once, with what judging an answer to it needs (the
  task file, the role, the parent's text, a port repair's earlier fills as JSON), for RL: the reward
  comes from checking the answers (`judge.KernelReward`);
- `manifest.json`: the counts, the split, and what was skipped.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from itertools import combinations
from pathlib import Path

from .rewards import LADDER, NO_KERNEL
from .samples import JUDGED_NOT, Sample


def split_tasks(tasks: set[str], test_tasks: set[str] | None, test_fraction: float) -> set[str]:
    """The test tasks: those named, or a stable share of them by a hash of the name (never all of them
    when there are two or more)."""
    if test_tasks is not None:
        return set(test_tasks)
    chosen = {t for t in tasks if int(hashlib.sha256(t.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < test_fraction}
    return chosen if len(tasks) < 2 or chosen != tasks else chosen - {min(chosen)}


def score(sample: Sample) -> float | None:
    """How good an answer was, to order answers to one prompt (None: never judged)."""
    if sample.status == JUDGED_NOT:
        return None
    if sample.status == "ok":
        return 1.0 + (sample.speedup or 0.0)
    return LADDER.get(sample.status or NO_KERNEL, LADDER[NO_KERNEL])


def sft_rows(samples: list[Sample]) -> list[dict]:
    correct = sorted((s for s in samples if s.status == "ok"), key=lambda s: -(s.speedup or 0.0))
    seen, rows = set(), []
    for s in correct:
        key = (s.messages, s.completion)
        if key not in seen:
            seen.add(key)
            rows.append({"prompt": s.prompt, "completion": [{"role": "assistant", "content": s.completion}],
                         "task": s.task})
    return rows


def preference_rows(samples: list[Sample]) -> list[dict]:
    by_prompt: dict[tuple, list[Sample]] = defaultdict(list)
    for s in samples:
        if score(s) is not None:
            by_prompt[s.messages].append(s)
    rows, seen = [], set()
    for group in by_prompt.values():
        for a, b in combinations(group, 2):
            sa, sb = score(a), score(b)
            assert sa is not None and sb is not None
            if sa == sb or a.completion == b.completion:
                continue
            chosen, rejected = (a, b) if sa > sb else (b, a)
            key = (chosen.messages, chosen.completion, rejected.completion)
            if key not in seen:
                seen.add(key)
                rows.append({"prompt": chosen.prompt,
                             "chosen": [{"role": "assistant", "content": chosen.completion}],
                             "rejected": [{"role": "assistant", "content": rejected.completion}], "task": chosen.task})
    return rows


def prompt_rows(samples: list[Sample]) -> list[dict]:
    seen, rows = set(), []
    for s in samples:
        if s.first_ask and s.messages not in seen:
            seen.add(s.messages)
            rows.append({"prompt": s.prompt, "task": s.task, "role": s.role, "task_file": s.task_file,
                         "parent": s.parent or "", "base_fills": json.dumps(dict(s.base_fills))})
    return rows


def export(samples: list[Sample], out: Path, test_tasks: set[str] | None = None, test_fraction: float = 0.25,
           skipped: list[str] | None = None) -> dict:
    """Write the datasets under `out`; return the manifest (also written as manifest.json)."""
    tasks = {s.task for s in samples}
    test = split_tasks(tasks, test_tasks, test_fraction)
    out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, dict[str, int]] = {}
    for name, build in (("sft", sft_rows), ("preference", preference_rows), ("prompts", prompt_rows)):
        counts[name] = {}
        for part, keep in (("train", lambda s: s.task not in test), ("test", lambda s: s.task in test)):
            rows = build([s for s in samples if keep(s)])
            with (out / f"{name}.{part}.jsonl").open("w", encoding="utf-8") as f:
                f.writelines(json.dumps(row) + "\n" for row in rows)
            counts[name][part] = len(rows)
    manifest = {"samples": len(samples), "tasks": sorted(tasks), "test_tasks": sorted(test & tasks),
                "judged": sum(score(s) is not None for s in samples),
                "correct": sum(s.status == "ok" for s in samples), "rows": counts, "skipped": skipped or []}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return manifest
