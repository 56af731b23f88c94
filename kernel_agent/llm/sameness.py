"""When is a model's kernel not a new answer? Two forms of a kernel file to compare.

`structure`: the code with comments (directives included, so launch numbers), whitespace and the
file's own names taken out. A kernel equal to its parent or to an earlier kernel in this form is the
same algorithm renamed or relaunched, not a new structure.

`text`: the file with comments other than directives and whitespace taken out. A repair may keep the
structure and change only a launch number (`block: 256, 8` to `block: 256`); what it may not do is send
the failed kernel back unchanged.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"""
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
  | (?P<number>(?:0[xX][0-9a-fA-F]+|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)[uUlLfF]*)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<space>\s+)
  | (?P<other>.)
""", re.VERBOSE | re.DOTALL)

# Types a declaration starts with: a name after one of these (and any * or &) is the file's own.
_TYPES = {
    "void", "bool", "char", "short", "int", "long", "float", "double", "unsigned", "signed", "auto", "size_t",
    "half", "__half", "__half2", "__nv_bfloat16", "__nv_bfloat162", "half2", "dim3", "struct", "class",
    "typename", "uint", "int64_t", "uint64_t", "int32_t", "uint32_t",
}
_VECTOR_TYPE = re.compile(r"^(u?char|u?short|u?int|u?long|u?longlong|float|double)[1-4]$")
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "static", "inline", "__forceinline__",
               "__device__", "__shared__", "__constant__", "register", "extern"}
_DIRECTIVE = re.compile(r"^\s*//\s*@kagent\b")


def structure(source: str) -> str:
    """The code's shape: no comments or directives, one space between tokens, own names numbered."""
    tokens = [(kind, text) for kind, text in _tokens(source) if kind not in ("comment", "space")]
    own = _declared(tokens)
    names: dict[str, str] = {}
    out: list[str] = []
    for kind, text in tokens:
        member = out[-1:] == ["."] or out[-2:] == ["-", ">"]  # s.x, p->x: a field, not the variable x
        if kind == "name" and text in own and not member:
            text = names.setdefault(text, f"v{len(names)}")
        out.append(text)
    return " ".join(out)


def text(source: str) -> str:
    """The file as written, less comments (directives kept) and whitespace differences."""
    out = []
    for line in source.splitlines():
        if _DIRECTIVE.match(line):
            out.append(" ".join(line.split()))
            continue
        code = " ".join(t for kind, t in _tokens(line) if kind not in ("comment", "space"))
        if code:
            out.append(code)
    return "\n".join(out)


def _tokens(source: str) -> list[tuple[str, str]]:
    out = []
    for m in _TOKEN.finditer(source):
        kind = m.lastgroup or "other"
        out.append((kind, m.group(kind)))
    return out


def _declared(tokens: list[tuple[str, str]]) -> set[str]:
    """Names the file declares: macros (#define X), and names right after a type (and its * and &), as
    in `int i`, `const float* __restrict__ x`, `__global__ void scale(`, `template <int N>`."""
    own: set[str] = set()
    previous: list[str] = []
    for kind, text in tokens:
        if kind == "name" and previous and _ends_type(previous) and not _is_type(text) and text not in _QUALIFIERS:
            own.add(text)
        if kind == "name" and previous[-2:] == ["#", "define"]:
            own.add(text)
        previous.append(text)
    return own


def _ends_type(previous: list[str]) -> bool:
    """Whether the tokens so far end with a type (then perhaps *, & and qualifiers)."""
    i = len(previous) - 1
    while i >= 0 and (previous[i] in ("*", "&") or previous[i] in _QUALIFIERS):
        i -= 1
    return i >= 0 and _is_type(previous[i])


def _is_type(name: str) -> bool:
    return name in _TYPES or bool(_VECTOR_TYPE.match(name))
