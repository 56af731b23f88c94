"""Render the Jinja2 prompt templates in `prompts/` (strict: a missing variable is an error).

Templates whose names start with `_` are shared parts (a base layout, macros) and are not rendered
on their own. Besides the caller's variables, every template can use three helpers:
`source_excerpts(source, log)` (numbered source lines around each compiler error),
`compile_rules(log)` (the "do not ..." rules distilled from a compiler log) and the filter
`phase_text` (what a mismatch phase such as "guard" means).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import (
    Environment,
    FileSystemLoader,
    StrictUndefined,
    TemplateNotFound,
    UndefinedError,
    meta,
    nodes,
)

from ..optimize.compile_rules import rules_from_compile_log

PROMPTS_DIR = Path(__file__).resolve().parents[2] / "prompts"
SUFFIX = ".j2"

# What each Mismatch.phase (sandbox/outcome.py) means, in words a model can act on.
PHASES = {
    "check": "wrong values on the first check against the reference",
    "repeat": "the second identical run gave different values",
    "timed": "a timed launch (outputs re-filled with NaN before it) did not reproduce the verified output",
    "fresh": "fresh inputs: a final run on new inputs in the same buffers gave stale or wrong values",
    "guard": "out-of-bounds write: the guard bands around a buffer were overwritten",
    "inputs": "input modified: the kernel wrote into an input buffer",
}

# `kernel.cu(12): error: ...` (also `catastrophic error`); NVRTC's own headers are skipped.
_ERROR_LINE = re.compile(r"^(?P<file>[^\s()]+)\((?P<line>\d+)\): (?:catastrophic )?error: (?P<message>.*)$")
_MAX_EXCERPTS = 5


class PromptError(ValueError):
    """A template that does not exist, or a variable it needs that the caller did not give."""


def render(name: str, **context: Any) -> str:
    """Render template `name` ("system" or "system.j2") with `context`; raise PromptError when a
    variable is missing."""
    name = _file_name(name)
    if name.startswith("_"):
        raise PromptError(f"{name} is a shared part of other templates, not a prompt of its own")
    env = _environment()
    try:
        template = env.get_template(name)
    except TemplateNotFound:
        known = ", ".join(template_names())
        raise PromptError(f"no prompt template {name!r} in {PROMPTS_DIR} (have: {known})") from None
    missing = sorted(required_variables(name) - set(context))
    if missing:
        raise PromptError(f"template {name}: missing variable(s) {', '.join(missing)}")
    try:
        return template.render(**context)
    except UndefinedError as exc:
        raise PromptError(f"template {name}: missing variable {_undefined_name(exc)} ({exc.message})") from None


def template_names() -> list[str]:
    """The renderable templates (without the `.j2` suffix), sorted; shared parts are left out."""
    return sorted(p.name[: -len(SUFFIX)] for p in PROMPTS_DIR.glob(f"*{SUFFIX}") if not p.name.startswith("_"))


def required_variables(name: str) -> set[str]:
    """The caller's variables a template (with everything it extends, includes or imports) reads."""
    return set(_required(_file_name(name)))


def task_context(task: Any) -> dict[str, Any]:
    """The `task` variable of the templates, from a `kernel_agent.task.Task`."""
    return {
        "name": task.name,
        "description": task.description,
        "reference": task.reference_source(),
        "reference_is_model": task.model_source is not None,
        "params": list(task.params),
        "dims": dict(task.dims),
        "derived": dict(task.derived),
        "check_sizes": [dict(size) for size in task.check_sizes],
        "dtypes": dtypes_summary(task),
        "signature": signature(task),
    }


def signature(task: Any) -> str:
    """The kernel's C parameter list in the task's order, e.g. `(const float* x, float* y, int n)`."""
    return "(" + ", ".join(task.c_parameters()) + ")"


def dtypes_summary(task: Any) -> str:
    """One line per buffer and scalar: dtype, shape, role (and tolerance for outputs)."""
    lines = []
    for name, tensor in task.inputs.items():
        lines.append(f"{name}: {tensor.dtype}[{_shape(tensor.shape)}] input (read-only)")
    for name, tensor in task.outputs.items():
        how = "compared exactly" if tensor.compare_exactly else f"atol {tensor.atol:g}, rtol {tensor.rtol:g}"
        extra = ", zeroed before launch, accumulate into it" if tensor.accumulate else ""
        lines.append(f"{name}: {tensor.dtype}[{_shape(tensor.shape)}] output ({how}{extra})")
    for name, scalar in task.scalars.items():
        lines.append(f"{name}: {scalar.dtype} scalar = {scalar.value}")
    dims = ", ".join([*task.dims, *task.derived])
    lines.append(f"{dims}: {task.index_dtype} dims")
    lines += [f"{name} = {text} (a dim derived from the others)" for name, text in task.derived.items()]
    return "\n".join(lines)


def error_lines(source: str, log: str) -> dict[int, list[str]]:
    """The lines of the kernel file the compiler log names, with their messages (NVRTC's headers skipped)."""
    count = len(source.replace("\r\n", "\n").split("\n"))
    errors: dict[int, list[str]] = {}
    for raw in log.splitlines():
        match = _ERROR_LINE.match(raw.strip())
        if match and not match.group("file").startswith("__nv"):
            number = int(match.group("line"))
            if 1 <= number <= count:
                errors.setdefault(number, []).append(match.group("message").strip())
    return errors


def source_excerpts(source: str, log: str, context: int = 3) -> list[str]:
    """Numbered source lines around each error line the log names (error lines marked `>>`)."""
    lines = source.replace("\r\n", "\n").split("\n")
    errors = error_lines(source, log)
    windows = _merge_windows(sorted(errors), context, len(lines))[:_MAX_EXCERPTS]
    return [_excerpt(lines, start, end, errors) for start, end in windows]


def phase_text(phase: str) -> str:
    """Plain words for a mismatch phase; an unknown phase is returned as it is."""
    return PHASES.get(phase, phase)


def _merge_windows(numbers: list[int], context: int, last: int) -> list[tuple[int, int]]:
    windows: list[tuple[int, int]] = []
    for number in numbers:
        start, end = max(1, number - context), min(last, number + context)
        if windows and start <= windows[-1][1] + 1:
            windows[-1] = (windows[-1][0], max(end, windows[-1][1]))
        else:
            windows.append((start, end))
    return windows


def _excerpt(lines: list[str], start: int, end: int, errors: dict[int, list[str]]) -> str:
    width = len(str(len(lines)))
    out = []
    for number in range(start, end + 1):
        marker = ">>" if number in errors else "  "
        out.append(f"{marker} {number:>{width}} | {lines[number - 1]}")
        out.extend(f"{' ' * (width + 4)}^ error: {message}" for message in errors.get(number, []))
    return "\n".join(out)


def _shape(shape: list) -> str:
    return ", ".join(str(axis) for axis in shape)


def _file_name(name: str) -> str:
    return name if name.endswith(SUFFIX) else name + SUFFIX


def _undefined_name(exc: UndefinedError) -> str:
    match = re.search(r"'(\w+)' is undefined|has no attribute '(\w+)'", exc.message or "")
    return next((g for g in match.groups() if g), "?") if match else "?"


@lru_cache(maxsize=1)
def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(PROMPTS_DIR), undefined=StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
    )
    env.globals.update(source_excerpts=source_excerpts, compile_rules=rules_from_compile_log)
    env.filters["phase_text"] = phase_text
    return env


def _required(name: str) -> frozenset[str]:
    env = _environment()
    assert env.loader is not None
    source = env.loader.get_source(env, name)[0]
    tree = env.parse(source)
    imports = list(tree.find_all((nodes.Import, nodes.FromImport)))
    bound = {n.target for n in imports if isinstance(n, nodes.Import)}
    bound |= {alias if isinstance(alias, str) else alias[1] for n in imports if isinstance(n, nodes.FromImport)
              for alias in n.names}
    names = set(meta.find_undeclared_variables(tree)) - set(env.globals) - bound
    # imported macros see only their arguments, so an imported file needs nothing from the caller
    imported = {n.template.value for n in imports
                if isinstance(n, (nodes.Import, nodes.FromImport)) and isinstance(n.template, nodes.Const)}
    for other in meta.find_referenced_templates(tree):
        if other is not None and other not in imported:
            names |= _required(other)
    return frozenset(names)
