"""The task format: a YAML file naming a NumPy reference, buffers, sizes, tolerances and kernels."""

from __future__ import annotations

import ast
import hashlib
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import yaml
from pydantic import (
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from sandbox import (
    DTYPES,
    Buffer,
    ExprError,
    Kernel,
    Problem,
    SizeCase,
    evaluate,
    evaluate_int,
    expr_names,
    load_kernel,
)

from .task_fields import IDENT, INT_RANGES, Cost, Input, Output, Scalar, Strict


class TaskError(ValueError):
    """A task file that cannot be used; each line names a field path and what was expected."""


class NoStartingKernel(TaskError):
    """The task has no baseline kernel, and what was asked needs one."""


class Task(Strict):
    name: str = Field(pattern=IDENT)
    description: str = ""
    family: str | None = Field(None, pattern=IDENT, description="operator family (learned search policies are "
                                                              "shared within it); default: the task's name")
    reference: str = Field(description="'file.py:function', relative to the task file")
    library: str | None = Field(None, description="'file.py:function' taking torch tensors, timed alongside")
    dims: dict[str, int] = Field(description="the timed size")
    derived: dict[str, str] = Field(default_factory=dict,
                                    description="dims computed from the others at every size, e.g. n: rows * cols "
                                                "(usable wherever a dim is: shapes, params, cost, directives)")
    check_sizes: list[dict[str, int]] = Field(min_length=1, description="extra correctness sizes")
    index_dtype: Literal["int32", "int64"] = "int32"
    inputs: dict[str, Input]
    outputs: dict[str, Output] = Field(min_length=1)
    scalars: dict[str, Scalar] = Field(default_factory=dict)
    params: list[str] = Field(description="the kernel's parameter order: buffer, dim and scalar names")
    cost: Cost = Field(default_factory=Cost)
    baseline: str | None = Field(None, description="path of the naive baseline kernel, relative to the task file; "
                                                   "none: the task has no starting kernel (a model writes the first)")
    model_source: str | None = Field(None, description="the source the task was imported from (e.g. a KernelBench "
                                                       "problem's PyTorch model), shown to models in prompts")
    variants: dict[str, str] = Field(default_factory=dict, description="expert variant kernels")
    root: Path = Field(Path("."), exclude=True, description="folder of the task file (set by the loader)")

    @field_validator("reference", "library", "baseline", "model_source")
    @classmethod
    def _a_path(cls, value: str | None) -> str | None:
        if value is not None and any(ord(c) < 32 for c in value):
            raise ValueError(f"{value!r} holds a control character; expected a file name")
        return value

    @field_validator("variants")
    @classmethod
    def _paths(cls, value: dict[str, str]) -> dict[str, str]:
        for path in value.values():
            cls._a_path(path)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Task:
        problems: list[str] = []
        for size_index, size in enumerate(self.check_sizes):
            if set(size) != set(self.dims):
                problems.append(f"check_sizes.{size_index}: has dims {sorted(size)}, expected {sorted(self.dims)}")
        if problems:  # the sizes below would not be whole
            raise ValueError("; ".join(problems))
        if problems := self._derived_problems():
            raise ValueError("; ".join(problems))
        dim_names = set(self.dims) | set(self.derived)
        index_max = INT_RANGES[self.index_dtype][1]
        for size_index, size in enumerate(self.sizes):
            for dim, value in size.items():
                if value < 1:
                    problems.append(f"dims: {dim}={value} must be at least 1 (size {size_index})")
                elif value > index_max:
                    problems.append(f"dims: {dim}={value} does not fit the kernels' {self.index_dtype} "
                                    f"index type (size {size_index}); set index_dtype: int64")
        for group in ("inputs", "outputs"):
            for name, tensor in getattr(self, group).items():
                for axis in tensor.shape:
                    if isinstance(axis, str) and axis not in dim_names:
                        problems.append(f"{group}.{name}.shape: unknown dim {axis!r} (dims: {sorted(dim_names)})")
        names = [*self.inputs, *self.outputs, *self.scalars, *self.dims, *self.derived]
        duplicated = {n for n in names if names.count(n) > 1}
        if duplicated:
            problems.append(f"names used twice across inputs/outputs/scalars/dims: {sorted(duplicated)}")
        for index, param in enumerate(self.params):
            if param not in names:
                problems.append(f"params.{index}: unknown name {param!r} (known: {', '.join(names)})")
        for name, tensor in self.inputs.items():
            problems += [p for bound, text in tensor.init.expressions().items()
                         if (p := _names_problem(f"inputs.{name}.init.{bound}", text, dim_names))]
        for field_name in ("bytes", "flops"):
            text = getattr(self.cost, field_name)
            if text is None:
                continue
            if problem := _names_problem(f"cost.{field_name}", text, dim_names):
                problems.append(problem)
                continue
            problems += _cost_problems(f"cost.{field_name}", text, self.sizes)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def _derived_problems(self) -> list[str]:
        """Each derived dim: a new name, an expression over the dims (and the derived dims before it), a
        whole number at every size."""
        problems, known = [], set(self.dims)
        for name, text in self.derived.items():
            where = f"derived.{name}"
            if not re.match(IDENT, name) or name in self.dims:
                problems.append(f"{where}: {'a dim of that name exists' if name in self.dims else 'not a name'}")
                continue
            if problem := _names_problem(where, text, known):
                problems.append(f"{problem} (dims: {sorted(known)})")
            known.add(name)
        if problems:
            return problems
        for size in [self.dims, *self.check_sizes]:
            try:
                _with_derived(size, self.derived)
            except ExprError as exc:
                problems.append(f"derived: {exc} at {_label(size)}")
        return problems

    @property
    def sizes(self) -> list[dict[str, int]]:
        """Every size the kernel is checked on, with its derived dims; the timed size comes first."""
        return [_with_derived(size, self.derived) for size in [self.dims, *self.check_sizes]]

    def path(self, relative: str) -> Path:
        return (self.root / relative).resolve()

    def function_spec(self, spec: str) -> str:
        """'file.py:function' with the file made absolute, for the worker process."""
        file, name = spec.split(":")
        return f"{self.path(file)}:{name}"

    def fingerprint(self) -> str:
        """A hash of what decides a kernel's verdict and timing: sizes, buffers, tolerances, parameters,
        cost, and the reference's and library's source. Names, family and kernel lists are left out, so
        a recording survives a new variant or a description edit, and nothing that changes a verdict."""
        fields = self.model_dump(mode="json", exclude_defaults=True,
                                 include={"dims", "derived", "check_sizes", "index_dtype", "inputs", "outputs",
                                          "scalars", "params", "cost"})
        digest = hashlib.sha256(json.dumps(fields, sort_keys=True).encode())
        for spec in (self.reference, self.library):
            if spec is not None:
                digest.update(self.path(spec.split(":")[0]).read_bytes() + spec.encode())
        return digest.hexdigest()[:24]

    def reference_source(self) -> str:
        """The source of what the kernel must compute: the file the task was imported from, else the NumPy
        reference function; "" if it cannot be read."""
        if self.model_source is not None:
            try:
                return self.path(self.model_source).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return ""
        text = self._reference_module()
        try:
            return function_with_its_names(text, self.reference.partition(":")[2]) if text else ""
        except (SyntaxError, ValueError):
            return ""

    def reference_constants(self) -> dict[str, str]:
        """The numbers the reference's module names (`KERNEL, PAD, DILATION = 8, 4, 3`): name to the
        number as written; empty for an imported model or a reference that cannot be read."""
        text = self._reference_module() if self.model_source is None else None
        try:
            return numeric_constants(text) if text else {}
        except (SyntaxError, ValueError):
            return {}

    def _reference_module(self) -> str | None:
        """The text of the file the NumPy reference is defined in; None if it cannot be read."""
        try:
            return (Path(self.root) / self.reference.partition(":")[0]).read_text()
        except (OSError, UnicodeDecodeError, ValueError):
            return None

    def c_parameters(self, restrict: bool = False) -> list[str]:
        """The kernel's C parameters in the task's order, e.g. `const float* x`, `float* y`, `int n`
        (pointers `__restrict__` if asked: a task's buffers never alias)."""
        mark = " __restrict__" if restrict else ""
        parts = []
        for name in self.params:
            if name in self.inputs:
                parts.append(f"const {DTYPES[self.inputs[name].dtype].c_name}*{mark} {name}")
            elif name in self.outputs:
                parts.append(f"{DTYPES[self.outputs[name].dtype].c_name}*{mark} {name}")
            elif name in self.scalars:
                parts.append(f"{DTYPES[self.scalars[name].dtype].c_name} {name}")
            else:
                parts.append(f"{DTYPES[self.index_dtype].c_name} {name}")
        return parts

    def problem(self) -> Problem:
        """The task as the sandbox judges kernels for it: every size (timed first) with its buffers,
        scalars and cost, the reference and library functions, the parameter order."""
        return Problem(reference=self.function_spec(self.reference),
                       library=self.function_spec(self.library) if self.library else None,
                       sizes=[self._size_case(dims) for dims in self.sizes], params=self.params,
                       scalars={n: {"dtype": s.dtype, "value": s.value} for n, s in self.scalars.items()},
                       index_dtype=self.index_dtype)

    def _size_case(self, dims: dict[str, int]) -> SizeCase:
        def shape(axes: list[str | int]) -> list[int]:
            return [dims[a] if isinstance(a, str) else int(a) for a in axes]

        buffers = [Buffer(name=n, role="input", dtype=t.dtype, shape=shape(t.shape), init=t.init.at(dims))
                   for n, t in self.inputs.items()]
        buffers += [Buffer(name=n, role="output", dtype=t.dtype, shape=shape(t.shape), zeroed=t.accumulate,
                           exact=t.compare_exactly, atol=t.atol, rtol=t.rtol) for n, t in self.outputs.items()]
        return SizeCase(label=_label({k: dims[k] for k in self.dims}), dims=dims, buffers=buffers,
                        scalars={n: s.value for n, s in self.scalars.items()},
                        bytes_moved=evaluate(self.cost.bytes, dims) if self.cost.bytes else None,
                        flops=evaluate(self.cost.flops, dims) if self.cost.flops else None)

    def baseline_path(self) -> Path:
        """The baseline kernel's file; NoStartingKernel when the task has none."""
        if self.baseline is None:
            raise NoStartingKernel(f"task {self.name} has no starting kernel (no baseline): a model writes the "
                                   "first one (kagent optimize --llm ...), or give a kernel file")
        return self.path(self.baseline)

    def baseline_kernel(self) -> Kernel:
        """The task's baseline kernel file, with the task's kernel folders as its include roots."""
        return load_kernel(self.baseline_path(), include_roots=self.kernel_folders())

    def kernel_folders(self) -> tuple[Path, ...]:
        """The folders of the task's kernel files: what a kernel of the task may #include from."""
        return tuple(dict.fromkeys(path.parent for path in self.kernel_paths().values()))

    def kernel_paths(self) -> dict[str, Path]:
        """The task's own kernel files by label (no "baseline" when it has no starting kernel)."""
        base = {"baseline": self.path(self.baseline)} if self.baseline is not None else {}
        return {**base, **{k: self.path(v) for k, v in self.variants.items()}}


def _names_problem(where: str, text: str, known: set[str]) -> str | None:
    """What is wrong with an expression's names (it does not parse, or names what is not known), or None."""
    try:
        unknown = expr_names(text) - known
    except ExprError as exc:
        return f"{where}: {exc}"
    return f"{where}: unknown names {sorted(unknown)}" if unknown else None


def _cost_problems(where: str, text: str, sizes: list[dict[str, int]]) -> list[str]:
    """A cost expression must give a finite, non-negative number at every size (the roofline divides by it)."""
    for dims in sizes:
        try:
            value = evaluate(text, dims)
        except ExprError as exc:
            return [f"{where}: {exc} at {_label(dims)}"]
        if not math.isfinite(value) or value < 0:
            return [f"{where}: {text!r} is {value} at {_label(dims)}, not a finite number >= 0"]
    return []


def _with_derived(dims: dict[str, int], derived: dict[str, str]) -> dict[str, int]:
    """The size with its derived dims added in order; ExprError when one is not a whole number >= 1."""
    full = dict(dims)
    for name, text in derived.items():
        value = evaluate_int(text, full)
        if value < 1:
            raise ExprError(f"derived dim {name} = {text} is {value}, not at least 1")
        full[name] = value
    return full


def _label(dims: dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in dims.items())


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, except that a key given twice in one mapping is an error, not a silent overwrite."""

    def construct_mapping(self, node, deep=False):
        seen: set = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice in one mapping", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_task(path: str | Path) -> Task:
    """Read and validate a task file; raise TaskError listing every problem with its field path."""
    path = Path(path)
    if not path.is_file():
        raise TaskError(f"{path}: no such task file")
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except UnicodeDecodeError as exc:
        raise TaskError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except OSError as exc:
        raise TaskError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        raise TaskError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise TaskError(f"{path}: expected a mapping of task fields at the top level")
    try:
        task = Task.model_validate({**data, "root": path.parent.resolve()})
    except ValidationError as exc:
        raise TaskError(f"{path}:\n" + format_errors(exc)) from None
    missing = [
        f"  {field}: file {rel!r} not found"
        for field, rel in [("reference", task.reference.split(":")[0]), ("baseline", task.baseline),
                           *[(f"variants.{k}", v) for k, v in task.variants.items()],
                           *([("library", task.library.split(":")[0])] if task.library else []),
                           ("model_source", task.model_source)]
        if rel is not None and not task.path(rel).is_file()
    ]
    for field, ref in [("reference", task.reference), ("library", task.library)]:
        if ref is not None and ref.count(":") != 1:
            missing.append(f"  {field}: expected 'file.py:function', got {ref!r}")
    if missing:
        raise TaskError(f"{path}:\n" + "\n".join(missing))
    return task


def format_errors(exc: ValidationError) -> str:
    lines: list[str] = []
    for error in exc.errors():
        location = ".".join(str(part) for part in error["loc"]) or "(top level)"
        message = error["msg"].removeprefix("Value error, ")
        if location == "(top level)" and "; " in message:
            lines.extend(f"  {part}" for part in message.split("; "))
        else:
            lines.append(f"  {location}: {message}")
    return "\n".join(lines)


def discover(folder: str | Path) -> list[Path]:
    """Task files under a folder (or the file itself)."""
    folder = Path(folder)
    if folder.is_file():
        return [folder]
    return sorted(p for p in folder.rglob("*.yaml") if not p.name.startswith("."))


def load_suite(paths: Sequence[str | Path]) -> list[tuple[Path, Task]]:
    """(file, task) for every task file under the paths, in order; a task name seen twice is kept
    once (the first). Raises TaskError for a file that does not load."""
    found, names = [], set()
    for path in paths:
        for file in discover(path):
            task = load_task(file)
            if task.name not in names:
                names.add(task.name)
                found.append((file, task))
    return found


def function_with_its_names(text: str, name: str) -> str:
    """The source of module `text`'s function `name`, after the module-level constants and helper
    functions it uses (and those they use), in file order: `KERNEL, PAD, DILATION = 8, 4, 3` above a
    reference that reads `KERNEL`, so that the reference a prompt shows is whole. Imports are left
    out; "" when the module has no such function."""
    module = ast.parse(text)
    defines: dict[str, ast.stmt] = {}
    for node in module.body:
        if isinstance(node, ast.FunctionDef):
            defines[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for leaf in ast.walk(target):
                    if isinstance(leaf, ast.Name):
                        defines[leaf.id] = node
    main = defines.get(name)
    if not isinstance(main, ast.FunctionDef):
        return ""
    needed: list[ast.stmt] = []
    todo: list[ast.stmt] = [main]
    while todo:
        node = todo.pop()
        for leaf in ast.walk(node):
            used = defines.get(leaf.id) if isinstance(leaf, ast.Name) and isinstance(leaf.ctx, ast.Load) else None
            if used is not None and used is not main and all(used is not n for n in needed):
                needed.append(used)
                todo.append(used)
    parts = [ast.get_source_segment(text, n) or "" for n in sorted(needed, key=lambda n: n.lineno)]
    return "\n\n".join([*[p for p in parts if p], ast.get_source_segment(text, main) or ""])


def numeric_constants(text: str) -> dict[str, str]:
    """Module `text`'s top-level names bound to number literals (`K = 11`, `KERNEL, PAD = 8, 4`)."""
    found: dict[str, str] = {}
    for node in ast.parse(text).body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        pairs = (zip(target.elts, value.elts) if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
                 and len(target.elts) == len(value.elts) else [(target, value)])
        for name, number in pairs:
            if isinstance(name, ast.Name) and isinstance(number, ast.Constant) and \
                    isinstance(number.value, (int, float)) and not isinstance(number.value, bool):
                found[name.id] = repr(number.value)
    return found
