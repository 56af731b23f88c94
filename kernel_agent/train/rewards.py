"""The reward of an answer for training: correct and fast above correct and slow, above a wrong result,
above a kernel that does not compile, above an answer that gave no kernel at all.

Unlike the search's rank rewards (`optimize/rewards.py`, where a wrong result is the costliest failure:
it wasted a GPU run), a model in training should learn that a kernel that runs but is wrong is closer
to a good answer than one that does not compile. Correct answers are ranked within their group (the
answers to one prompt), as the search's rewards are, since times are only comparable side by side.
"""

from __future__ import annotations

NO_KERNEL = "no_kernel"  # an answer kagent could not turn into a kernel file
NOT_RUN = "not_run"  # compiled and planned, not run (compile-only): between every failure and every correct one

LADDER: dict[str, float] = {
    NO_KERNEL: -1.0,
    "compile_error": -0.8,
    "resource_error": -0.6,
    "launch_error": -0.6,
    "runtime_error": -0.5,
    "timeout": -0.5,
    "nondeterministic": -0.4,
    "wrong_result": -0.3,
    NOT_RUN: 0.0,
}
CORRECT_FLOOR = 0.5  # the slowest correct answer of a group; the fastest gets 1.0


def group_rewards(verdicts: list[tuple[str, float | None]]) -> list[float]:
    """Rewards of the answers to one prompt, from each one's (status, median ms): a status of LADDER, or
    "ok" with its time. Correct ones get CORRECT_FLOOR (slowest) to 1.0 (fastest) by rank."""
    times = sorted({ms for status, ms in verdicts if status == "ok" and ms is not None})
    rewards = []
    for status, ms in verdicts:
        if status == "ok" and ms is not None:
            rank = times.index(ms)
            share = 1.0 - rank / (len(times) - 1) if len(times) > 1 else 1.0
            rewards.append(CORRECT_FLOOR + (1.0 - CORRECT_FLOOR) * share)
        else:
            rewards.append(LADDER.get(status, LADDER[NO_KERNEL]))
    return rewards
