"""SEARCH/REPLACE edits from a model's answer, applied to the parent kernel: each block's SEARCH must
match exactly one place (as sent, without the blank lines around it, then ignoring whitespace, with the
replacement re-indented); what does not match gets feedback naming the closest real lines."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

MAX_SHOWN_LINES = 12
SEARCH_LINE = re.compile(r"^\s*<{5,9}\s*SEARCH\s*$")
_DIVIDER = re.compile(r"^\s*={5,9}\s*$")
_REPLACE = re.compile(r"^\s*>{5,9}\s*REPLACE\s*$")


@dataclass
class Edit:
    number: int
    search: list[str]
    replace: list[str]


def split_edits(text: str, finished: bool = False) -> tuple[list[Edit], int | None]:
    """The edit blocks in order, and the number of a block left unfinished (None when all closed).
    `finished`: the answer was not cut off, so a last block that has its `=======` line but no
    `>>>>>>> REPLACE` line is taken to end where the answer (or its code block) ends."""
    edits: list[Edit] = []
    state = "outside"
    search: list[str] = []
    replace: list[str] = []
    for line in text.split("\n"):
        if state == "outside" and SEARCH_LINE.match(line):
            state, search, replace = "search", [], []
        elif state == "search" and _DIVIDER.match(line):
            state = "replace"
        elif state == "replace" and _REPLACE.match(line):
            edits.append(Edit(len(edits) + 1, _unfence(search), _unfence(replace)))
            state = "outside"
        elif state == "search":
            search.append(line)
        elif state == "replace":
            replace.append(line)
    if state == "replace" and finished:
        while replace and (not replace[-1].strip() or replace[-1].strip().startswith(("```", "~~~"))):
            replace.pop()
        edits.append(Edit(len(edits) + 1, _unfence(search), _unfence(replace)))
        state = "outside"
    return edits, (len(edits) + 1 if state != "outside" else None)


def apply_edit(source: str, edit: Edit) -> tuple[str, str]:
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
    key = squash if loose else (lambda line: line)
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


_LOG_LINE = re.compile(r"\(\d+\): (error|warning)|\berror\b.*:|^\s*\^\s*$|^\s*(nvrtc|ptxas)\b|^\d+ errors? detected",
                       re.IGNORECASE)


def _not_found(number: int, search: list[str], lines: list[str]) -> str:
    if sum(bool(_LOG_LINE.search(line)) for line in search) * 2 >= len([line for line in search if line.strip()]):
        return (f"SEARCH/REPLACE block {number}: its SEARCH section holds the compiler's messages, not lines of "
                "the kernel. SEARCH must be the kernel's own lines that you change, copied exactly from the "
                "kernel; REPLACE the corrected lines. Or send the whole fixed kernel file in one ```cuda block.")
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
    matcher = difflib.SequenceMatcher(None, b="\n".join(squash(line) for line in search))
    best, best_start = -1.0, 0
    for start in range(len(lines) - n + 1):
        matcher.set_seq1("\n".join(squash(line) for line in lines[start:start + n]))
        if matcher.real_quick_ratio() <= best or matcher.quick_ratio() <= best:
            continue
        ratio = matcher.ratio()
        if ratio > best:
            best, best_start = ratio, start
    return best_start, best_start + n


def squash(line: str) -> str:
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
