"""Turn a model's answer into a kernel file: SEARCH/REPLACE edits against the parent, or a whole file.

Whatever goes wrong comes back as `feedback`, written for the model: what was wrong and what to send
instead (the `repair_unparsed` prompt passes it on).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sandbox import DirectiveError, parse_directives

from .edits import SEARCH_LINE, apply_edit, split_edits, squash

CODE_TAGS = {"", "cuda", "cu", "cuh", "c++", "cpp", "cxx", "cc", "c", "h", "hpp"}

_FENCE_OPEN = re.compile(r"^\s*(?P<fence>`{3,}|~{3,})\s*(?P<tag>[^\s`]*)[^`]*$")
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


def parse_answer(text: str, parent_source: str) -> ParsedAnswer:
    """Read an answer: apply its SEARCH/REPLACE blocks to the parent, or take its kernel file."""
    text, parent = _lf(text), _lf(parent_source)
    if any(SEARCH_LINE.match(line) for line in text.split("\n")):
        return _from_edits(text, parent)
    return _from_fences(text, parent)


# ---- edits -------------------------------------------------------------------------------------


def _from_edits(text: str, parent: str) -> ParsedAnswer:
    edits, cut_off = split_edits(text)
    if cut_off is not None:
        return ParsedAnswer(None, "edits", (
            f"the answer was cut off inside SEARCH/REPLACE block {cut_off} (it has no '>>>>>>> REPLACE' "
            "line). Send a shorter answer: fewer, smaller SEARCH/REPLACE edits, each closed by "
            "'>>>>>>> REPLACE'."))
    source, problems, applied = parent, [], 0
    for edit in edits:
        updated, problem = apply_edit(source, edit)
        if problem:
            problems.append(problem)
        else:
            source, applied = updated, applied + 1
    if problems:
        problems.append("None of the edits were used: send all of them again with these blocks corrected.")
        return ParsedAnswer(None, "edits", "\n\n".join(problems), edits_applied=applied)
    return _finish(source, parent, "edits", applied)


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
        present = {squash(line) for line in source.split("\n")}
        missing = [line for line in parent.split("\n") if _DIRECTIVE.match(line) and squash(line) not in present]
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


