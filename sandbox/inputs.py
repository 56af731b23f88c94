"""Seeded host-side input generation, output poisoning and reference calls (NumPy only)."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .dtypes import lookup, to_storage, to_values
from .problem import Buffer, Init


def draw(buffer: Buffer, rng: np.random.Generator) -> np.ndarray:
    """Values for an input buffer, already in storage form (what the kernel reads)."""
    init: Init = buffer.init or Init()
    shape = tuple(buffer.shape)
    values: np.ndarray
    if init.kind == "normal":
        values = rng.normal(init.mean, init.std, size=shape)
    elif init.kind == "uniform":
        values = rng.uniform(init.low, init.high, size=shape)
    elif init.kind == "randint":
        values = rng.integers(int(init.low), int(init.high), size=shape, endpoint=False)
    elif init.kind == "bernoulli":
        values = rng.random(size=shape) < init.p
    elif init.kind == "choice":
        values = rng.choice(np.asarray(init.values, dtype=np.float64), size=shape)
    elif init.kind == "arange":
        values = np.arange(buffer.count).reshape(shape) * init.std + init.mean
    else:
        values = np.full(shape, init.value)
    return np.ascontiguousarray(to_storage(values, lookup(buffer.dtype)))


def poison(buffer: Buffer) -> np.ndarray:
    """The bytes an output or scratch holds before a launch: poison, or zeros if it accumulates."""
    dtype = lookup(buffer.dtype)
    if buffer.zeroed:
        return np.zeros(buffer.count, dtype=dtype.storage)
    pattern = np.array([dtype.poison_bits], dtype=np.uint64).view(np.uint8)[: dtype.itemsize]
    return np.tile(pattern, buffer.count).view(dtype.storage)


def load_function(spec: str) -> Callable:
    """Import 'path/file.py:function' (the task's own trusted Python)."""
    file, _, name = spec.rpartition(":")
    path = Path(file).resolve()
    module_name = f"kagent_task_{abs(hash(str(path)))}"
    module = sys.modules.get(module_name)
    if module is None:
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(loader_spec)
        sys.path.insert(0, str(path.parent))
        try:
            loader_spec.loader.exec_module(module)
        finally:
            sys.path.remove(str(path.parent))
        sys.modules[module_name] = module
    try:
        return getattr(module, name)
    except AttributeError:
        raise ImportError(f"{path} has no function {name!r}") from None


def sizes_asked(function: Callable, dims: dict[str, int], given: set[str]) -> dict[str, int]:
    """The dims a reference takes: those it names as parameters (not shadowed by a buffer or scalar)."""
    try:
        names = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return {}
    return {name: value for name, value in dims.items() if name in names and name not in given}


def run_reference(
    function: Callable, inputs: dict[str, np.ndarray], input_buffers: list[Buffer],
    scalars: dict, outputs: list[Buffer], dims: dict[str, int] | None = None,
) -> dict[str, np.ndarray]:
    """Call the reference with input values and scalars, and the dims it names as parameters; return
    outputs in storage form, by name."""
    values = {b.name: to_values(inputs[b.name], lookup(b.dtype)).reshape(b.shape) for b in input_buffers}
    result = function(**values, **scalars, **sizes_asked(function, dims or {}, {*values, *scalars}))
    if isinstance(result, dict):
        produced = [result[o.name] for o in outputs]
    elif isinstance(result, (tuple, list)):
        produced = list(result)
    else:
        produced = [result]
    if len(produced) != len(outputs):
        raise ValueError(f"reference returned {len(produced)} outputs, the task declares {len(outputs)}")
    converted = {}
    for out, value in zip(outputs, produced):
        array = np.asarray(value)
        if array.size != out.count:
            raise ValueError(f"reference output {out.name} has {array.size} elements, expected {out.count}")
        dtype = lookup(out.dtype)
        # Float outputs keep the reference's precision (often float64) for the comparison.
        converted[out.name] = array.reshape(-1) if dtype.is_float else to_storage(array, dtype).reshape(-1)
    return converted
