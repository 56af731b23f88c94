"""Probing a task's reference on the host: it runs in a child with a time limit, NaN is an error, and
a trivial answer that passes is reported where it matters (the timed size, or every check size)."""

from __future__ import annotations

import time

from sandbox import Buffer, Init, SizeCase, probe_reference
from sandbox.probe import probe_in_process

REFERENCES = '''
import sys, time
import numpy as np

def difference(x, y):
    return x - y

def mean_of_rows(x):
    return x.mean(axis=1)

def nan_out(x):
    return np.full(x.shape, np.nan)

def leaves(x):
    sys.exit(3)

def never_returns(x):
    time.sleep(600)

def copy(x):
    return x.copy()
'''


def _case(label: str, rows: int, cols: int, outputs: list[Buffer], second: bool = False) -> SizeCase:
    inputs = [Buffer(name="x", role="input", dtype="float32", shape=[rows, cols], init=Init())]
    if second:
        inputs.append(Buffer(name="y", role="input", dtype="float32", shape=[rows, cols], init=Init()))
    return SizeCase(label=label, buffers=inputs + outputs, scalars={})


def _out(shape: list[int], atol: float = 1e-5) -> Buffer:
    return Buffer(name="out", role="output", dtype="float32", shape=shape, atol=atol, rtol=1e-5)


def _reference(tmp_path, name: str) -> str:
    path = tmp_path / "ref.py"
    path.write_text(REFERENCES)
    return f"{path}:{name}"


def test_inputs_of_the_same_shape_differ_so_their_difference_gives_no_false_warning(tmp_path):
    # With one fresh generator per input (the old probe), x and y were equal and x - y all zeros.
    cases = [_case(f"n={n}", n, 8, [_out([n, 8])], second=True) for n in (64, 3, 5)]
    report = probe_reference(_reference(tmp_path, "difference"), cases)
    assert report.errors == [] and report.warnings == []


def test_a_tiny_output_at_the_timed_size_is_reported(tmp_path):
    # the mean of 2**20 normal values is about 1e-3: all zeros passes with atol 1e-2 at the timed size only
    timed = _case("timed", 4, 1 << 20, [_out([4], atol=1e-2)])
    small = [_case(f"cols={c}", 4, c, [_out([4], atol=1e-2)]) for c in (3, 7)]
    report = probe_reference(_reference(tmp_path, "mean_of_rows"), [timed, *small])
    assert report.errors == []
    assert any("at the timed size timed: all zeros passes" in w for w in report.warnings), report.warnings
    quick = probe_reference(_reference(tmp_path, "mean_of_rows"), [timed, *small], only={1, 2})
    assert not any("timed" in w for w in quick.warnings)


def test_a_size_that_decides_its_own_answer_is_no_warning_but_every_check_size_is(tmp_path):
    one = _case("1x1", 1, 1, [_out([1, 1])])
    cases = [_case("timed", 16, 16, [_out([16, 16])]), one, _case("3x5", 3, 5, [_out([3, 5])])]
    assert probe_in_process(_reference(tmp_path, "copy"), cases).warnings == []
    loose = [_case(n, r, c, [_out([r, c], atol=100.0)]) for n, r, c in (("timed", 8, 8), ("2x2", 2, 2), ("3x3", 3, 3))]
    warnings = probe_in_process(_reference(tmp_path, "copy"), loose).warnings
    assert any("every check size" in w for w in warnings) and any("timed size" in w for w in warnings)


def test_nan_in_the_reference_is_an_error(tmp_path):
    report = probe_reference(_reference(tmp_path, "nan_out"), [_case("4x4", 4, 4, [_out([4, 4])])])
    assert len(report.errors) == 1 and "has NaN (16 of 16)" in report.errors[0]


def test_a_reference_that_exits_is_reported_and_the_caller_lives_on(tmp_path):
    report = probe_reference(_reference(tmp_path, "leaves"), [_case("4x4", 4, 4, [_out([4, 4])])])
    assert len(report.errors) == 1 and "SystemExit: 3" in report.errors[0]


def test_a_reference_that_never_returns_is_cut_off(tmp_path):
    began = time.monotonic()
    report = probe_reference(_reference(tmp_path, "never_returns"), [_case("4x4", 4, 4, [_out([4, 4])])],
                             timeout_s=3)
    assert time.monotonic() - began < 20
    assert report.errors == ["reference: no answer within 3 s (does it return?)"]
