"""A small GBNF matcher for tests: does a grammar (the subset kagent writes: rules, "literals", [classes],
[^negated classes], groups, |, ?, * and +) accept a whole text? Not a general parser: no left recursion,
and the set of end positions per (rule, position) is memoised, which is enough for slot answers."""

from __future__ import annotations

import json
import re
from functools import cache

# ("lit", str) | ("cls", negated, ranges) | ("ref", name) | ("seq", parts) | ("alt", options) | ("rep", node, lo, hi)
Node = tuple

_TOKEN = re.compile(r'\s*(?:(?P<lit>"(?:\\.|[^"\\])*")|(?P<cls>\[(?:\\.|[^\]\\])*\])|(?P<name>[a-zA-Z0-9-]+)'
                    r'|(?P<op>[()|?*+]))')


def _parse_class(text: str) -> Node:
    body = text[1:-1]
    negated = body.startswith("^")
    body = body[1:] if negated else body
    chars: list[str] = []
    i = 0
    while i < len(body):
        if body[i] == "\\":
            chars.append(json.loads(f'"\\{body[i + 1]}"') if body[i + 1] in "nrt\\\"" else body[i + 1])
            i += 2
        else:
            chars.append(body[i])
            i += 1
    ranges, j = [], 0
    while j < len(chars):
        if j + 2 < len(chars) and chars[j + 1] == "-":
            ranges.append((chars[j], chars[j + 2]))
            j += 3
        else:
            ranges.append((chars[j], chars[j]))
            j += 1
    return ("cls", negated, tuple(ranges))


def _parse_alt(tokens: list[tuple[str, str]], i: int) -> tuple[Node, int]:
    options, seq = [], []
    while i < len(tokens):
        kind, value = tokens[i]
        if kind == "op" and value == "|":
            options.append(("seq", tuple(seq)))
            seq, i = [], i + 1
            continue
        if kind == "op" and value == ")":
            break
        if kind == "op" and value == "(":
            node, i = _parse_alt(tokens, i + 1)
            i += 1  # the ")"
        elif kind == "lit":
            node, i = ("lit", json.loads(value)), i + 1
        elif kind == "cls":
            node, i = _parse_class(value), i + 1
        elif kind == "name":
            node, i = ("ref", value), i + 1
        else:
            raise ValueError(f"unexpected {value!r}")
        while i < len(tokens) and tokens[i] in (("op", "?"), ("op", "*"), ("op", "+")):
            op = tokens[i][1]
            node = ("rep", node, 0 if op != "+" else 1, 1 if op == "?" else None)
            i += 1
        seq.append(node)
    options.append(("seq", tuple(seq)))
    return (options[0] if len(options) == 1 else ("alt", tuple(options))), i


def parse(grammar: str) -> dict[str, Node]:
    rules: dict[str, Node] = {}
    for line in grammar.splitlines():
        if not line.strip():
            continue
        name, _, body = line.partition("::=")
        tokens = [(m.lastgroup or "", m.group(m.lastgroup or "")) for m in _TOKEN.finditer(body)]
        rules[name.strip()], _ = _parse_alt(tokens, 0)
    return rules


def accepts(grammar: str, text: str, root: str = "root") -> bool:
    rules = parse(grammar)

    @cache
    def ends_of_rule(name: str, pos: int) -> frozenset[int]:
        return ends(rules[name], pos)

    def ends(node: Node, pos: int) -> frozenset[int]:
        kind = node[0]
        if kind == "lit":
            return frozenset([pos + len(node[1])]) if text.startswith(node[1], pos) else frozenset()
        if kind == "cls":
            if pos >= len(text):
                return frozenset()
            inside = any(lo <= text[pos] <= hi for lo, hi in node[2])
            return frozenset([pos + 1]) if inside != node[1] else frozenset()
        if kind == "ref":
            return ends_of_rule(node[1], pos)
        if kind == "seq":
            current = frozenset([pos])
            for part in node[1]:
                current = frozenset(e for p in current for e in ends(part, p))
                if not current:
                    break
            return current
        if kind == "alt":
            return frozenset(e for option in node[1] for e in ends(option, pos))
        _, inner, lo, hi = node
        result = frozenset([pos]) if lo == 0 else frozenset()
        frontier, count, seen = frozenset([pos]), 0, set()
        while frontier and (hi is None or count < hi):
            frontier = frozenset(e for p in frontier for e in ends(inner, p) if e not in seen)
            count += 1
            seen |= frontier
            if count >= lo:
                result |= frontier
        return result

    return len(text) in ends_of_rule(root, 0)
