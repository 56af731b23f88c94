"""A slot contract's examples, as the port prompt shows them: those that fit the task.

A skeleton's contracts end with examples written for some task (`e.g. `y[o * D + c] = acc;` (sum) or
`idx[o * D + c] = arg;` (argmax)`). A small model copies the first example it reads: on argmin_dim,
whose output is `idx`, Qwen2.5-Coder-1.5B wrote `0.f`, `return acc + v;` and `y[o * D + c] = acc;`
(a sum, into a buffer the task does not have). So the port prompt shows only the examples whose every
name exists where the slot is (a parameter of the task, an argument of the slot's signature, a name
the example declares itself; members, functions called, C keywords and constants aside); when none
does, the examples renamed to the task's names (the skeleton's stand-ins, `stand_ins`), else none.
Of those, when some are labelled with words of the task (`(min, argmin)`), only the best matching
stay. Measured in `tests/data/llm/contract_names_ab/`. An example the model copied as its fill, and that
fill failed, is not shown again where that fill was the port's only one (`withdrawn`, keyed by
`code_key`; `porting.port_prompt_context`): on matmul_scale_residual the local
model sent `(acc + bias[col]) * scale` (the contract's "(bias, scale)" example; the task adds a
residual) in 8 of its 9 port answers of the eighth round, 7 of them word for word again.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping

from ..skeletons.derive import operand
from ..skeletons.ranking import words_of

_IDENTIFIER = re.compile(r"(?<![\w.>])([A-Za-z_]\w*)(?!\w)(\s*\()?")
_DECLARED = re.compile(r"\b(?:float|int|unsigned|long long|long|double|auto|bool)\s*[*&]?\s*([A-Za-z_]\w*)\s*=")
_CODE = re.compile(r"`([^`]*)`")
_OPENING = re.compile(r"(?:^|(?<=[\s(]))e\.g\.\s+")
_EXAMPLES_TAIL = re.compile(r"[,;]?\s*(?:\(\s*)?e\.g\.\s*`.*$")
_SEPARATOR = re.compile(r", (?=or |`)| or (?=`)")  # between two examples
_ATOMIC = re.compile(r"\batomic\w+\(\s*&?\s*([A-Za-z_]\w*)")
_STORE = re.compile(r"(?<![\w.>])([A-Za-z_]\w*)\s*\[[^\]]*\]\s*[-+*/]?=(?!=)")
_LABEL = re.compile(r"`\s*\(((?:[\w-]+,?\s*){1,4})\)\s*$")  # `code` (min, argmin): at most four words
WORDS = frozenset({
    "return", "const", "float", "int", "unsigned", "long", "double", "auto", "bool", "void", "if", "else",
    "for", "while", "true", "false", "INFINITY", "NAN", "PARAMS", "State", "__half", "half",
})


def names_used(code: str) -> set[str]:
    """The names an example's code refers to that must exist around it: not functions it calls, not
    members after `.` or `->`, not names it declares, not C keywords and constants."""
    declared = declared_names(code)
    return {m.group(1) for m in _IDENTIFIER.finditer(code)
            if m.group(2) is None and m.group(1) not in WORDS and m.group(1) not in declared}


def declared_names(code: str) -> set[str]:
    """The names `code` declares with an initial value (`const float v = x[i];`)."""
    return set(_DECLARED.findall(code))


def without_examples(contract: str) -> str:
    """A contract without its closing `e.g. ...` examples (a small model pastes them as its fill)."""
    return _EXAMPLES_TAIL.sub("", contract).rstrip(" ,;:") or contract


INDEX_TYPE = r"(?:const\s+)?(?:unsigned\s+)?(?:long long|long|size_t|int|unsigned)"  # an index's C type, as a pattern
_INDEX_CAST = re.compile(rf"\(\s*{INDEX_TYPE}\s*\)")


def without_casts(code: str) -> str:
    """`code` without index casts (`(size_t)row`, `(long long)i`) and without spacing: the same math
    whether or not a cast was written."""
    return re.sub(r"\s+", "", _INDEX_CAST.sub("", code))


def code_key(code: str) -> str:
    """`code` as compared for a copy: `without_casts`, and without a leading `return` and the closing `;`
    (the local model's matmul_scale_residual epilogue `y[(size_t)row * out_features + col] = acc;`,
    matmul_fp32's example with the naive kernel's cast, sent 6 times in its fourteenth round)."""
    return without_casts(code).rstrip(";").removeprefix("return")


def in_scope_examples(contract: str, names: Iterable[str], renames: Mapping[str, str] | None = None,
                      task_words: Collection[str] = (), telling_only: bool = False,
                      withdrawn: Collection[str] = ()) -> str:
    """`contract` with only the examples (after its `e.g.`) whose code uses the given names (the task's
    parameters and the slot's arguments) or the names of the contract's own signature. When none is
    in scope as written, the examples are tried with `renames` (the skeleton's stand-in names, such as
    its `y` or `D`, to the task's) and those then in scope are kept; none left: no examples. Of those
    kept, when some are labelled with words of the task (`task_words`, `ranking.words_of` of its name,
    description and reference: `(min, argmin)` for argmin_dim), only the ones sharing the most stay.
    `telling_only` (a slot a worked example of another task already fills): only examples so labelled
    stay, none when no label shares a word with the task (the worked example shows the form).
    `withdrawn`: the `code_key`s of fills of this slot that failed; an example that is one of them goes."""
    opening = _OPENING.search(contract)
    if opening is None:
        return contract
    head, tail = contract[:opening.start()], contract[opening.end():]
    signature = _CODE.match(contract)
    allowed = set(names) | (names_used(signature.group(1)) if signature else set())
    items = _items(tail)

    def fits(item: str) -> bool:
        codes = _CODE.findall(item)
        return all(names_used(code) <= allowed for code in codes) and \
            not any(code_key(code) in withdrawn for code in codes)

    kept = [(sep, item) for sep, item in items if fits(item)]
    if not kept and renames:
        kept = [(sep, renamed) for sep, item in items if fits(renamed := _renamed(item, renames))]
    if not kept:
        return without_examples(contract)
    kept = _most_telling(kept, set(task_words), telling_only)
    if not kept:
        return without_examples(contract)
    if kept == items:
        return contract
    first = kept[0][1].removeprefix("or ")
    return head + "e.g. " + first + "".join(sep + item for sep, item in kept[1:])


def _most_telling(items: list[tuple[str, str]], task_words: set[str],
                  telling_only: bool = False) -> list[tuple[str, str]]:
    """The examples whose label (a short parenthesis after the code naming what it is for: `(min,
    argmin)`) shares the most words with the task's; when no label shares any, all of them (none with
    `telling_only`)."""
    shared = [len(words_of(m.group(1)) & task_words) if (m := _LABEL.search(item)) else 0 for _, item in items]
    best = max(shared)
    return [item for item, n in zip(items, shared) if n == best] if best else [] if telling_only else items


def _renamed(item: str, renames: Mapping[str, str]) -> str:
    """An example with its code's stand-in names replaced (`y[o * D + c]` to `out[o * (H * W) + c]`)."""
    return _CODE.sub(lambda code: "`" + renamed_code(code.group(1), renames) + "`", item)


def renamed_code(code: str, renames: Mapping[str, str]) -> str:
    """`code` with the names in `renames` replaced, all at once; a function called, a member (after `.`
    or `->`) and a name the code declares itself keep theirs."""
    declared = declared_names(code)

    def name(m: re.Match[str]) -> str:
        if m.group(2) or m.group(1) in declared:
            return m.group(0)
        return renames.get(m.group(1), m.group(1))
    return _IDENTIFIER.sub(name, code) if renames else code


def stand_ins(contracts: Mapping[str, str], given: Mapping[str, str], params: Iterable[str],
              outputs: Iterable[str]) -> dict[str, str]:
    """The skeleton's stand-in names and the task's for them: a slot's lone example name (`e.g. `D``)
    to the fill kagent gives that slot for the task (`H * W`), and, for a task with one output, the
    buffers the examples store to (`y`, `idx`) to that output. `contracts`: slot name to contract."""
    renames: dict[str, str] = {}
    for slot, contract in contracts.items():
        opening = _OPENING.search(contract)
        first = _CODE.search(contract, opening.end()) if opening else None
        fill = given.get(slot, "").strip()
        if first and first.group(1).isidentifier() and fill and fill != first.group(1):
            renames[first.group(1)] = fill if fill.isidentifier() else f"({fill})"
    known, written = set(params), list(outputs)
    if len(written) == 1:
        for contract in contracts.values():
            for code in _CODE.findall(contract):
                for name in sorted(written_buffers(code) - known):
                    renames.setdefault(name, written[0])
    return renames


def with_given_names(contract: str, given: Mapping[str, str], loads: Mapping[str, str] = {}) -> str:
    """A contract's prose (outside its code) with the slots kagent fills from the task's shapes said as
    their fills: `va is IN_A[i]` as `va is predictions[i]`, `p < BATCH, row < M` as `p < 1, row < batch`.
    `given`: slot name to an expression fill; `loads`: a given load slot's call as its contract writes
    it (`load_a(p, row, kk)`) to the value its fill returns (`x[row * in_features + kk]`), so that `acc
    is the sum over kk < K of load_a(p, row, kk) * ...` reads as the task's own sum. The local model
    wrote `va * (logf(vb) - logf(va))` for kl_div_loss, whose vb is the targets (eleventh round): it had
    to chain `vb is IN_B[i]` with `IN_B = targets`, read elsewhere."""
    if not given and not loads:
        return contract

    def said(prose: str) -> str:
        for call, value in loads.items():
            prose = prose.replace(call, value)
        return re.sub(r"(?<![\w.])([A-Z][A-Z0-9_]*)(?!\w)",
                      lambda m: operand(given[m.group(1)]) if m.group(1) in given else m.group(0), prose)

    return "".join(part if part.startswith("`") else said(part) for part in re.split(r"(`[^`]*`)", contract))


def written_buffers(code: str) -> set[str]:
    """Names an example's code stores to (`y[i] = ...`, `atomicAdd(loss, ...)`)."""
    return set(_STORE.findall(code)) | set(_ATOMIC.findall(code))


def _items(tail: str) -> list[tuple[str, str]]:
    """The examples of a contract's tail, each with the separator before it: split at `, ` or ` or `
    before the next example's code (or its `or`), outside code and parentheses."""
    items: list[tuple[str, str]] = []
    depth, in_code, start, sep = 0, False, 0, ""
    for i, ch in enumerate(tail):
        if ch == "`":
            in_code = not in_code
        elif not in_code and ch in "()":
            depth = depth + 1 if ch == "(" else max(depth - 1, 0)
        elif not in_code and depth == 0 and i >= start and (cut := _SEPARATOR.match(tail, i)):
            items.append((sep, tail[start:i]))
            sep, start = cut.group(0), cut.end()
    items.append((sep, tail[start:]))
    return [(s, item) for s, item in items if item.strip()]
