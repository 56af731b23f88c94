"""Which fitting skeleton to port first: the one whose `summary` and `fits` lines share the most
telling words with the task (its name, description and NumPy reference), words that few skeletons
use weighing most, plus the task's shape: a scalar output, the main input's rank against the
shape tuples the `fits` line names (`(N, C, H, W)` for a 4-D input), and whether the task's shapes
read as the skeleton's pattern (`derive.py` fills a slot from them: a row sum's output of one value a
row reads as rowwise, not as a row scan, whose output has the input's shape)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from ..task import Task
from .derive import derive
from .format import Skeleton

COMMON = frozenset(re.findall(r"\w+", """
    the and for with from that this then each every its are over one two into per float32 float input
    inputs output outputs value values element elements given where which when shape shapes tensor
"""))
STEM = 6  # words compared by their first letters: 'reduced' meets 'reduction', 'pooling' meets 'pool'
SHAPE_BONUS = 2.0


def words_of(text: str) -> set[str]:
    return {w[:STEM] for w in re.findall(r"[a-z][a-z0-9]{2,}", text.lower().replace("_", " ")) if w not in COMMON}


def _task_words(task: Task, reference: str) -> set[str]:
    words = words_of(f"{task.name} {task.description} {reference}")
    if any(len(out.shape) == 0 or list(out.shape) == [1] for out in task.outputs.values()):
        words.add("scalar")
    return words


def _ranks(fits: str) -> set[int]:
    """The ranks of the shape tuples the `fits` line names: '(N, C, L)' is 3."""
    return {len(t.split(",")) for t in re.findall(r"\(([A-Z_]+(?:,\s*[A-Z_]+)+)\)", fits)}


def rank(task: Task, skeletons: Sequence[Skeleton], reference: str = "") -> list[Skeleton]:
    """`skeletons` best first (a stable sort: ties keep the library's order)."""
    vocab = {s.name: words_of(f"{s.name} {s.summary} {s.fits}") for s in skeletons}
    seen_in = Counter(w for words in vocab.values() for w in words)
    wanted = _task_words(task, reference)
    main_rank = len(next(iter(task.inputs.values())).shape) if task.inputs else 0

    def score(skeleton: Skeleton) -> float:
        shared = wanted & vocab[skeleton.name]
        words = sum(math.log((1 + len(skeletons)) / seen_in[w]) for w in shared)
        shaped = SHAPE_BONUS if derive(skeleton, task).fills else 0.0
        return words + (SHAPE_BONUS if main_rank in _ranks(skeleton.fits) else 0.0) + shaped

    return sorted(skeletons, key=score, reverse=True)
