"""Turn a model's answer into a kernel file: SEARCH/REPLACE edits against the parent, or a whole file.

Whatever goes wrong comes back as `feedback`, written for the model: what was wrong and what to send
instead (the `repair_unparsed` prompt passes it on).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sandbox import DirectiveError, parse_directives

from .edits import SEARCH_LINE, apply_edit, split_edits, squash
from .fragments import merge

CODE_TAGS = {"", "cuda", "cu", "cuh", "c++", "cpp", "cxx", "cc", "c", "h", "hpp"}

_FENCE_OPEN = re.compile(r"^\s*(?P<fence>`{3,}|~{3,})\s*(?P<tag>[^\s`]*)[^`]*$")
_DIRECTIVE = re.compile(r"^\s*//\s*@kagent\b")
_ENTRY = re.compile(r"^\s*//\s*@kagent\s+entry\s*:", re.MULTILINE)

NO_CODE = ("no code found: send the whole kernel file in one ```cuda block or SEARCH/REPLACE edits "
           "against the parent kernel")
CUT_OFF_FENCE = ("the answer was cut off: a ``` code block was opened and never closed (the answer is too "
                 "long). Send a shorter answer: only what changes, not the whole file.")


UNCLOSED_FENCE = ("the ``` code block was never closed and the kernel in it is incomplete (its braces do not "
                  "balance): send the whole kernel file, ending with its closing }, and close the block with ```.")


@dataclass
class ParsedAnswer:
    source: str | None  # the new full kernel file, or None if nothing usable
    kind: str  # "file" | "fragment" (functions of the parent) | "edits" | "none": what the answer held
    feedback: str  # empty when fine; else actionable text for the model
    edits_applied: int = 0
    directives_reattached: bool = False  # the model dropped the directives; the parent's were put back


@dataclass
class _Fence:
    tag: str
    body: str
    closed: bool


def parse_answer(text: str, parent_source: str, finished: bool = True, earlier: tuple[str, ...] = ()) -> ParsedAnswer:
    """Read an answer: apply its SEARCH/REPLACE blocks to the parent, or take its kernel file.

    `finished`: the model stopped by itself (not cut off at its token limit), so a last block or code
    block left open is read to the end of the answer. `earlier`: kernel files the model sent before in
    this conversation; edits that do not apply to the parent are tried against them (a model often
    edits its own last answer)."""
    text, parent = _lf(text), _lf(parent_source)
    if any(SEARCH_LINE.match(line) for line in text.split("\n")):
        return _from_edits(text, parent, finished, tuple(_lf(e) for e in earlier))
    return _from_fences(text, parent, finished)


def kernel_files(text: str) -> list[str]:
    """The kernel files an answer holds in code blocks (for edits a later answer makes against them)."""
    return [f.body for f in _split_fences(_lf(text)) if f.tag.lower() in CODE_TAGS and "__global__" in f.body]


# ---- edits -------------------------------------------------------------------------------------


def _from_edits(text: str, parent: str, finished: bool, earlier: tuple[str, ...]) -> ParsedAnswer:
    edits, unclosed = split_edits(text, finished)
    if unclosed is not None and not finished:
        return ParsedAnswer(None, "edits", (
            f"the answer was cut off inside SEARCH/REPLACE block {unclosed} (it has no '>>>>>>> REPLACE' "
            "line). Send a shorter answer: fewer, smaller SEARCH/REPLACE edits, each closed by "
            "'>>>>>>> REPLACE'."))
    if unclosed is not None:
        return ParsedAnswer(None, "edits", (
            f"SEARCH/REPLACE block {unclosed} has no '=======' line between the lines to find and their "
            "replacement: each block is '<<<<<<< SEARCH', the lines to find, '=======', the new lines, "
            "'>>>>>>> REPLACE'."))
    source, problems, applied = _apply_all(edits, parent)
    for other in earlier:  # edits of the model's own earlier file
        if problems and (found := _apply_all(edits, other))[1] == []:
            source, problems, applied = found
    if problems:
        problems.append("None of the edits were used: send all of them again with these blocks corrected.")
        return ParsedAnswer(None, "edits", "\n\n".join(problems), edits_applied=applied)
    return _finish(source, parent, "edits", applied)


def _apply_all(edits: list, source: str) -> tuple[str, list[str], int]:
    """The source with every edit applied in order, the problems of those that failed, and how many applied."""
    problems, applied = [], 0
    for edit in edits:
        updated, problem = apply_edit(source, edit)
        if problem:
            problems.append(problem)
        else:
            source, applied = updated, applied + 1
    return source, problems, applied


# ---- whole files -------------------------------------------------------------------------------


def _from_fences(text: str, parent: str, finished: bool) -> ParsedAnswer:
    lines = text.split("\n")
    opening = next(((i, m) for i, line in enumerate(lines) if (m := _FENCE_OPEN.match(line))), None)
    if opening is not None and not opening[1].group("tag") \
            and (bare := _bare_kernel("\n".join(lines[:opening[0]]))):  # code, then only a closing ```
        return _file(bare, parent)
    fences = _split_fences(text)
    code = [f for f in fences if f.tag.lower() in CODE_TAGS]
    # an answer that stopped by itself may leave its last block open: the block ends with the answer
    kernels = [f for f in code if (f.closed or (finished and _balanced(f.body))) and "__global__" in f.body]
    cut = next((f for f in fences if not f.closed and f not in kernels), None)
    if cut is not None and ("__global__" in cut.body or not kernels):
        return ParsedAnswer(None, "none", CUT_OFF_FENCE if not finished else UNCLOSED_FENCE)
    if kernels:
        return _file(max(kernels, key=lambda f: len(f.body)).body, parent)
    if not fences and finished and (bare := _bare_kernel(text)):
        return _file(bare, parent)
    helpers = [merged for f in code if f.closed or (finished and _balanced(f.body))
               if (merged := merge(f.body, parent)) is not None]
    if helpers:  # only a helper function of the parent, changed
        return _finish(helpers[0], parent, "fragment", 0)
    if code:
        return ParsedAnswer(None, "none", (
            "the code block has no __global__ function: send the whole kernel file (directives, helpers and "
            "the __global__ entry) in one ```cuda block, or SEARCH/REPLACE edits against the parent kernel"))
    return ParsedAnswer(None, "none", NO_CODE)


def _file(code: str, parent: str) -> ParsedAnswer:
    """A kernel file, or a fragment of the parent (its changed functions only: `fragments.merge`)."""
    merged = merge(code, parent)
    return _finish(code, parent, "file", 0) if merged is None else _finish(merged, parent, "fragment", 0)


def _balanced(code: str) -> bool:
    """Whether the braces of `code` balance (comments and strings aside, roughly): a complete file."""
    code = re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"', "", code, flags=re.DOTALL)
    return code.count("{") == code.count("}") > 0


_CODE_START = re.compile(r"^\s*(//\s*@kagent\b|#\s*(include|define|ifndef|pragma)\b|extern\b|__global__\b|template\b)")


def _bare_kernel(text: str) -> str | None:
    """A kernel file sent without a code block: from its first line of code (a directive, a preprocessor
    line, `extern`, `__global__`, `template`) to the end; None unless it has a `__global__` function."""
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if _CODE_START.match(line)), None)
    end = max((i for i, line in enumerate(lines) if line.rstrip().endswith(("}", "};"))), default=None)
    if start is None or end is None or "__global__" not in "\n".join(lines[start:end + 1]):
        return None
    return "\n".join(lines[start:end + 1]) + "\n"  # prose after the last closing brace left out


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
    """Check the file's directives (putting the parent's back if the model dropped them, and taking a
    missing grid:, block: or smem: line from the parent's entry)."""
    source = _launch_lines_from_parent(source.rstrip("\n") + "\n", parent)
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


_LAUNCH_KEY = re.compile(r"^\s*//\s*@kagent\s+(entry|grid|block|smem)\s*:\s*(\S*)")


def _launch_lines_from_parent(source: str, parent: str) -> str:
    """Give an entry without a grid:, block: or smem: line the parent's (of the entry of the same name,
    or of the parent's only entry): a small model often writes `entry:` and forgets the rest."""
    parent_entries = _entry_lines(parent)
    lines = source.split("\n")
    for name, start, keys in reversed(_entry_spans(lines)):  # from the end: insertions keep earlier indices
        only = next(iter(parent_entries.values())) if len(parent_entries) == 1 else None
        donor = parent_entries.get(name, only)
        if donor is not None and not {"grid", "block"} <= keys:
            lines[start + 1:start + 1] = [line for key, line in donor.items() if key not in keys]
    return "\n".join(lines)


def _entry_spans(lines: list[str]) -> list[tuple[str, int, set[str]]]:
    """(entry name, its line index, the launch keys given below it) for each `entry:` line."""
    spans: list[tuple[str, int, set[str]]] = []
    for i, line in enumerate(lines):
        if m := _LAUNCH_KEY.match(line):
            if m.group(1) == "entry":
                spans.append((m.group(2), i, set()))
            elif spans:
                spans[-1][2].add(m.group(1))
    return spans


def _entry_lines(source: str) -> dict[str, dict[str, str]]:
    """Each entry's grid:, block: and smem: lines, by entry name."""
    entries: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in source.split("\n"):
        if m := _LAUNCH_KEY.match(line):
            if m.group(1) == "entry":
                current = entries.setdefault(m.group(2), {})
            elif current is not None:
                current.setdefault(m.group(1), line.strip())
    return entries


# ---- small helpers -----------------------------------------------------------------------------


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


