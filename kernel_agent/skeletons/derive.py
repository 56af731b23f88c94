"""Slot fills kagent reads off the task's declared shapes, so that a model writes only the math.

The structure slots of a skeleton (how many rows, which buffer is the input, which axis is reduced)
follow from the task's input and output shapes whenever the shapes leave one reading: a rowwise task
whose output has the input's shape maps every row (its FINISH slot is unused), one whose output is a
prefix of the input's shape writes a result a row (OUT_ROW and MAP are unused); an axis reduction's
axis is the one the output lacks; a matmul's M, N and K are the axes its operands share. Where the
shapes leave more than one reading (a rank-3 softmax: which axes form a row?), the slot stays the
model's, and a slot that follows from the model's own fills (IN_ROW from COLS) is written from them.

`derive(skeleton, task, fills)` returns what it can add to `fills` (never changing a fill given) and
the optional slots the task's shapes rule out. A derivation is never a guess: with no unique reading
it returns nothing for that slot.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ..task import Task
from .format import Skeleton

Axes = tuple[str, ...]


@dataclass(frozen=True)
class Derived:
    fills: dict[str, str] = field(default_factory=dict)  # slot -> fill read off the shapes (or earlier fills)
    unused: frozenset[str] = frozenset()  # optional slots this task's shapes rule out: left empty
    needed: frozenset[str] = frozenset()  # optional slots this task's shapes call for (the output's writer)
    misfit: str = ""  # why the task's shapes rule the skeleton out (empty: they do not)


def derive(skeleton: Skeleton, task: Task, fills: Mapping[str, str] | None = None) -> Derived:
    """The fills `skeleton` gets from `task`'s shapes (and from `fills`, the ones known so far), and the
    optional slots that stay empty; slots already in `fills` are left alone."""
    rule = RULES.get(skeleton.name)
    if rule is None:
        return Derived()
    known = {k: v for k, v in (fills or {}).items() if v.strip()}
    found = rule(_Shapes(task), known)
    declared = {s.name for s in skeleton.slots}
    optional = {s.name for s in skeleton.slots if s.optional}
    return Derived({k: v for k, v in found.fills.items() if k in declared and k not in known},
                   frozenset(found.unused & optional), frozenset(found.needed & optional), found.misfit)


@dataclass(frozen=True)
class Plan:
    """What a port prompt shows and asks for."""

    given: dict[str, str]  # read off the shapes
    after: dict[str, str]  # written from the model's own fills (the slot's name standing for its fill)
    unused: frozenset[str]  # optional slots left empty
    needed: frozenset[str]  # optional slots this task must fill
    asked: list[str]  # the slots the model fills, in the skeleton's order


def plan(skeleton: Skeleton, task: Task) -> Plan:
    """The port plan of `skeleton` for `task`: e.g. for a rank-3 softmax on rowwise, ROWS and COLS are
    asked, IN_ROW follows from COLS (`x + row * COLS`) and FINISH is unused."""
    given = derive(skeleton, task)
    stand_ins = {s.name: s.name for s in skeleton.slots
                 if s.kind == "dim" and s.name not in given.fills and s.name not in given.unused}
    after = derive(skeleton, task, {**given.fills, **stand_ins}).fills
    skip = set(given.fills) | set(after) | given.unused
    asked = [s.name for s in skeleton.slots if s.name not in skip]
    return Plan(given.fills, after, given.unused, given.needed, asked)


# ---- the task's shapes ---------------------------------------------------------------------------

class _Shapes:
    """The task's tensors as axis tuples (dims and integers as text), in parameter order."""

    def __init__(self, task: Task) -> None:
        order = {name: i for i, name in enumerate(task.params)}
        self.inputs = sorted(((n, tuple(str(a) for a in t.shape), t.dtype) for n, t in task.inputs.items()),
                             key=lambda x: order.get(x[0], len(order)))
        self.outputs = sorted(((n, tuple(str(a) for a in t.shape), t.dtype) for n, t in task.outputs.items()),
                              key=lambda x: order.get(x[0], len(order)))

    def floats(self, dtype: str = "float32") -> list[tuple[str, Axes]]:
        return [(n, s) for n, s, d in self.inputs if d == dtype]

    def main(self, dtype: str = "float32") -> tuple[str, Axes] | None:
        """The input of `dtype` with the most axes (the first such in parameter order)."""
        found = self.floats(dtype)
        return max(found, key=lambda x: len(x[1])) if found else None

    def out_floats(self) -> list[tuple[str, Axes]]:
        return [(n, s) for n, s, d in self.outputs if d == "float32"]


def product(axes: Sequence[str]) -> str:
    """The product of `axes` as a dim expression ('1' for none)."""
    return " * ".join(axes) if axes else "1"


def operand(expr: str) -> str:
    """`expr` as a factor: parenthesised unless it is one name or number."""
    return expr if expr.replace("_", "a").isalnum() else f"({expr})"


def _scalar(axes: Axes) -> bool:
    return all(a == "1" for a in axes)


def _squeeze(axes: Axes) -> Axes:
    return tuple(a for a in axes if a != "1")


# ---- one rule per skeleton ------------------------------------------------------------------------

Rule = Callable[[_Shapes, dict[str, str]], Derived]


def _elementwise(shapes: _Shapes, known: dict[str, str]) -> Derived:
    outs = shapes.out_floats()
    if len(shapes.outputs) != 1 or len(outs) != 1:
        return Derived()
    name, axes = outs[0]
    return Derived({"OUT": name, "N": product(axes)})


def _full_reduce(shapes: _Shapes, known: dict[str, str]) -> Derived:
    main = shapes.main()
    if main is None:
        return Derived()
    axes = main[1]
    if odd := [n for n, s, _ in shapes.outputs if not _scalar(s) and _squeeze(s) != _squeeze(axes)]:
        return Derived(misfit=f"output {odd[0]} is neither one value nor of the input's shape: the reduction "
                              "is not of the whole input")
    same = [n for n, s in shapes.floats() if s == axes]
    fills = {"N": product(axes), "IN_A": same[0], "IN_B": same[1] if len(same) == 2 else same[0]}
    if len(same) > 2:
        del fills["IN_A"], fills["IN_B"]
    outs = [s for _, s, _ in shapes.outputs]
    unused: set[str] = set()
    needed: set[str] = set()
    if outs and all(_scalar(s) for s in outs):
        unused.add("MAP")
        needed.add("RESULT")
    elif not any(_scalar(s) for s in outs):
        unused.add("RESULT")
        needed.add("MAP")
    return Derived(fills, frozenset(unused), frozenset(needed))


def _axis_reduce(shapes: _Shapes, known: dict[str, str]) -> Derived:
    main = shapes.main()
    if main is not None and len(shapes.outputs) == 1:
        out = shapes.outputs[0][1]
        if _scalar(out):
            return Derived(misfit="the output is one value: a reduction of the whole input (full_reduce), "
                                  "not of one axis")
        if _squeeze(out) == _squeeze(main[1]):
            return Derived(misfit="the output has the input's shape: no axis is reduced away")
    if main is None or len(main[1]) < 2 or len(shapes.outputs) != 1:
        return Derived()
    name, axes = main
    out = shapes.outputs[0][1]
    axis = {j for j in range(len(axes)) if out in (axes[:j] + axes[j + 1:], (*axes[:j], "1", *axes[j + 1:]))}
    if len(axis) != 1:
        return Derived({"IN": name})
    j = axis.pop()
    return Derived({"OUTER": product(axes[:j]), "R": axes[j], "INNER": product(axes[j + 1:]), "IN": name})


def _rowwise(shapes: _Shapes, known: dict[str, str]) -> Derived:
    main = shapes.main()
    if main is None:
        return Derived()
    name, axes = main
    fills: dict[str, str] = {}
    unused: set[str] = set()
    mapped = [n for n, s in shapes.out_floats() if s == axes]
    rows_out = [s for _, s, _ in shapes.outputs if s != axes]
    needed: set[str] = set()
    if mapped and not rows_out:
        unused.add("FINISH")
        needed.add("MAP")
        if len(axes) <= 2:
            fills.update(ROWS=product(axes[:-1]), COLS=axes[-1])
    elif not mapped and rows_out:
        unused.update(("OUT_ROW", "MAP"))
        needed.add("FINISH")
        prefixes = {k for k in range(1, len(axes)) for s in rows_out if _squeeze(s) == _squeeze(axes[:k])}
        if len(axes) == 2 or len(prefixes) == 1:
            k = prefixes.pop() if prefixes else 1
            fills.update(ROWS=product(axes[:k]), COLS=product(axes[k:]))
    cols = fills.get("COLS", known.get("COLS"))
    if cols is not None:
        fills["IN_ROW"] = f"{name} + row * {operand(cols)}"
        if len(mapped) == 1 and not rows_out:
            fills["OUT_ROW"] = f"{mapped[0]} + row * {operand(cols)}"
    return Derived(fills, frozenset(unused), frozenset(needed))


def _row_scan(shapes: _Shapes, known: dict[str, str]) -> Derived:
    main = shapes.main()
    outs = shapes.out_floats()
    inputs = {_squeeze(axes) for _, axes, _ in shapes.inputs}
    if not any(_squeeze(axes) in inputs for _, axes, _ in shapes.outputs):
        return Derived(misfit="a scan writes a value for every input value, and no output has an input's shape")
    if main is None or len(outs) != 1 or outs[0][1] != main[1]:
        return Derived()
    name, axes = main
    return Derived({"ROWS": product(axes[:-1]), "COLS": axes[-1], "IN": name, "OUT": outs[0][0]})


def _matmul_reading(shapes: _Shapes, dtype: str) -> tuple[dict[str, str], dict[str, tuple[str, bool, bool]]] | None:
    """BATCH, M, N, K from an output (P.., M, N) and two inputs of `dtype`, (P.. or none, M, K or K, M)
    and (P.. or none, K, N or N, K); per operand (A, B): its name, whether it is stored transposed and
    whether it has the batch axes. None unless exactly one reading fits."""
    outs = shapes.out_floats()
    if len(outs) != 1 or len(outs[0][1]) < 2:
        return None
    batch, (m, n) = outs[0][1][:-2], outs[0][1][-2:]
    readings = []
    for a_name, a_axes in shapes.floats(dtype):
        for b_name, b_axes in shapes.floats(dtype):
            if (a_name == b_name or len(a_axes) < 2 or len(b_axes) < 2
                    or a_axes[:-2] not in (batch, ()) or b_axes[:-2] not in (batch, ())):
                continue
            for k in set(a_axes[-2:]) - {m, n}:
                a_orders: dict[Axes, bool] = {(m, k): False, (k, m): True}
                b_orders: dict[Axes, bool] = {(k, n): False, (n, k): True}
                a_t, b_t = a_orders.get(a_axes[-2:]), b_orders.get(b_axes[-2:])
                if a_t is not None and b_t is not None and len({m, n, k}) == 3:
                    readings.append((k, (a_name, a_t, bool(batch) and a_axes[:-2] == batch),
                                     (b_name, b_t, bool(batch) and b_axes[:-2] == batch)))
    if len(readings) != 1:
        return None
    k, a, b = readings[0]
    return {"BATCH": product(batch), "M": m, "N": n, "K": k}, {"A": a, "B": b}


def _operand_index(which: str, transposed: bool, batched: bool, dims: dict[str, str]) -> str:
    """The flat index of element (row, kk) of A or (kk, col) of B of product p."""
    m, n, k = dims["M"], dims["N"], dims["K"]
    if which == "A":
        outer, inner, first, second = (k, m, "kk", "row") if transposed else (m, k, "row", "kk")
    else:
        outer, inner, first, second = (n, k, "col", "kk") if transposed else (k, n, "kk", "col")
    start = f"(p * {outer} + {first})" if batched else first
    return f"{start} * {inner} + {second}"


def _matmul_rule(dtype: str, slots: tuple[str, str], returns: str) -> Rule:
    """matmul (float32, LOAD_A/LOAD_B return the element) and matmul_tc (float16, ADDR_A/ADDR_B return
    its address): the dims and both operands' reads, when the operands are plain row-major inputs."""

    def rule(shapes: _Shapes, known: dict[str, str]) -> Derived:
        reading = _matmul_reading(shapes, dtype)
        if reading is None:
            return Derived()
        dims, ops = reading
        fills = dict(dims)
        for which, slot in zip(("A", "B"), slots, strict=True):
            name, transposed, batched = ops[which]
            fills[slot] = returns.format(name=name, index=_operand_index(which, transposed, batched, dims))
        return Derived(fills)

    return rule


def _transpose(shapes: _Shapes, known: dict[str, str]) -> Derived:
    main = shapes.main()
    outs = shapes.out_floats()
    if main is None or len(outs) != 1:
        return Derived()
    name, axes = main
    out_name, out = outs[0]
    splits = [(i, j) for i in range(len(axes)) for j in range(i + 1, len(axes))
              if out == axes[:i] + axes[j:] + axes[i:j]]
    if len(splits) != 1:
        return Derived({"IN": name, "OUT": out_name})
    i, j = splits[0]
    return Derived({"BATCH": product(axes[:i]), "ROWS": product(axes[i:j]), "COLS": product(axes[j:]),
                    "IN": name, "OUT": out_name})


def _window(rank: int, names: tuple[str, ...]) -> Rule:
    """window1d (N, C, L) -> (N, C, LO) and window2d (N, C, H, W) -> (N, C, HO, WO); a missing batch
    axis is a batch of 1. The window's size, stride, padding and dilation stay the model's."""

    def rule(shapes: _Shapes, known: dict[str, str]) -> Derived:
        main = shapes.main()
        outs = shapes.out_floats()
        if main is None or len(outs) != 1:
            return Derived()
        name, axes = main
        out_name, out = outs[0]
        if len(axes) == rank - 1:
            axes, out = ("1", *axes), ("1", *out)
        if len(axes) != rank or len(out) != rank or out[:2] != axes[:2]:
            return Derived()
        spatial = rank - 2
        values = [*axes[:2], *axes[2:], *out[2:]]
        return Derived({**dict(zip(names, values[: 2 + 2 * spatial], strict=True)), "IN": name, "OUT": out_name})

    return rule


RULES: dict[str, Rule] = {
    "elementwise": _elementwise,
    "full_reduce": _full_reduce,
    "axis_reduce": _axis_reduce,
    "rowwise": _rowwise,
    "row_scan": _row_scan,
    "matmul": _matmul_rule("float32", ("LOAD_A", "LOAD_B"), "return {name}[{index}];"),
    "matmul_tc": _matmul_rule("float16", ("ADDR_A", "ADDR_B"), "return {name} + {index};"),
    "transpose": _transpose,
    "window1d": _window(3, ("BATCH", "CHANNELS", "L", "LO")),
    "window2d": _window(4, ("BATCH", "CHANNELS", "H", "W", "HO", "WO")),
}
