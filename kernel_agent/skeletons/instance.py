"""A skeleton instance: the skeleton's code with the task's parameters and a model's (or a person's)
slot fills put in. The result is an ordinary kagent kernel file; `spans` says on which lines each
fill landed, so a compiler error can be traced back to the slot that caused it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial

from sandbox import ExprError, evaluate

from ..task import Task
from .format import BLOCK_KINDS, BUILTINS, PLACEHOLDER, Skeleton, SkeletonError, Slot

_DIM_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_]\w*)|(?P<int>\d+)|(?P<op>[-+*()]))")
_FORBIDDEN = re.compile(r"__global__|#\s*include|\basm\b|\{\{")
_MEMBER_VIA_OBJECT = re.compile(r"(?P<type>\b(?:float|int|unsigned|long long|bool)\s+)"
                                r"[A-Za-z_]\w*\.(?P<name>[A-Za-z_]\w*)")
_STRUCT = re.compile(r"^\s*(?:typedef\s+)?struct\s*\w*\s*\{(?P<members>.*)\}\s*\w*\s*;?\s*$", re.DOTALL)
# a fields line that declares an object of the struct itself (`State s;`): no member, the struct's own object
_STRUCT_OBJECT = re.compile(r"^[ \t]*(?:struct\s+)?State\s+[A-Za-z_]\w*\s*(?:=[^;\n]*|\{[^;\n]*\})?;?[ \t]*(?://.*)?$\n?",
                            re.MULTILINE)
# a function definition's head: a return type (a small model leaves it out at times), then a name that is no
# statement keyword (`if (v > m) {` is code, not a function), then its parameters and the opening brace
_KEYWORD = r"(?!(?:if|else|for|while|switch|return|do)\b)"
_FUNCTION = re.compile(r"^\s*(?:__device__\s+|__forceinline__\s+|inline\s+|static\s+)*(?:const\s+)?"
                       rf"(?:{_KEYWORD}[A-Za-z_][\w:<>]*[\s*&]+)?{_KEYWORD}[A-Za-z_]\w*\s*\([^)]*\)\s*\{{")


@dataclass
class Instance:
    skeleton: str
    source: str
    spans: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # slot -> 1-based line ranges

    def slot_at(self, line: int) -> str | None:
        """The slot whose fill holds `line` of the source, if any."""
        return next((name for name, spans in self.spans.items() if any(a <= line <= b for a, b in spans)), None)


_LONE_RETURN = re.compile(r"^return\s+(?=[^;]+$)")
_NUMPY_INF = re.compile(r"\b(?:np|numpy|math)\.inf\b")
# std:: math a fill calls (host C++; NVRTC has no <cmath>), as CUDA's float functions
_STD_MATH = {"max": "fmaxf", "min": "fminf", "fmax": "fmaxf", "fmin": "fminf", "abs": "fabsf", "fabs": "fabsf",
             "exp": "expf", "log": "logf", "sqrt": "sqrtf", "tanh": "tanhf", "pow": "powf", "log1p": "log1pf",
             "expm1": "expm1f", "erf": "erff"}
_STD_CALL = re.compile(r"\bstd::(" + "|".join(_STD_MATH) + r")\s*\(")
_NAMED = re.compile(r"^(?:(?:const\s+)?(?:int|float|long long|long|auto)\s+)?[A-Za-z_]\w*\s*=(?!=)\s*(?=\S)")
# an expression led by the type its contract opens with (`float: 1.f`, `float 1.f` for IDENTITY: the local
# model's tenth round, 5 compile errors); a cast is in parentheses and stays
_SCALAR_TYPE = r"(?:const\s+)?(?:float|int|long long|long|double|unsigned|bool)"
_TYPED = re.compile(r"^" + _SCALAR_TYPE + r"\s*(?::\s*|\s+)(?=[^\s=:*&])")
_SPLIT_MEMBERS = re.compile(r",\s*(?=" + _SCALAR_TYPE + r"\s)")  # `float mean, float rstd`: two declarations


def normalize_fills(skeleton: Skeleton, fills: Mapping[str, str]) -> dict[str, str]:
    """The fills as they go into the code: trimmed; a body given as a whole function unwrapped; a body
    that is a lone expression made `return EXPR;`, and a dim or an expression given as `return EXPR;`
    made EXPR, and one given as an assignment (`K = 8`, `const int K = 8;`) its value; `std::max(` and
    the other std:: float math written as CUDA's (`fmaxf(`); a member
    declared through an object (`float s.sum = 0.f;`) declared by its own name, and members given as a
    whole struct (`struct State { float m; float sum; };`) taken out of it, a line declaring an object of
    the struct (`State s;`: the local model's masked_cumsum, "identifier State is undefined") dropped,
    each declaration ending in `;`
    (`float mean, float rstd` as `float mean; float rstd;`); an expression led by its type (`float: 1.f`)
    without it; `np.inf` written as
    `INFINITY`; a placeholder (`...`) read as no fill; optional slots not given left empty."""
    out = {}
    for slot in skeleton.slots:
        text = fills.get(slot.name, "").strip("\n")
        text = _NUMPY_INF.sub("INFINITY", text)  # the reference's Python, written in a fill
        text = _STD_CALL.sub(lambda m: _STD_MATH[m.group(1)] + "(", text)
        if text.strip() in ("...", "…", "// ..."):  # a placeholder, not a fill
            text = ""
        if slot.kind == "body":
            text = _body(text)
        elif slot.kind in ("dim", "expr"):  # `return INFINITY;`, as a body would say it, is INFINITY
            text = _NAMED.sub("", _LONE_RETURN.sub("", " ".join(text.split()).rstrip(";").strip()))
            text = _TYPED.sub("", text) if slot.kind == "expr" else text
        elif slot.kind == "fields":
            if whole := _STRUCT.match(text):  # the skeleton declares the struct: its members are the fill
                text = dedent(whole.group("members").strip("\n"))
            text = _STRUCT_OBJECT.sub("", _MEMBER_VIA_OBJECT.sub(r"\g<type>\g<name>", text))
            text = "\n".join(_member_line(line) for line in text.split("\n"))
        out[slot.name] = text
    return out


def _member_line(line: str) -> str:
    """A fields line as C: declarations split by commas each with its own type (`float mean, float rstd`)
    made separate, and the closing `;` a declaration lacks added."""
    code, marker, comment = line.partition("//")
    code = code.rstrip()
    if not code.strip():
        return line
    code = _SPLIT_MEMBERS.sub("; ", code)
    code += "" if code.endswith((";", "{", "}", ",")) else ";"
    return code + (f" //{comment}" if marker else "")


def check_fills(skeleton: Skeleton, task: Task, fills: Mapping[str, str]) -> list[str]:
    """What is wrong with the fills, in words a model can act on (empty when they fit)."""
    problems = [f"there is no slot {name} in skeleton {skeleton.name} (its slots: "
                f"{', '.join(s.name for s in skeleton.slots)})" for name in fills if skeleton.slot(name) is None]
    normal = normalize_fills(skeleton, fills)
    for slot in skeleton.slots:
        text = normal[slot.name]
        if not text:
            if not slot.optional:
                problems.append(f"slot {slot.name} is missing: {slot.contract}")
            continue
        if _FORBIDDEN.search(text):
            problems.append(f"slot {slot.name}: a fill holds device code only (no __global__, #include or asm)")
        elif slot.kind == "dim":
            problems += _dim_problems(slot, text, task)
        elif slot.kind == "expr" and ";" in text:
            problems.append(f"slot {slot.name} is one C expression, without `;`: {slot.contract}")
    return problems


def instantiate(skeleton: Skeleton, task: Task, fills: Mapping[str, str], header: str = "") -> Instance:
    """The kernel file for `task`; raises SkeletonError (with every problem) when the fills do not fit."""
    if clash := sorted(set(task.params) & macros(skeleton)):
        raise SkeletonError(f"the task's parameter {clash[0]} has the name of a macro of skeleton {skeleton.name}: "
                            "rename the parameter in the task, or use another skeleton")
    if problems := check_fills(skeleton, task, fills):
        raise SkeletonError("; ".join(problems))
    values = normalize_fills(skeleton, fills)
    values["params"] = ", ".join(task.c_parameters(restrict=True))
    values["args"] = ", ".join(task.params)
    lines: list[str] = [f"// {line}" if line else "//" for line in header.splitlines()]
    spans: dict[str, list[tuple[int, int]]] = {}
    for line in skeleton.template.splitlines():
        alone = PLACEHOLDER.fullmatch(line.strip())
        slot = skeleton.slot(alone.group(1)) if alone else None
        if slot is not None and slot.kind in BLOCK_KINDS:
            indent = line[: len(line) - len(line.lstrip())]
            filled = [indent + text if text.strip() else "" for text in values[slot.name].splitlines()]
            spans.setdefault(slot.name, []).append((len(lines) + 1, len(lines) + max(1, len(filled))))
            lines += filled or [f"{indent}// ({slot.name}: empty)"]
            continue
        start = len(lines) + 1
        for m in PLACEHOLDER.finditer(line):
            if m.group(1) not in BUILTINS:
                spans.setdefault(m.group(1), []).append((start, start))
        here = {**values, "params": shadowed_params(task, line)} if "params" in line else values
        lines.append(PLACEHOLDER.sub(partial(_filled, skeleton, here), line))
    return Instance(skeleton.name, "\n".join(lines) + "\n", spans)




_AFTER_PARAMS = re.compile(r"\{\{\s*params\s*\}\}(?P<rest>[^)]*)\)")
SHADOWED = "kg_shadowed_"


def shadowed_params(task: Task, line: str) -> str:
    """The task's C parameters for a signature line that declares more arguments after them (a slot's
    `float combine({{params}}, float a, float b)`): a task parameter with the name of one of those (matvec's
    matrix `a`) is renamed there, as a local would shadow it, rather than declared twice (a compile error
    whatever the fill)."""
    m = _AFTER_PARAMS.search(line)
    own = set(re.findall(r"(\w+)\s*(?:,|$)", m.group("rest").strip())) if m else set()
    return ", ".join(re.sub(r"(\w+)$", lambda n: SHADOWED + n.group(1) if n.group(1) in own else n.group(1), part)
                     for part in task.c_parameters(restrict=True))


def macros(skeleton: Skeleton) -> set[str]:
    """The names the skeleton defines as macros (its knobs among them): no task parameter may have one."""
    return set(re.findall(r"^\s*#\s*define\s+(\w+)", skeleton.template, re.MULTILINE))


def _filled(skeleton: Skeleton, values: Mapping[str, str], placeholder: re.Match[str]) -> str:
    """A placeholder's text: its fill (or the task's parameters or arguments), `_inline`d."""
    return _inline(skeleton.slot(placeholder.group(1)), values[placeholder.group(1)])


def _inline(slot: Slot | None, text: str) -> str:
    """A dim or expr fill put into a line: parenthesised, so it binds as one operand."""
    return f"({text})" if slot is not None and slot.kind in ("dim", "expr") else text


def _body(text: str) -> str:
    """A body fill: a whole function's braces taken off, and the stray statements after its closing
    brace with them (the local model's `float accumulate(...) { return acc + w[c] * v; } return acc;`,
    eleventh round); a lone expression made a return statement."""
    stripped = text.strip()
    if _FUNCTION.match(stripped) and (end := closing(stripped, stripped.index("{"))) is not None \
            and "{" not in stripped[end:]:
        text = dedent(stripped[stripped.index("{") + 1: end].strip("\n"))
    if text.strip() and ";" not in text and "{" not in text and "return" not in text:
        return f"return {text.strip()};"
    return dedent(text)


_PAIRS = {"{": "}", "[": "]", "(": ")"}


def closing(text: str, opening: int) -> int | None:
    """The index of the bracket that closes the `{`, `[` or `(` at `opening` (None when it is never closed)."""
    pair = {text[opening]: 1, _PAIRS[text[opening]]: -1}
    depth = 0
    for i in range(opening, len(text)):
        depth += pair.get(text[i], 0)
        if depth == 0:
            return i
    return None


def dedent(text: str) -> str:
    lines = text.splitlines()
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    cut = min(indents, default=0)
    return "\n".join(line[cut:] for line in lines)


def _dim_problems(slot: Slot, text: str, task: Task) -> list[str]:
    """A dim: task dims, integers, + - * and parentheses only, and at least 1 at every size."""
    position, names = 0, set()
    while position < len(text):
        m = _DIM_TOKEN.match(text, position)
        if m is None or m.end() == position:
            return [f"slot {slot.name} is an expression over the task's dims ({', '.join(task.dims)}) with "
                    f"integers, + - * and parentheses only; got `{text}`"]
        if m.group("name"):
            names.add(m.group("name"))
        position = m.end()
    if unknown := sorted(names - set(task.dims)):
        return [f"slot {slot.name}: `{unknown[0]}` is not a dim of the task (dims: {', '.join(task.dims)})"]
    for dims in task.sizes:
        try:
            value = evaluate(text, dims)
        except ExprError as exc:
            return [f"slot {slot.name}: `{text}` does not evaluate ({exc})"]
        if not value >= 1:
            return [f"slot {slot.name}: `{text}` is {value} at size {dims}; it must be at least 1 at every size"]
    return []
