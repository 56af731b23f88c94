"""`kagent sweep` on the GPU: the space compiled a chunk at a time, each chunk before its runs, every
candidate measured with the sandbox's checks, and an interrupted sweep resumed without measuring anything
twice."""

import pytest

from kernel_agent.recording import SweepCache
from kernel_agent.sweep import sweep
from sandbox import Settings, Status
from tests.paths import LAYERNORM

pytestmark = pytest.mark.gpu


def test_a_sweep_in_chunks_interrupted_and_resumed_measures_every_candidate_once(layernorm, worker, tmp_path,
                                                                                 monkeypatch):
    monkeypatch.setattr("kernel_agent.sweep.chunk_size", lambda: 8)  # 37 candidates: five chunks
    out = tmp_path / "sweep.json"
    settings = Settings(budget_ms=20, precision=0.01)

    def interrupt(record, number, total):
        if number == 13:  # inside the second chunk
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(layernorm, LAYERNORM, out, worker=worker, settings=settings, on_result=interrupt)
    first = SweepCache.model_validate_json(out.read_text())
    assert len(first.records) == 13 and first.baseline_timing is not None

    cache = sweep(layernorm, LAYERNORM, out, worker=worker, settings=settings)
    ids = [r.outcome.candidate_id for r in cache.records]
    assert len(ids) == 37 and len(set(ids)) == 37
    assert cache.executor == "gpu" and cache.gpu
    # every rowblock combination of this space runs correctly (its CPU sweep shows none fails to build)
    failed = [(r.knobs, r.outcome.status, r.outcome.message[:80]) for r in cache.records
              if r.outcome.status is not Status.ok]
    assert not failed, failed
    timed = [r for r in cache.records if r.kernel == "rowblock"]
    assert all(r.outcome.timing and r.outcome.speedup for r in timed)
    # speedups of the resumed part are against the baseline the first part measured
    assert max(r.outcome.speedup or 0 for r in timed) > 2
