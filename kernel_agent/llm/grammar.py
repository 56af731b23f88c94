"""Answer grammars: the form of an answer enforced while the model writes it (constrained decoding).

A small model often answers a slot prompt with a whole kernel, or a repair with prose and no code.
Servers that decode under a grammar rule that out: llama.cpp's server reads a GBNF grammar from the
request's `grammar` field, vLLM from `guided_grammar` (its xgrammar backend reads GBNF too). kagent
sends one only when told the server takes it (`grammar = "llama.cpp"` or `"vllm"` in the config, or
`--llm-grammar`): an OpenAI endpoint refuses unknown fields.

- A port answer is exactly the asked slots' fenced blocks, in the asked order, optional ones may be
  left out, a dim's or an expression's block one line: `slots_grammar(["K", "ADD"], optional={"FINAL"},
  one_line={"K"})`.
- A whole-kernel answer is one ```cuda block: `KERNEL_GRAMMAR`.

Lines inside a block may hold any character but a backtick (C code has none), so a block ends only
at its closing fence. A slot that must be filled opens with a code line: one whose first character
(after spacing) is no `.` or `…`: neither a blank line nor the format's placeholder `...` (10 of the
local model's 82 port answers in the fourteenth round of tests/data/llm/emulated_loop/ held a `...`
block, some for every slot of a skeleton it could not fill). No block holds an empty body, `) {}` with
only spacing between the braces (the 19 recorded answers with one, 14 of them kl_div_loss's
`void result(float total) {}` or the like, all failed).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Literal

GrammarDialect = Literal["off", "llama.cpp", "vllm"]
REQUEST_FIELD: dict[str, str] = {"llama.cpp": "grammar", "vllm": "guided_grammar"}

_LINE = 'line ::= [^`\\n]* "\\n"'
KERNEL_GRAMMAR = f'root ::= "```cuda\\n" line+ "```"\n{_LINE}\n'


def _no_empty_body(name: str, space: str, other: str) -> list[str]:
    """Rules `name` for text over characters but `other`'s exclusions that holds no empty body: no `)`
    followed by `{` and `}` with only `space` between (`void result(float total) {}`). Written as the
    text's automaton: after a `)` (and spacing), a `{` (and spacing) must be followed by code or a `)`."""
    after_paren = f"{name}-paren"
    leave = f'([^{space}){{{other}] | "{{" [{space}]* [^{space})}}{other}])'  # back to plain text
    return [f'{name} ::= ([^){other}] | ")" {after_paren} {leave})* (")" {after_paren} ("{{" [{space}]*)?)?',
            f'{after_paren} ::= ([{space})] | "{{" [{space}]* ")")*']


# a block's text: any character but a backtick (a block ends at its fence), and no empty function or
# statement body; `fill-text` runs over lines, `one-line-text` stays on its line
_FILL_RULES = [*_no_empty_body("fill-text", " \\t\\n", "`"), *_no_empty_body("one-line-text", " \\t", "`\\n")]
_OPENING = '[ \\t]* [^`\\n \\t.…)]'  # a code line's first character (after spacing): no dot, ellipsis or `)`


def _rule(slot: str) -> str:
    return "slot-" + slot.lower().replace("_", "-")


def slots_grammar(asked: Sequence[str], optional: Collection[str] = (), one_line: Collection[str] = ()) -> str:
    """The GBNF of an answer holding one fenced block per slot of `asked`, in that order; the slots in
    `optional` may be left out (or left empty), the others open with a code line (not blank, not `...`);
    those in `one_line` (dims and expressions) hold exactly one code line (a small model otherwise writes
    every slot's fill into the first block)."""
    if not asked:
        raise ValueError("a slot grammar needs at least one slot")
    parts = [f"({_rule(s)} \"\\n\")?" if s in optional else f"{_rule(s)} \"\\n\"" for s in asked]
    rules = [f'{_rule(s)} ::= "```{s}\\n" {_content(s in one_line, s in optional)} "```"' for s in asked]
    return "\n".join([f"root ::= {' '.join(parts)}", *rules, *_FILL_RULES]) + "\n"


def _content(one_line: bool, optional: bool) -> str:
    """A block's lines: one code line for a dim or an expression; a slot that must be filled opens with
    a code line (an empty block, or one holding `...`, would be the slot left out); an optional one may
    be empty. None holds an empty body."""
    if one_line:
        return f'{_OPENING} one-line-text "\\n"'
    return '(fill-text "\\n")?' if optional else f'{_OPENING} fill-text "\\n"'


def request_fields(dialect: GrammarDialect, grammar: str | None) -> dict[str, str]:
    """The extra request fields that carry `grammar` to a server of `dialect` (none when off)."""
    if grammar is None or dialect == "off":
        return {}
    return {REQUEST_FIELD[dialect]: grammar}
