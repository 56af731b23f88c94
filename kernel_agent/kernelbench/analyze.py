"""What a KernelBench problem is, as a kagent task: its size constants (the dims), smaller check sizes
made by re-running the file with smaller constants, every tensor's axes named by the dims, the inputs'
value distributions, the outputs, and why a problem cannot be a task (random ops, shapes that depend on
the data, unsupported dtypes)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .problem import ProblemError, Tensors, forward_parameter_names, int_constants, load, read_source, run_at
from .shapes import Setting, fit_axis

DTYPES = {"torch.float32": "float32", "torch.float16": "float16", "torch.bfloat16": "bfloat16",
          "torch.float64": "float64", "torch.int32": "int32", "torch.int64": "int64", "torch.bool": "bool",
          "torch.int8": "int8", "torch.uint8": "uint8"}
CHECK_SIZES = 3  # check sizes wanted besides the timed one
STAT_RUNS = 16  # draws of the inputs at a check size, to tell how their values are distributed
MAX_CHECK_ELEMENTS = 1 << 24  # elements of every input, parameter and output together at a check size
SMALL_STARTS = (3, 5, 7, 9, 11, 13, 17, 21, 25, 33, 65)  # the first constant's value per attempt (others +2)


@dataclass
class Tensor:
    name: str  # the task's name for it
    source: str  # "input" (get_inputs position), "param" (the model's dotted name) or "output"
    key: str | int  # position, dotted name or output index
    dtype: str
    shape: list[str | int]
    init: dict[str, Any] = field(default_factory=dict)


@dataclass
class Analysis:
    name: str
    description: str
    sizes: list[str]  # the size constants, the task's dims
    timed: Setting
    checks: list[Setting]
    derived: dict[str, str]
    tensors: list[Tensor]
    scalars: dict[str, tuple[str, float | int, int]]  # name: (dtype, value, get_inputs position)
    notes: list[str] = field(default_factory=list)

    def of(self, source: str) -> list[Tensor]:
        return [t for t in self.tensors if t.source == source]


def task_name(path: Path) -> str:
    """`level1/23_Softmax.py` -> `l1_23_softmax`: a task name (an identifier) from the file and its level."""
    stem = re.sub(r"\W+", "_", path.stem).strip("_").lower()
    level = re.search(r"level(\d+)", path.parent.name)
    return f"l{level.group(1)}_{stem}" if level else f"kb_{stem}"


def analyze(path: Path) -> Analysis:
    """The problem at `path` as a task's parts; ProblemError with the reason when it cannot be one."""
    import torch

    source = read_source(path)
    module = load(source, str(path))
    constants = int_constants(source)
    try:
        timed = run_at(source, str(path), {}, meta=True)
    except ProblemError as exc:
        _unless_data_dependent(source, path, constants)
        raise exc
    moves = {c: _moves_inputs(source, path, c, constants[c], timed) for c in constants}
    sizes = [c for c, moved in moves.items() if moved is True]
    if not sizes:
        stuck = [c for c, moved in moves.items() if moved is None]
        raise ProblemError(f"its size constants cannot be changed one at a time (changing {', '.join(stuck)} alone "
                           "breaks it)" if stuck else "no module-level integer constant sets the shape of an input "
                           "or parameter (nothing to scale)")
    timed_setting = {c: constants[c] for c in sizes}
    found = _check_settings(source, path, timed_setting)
    checks = [setting for setting, _, _ in found]
    if not checks:
        raise ProblemError("no smaller setting of its size constants runs, so there are no check sizes")
    real = [built for _, _, built in found]
    samples = [run_at(source, str(path), checks[-1], meta=False, seed=seed) for seed in range(1, STAT_RUNS)]
    again = run_at(source, str(path), checks[0], meta=False, forward_seed=1)  # same inputs, other random state
    for first, second in zip(real[0].outputs, again.outputs):
        if first.shape != second.shape:
            raise ProblemError("its output shape depends on the data")
        if not torch.equal(first.nan_to_num(), second.nan_to_num()):
            raise ProblemError("a random op in its forward (two runs on the same inputs differ)")
    settings = [timed_setting, *checks]
    metas = [timed, *[shapes for _, shapes, _ in found]]
    names = forward_parameter_names(module, len(timed.inputs))
    tensors: list[Tensor] = []
    scalars: dict[str, tuple[str, float | int, int]] = {}
    derived: dict[str, str] = {}
    for position, value in enumerate(timed.inputs):
        if isinstance(value, torch.Tensor):
            tensors.append(_tensor(names[position], "input", position, metas, settings, sizes, derived,
                                   [r.inputs[position] for r in real], [r.inputs[position] for r in samples]))
        elif isinstance(value, (bool, int, float)):
            dtype = "float32" if isinstance(value, float) else "int64" if abs(int(value)) >= 2**31 else "int32"
            scalars[names[position]] = (dtype, value, position)
        else:
            raise ProblemError(f"input {names[position]} is a {type(value).__name__}, not a tensor or a number")
    for dotted in timed.params:
        tensors.append(_tensor("p_" + re.sub(r"\W", "_", dotted), "param", dotted, metas, settings, sizes, derived,
                               [r.params[dotted] for r in real], [r.params[dotted] for r in samples]))
    for index in range(len(timed.outputs)):
        tensors.append(_tensor("out" if len(timed.outputs) == 1 else f"out{index}", "output", index, metas,
                               settings, sizes, derived, [r.outputs[index] for r in real], []))
    taken = {*sizes, *derived, *scalars}
    for t in tensors:
        if t.name in taken:
            t.name = f"{t.name}_t"
        taken.add(t.name)
    doc = (module.Model.__doc__ or "").strip().splitlines()
    return Analysis(name=task_name(path), description=doc[0].strip() if doc else path.stem, sizes=sizes,
                    timed=timed_setting, checks=checks, derived=derived, tensors=tensors, scalars=scalars)


def _unless_data_dependent(source: str, path: Path, constants: dict[str, int]) -> None:
    """The shapes could not be known from the shapes alone: if the problem runs for real at a small
    setting, its output's shape depends on the values (nonzero, masking)."""
    small = {c: min(v, 9) for c, v in constants.items()}
    try:
        run_at(source, str(path), small, meta=False)
    except ProblemError:
        return
    raise ProblemError("its output's shape depends on the data (an op such as nonzero or a boolean mask has no "
                       "shape-only form)")


def _elements(tensors: Tensors) -> int:
    every = [*tensors.inputs, *tensors.params.values(), *tensors.outputs]
    return sum(t.numel() for t in every if hasattr(t, "numel"))


def _shapes(tensors: Tensors) -> list[tuple[int, ...]]:
    return [tuple(t.shape) for t in [*tensors.inputs, *tensors.params.values()] if hasattr(t, "shape")]


def _moves_inputs(source: str, path: Path, name: str, value: int, timed: Tensors) -> bool | None:
    """A size constant: changing it changes the shape of some input or parameter of the model (None:
    every change tried broke the problem)."""
    before = _shapes(timed)
    broke = 0
    tried = [other for other in (value + 2, max(1, value // 2)) if other != value]
    for other in tried:
        try:
            moved = run_at(source, str(path), {name: other}, meta=True)
        except ProblemError:
            broke += 1
            continue
        if _shapes(moved) != before:
            return True
    return None if tried and broke == len(tried) else False


def _check_settings(source: str, path: Path, timed: Setting) -> list[tuple[Setting, Tensors, Tensors]]:
    """Up to CHECK_SIZES smaller settings that run (on shapes, then for real), each with what it built
    on the meta device and for real: the constants given distinct small odd values, never above their
    timed ones; else the timed ones divided down."""
    attempts: list[Setting] = []
    for start in SMALL_STARTS:
        attempts.append({c: min(v, start + 2 * i) for i, (c, v) in enumerate(timed.items())})
    for divisor in (64, 16, 256, 8, 4):
        attempts.append({c: max(1, v // divisor) for c, v in timed.items()})
    found: list[tuple[Setting, Tensors, Tensors]] = []
    for setting in attempts:
        if setting == timed or any(setting == f[0] for f in found):
            continue
        try:
            shapes = run_at(source, str(path), setting, meta=True)
            if _elements(shapes) > MAX_CHECK_ELEMENTS:  # a check size is small: this is no check size
                continue
            built = run_at(source, str(path), setting, meta=False)
        except ProblemError:
            continue
        found.append((setting, shapes, built))
        if len(found) == CHECK_SIZES:
            break
    return found


def _tensor(name: str, source: str, key: str | int, metas: list[Tensors], settings: list[Setting],
            sizes: list[str], derived: dict[str, str], real: list[Any], samples: list[Any]) -> Tensor:
    picked = [_pick(m, source, key) for m in metas]
    dtype = DTYPES.get(str(picked[0].dtype))
    if dtype is None:
        raise ProblemError(f"{name} has dtype {picked[0].dtype}, which kagent's buffers do not hold")
    shape: list[str | int] = []
    for axis in range(picked[0].dim()):
        lengths = [int(t.shape[axis]) if t.dim() > axis else -1 for t in picked]
        fitted = fit_axis(lengths, settings, sizes)
        if fitted is None:
            raise ProblemError(f"axis {axis} of {name} ({', '.join(map(str, lengths))} at the settings tried) is "
                               "no simple expression of the size constants")
        if isinstance(fitted, str) and fitted not in sizes:
            fitted = next((k for k, v in derived.items() if v == fitted), None) or _derive(name, axis, fitted, derived)
        shape.append(fitted)
    for t, setting in zip(real, settings[1:]):  # the meta shapes must be what really comes out
        if list(t.shape) != [axis_length(a, setting, derived) for a in shape]:
            raise ProblemError(f"{name}'s shape at a check size is not what its shape on the meta device says")
    init = _init([*real, *samples]) if source != "output" else {}
    if init.get("kind") == "randint":
        init["high"] = _int_bound(int(init["high"]), real, settings[1:], sizes)
    return Tensor(name=name, source=source, key=key, dtype=dtype, shape=shape, init=init)


def _int_bound(high: int, real: list[Any], checks: list[Setting], sizes: list[str]) -> int | str:
    """An integer input's upper bound as a size constant where it follows one (class indices drawn below
    `num_classes`): the largest check setting's draws reach it, and no check size's draws pass it."""
    for name in sizes:
        if checks[-1][name] == high and all(int(t.max()) < s[name] for t, s in zip(real, checks) if t.numel()):
            return name
    return high


def _derive(name: str, axis: int, text: str, derived: dict[str, str]) -> str:
    label = f"{re.sub(r'^p_', '', name)}_d{axis}"
    derived[label] = text
    return label


def axis_length(axis: str | int, setting: Setting, derived: dict[str, str]) -> int:
    if isinstance(axis, int):
        return axis
    if axis in setting:
        return setting[axis]
    return int(eval(derived[axis], {"__builtins__": {}}, dict(setting)))


def _pick(tensors: Tensors, source: str, key: str | int) -> Any:
    if source == "input":
        return tensors.inputs[int(key)]
    if source == "param":
        return tensors.params[str(key)]
    return tensors.outputs[int(key)]


def _init(draws: list[Any]) -> dict[str, Any]:
    """How kagent should draw values like the problem's, from a small real draw of them: a small set
    (e.g. ±1 targets), integers in their range, uniform or normal; a constant (a norm's unit weight)
    is spread around its value, so that a kernel that ignores it does not pass."""
    import torch

    flat = torch.cat([d.detach().flatten() for d in draws])
    if flat.numel() == 0:
        return {"kind": "normal"}
    if flat.dtype == torch.bool:
        return {"kind": "bernoulli", "p": round(float(flat.float().mean()), 3)}
    if not flat.is_floating_point():
        return {"kind": "randint", "low": int(flat.min()), "high": int(flat.max()) + 1}
    values = flat.double()
    unique = torch.unique(values)
    low, high, std = float(values.min()), float(values.max()), float(values.std()) if values.numel() > 1 else 0.0
    if unique.numel() == 1:
        return {"kind": "uniform", "low": low - 0.5, "high": low + 0.5}
    if unique.numel() <= 8 and values.numel() >= 32:
        return {"kind": "choice", "values": [float(v) for v in unique]}
    if std > 0 and (high - low) / std > 5.0:
        return {"kind": "normal", "mean": round(float(values.mean()), 4), "std": round(std, 4)}
    return {"kind": "uniform", "low": round(low, 4), "high": round(high, 4)}
