"""Host-only probes of a task's reference: would an answer that ignores the inputs pass? (No GPU.)"""

from __future__ import annotations

import numpy as np

from .compare import compare
from .dtypes import lookup, to_storage
from .inputs import draw, load_function, run_reference
from .problem import SizeCase


def trivial_passes(reference: str, case: SizeCase, seed: int = 0) -> list[str]:
    """Warnings for each output that all zeros, one constant, or the answer for other inputs would
    match within tolerance: a kernel that ignores its inputs could then pass."""
    function = load_function(reference)
    specs = [b for b in case.buffers if b.role == "input"]
    outputs = [b for b in case.buffers if b.role == "output"]

    def answer(seed_: int) -> dict[str, np.ndarray]:
        inputs = {b.name: draw(b, np.random.default_rng([seed_, 0])) for b in specs}
        return run_reference(function, inputs, specs, case.scalars, outputs)

    expected, other = answer(seed), answer(seed + 1)
    warnings = []
    for out in outputs:
        ref, dtype = expected[out.name], lookup(out.dtype)
        guesses = {"all zeros": np.zeros(out.count)}
        if out.count > 1:  # for a single value, "the most common value" would be the answer itself
            values, counts = np.unique(ref, return_counts=True)
            guesses[f"the constant {values[np.argmax(counts)]!r}"] = np.full(out.count, values[np.argmax(counts)])
            if dtype.is_float:
                guesses[f"the constant mean {float(np.mean(ref)):.4g}"] = np.full(out.count, np.mean(ref))
        guesses["the answer for other random inputs"] = other[out.name]
        for what, guess in guesses.items():
            if compare(out, to_storage(guess, dtype), ref) is None:
                warnings.append(f"output {out.name} at {case.label}: {what} passes the tolerance, "
                                "so a wrong kernel could pass; widen the inputs or tighten atol/rtol")
                break
    return warnings
