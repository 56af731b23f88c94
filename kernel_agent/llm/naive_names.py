"""The naive kernel as a port prompt shows it: its indices named as the slots' arguments, its pointers
into buffers written out.

A small model fills a slot by copying the naive kernel's lines, names and all: the local
Qwen2.5-Coder-1.5B's epilogue for matmul_scale_residual was `y[(size_t)r * out_features + f] = acc;`
(`r` and `f` undefined), its matvec ADD `s.acc += ar[k] * x[k];` (`ar` and `k`): a third of its compile
errors in the twelfth round (tests/data/llm/emulated_loop/). So the kernel it reads is renamed first,
behaviour unchanged:

- a local index the kernel bounds by the same dims as a slot's argument (`if (r >= batch ...) return;`,
  `for (int k = 0; k < K; ++k)`; the skeleton's `@skeleton indices: row < M, col < N` with M filled
  `batch` by kagent) takes the argument's name, where that name is free;
- a pointer into a buffer parameter (`const float* ar = a + (size_t)row * K;`) used only by indexing
  is written out at each use (`a[(size_t)row * K + k]`) and its declaration dropped.

Where anything is unclear (two locals with one bound, a name taken, a pointer used otherwise), the
kernel is left as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..skeletons import Skeleton
from ..skeletons.instance import closing
from ..task import Task
from .contract_examples import INDEX_TYPE, without_casts

_GUARD = re.compile(r"\bif\s*\((?P<cond>[^{};]*?)\)\s*return\s*;")
_UNDER = re.compile(r"\bif\s*\((?P<cond>[^{};]*?)\)\s*\{")
_LOOP = re.compile(rf"\bfor\s*\(\s*{INDEX_TYPE}\s+"
                   r"(?P<name>[A-Za-z_]\w*)\s*=[^;]*;\s*(?P=name)\s*<\s*(?P<bound>[^;]+);")
_ABOVE = re.compile(r"^\s*(?P<name>[A-Za-z_]\w*)\s*>=\s*(?P<bound>.+?)\s*$")
_BELOW = re.compile(r"^\s*(?P<name>[A-Za-z_]\w*)\s*<\s*(?P<bound>.+?)\s*$")
_POINTER = re.compile(r"^[ \t]*(?:const\s+)?float\s*\*\s*(?:const\s+)?(?P<name>[A-Za-z_]\w*)\s*=\s*"
                      r"(?P<base>[A-Za-z_]\w*)\s*\+\s*(?P<offset>[^;]+);[ \t]*(?://[^\n]*)?\n", re.MULTILINE)
_WORD = re.compile(r"[A-Za-z_]\w*")
_COMMENT = re.compile(r"(//[^\n]*|/\*.*?\*/)", re.DOTALL)
_SIMPLE = re.compile(r"[\w\s()*+\-/%]+")  # an offset written inside brackets as it is


def in_slot_names(naive: str, skeleton: Skeleton, task: Task, given: Mapping[str, str]) -> str:
    """`naive` with its indices named as `skeleton`'s arguments (their bounds: the dim slots `given`
    fills) and its pointers into buffers written out at their uses."""
    return with_pointers_written_out(with_indices_renamed(naive, skeleton, task, given), task)


def with_indices_renamed(naive: str, skeleton: Skeleton, task: Task, given: Mapping[str, str]) -> str:
    """`naive` with each local index named as the skeleton's argument of the same bound, where exactly one
    local has that bound and the argument's name is free."""
    pieces = _pieces(naive)
    code = " ".join(pieces[::2])
    bounds = _local_bounds(code, task)
    renames: dict[str, str] = {}
    for argument, dim in skeleton.indices:
        if not (fill := given.get(dim, "")).strip():
            continue
        bound = _normal(fill)
        locals_ = {name for name, b in bounds if b == bound}
        if len(locals_) == 1 and (local := locals_.pop()) != argument and not _uses(code, argument) \
                and local not in renames and argument not in renames.values():
            renames[local] = argument
    if not renames:
        return naive
    word = re.compile(r"(?<![\w.>])(" + "|".join(map(re.escape, renames)) + r")\b")
    return "".join(word.sub(lambda m: renames[m.group(1)], part) if i % 2 == 0 else part
                   for i, part in enumerate(pieces))


def with_pointers_written_out(naive: str, task: Task) -> str:
    """Each `float* p = base + offset;` (`base` a parameter of the task) whose every later use is
    `p[index]` written `base[offset + index]`; a pointer made from another pointer stays."""
    out = naive
    while True:
        for m in _POINTER.finditer(out):
            name, base, offset = m.group("name"), m.group("base"), m.group("offset").strip()
            rest = out[m.end():]
            if name in task.params or base not in task.params or not _SIMPLE.fullmatch(offset) \
                    or not _only_indexed(rest, name):
                continue
            out = out[:m.start()] + _indexed_through(rest, name, base, offset)
            break
        else:
            return out


def _only_indexed(code: str, name: str) -> bool:
    uses = [m.end() for m in re.finditer(rf"(?<![\w.>]){re.escape(name)}\b", code)]
    return bool(uses) and all(re.match(r"\s*\[", code[end:]) for end in uses)


def _indexed_through(code: str, name: str, base: str, offset: str) -> str:
    out, at = [], 0
    for m in re.finditer(rf"(?<![\w.>]){re.escape(name)}\s*\[", code):
        if m.start() < at:
            continue
        close = closing(code, m.end() - 1)
        if close is None:
            return code
        index = code[m.end():close].strip()
        joined = offset if index == "0" else f"{offset} + {index}"
        out.append(code[at:m.start()] + f"{base}[{joined}]")
        at = close + 1
    return "".join(out) + code[at:]


def _local_bounds(code: str, task: Task) -> list[tuple[str, str]]:
    """(local, its bound, normalized) for each index the kernel's code (its comments left out) guards
    (`if (i >= n) return;`, `if (i < n) {`) or loops up to (`for (int k = 0; k < K; ...)`); the task's
    parameters are not locals."""
    found = [(m.group("name"), m.group("bound")) for m in _LOOP.finditer(code)]
    for pattern, compare in ((_GUARD, _ABOVE), (_UNDER, _BELOW)):
        for m in pattern.finditer(code):
            for part in re.split(r"\|\||&&", m.group("cond")):
                if (c := compare.match(part)) is not None:
                    found.append((c.group("name"), c.group("bound")))
    return [(name, _normal(bound)) for name, bound in found if name not in task.params]


def _normal(expression: str) -> str:
    text = without_casts(expression)
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1]
    return text


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def _uses(code: str, name: str) -> bool:
    return name in _WORD.findall(code)



def _pieces(source: str) -> list[str]:
    """The source cut at its comments: code at the even places, comments at the odd (a rename leaves
    prose alone)."""
    return _COMMENT.split(source)
