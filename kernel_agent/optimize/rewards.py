"""Rank rewards: within a batch, the order of the times matters, not their noisy values."""

from __future__ import annotations

from sandbox import Outcome, Status

# Failures rank below every correct kernel, the worse kinds lower (a wrong result is the costliest:
# it passed the compiler and wasted a GPU run).
FAILURE_REWARD = {
    Status.resource_error: -1.0, Status.launch_error: -1.0, Status.compile_error: -1.1,
    Status.timeout: -1.2, Status.runtime_error: -1.2, Status.nondeterministic: -1.3, Status.wrong_result: -1.3,
}
IMPROVEMENT_BONUS = 0.25  # small auxiliary term: beat the best time seen so far
SLOWER_THAN_PARENT = -0.1  # small auxiliary term: worse than the kernel it was derived from


def rank_rewards(outcomes: list[Outcome], best_before_ms: float | None,
                 parent_ms: list[float | None] | None = None) -> list[float]:
    """Correct candidates get 1 (fastest) down to 0 (slowest) by rank in the batch; failures are
    negative by class; small bonuses and penalties relative to the best and to each parent."""
    times = sorted(o.timing.median_ms for o in outcomes if o.status is Status.ok and o.timing)
    rewards = []
    for i, outcome in enumerate(outcomes):
        if outcome.status is not Status.ok or outcome.timing is None:
            rewards.append(FAILURE_REWARD.get(outcome.status, -1.0))
            continue
        ms = outcome.timing.median_ms
        rank = times.index(ms)
        reward = 1.0 - rank / (len(times) - 1) if len(times) > 1 else 1.0
        if best_before_ms is None or ms < best_before_ms:
            reward += IMPROVEMENT_BONUS
        parent = parent_ms[i] if parent_ms else None
        if parent is not None and ms > parent:
            reward += SLOWER_THAN_PARENT
        rewards.append(reward)
    return rewards
