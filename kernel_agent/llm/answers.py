"""Turn a model's answer into a kernel file: SEARCH/REPLACE edits against the parent, or a whole file.

Whatever goes wrong comes back as `feedback`, written for the model: what was wrong and what to send
instead (the `repair_unparsed` prompt passes it on).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from sandbox import DirectiveError, parse_directives

CODE_TAGS = {"", "cuda", "cu", "cuh", "c++", "cpp", "cxx", "cc", "c", "h", "hpp"}
MAX_SHOWN_LINES = 12

_FENCE_OPEN = re.compile(r"^\s*(?P<fence>`{3,}|~{3,})\s*(?P<tag>[^\s`]*)[^`]*$")
_SEARCH = re.compile(r"^\s*<{5,9}\s*SEARCH\s*$")
_DIVIDER = re.compile(r"^\s*={5,9}\s*$")
_REPLACE = re.compile(r"^\s*>{5,9}\s*REPLACE\s*$")
_DIRECTIVE = re.compile(r"^\s*//\s*@kagent\b")
_ENTRY = re.compile(r"^\s*//\s*@kagent\s+entry\s*:", re.MULTILINE)

NO_CODE = ("no code found: send the whole kernel file in one ```cuda block or SEARCH/REPLACE edits "
           "against the parent kernel")
CUT_OFF_FENCE = ("the answer was cut off: a ``` code block was opened and never closed (the answer is too "
                 "long). Send a shorter answer: SEARCH/REPLACE edits for only the lines that change, not "
                 "the whole file.")


@dataclass
class ParsedAnswer:
    source: str | None  # the new full kernel file, or None if nothing usable
    kind: str  # "file" | "edits" | "none": what the answer held
    feedback: str  # empty when fine; else actionable text for the model
    edits_applied: int = 0
    directives_reattached: bool = False  # the model dropped the directives; the parent's were put back


@dataclass
class _Fence:
    tag: str
    body: str
    closed: bool


@dataclass
class _Edit:
    number: int
    search: list[str]
    replace: list[str]


def parse_answer(text: str, parent_source: str) -> ParsedAnswer:
    """Read an answer: apply its SEARCH/REPLACE blocks to the parent, or take its kernel file."""
    text, parent = _lf(text), _lf(parent_source)
    if any(_SEARCH.match(line) for line in text.split("\n")):
        return _from_edits(text, parent)
    return _from_fences(text, parent)


# ---- edits -------------------------------------------------------------------------------------


def _from_edits(text: str, parent: str) -> ParsedAnswer:
    edits, cut_off = _split_edits(text)
    if cut_off is not None:
        return ParsedAnswer(None, "edits", (
            f"the answer was cut off inside SEARCH/REPLACE block {cut_off} (it has no '>>>>>>> REPLACE' "
            "line). Send a shorter answer: fewer, smaller SEARCH/REPLACE edits, each closed by "
            "'>>>>>>> REPLACE'."))
    source, problems, applied = parent, [], 0
    for edit in edits:
        updated, problem = _apply(source, edit)
        if problem:
            problems.append(problem)
        else:
            source, applied = updated, applied + 1
    if problems:
        problems.append("None of the edits were used: send all of them again with these blocks corrected.")
        return ParsedAnswer(None, "edits", "\n\n".join(problems), edits_applied=applied)
    return _finish(source, parent, "edits", applied)


def _split_edits(text: str) -> tuple[list[_Edit], int | None]:
    """The edit blocks in order, and the number of a block left unfinished (None when all closed)."""
    edits: list[_Edit] = []
    state, search, replace = "outside", [], []
    for line in text.split("\n"):
        if state == "outside" and _SEARCH.match(line):
            state, search, replace = "search", [], []
        elif state == "search" and _DIVIDER.match(line):
            state = "replace"
        elif state == "replace" and _REPLACE.match(line):
            edits.append(_Edit(len(edits) + 1, _unfence(search), _unfence(replace)))
            state = "outside"
        elif state == "search":
            search.append(line)
        elif state == "replace":
            replace.append(line)
    return edits, (len(edits) + 1 if state != "outside" else None)


def _apply(source: str, edit: _Edit) -> tuple[str, str]:
    """(new source, "") when the block's SEARCH matches exactly once; else (source, feedback)."""
    lines = source.split("\n")
    search, replace = _trim_blank(edit.search), _trim_blank(edit.replace)
    if not search:
        return source, (f"SEARCH/REPLACE block {edit.number} has an empty SEARCH section: copy the parent's "
                        "lines to change (or the line to insert after) into it.")
    # exactly as sent, then without blank lines around it, then ignoring whitespace differences
    for old, new, loose in ((edit.search, edit.replace, False), (search, replace, False), (search, replace, True)):
        found = _find(lines, old, loose)
        if len(found) == 1:
            start = found[0]
            if loose:
                new = _reindent(new, old, lines[start:start + len(old)])
            return "\n".join(lines[:start] + new + lines[start + len(old):]), ""
        if len(found) > 1:
            return source, _ambiguous(edit.number, search, found)
    return source, _not_found(edit.number, search, lines)


def _find(lines: list[str], search: list[str], loose: bool) -> list[int]:
    """Start indices where `search` matches the lines (ignoring whitespace differences when loose)."""
    if not search:
        return []
    key = _squash if loose else (lambda line: line)
    wanted = [key(line) for line in search]
    have = [key(line) for line in lines]
    n = len(wanted)
    return [i for i in range(len(have) - n + 1) if have[i:i + n] == wanted]


def _reindent(new: list[str], old: list[str], matched: list[str]) -> list[str]:
    """Give the replacement the parent's indentation where the SEARCH text's indentation differed.

    A replacement line takes the shift of the SEARCH line at the same position when both were indented
    alike, otherwise the shift of the last such line (at first: of the first non-blank line)."""
    first = next((i for i, line in enumerate(old) if line.strip()), 0)
    shift = (_indent(old[first]), _indent(matched[first])) if old else ("", "")
    out = []
    for j, line in enumerate(new):
        if j < len(old) and old[j].strip() and line.strip() and _indent(line) == _indent(old[j]):
            shift = (_indent(old[j]), _indent(matched[j]))
        before, after = shift
        out.append(after + line[len(before):] if line.strip() and line.startswith(before) else line)
    return out


def _ambiguous(number: int, search: list[str], found: list[int]) -> str:
    places = ", ".join(str(i + 1) for i in found[:8])
    return (f"SEARCH/REPLACE block {number} matches {len(found)} places in the parent kernel (starting at "
            f"lines {places}); it must match exactly one. Its SEARCH begins with:\n    {search[0].strip()}\n"
            "Add more context to the SEARCH text (the neighbouring lines above or below, copied exactly) so "
            "that it matches only the place you mean.")


def _not_found(number: int, search: list[str], lines: list[str]) -> str:
    start, end = _closest_window(search, lines)
    shown = _numbered(lines, start, min(end, start + MAX_SHOWN_LINES))
    more = "\n      ..." if end - start > MAX_SHOWN_LINES else ""
    first = next((line.strip() for line in search if line.strip()), "")
    return (f"SEARCH/REPLACE block {number}: its SEARCH text does not appear in the parent kernel. Its first "
            f"line is:\n    {first}\nThe closest real lines of the parent are:\n{shown}{more}\n"
            "Send the SEARCH text exactly as it appears in the parent (whole lines, copied character for "
            "character, without the line numbers), or send the whole kernel file in one ```cuda block.")


def _closest_window(search: list[str], lines: list[str]) -> tuple[int, int]:
    """The [start, end) range of parent lines most like the SEARCH text (difflib ratio)."""
    n = min(len(search), len(lines))
    matcher = difflib.SequenceMatcher(None, b="\n".join(_squash(line) for line in search))
    best, best_start = -1.0, 0
    for start in range(len(lines) - n + 1):
        matcher.set_seq1("\n".join(_squash(line) for line in lines[start:start + n]))
        if matcher.real_quick_ratio() <= best or matcher.quick_ratio() <= best:
            continue
        ratio = matcher.ratio()
        if ratio > best:
            best, best_start = ratio, start
    return best_start, best_start + n


# ---- whole files -------------------------------------------------------------------------------


def _from_fences(text: str, parent: str) -> ParsedAnswer:
    fences = _split_fences(text)
    code = [f for f in fences if f.tag.lower() in CODE_TAGS]
    kernels = [f for f in code if f.closed and "__global__" in f.body]
    cut = next((f for f in fences if not f.closed), None)
    if cut is not None and ("__global__" in cut.body or not kernels):
        return ParsedAnswer(None, "none", CUT_OFF_FENCE)
    if kernels:
        return _finish(max(kernels, key=lambda f: len(f.body)).body, parent, "file", 0)
    if code:
        return ParsedAnswer(None, "none", (
            "the code block has no __global__ function: send the whole kernel file (directives, helpers and "
            "the __global__ entry) in one ```cuda block, or SEARCH/REPLACE edits against the parent kernel"))
    return ParsedAnswer(None, "none", NO_CODE)


def _split_fences(text: str) -> list[_Fence]:
    """Every fenced block; the last one may be unclosed (a cut-off answer)."""
    fences: list[_Fence] = []
    opened: re.Match | None = None
    body: list[str] = []
    for line in text.split("\n"):
        if opened is None:
            opened = _FENCE_OPEN.match(line)
            body = []
        elif _closes(line, opened.group("fence")):
            fences.append(_Fence(opened.group("tag"), "\n".join(body) + "\n", True))
            opened = None
        else:
            body.append(line)
    if opened is not None:
        fences.append(_Fence(opened.group("tag"), "\n".join(body), False))
    return fences


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(fence) and stripped == fence[0] * len(stripped)


# ---- the result --------------------------------------------------------------------------------


def _finish(source: str, parent: str, kind: str, applied: int) -> ParsedAnswer:
    """Check the file's directives (putting the parent's back if the model dropped them)."""
    source = source.rstrip("\n") + "\n"
    reattached = False
    if not _ENTRY.search(source):
        present = {_squash(line) for line in source.split("\n")}
        missing = [line for line in parent.split("\n") if _DIRECTIVE.match(line) and _squash(line) not in present]
        if not _ENTRY.search("\n".join(missing)):
            return ParsedAnswer(None, kind, (
                "the kernel has no '// @kagent entry: NAME' directive: start the file with the directives "
                "(entry, grid, block, smem, knobs) that say how to launch it"), edits_applied=applied)
        source, reattached = "\n".join(missing) + "\n" + source, True
    try:
        parse_directives(source)
    except DirectiveError as exc:
        return ParsedAnswer(None, kind, (
            f"the kernel's // @kagent directives are wrong: {exc}. Fix those lines (each entry must name a "
            "__global__ function of the file and have grid: and block: lines)."), edits_applied=applied)
    return ParsedAnswer(source, kind, "", edits_applied=applied, directives_reattached=reattached)


# ---- small helpers -----------------------------------------------------------------------------


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _squash(line: str) -> str:
    return " ".join(line.split())


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _trim_blank(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def _unfence(lines: list[str]) -> list[str]:
    """Drop a code fence the model put inside a SEARCH or REPLACE section."""
    trimmed = _trim_blank(lines)
    fenced = False
    if trimmed and trimmed[0].strip().startswith(("```", "~~~")):
        trimmed, fenced = trimmed[1:], True
    if trimmed and trimmed[-1].strip() in ("```", "~~~"):
        trimmed, fenced = trimmed[:-1], True
    return trimmed if fenced else lines


def _numbered(lines: list[str], start: int, end: int) -> str:
    width = len(str(end))
    return "\n".join(f"  {number:>{width}} | {lines[number - 1]}" for number in range(start + 1, end + 1))
