"""Reading a KernelBench problem file (`class Model`, `get_inputs`, `get_init_inputs`, module-level size
constants) with PyTorch on the CPU: its constants, and what it builds at a given setting of them.

A problem is executed with some of its integer constants rewritten (`run_at`), so that everything the
file computes from them (tuples, other constants) follows. Shapes come from PyTorch's meta device: no
memory is allocated for the problem's own (often multi-GiB) size. This is the user's own checkout,
trusted as the task's Python is; it runs in the importing process.
"""

from __future__ import annotations

import ast
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ProblemError(Exception):
    """The file cannot be read as a KernelBench problem; the message says why (one line)."""


@dataclass
class Tensors:
    """What a problem builds at one setting of its constants."""

    inputs: list[Any]  # tensors (meta or real) or Python scalars, in get_inputs order
    params: dict[str, Any]  # the model's parameters and buffers by dotted name
    outputs: list[Any]  # the forward's tensors (a tuple result gives several)
    model: Any = field(repr=False, default=None)


def int_constants(source: str) -> dict[str, int]:
    """Module-level names bound to a whole number (literal or constant expression), in file order."""
    tree = _parse(source)
    found: dict[str, int] = {}
    namespace: dict[str, Any] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for name, expression in _bindings(node):
            try:
                value = eval(compile(ast.Expression(expression), "<constant>", "eval"), {"__builtins__": {}},
                             namespace)
            except Exception:  # an expression over torch or a function: not a constant
                continue
            namespace[name] = value
            if isinstance(value, int) and not isinstance(value, bool):
                found[name] = value
    return found


def _bindings(node: ast.Assign) -> list[tuple[str, ast.expr]]:
    """The names an assignment binds with the expression of each: `a = b = 8` binds both to 8, and
    `d, h, w = 32, 64, 64` each to its own (other unpackings bind nothing here)."""
    out: list[tuple[str, ast.expr]] = []
    for target in node.targets:
        if isinstance(target, ast.Name):
            out.append((target.id, node.value))
        elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) \
                and len(target.elts) == len(node.value.elts):
            out += [(t.id, v) for t, v in zip(target.elts, node.value.elts) if isinstance(t, ast.Name)]
    return out


def rewritten(source: str, values: dict[str, int]) -> str:
    """The source with each named constant's top-level assignment replaced by its new value (a chained
    `a = b = 8` is split, so each name may take its own value)."""
    tree = _parse(source)
    body: list[ast.stmt] = []
    for node in tree.body:
        bound = _bindings(node) if isinstance(node, ast.Assign) else []
        if not any(name in values for name, _ in bound):
            body.append(node)
            continue
        for name, expression in bound:  # one assignment per name (an unpacking's other targets are kept)
            new_value = ast.Constant(values[name]) if name in values else expression
            body.append(ast.copy_location(ast.Assign(targets=[ast.Name(name, ast.Store())], value=new_value), node))
    tree.body = body
    return ast.unparse(ast.fix_missing_locations(tree))


def load(source: str, name: str) -> types.ModuleType:
    """Execute the problem's source as a module; ProblemError when it fails or lacks a part."""
    module = types.ModuleType(f"kagent_kernelbench_{abs(hash(name))}")
    try:
        exec(compile(source, name, "exec"), module.__dict__)
    except Exception as exc:
        raise ProblemError(f"executing it failed: {type(exc).__name__}: {exc}") from None
    missing = [part for part in ("Model", "get_inputs", "get_init_inputs") if not hasattr(module, part)]
    if missing:
        raise ProblemError(f"not a KernelBench problem: no {', '.join(missing)}")
    return module


def run_at(source: str, name: str, values: dict[str, int], meta: bool, seed: int = 0,
           forward_seed: int = 0) -> Tensors:
    """Build the problem with its constants set to `values`: on the meta device (shapes only) or for real
    on the CPU (model and inputs drawn with `seed`), and run its forward once (the random state
    reseeded with `forward_seed` first)."""
    import torch

    module = load(rewritten(source, values), name)
    torch.manual_seed(seed)
    try:
        if meta:
            with torch.device("meta"):
                model = module.Model(*module.get_init_inputs())
                inputs = list(module.get_inputs())
        else:
            model = module.Model(*module.get_init_inputs())
            inputs = list(module.get_inputs())
    except Exception as exc:
        raise ProblemError(f"building the model or its inputs failed: {type(exc).__name__}: {exc}") from None
    params = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    torch.manual_seed(forward_seed)
    try:
        with torch.no_grad():
            result = model(*inputs)
    except Exception as exc:
        raise ProblemError(f"its forward failed{' on shapes alone' if meta else ''}: "
                           f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    outputs = list(result) if isinstance(result, (tuple, list)) else [result]
    if not outputs or not all(isinstance(o, torch.Tensor) for o in outputs):
        raise ProblemError("its forward does not return tensors")
    return Tensors(inputs=inputs, params=params, outputs=outputs, model=model)


def forward_parameter_names(module: types.ModuleType, count: int) -> list[str]:
    """The names of forward's parameters (after self) for `count` inputs; x0, x1... where it has *args."""
    import inspect

    try:
        params = list(inspect.signature(module.Model.forward).parameters.values())[1:]
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names[:count] if len(names) >= count else [f"x{i}" for i in range(count)]


def _parse(source: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        raise ProblemError(f"not valid Python: {exc.msg} (line {exc.lineno})") from None


def read_source(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProblemError(f"cannot read it: {exc}") from None
