"""(An experiment, not used by kagent: see README.md beside it.) Slot answers that can only name what is in scope: a port answer's grammar (`grammar.py`'s block form)
with each block's content held to its slot's kind and scope while the model writes it.

A small model's slot answers mostly failed to compile on names that do not exist where the slot is
(the naive kernel's locals such as `idx` or `xr`, another task's output `y`, the task's own name), on
a statement in an expression slot, or on prose in a dim slot. Under this grammar:

- a `dim` block is one expression of the task's dims, integers, + - * / % and parentheses;
- an `expr` block is one C expression;
- a `body` block is C statements (declarations, assignments, `if`/`else`, `for`, `return`, calls);
- a `fields` block is member declarations with their initial values;

and the names an `expr` or `body` block may use are the task's parameters, the slot's own arguments
(its contract's signature, or the single names its contract quotes, like `row`), the device math
functions, a few constants, the fields after `s.`/`o.` (any name), and locals the block declares from a
fixed list of short generic names (`t`, `u`, `v`, `tmp`, `val`, `count`, ...). A name copied from the
naive kernel (`idx`, `xr`, `best_n`) or from the worked example's task is out of reach unless it is
one of those. A listed local can still be used before it is declared, and a field that STATE does not
declare can still be named: the compiler catches those.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Sequence

from kernel_agent.llm.porting import slot_arguments
from kernel_agent.skeletons import Skeleton
from kernel_agent.task import Task

MATH = ("expf", "exp2f", "logf", "log2f", "log1pf", "expm1f", "sqrtf", "rsqrtf", "cbrtf", "powf", "fabsf",
        "fmaxf", "fminf", "tanhf", "erff", "erfcf", "sinf", "cosf", "floorf", "ceilf", "roundf", "truncf",
        "fmodf", "__expf", "__logf", "__fdividef", "max", "min", "abs", "atomicAdd", "atomicMax", "atomicMin",
        "isnan", "isinf", "signbit", "copysignf", "fmaf")
CONSTANTS = ("INFINITY", "FLT_MAX", "FLT_MIN", "true", "false")
LOCALS = ("t", "u", "v", "w", "z", "q", "k", "j", "m", "c", "e", "r", "a", "b", "tmp", "val", "cnt", "count",
          "mean", "var", "inv", "diff", "total", "prod", "term", "scale", "index")
MAX_LINES = 12  # lines of a body or fields block: the fixtures need at most 4; a model repeating itself stops here
_QUOTED_NAME = re.compile(r"`([A-Za-z_]\w*)`")


def slot_scope(skeleton: Skeleton, task: Task, slot: str) -> list[str]:
    """The names a slot's fill may use besides locals: the task's parameters, the slot's arguments, and
    single names its contract quotes (`row`)."""
    found = skeleton.slot(slot)
    if found is None:
        return []
    if found.kind == "dim":
        return list(task.dims)
    quoted = [name for name in _QUOTED_NAME.findall(found.contract) if name not in ("PARAMS",)]
    return list(dict.fromkeys([*task.params, *slot_arguments(skeleton, slot), *quoted]))


def _literal(text: str) -> str:
    return json.dumps(text)


def _choice(names: Iterable[str]) -> str:
    ordered = sorted(set(names), key=lambda n: (-len(n), n))
    return " | ".join(_literal(n) for n in ordered) if ordered else '"__none__"'


def _rule(slot: str) -> str:
    return "slot-" + slot.lower().replace("_", "-")


_COMMON = r"""
sp ::= " "?
indent ::= ("  " ("  " ("    " ("    ")?)?)? | "\t" ("\t" "\t"?)?)?
number ::= ([0-9]+ ("." [0-9]*)? | "." [0-9]+) ([eE] [-+]? [0-9]+)? [fFuUlL]*
member ::= [A-Za-z_] [A-Za-z0-9_]*
type ::= ("const" " ")? ("float" | "int" | "long long" | "unsigned" | "bool" | "double" | "size_t")
binop ::= "+" | "-" | "*" | "/" | "%" | "<" | ">" | "<=" | ">=" | "==" | "!=" | logicop
logicop ::= "&&" | "||" | "&" | "|" | "^" | "<<" | ">>"
assignop ::= "=" | "+=" | "-=" | "*=" | "/=" | "%=" | "&=" | "|=" | "^=" | "<<=" | ">>="
dim-expr ::= dim-unary (sp ("+" | "-" | "*" | "/" | "%") sp dim-unary)*
dim-unary ::= "-"? (dim-name | [0-9]+ | "(" sp dim-expr sp ")")
"""


def _at_most(rule: str, count: int) -> str:
    """Up to `count` of `rule` (GBNF without {m,n}): a runaway answer stops at the limit."""
    text = ""
    for _ in range(count):
        text = f"({rule} {text})?" if text else f"({rule})?"
    return text


def _scoped_rules(prefix: str, names: Sequence[str], local: Sequence[str]) -> str:
    """The expression and statement rules of one scope (`prefix` names them apart)."""
    p = prefix
    inner, more_lines = _at_most(p + "-line", MAX_LINES), _at_most(p + "-line", MAX_LINES - 1)
    more_fields = _at_most(p + "-field", MAX_LINES - 1)
    return "\n".join([
        f"{p}-name ::= {_choice([*names, *local, *CONSTANTS])}",
        f"{p}-local ::= {_choice(local)}",
        f"{p}-func ::= {_choice(MATH)}",
        f"{p}-expr ::= {p}-binary (sp \"?\" sp {p}-expr sp \":\" sp {p}-expr)?",
        f"{p}-binary ::= {p}-unary (sp binop sp {p}-unary)*",
        f"{p}-unary ::= ((\"-\" | \"!\" | \"~\" | \"*\" | \"&\" | \"(\" type sp \"*\"? \")\") sp)* {p}-postfix",
        f"{p}-postfix ::= {p}-primary (\"[\" sp {p}-expr sp \"]\" | \".\" member)*",
        f"{p}-primary ::= number | {p}-name | {p}-func sp \"(\" sp ({p}-expr (sp \",\" sp {p}-expr)*)? sp \")\""
        f" | \"(\" sp {p}-expr sp \")\"",
        f"{p}-decl ::= type (\" \" | sp \"*\" sp) {p}-init (sp \",\" sp {p}-init)* sp \";\"",
        f"{p}-init ::= {p}-local sp \"=\" sp {p}-expr",
        f"{p}-lvalue ::= \"*\"? {p}-name (\"[\" sp {p}-expr sp \"]\" | \".\" member)*",
        f"{p}-assign ::= {p}-lvalue sp (assignop sp {p}-expr | \"++\" | \"--\") sp \";\"",
        f"{p}-return ::= \"return\" (\" \" {p}-expr)? sp \";\"",
        f"{p}-call ::= {p}-func sp \"(\" sp ({p}-expr (sp \",\" sp {p}-expr)*)? sp \")\" sp \";\"",
        f"{p}-if ::= \"if\" sp \"(\" sp {p}-expr sp \")\" sp {p}-block (sp \"else\" sp ({p}-if | {p}-block))?",
        f"{p}-for ::= \"for\" sp \"(\" sp type \" \" {p}-init sp \";\" sp {p}-expr sp \";\" sp {p}-step sp \")\" sp"
        f" {p}-block",
        f"{p}-step ::= {p}-lvalue sp (\"++\" | \"--\" | assignop sp {p}-expr) | (\"++\" | \"--\") {p}-lvalue",
        f"{p}-stmt ::= {p}-decl | {p}-assign | {p}-return | {p}-call | {p}-if | {p}-for",
        f"{p}-block ::= \"{{\" sp (\"\\n\" {inner} indent | {p}-stmt (sp {p}-stmt)* sp) \"}}\" | {p}-stmt",
        f"{p}-line ::= indent {p}-stmt (sp {p}-stmt)* sp \"\\n\"",
        f"{p}-body ::= {p}-line {more_lines}",
        f"{p}-field ::= indent type \" \" member sp \"=\" sp {p}-expr sp \";\" sp \"\\n\"",
        f"{p}-fields ::= {p}-field {more_fields}",
    ])


def scoped_slots_grammar(skeleton: Skeleton, task: Task, asked: Sequence[str], optional: Collection[str] = ()) -> str:
    """The GBNF of a port answer: one fenced block per slot of `asked`, in that order (those in `optional`
    may be left out), each block's content held to its slot's kind and names (module docstring)."""
    if not asked:
        raise ValueError("a slot grammar needs at least one slot")
    parts, rules = [], []
    for name in asked:
        slot = skeleton.slot(name)
        kind = slot.kind if slot is not None else "body"
        rule = _rule(name)
        if kind == "dim":
            content = "sp dim-expr sp \"\\n\""
        else:
            scope = slot_scope(skeleton, task, name)
            local = [n for n in LOCALS if n not in scope] if kind != "expr" else []
            rules.append(_scoped_rules(rule, scope, local))
            content = {"expr": f"sp {rule}-expr sp \"\\n\"", "fields": f"{rule}-fields"}.get(kind, f"{rule}-body")
        rules.append(f'{rule} ::= "```{name}\\n" {content} "```"')
        parts.append(f'({rule} "\\n")?' if name in optional else f'{rule} "\\n"')
    dims = f"dim-name ::= {_choice(task.dims)}"
    return "\n".join([f"root ::= {' '.join(parts)}", *rules, dims]) + _COMMON
