"""Host-only probes of a task's reference: does it run, and would an answer that ignores the inputs
pass? The reference is the task author's code, so it runs in a child process with a time limit: one
that calls `sys.exit`, never returns or crashes the interpreter costs only the probe. (No GPU.)"""

from __future__ import annotations

import multiprocessing
import traceback
from dataclasses import dataclass, field

import numpy as np

from .compare import passes
from .dtypes import lookup, to_storage
from .inputs import draw, load_function, run_reference
from .problem import SizeCase

PROBE_TIMEOUT_S = 300.0
UNIQUE_SAMPLE = 1 << 20  # elements the most-common-value guess is taken from
ADVICE = "widen the inputs or tighten atol/rtol"
GUESSES = {"zeros": "all zeros", "constant": "a constant", "answer": "the answer for other random inputs"}


@dataclass
class ProbeReport:
    """What probing the reference found: errors make a task unusable, warnings make it weak."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def probe_reference(reference: str, cases: list[SizeCase], seed: int = 0, timed_index: int = 0,
                    only: set[int] | None = None, timeout_s: float = PROBE_TIMEOUT_S) -> ProbeReport:
    """Run the reference on every size (or the sizes numbered in `only`) in a child process, with the
    inputs the GPU worker draws; `timed_index` is the timed size's place in `cases`."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(child, reference, cases, seed, timed_index, only), daemon=True)
    process.start()
    child.close()
    try:
        if not parent.poll(timeout_s):
            return ProbeReport(errors=[f"reference: no answer within {timeout_s:.0f} s (does it return?)"])
        try:
            errors, warnings = parent.recv()
        except (EOFError, OSError):
            process.join(5)
            return ProbeReport(errors=[f"reference: the process running it exited (code {process.exitcode}) "
                                       "without an answer; does it call sys.exit or crash?"])
        return ProbeReport(errors, warnings)
    finally:
        if process.is_alive():
            process.kill()
        process.join(5)
        parent.close()


def _child(conn, reference: str, cases: list[SizeCase], seed: int, timed_index: int, only: set[int] | None) -> None:
    try:
        report = probe_in_process(reference, cases, seed, timed_index, only)
        conn.send((report.errors, report.warnings))
    except BaseException as exc:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        conn.send(([f"reference: calling it failed: {type(exc).__name__}: {exc} "
                    f"({where.filename}:{where.lineno})"], []))
    finally:
        conn.close()


def probe_in_process(reference: str, cases: list[SizeCase], seed: int = 0, timed_index: int = 0,
                     only: set[int] | None = None) -> ProbeReport:
    """The probe itself, in this process (the child calls it). A trivial answer that passes at the timed
    size is reported (a kernel can single that size out); at the check sizes, one that passes at all of
    them (a size such as 1x1 decides its own answer, and that is no weakness of the task)."""
    function = load_function(reference)
    report = ProbeReport()
    at_check_sizes: list[set[tuple[str, str]]] = []  # (output, kind of guess) that pass, per check size
    for index, case in enumerate(cases):
        if only is not None and index not in only:
            continue
        expected = _answer(function, case, seed, index)
        report.errors += _nan_outputs(case, expected)
        if report.errors:
            return report
        timed = index == timed_index
        # the timed size is the largest: no second reference call there, the guesses need none
        other = None if timed else _answer(function, case, seed + 1, index)
        passing = _trivial_passes(case, expected, other)
        if timed:
            report.warnings += [f"output {o} at the timed size {case.label}: {what} passes the tolerance, so a "
                                f"kernel that singles out this size could pass; {ADVICE}" for o, _, what in passing]
        else:
            at_check_sizes.append({(o, kind) for o, kind, _ in passing})
    if at_check_sizes:
        for output, kind in sorted(set.intersection(*at_check_sizes)):
            report.warnings.append(f"output {output}: {GUESSES[kind]} passes the tolerance at every check size, "
                                   f"so a wrong kernel could pass; {ADVICE}")
    return report


def _nan_outputs(case: SizeCase, expected: dict[str, np.ndarray]) -> list[str]:
    errors = []
    for out in (b for b in case.buffers if b.role == "output"):
        values = expected[out.name]
        if lookup(out.dtype).is_float and np.isnan(values).any():
            errors.append(f"reference: output {out.name} at {case.label} has NaN ({int(np.isnan(values).sum())} "
                          f"of {values.size}); a NaN in the reference lets a kernel that writes nothing there "
                          "pass (outputs are poisoned with NaN): change the inputs' init or the reference")
    return errors


def _answer(function, case: SizeCase, seed: int, index: int) -> dict[str, np.ndarray]:
    """The reference's outputs for the inputs the worker draws for size `index` and `seed`: one
    generator for all inputs of the size, so inputs of the same shape differ."""
    specs = [b for b in case.buffers if b.role == "input"]
    outputs = [b for b in case.buffers if b.role == "output"]
    rng = np.random.default_rng([seed, index])
    inputs = {b.name: draw(b, rng) for b in specs}
    return run_reference(function, inputs, specs, case.scalars, outputs, case.dims)


def _trivial_passes(case: SizeCase, expected: dict[str, np.ndarray],
                    other: dict[str, np.ndarray] | None) -> list[tuple[str, str, str]]:
    """(output, kind of guess, the guess in words) for each output that all zeros, one constant, or (given
    `other`) the answer for other inputs matches within tolerance: a kernel that ignores its inputs could
    then pass."""
    found = []
    for out in (b for b in case.buffers if b.role == "output"):
        ref, dtype = expected[out.name], lookup(out.dtype)
        guesses = [("zeros", "all zeros", np.zeros(out.count))]
        if out.count > 1:  # for a single value, "the most common value" would be the answer itself
            sample = ref.reshape(-1)[:: max(1, out.count // UNIQUE_SAMPLE)]  # np.unique sorts: keep it small
            values, counts = np.unique(sample, return_counts=True)
            common = values[np.argmax(counts)]
            guesses.append(("constant", f"the constant {common!r}", np.full(out.count, common)))
            if dtype.is_float:
                mean = np.mean(ref)
                guesses.append(("constant", f"the constant mean {float(mean):.4g}", np.full(out.count, mean)))
        if other is not None:
            guesses.append(("answer", GUESSES["answer"], other[out.name]))
        for kind, what, guess in guesses:
            if passes(out, to_storage(guess, dtype), ref):
                found.append((out.name, kind, what))
                break
    return found
