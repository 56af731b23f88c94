"""Every place a C++ source names another file (#include-like directives, __has_include), lexed as NVRTC does."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

INCLUDE_DIRECTIVES = frozenset({"include", "include_next", "import", "embed"})
PROBES = frozenset({"__has_include", "__has_include_next"})

_IDENT_PATTERN = r"(?:[^\W\d]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})(?:\w|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})*"
# Translation phase 3 for C++17 (NVRTC's dialect here): raw strings and digit separators exist,
# trigraphs do not. Block comments may span lines; strings and character literals may not. `plain`
# swallows runs of code that cannot start a comment, literal, directive or probe, for speed.
_TOKEN = re.compile(
    r"""(?P<plain>(?:(?!__has_include)(?>[^\W\d]\w*)(?![\\"'])|\d(?:[eEpP][+-]|[\w.]|'\w)*|[^\S\n]+|[^\w\s"'/#%\\])+)
      | (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
      | (?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^\s()\\"]{0,16})\(.*?\)(?P=delim)")
      | (?P<string>(?:u8|u|U|L)?"(?:[^"\\\n]|\\.)*(?:"|$))
      | (?P<char>(?:u8|u|U|L)?'(?:[^'\\\n]|\\.)*(?:'|$))
      | (?P<number>\.?\d(?:[eEpP][+-]|[\w.]|'\w)*)
      | (?P<ident>""" + _IDENT_PATTERN + r""")
      | (?P<newline>\n)
      | (?P<hash>\#|%:)
      | (?P<space>[^\S\n]+)
      | (?P<other>.)""",
    re.VERBOSE | re.DOTALL | re.MULTILINE,
)
_IDENT = re.compile(_IDENT_PATTERN)
_BLANKS = re.compile(r"(?:[^\S\n]+|/\*.*?(?:\*/|\Z))*", re.DOTALL)  # what may stand between tokens of a directive
_UCN = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
_TRIGRAPHS = {"??=": "#", "??/": "\\", "??'": "^", "??(": "[", "??)": "]", "??!": "|", "??<": "{", "??>": "}",
              "??-": "~"}


@dataclass(frozen=True)
class Inclusion:
    """One place a source names another file."""

    line: int  # 1-based line of the text as given (before line splices are joined)
    kind: str  # the directive (include, include_next, import, embed) or the probe (__has_include...)
    form: str  # '"' or '<' for a literal name; '' for a computed one (a macro) or a malformed one
    name: str  # the literal name, or for a computed one the argument as written


def inclusions(text: str) -> list[Inclusion]:
    """Every #include, #include_next, #import, #embed and __has_include in `text`, in line order.

    Over-approximates on purpose: a `#` after a comment that spans lines counts as a directive (EDG
    takes it as one), and a text containing `??` is scanned a second time with trigraphs replaced
    (an older -std would honour them)."""
    text = text.replace("\r\n", "\n")
    found = set(_scan(text))
    if "??" in text:
        found |= set(_scan(re.sub(r"\?\?[=/'()!<>-]", lambda m: _TRIGRAPHS[m.group()], text)))
    return sorted(found, key=lambda i: (i.line, i.kind, i.name))


def _scan(text: str) -> list[Inclusion]:
    spliced, splices = _join_splices(text)
    newlines = [m.start() for m in re.finditer("\n", spliced)]

    def line_of(pos: int) -> int:
        return bisect.bisect_left(newlines, pos) + bisect.bisect_right(splices, pos) + 1

    found: list[Inclusion] = []
    pos, at_line_start = 0, True
    while pos < len(spliced):
        m = _TOKEN.match(spliced, pos)
        assert m is not None  # the last alternative matches any character
        kind, pos = m.lastgroup, m.end()
        if kind == "newline" or (kind == "comment" and "\n" in m.group()):
            at_line_start = True
        elif kind == "hash" and at_line_start:
            at_line_start = False
            name_at = _skip_blanks(spliced, pos)
            word = _IDENT.match(spliced, name_at)
            if word and _ident(word.group()) in INCLUDE_DIRECTIVES:
                form, name, pos = _argument(spliced, word.end())
                found.append(Inclusion(line_of(m.start()), _ident(word.group()), form, name))
        elif kind == "ident" and _ident(m.group()) in PROBES:
            at_line_start = False
            paren = _skip_blanks(spliced, pos)
            if spliced.startswith("(", paren):
                form, name, pos = _argument(spliced, paren + 1)
            else:  # `#define H __has_include`: the name comes later, from wherever H is used
                form, name = "", spliced[paren : _line_end(spliced, paren)].strip()[:120]
            found.append(Inclusion(line_of(m.start()), _ident(m.group()), form, name))
        elif kind not in ("space", "comment") and (kind != "plain" or not m.group().isspace()):
            at_line_start = False
    return found


def _argument(text: str, pos: int) -> tuple[str, str, int]:
    """(form, name, position after it) of the header name at `pos`: `"name"`, `<name>` or computed.

    A header name is one token with no escapes and no comments inside (unlike a string literal),
    so it is cut out of the text directly rather than lexed."""
    start = _skip_blanks(text, pos)
    line_end = _line_end(text, start)
    opener = text[start : start + 1]
    if opener in ('"', "<"):
        end = text.find('"' if opener == '"' else ">", start + 1, line_end)
        if end > start:
            return opener, text[start + 1 : end], end + 1
    return "", text[start:line_end].strip()[:120], start


def _skip_blanks(text: str, pos: int) -> int:
    """Past the spaces and block comments at `pos` (a comment may span lines, the directive goes on)."""
    m = _BLANKS.match(text, pos)
    return m.end() if m else pos


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


def _ident(word: str) -> str:
    """An identifier with its universal character names decoded (`\\u0069nclude` is `include`)."""
    return _UCN.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), word) if "\\" in word else word


def _join_splices(text: str) -> tuple[str, list[int]]:
    """`text` with every backslash-newline removed, and where each was (positions in the result)."""
    pieces, splices, kept = [], [], 0
    for i, piece in enumerate(text.split("\\\n")):
        if i:
            splices.append(kept)
        pieces.append(piece)
        kept += len(piece)
    return "".join(pieces), splices
