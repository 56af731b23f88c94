"""Outcome classes from CUDA error messages and worker replies (the worker's side needs a GPU)."""

import pytest

from sandbox import Reply, Status, outcome_from_reply
from sandbox.classify import classify_cuda_error


@pytest.mark.parametrize("message, status, sticky", [
    ("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered", Status.runtime_error, True),
    ("cudaErrorIllegalAddress: an illegal memory access was encountered", Status.runtime_error, True),
    ("CUDA_ERROR_MISALIGNED_ADDRESS: misaligned address", Status.runtime_error, True),
    ("CUDA_ERROR_ASSERT: device-side assert triggered", Status.runtime_error, True),
    ("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: too many resources requested for launch", Status.resource_error, False),
    ("cudaErrorMemoryAllocation: out of memory", Status.resource_error, False),
    ("CUDA_ERROR_INVALID_VALUE: invalid argument", Status.launch_error, False),
    ("CUDA_ERROR_NOT_FOUND: named symbol not found", Status.launch_error, False),
    ("CUDA_ERROR_NO_BINARY_FOR_GPU: no kernel image is available", Status.launch_error, False),
    ("something nobody has seen before", Status.runtime_error, True),
])
def test_cuda_errors(message, status, sticky):
    assert classify_cuda_error(message) == (status, sticky)


def test_reply_with_mismatch_and_timings():
    timing = dict(median_ms=1.0, p10_ms=0.9, p90_ms=1.2, min_ms=0.8, max_ms=1.5, repetitions=50)
    ok = outcome_from_reply(Reply.model_validate({"status": "ok", "timings": [timing, dict(timing, median_ms=3.0)],
                                                  "sizes_checked": ["n=1"], "deterministic": True}))
    assert ok.correct and ok.timing.median_ms == 1.0 and ok.baseline_timing.median_ms == 3.0
    bad = outcome_from_reply(Reply(status="wrong_result", message="wrong y",
                                   mismatch={"output": "y", "phase": "guard", "detail": "past the end"}))
    assert bad.status is Status.wrong_result and bad.mismatch.phase == "guard" and not bad.correct


def test_unknown_status_is_refused():
    with pytest.raises(ValueError):
        outcome_from_reply(Reply(status="fine"))


def test_only_a_suspect_flag_casts_doubt_on_a_correct_kernel():
    from sandbox import SUSPECT, Outcome, Status

    informational = Outcome(status=Status.ok, flags=["library baseline not timed: ModuleNotFoundError: torch"])
    assert not informational.suspect
    doubtful = Outcome(status=Status.ok, flags=[f"{SUSPECT} 140% of a measured hardware ceiling"])
    assert doubtful.suspect


def test_an_outcome_with_nan_and_infinite_values_reads_back_from_its_json():
    """A wrong element is often NaN (never written): the journal's JSON must read back as it was written
    (pydantic writes NaN as null by default, which a float field then refuses: a run could not resume)."""
    import math

    from sandbox import BadValue, Mismatch, Outcome, Status

    outcome = Outcome(status=Status.wrong_result, mismatch=Mismatch(
        got=float("nan"), max_abs_error=float("inf"),
        first_bad=[BadValue(index=[0], expected=1.0, got=float("nan")),
                   BadValue(index=[1], expected=-float("inf"), got=2.0)]))
    again = Outcome.model_validate_json(outcome.model_dump_json())
    assert again.mismatch is not None and math.isnan(again.mismatch.got or 0.0)
    assert again.mismatch.max_abs_error == float("inf")
    assert math.isnan(again.mismatch.first_bad[0].got) and again.mismatch.first_bad[1].expected == -float("inf")
