"""An answer that is part of the parent file: the functions the model changed, sent as if they were the
whole file. A small model asked to fix one line of a 100-line kernel often sends back only the function
around it; taken as the new file, it drops the helpers the function calls (`identifier "add_vectors" is
undefined`). `merge` puts such a fragment into the parent instead: each function the answer defines
replaces the parent's function of that name, new ones go before the first replaced one, and the rest of
the parent (helpers, knob defaults, includes) stays.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MASK = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^<>;{}()]*>)?\s*\(")
_NOT_NAMES = {"__launch_bounds__", "__attribute__", "alignas", "__align__", "decltype", "sizeof", "if", "for",
              "while", "switch", "return"}
_DIRECTIVE = re.compile(r"^\s*//\s*@kagent\b")


@dataclass(frozen=True)
class Definition:
    name: str
    start: int  # offset of the first character of its first line
    end: int  # offset just past its closing brace


def _mask(code: str) -> str:
    """`code` with its comments and string literals blanked out (same length, same lines)."""
    return _MASK.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), code)


def definitions(code: str) -> list[Definition]:
    """The top-level function definitions of a C++ file, in order (comments and strings aside)."""
    masked = _mask(code)
    found, depth, boundary, opened = [], 0, 0, None
    for i, char in enumerate(masked):
        if char == "\n" and depth == 0:
            line_start = masked.rfind("\n", 0, i) + 1
            if masked[line_start:i].lstrip().startswith("#") or not masked[boundary:i].strip():
                boundary = i + 1  # a preprocessor line (or nothing yet) ends what came before
        elif char == "{":
            if depth == 0:
                opened = (boundary, masked[boundary:i])
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0 and opened is not None:
                name = _name(opened[1])
                if name is not None:
                    start = code.rfind("\n", 0, opened[0] + len(opened[1]) - len(opened[1].lstrip())) + 1
                    found.append(Definition(name, start, i + 1))
                boundary, opened = i + 1, None
        elif char == ";" and depth == 0:
            boundary = i + 1
    return found


def _name(header: str) -> str | None:
    """The function a definition's header declares (None for a struct, a namespace, an initialiser)."""
    if "(" not in header or re.search(r"\b(struct|class|union|namespace|enum)\b[^(]*$", header.split("(")[0]):
        return None
    names = [m.group(1) for m in _CALL.finditer(header) if m.group(1) not in _NOT_NAMES]
    return names[0] if names else None


def declared(code: str) -> set[str]:
    """The names a file declares at its top level: functions, structs and classes, typedefs, macros."""
    masked = _mask(code)
    names = {d.name for d in definitions(code)}
    names |= set(re.findall(r"\b(?:struct|class|union|enum)\s+([A-Za-z_]\w*)", masked))
    names |= set(re.findall(r"\btypedef\b[^;{}]*?\b([A-Za-z_]\w*)\s*;", masked))
    names |= set(re.findall(r"^\s*#\s*define\s+([A-Za-z_]\w*)", masked, re.MULTILINE))
    return names


def merge(answer: str, parent: str) -> str | None:
    """The parent with the answer's functions in place of its own, when the answer is a fragment of it:
    it uses a name the parent declares (a helper, a struct, a knob's #define) and it does not. None when
    the answer is a whole file (or the two cannot be paired: a name defined a different number of times
    in each)."""
    mine, theirs = definitions(answer), definitions(parent)
    names = [d.name for d in mine]
    parent_names = [d.name for d in theirs]
    used = set(re.findall(r"[A-Za-z_]\w*", _mask(answer)))
    if not mine or not (used & declared(parent)) - declared(answer):
        return None
    shared = set(names) & set(parent_names)
    if not shared or any(names.count(n) != parent_names.count(n) for n in shared):
        return None
    seen: dict[str, int] = {}
    pairs = []  # (the parent's definition, the answer's text for it), overloads paired in order
    for d in theirs:
        if d.name in shared:
            k = seen[d.name] = seen.get(d.name, -1) + 1
            twin = [m for m in mine if m.name == d.name][k]
            pairs.append((d, answer[twin.start:twin.end]))
    new = "".join(answer[d.start:d.end] + "\n\n" for d in mine if d.name not in shared)
    result, first = parent, pairs[0][0].start
    for d, text in reversed(pairs):
        result = result[:d.start] + (new if d.start == first else "") + text + result[d.end:]
    directives = [line.strip() for line in answer.split("\n") if _DIRECTIVE.match(line)]
    if directives:  # the answer's launch lines win (a fix may be in them)
        lines = result.split("\n")
        at = [i for i, line in enumerate(lines) if _DIRECTIVE.match(line)]
        lines = [line for i, line in enumerate(lines) if i not in set(at)]
        lines[at[0] if at else 0:at[0] if at else 0] = directives
        result = "\n".join(lines)
    return result
