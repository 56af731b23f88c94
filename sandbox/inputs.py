"""Seeded host-side input generation, output poisoning and reference calls (NumPy only)."""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from .dtypes import lookup, to_storage, to_values
from .problem import Buffer, Init

PIECE = 1 << 22  # elements per independently seeded piece of a large input, drawn on every core
_POOL = ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 1))  # NumPy's generators release the GIL


def draw(buffer: Buffer, rng: np.random.Generator) -> np.ndarray:
    """Values for an input buffer, already in storage form (what the kernel reads).

    A buffer of more than one piece is drawn piece by piece, each from its own generator seeded by one
    draw of `rng` and the piece's index, on every core: the values depend on the seed alone, not on
    the number of cores (a 1.6e9-element input took 70 s on one core)."""
    shape = tuple(buffer.shape)
    dtype = lookup(buffer.dtype)
    count = int(np.prod(shape, dtype=np.int64))
    if count <= PIECE:
        return np.ascontiguousarray(to_storage(_values(buffer, rng, count, 0), dtype)).reshape(shape)
    root = int(rng.integers(0, 2**63))
    out = np.empty(count, dtype=dtype.storage)

    def fill(start: int) -> None:
        n = min(PIECE, count - start)
        piece_rng = np.random.default_rng([root, start // PIECE])
        out[start : start + n] = to_storage(_values(buffer, piece_rng, n, start), dtype)

    list(_POOL.map(fill, range(0, count, PIECE)))
    return out.reshape(shape)


def _values(buffer: Buffer, rng: np.random.Generator, n: int, start: int) -> np.ndarray:
    """`n` values of the buffer's init, flat, from element `start` (only `arange` depends on where)."""
    init: Init = buffer.init or Init()
    if init.kind == "normal":
        return rng.normal(init.mean, init.std, size=n)
    if init.kind == "uniform":
        return rng.uniform(init.low, init.high, size=n)
    if init.kind == "randint":
        return rng.integers(int(init.low), int(init.high), size=n, endpoint=False)
    if init.kind == "bernoulli":
        return rng.random(size=n) < init.p
    if init.kind == "choice":
        return rng.choice(np.asarray(init.values, dtype=np.float64), size=n)
    if init.kind == "arange":
        return np.arange(start, start + n) * init.std + init.mean
    return np.full(n, init.value)


def poison_word(buffer: Buffer) -> tuple[np.dtype, int]:
    """What an output or scratch holds before a launch, as a word of the element's width to fill it with
    (filled on the device: a host copy of a 6.4 GB output took seconds to build and upload): the
    dtype's poison, or zero if it accumulates."""
    dtype = lookup(buffer.dtype)
    return np.dtype(f"uint{8 * dtype.itemsize}"), 0 if buffer.zeroed else dtype.poison_bits


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
