"""Host-only probes of a task's reference: would a trivial kernel pass? (No GPU involved.)"""

from __future__ import annotations

import numpy as np

from .compare import compare
from .dtypes import lookup, to_storage
from .inputs import draw, load_function, run_reference
from .problem import SizeCase


def trivial_passes(reference: str, case: SizeCase, seed: int = 0) -> list[str]:
    """Warnings for each output that all zeros, or one constant, would match within tolerance."""
    rng = np.random.default_rng([seed, 0])
    specs = [b for b in case.buffers if b.role == "input"]
    inputs = {b.name: draw(b, rng) for b in specs}
    outputs = [b for b in case.buffers if b.role == "output"]
    expected = run_reference(load_function(reference), inputs, specs, case.scalars, outputs)
    warnings = []
    for out in outputs:
        ref = expected[out.name]
        dtype = lookup(out.dtype)
        values, counts = np.unique(ref, return_counts=True)
        candidates = {"all zeros": 0.0, f"the constant {values[np.argmax(counts)]!r}": values[np.argmax(counts)]}
        if dtype.is_float:
            candidates[f"the constant mean {float(np.mean(ref)):.4g}"] = float(np.mean(ref))
        for what, value in candidates.items():
            guess = to_storage(np.full(out.count, value), dtype)
            if compare(out, guess, ref) is None:
                warnings.append(f"output {out.name} at {case.label}: {what} passes the tolerance, "
                                "so a wrong kernel could pass; widen the inputs or tighten atol/rtol")
                break
    return warnings
