"""Porting: the model fills a skeleton's slots for the task, and kagent assembles the kernel.

A small model cannot write a fast kernel but can write the few lines of math a slot asks for. The
prompt (`prompts/port.j2`) shows the task (its NumPy reference, signature and sizes), the naive
kernel for the indexing, the skeleton's slot contracts (never its code) and, as a worked example,
the same skeleton filled for another task (`kernel_agent/skeletons/examples/`). The structure slots
the task's shapes decide (`skeletons/derive.py`: the row count, the input buffer, the reduced axis)
are filled by kagent and shown as given; the model is asked only for the others, mostly the math.
The answer is one fenced block per asked slot; a repair (`prompts/repair_port.j2`) sends back the
fills with the evidence of the failure, naming the slot a compiler error lies in and the names in
scope there (its arguments and the task's parameters), and keeps the slots the model does not resend.
Answers are read with the names a model borrows from the prompt made C: the reference's module
constants (`with_numbers`) and the skeleton's dim slots (`with_dim_slots`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sandbox import Outcome

from ..seams import Attempt
from ..skeletons import (
    LIBRARY,
    Instance,
    Skeleton,
    SkeletonError,
    check_fills,
    instantiate,
    named_skeleton,
    normalize_fills,
    parse_fills,
    suite_task,
)
from ..skeletons.derive import derive, plan
from ..skeletons.instance import closing, dedent
from ..skeletons.ranking import words_of
from ..skeletons.winners import read_winner
from ..task import Task
from .answers import ParsedAnswer
from .context import launch_evidence
from .contract_examples import (
    code_key,
    declared_names,
    in_scope_examples,
    names_used,
    renamed_code,
    stand_ins,
    with_given_names,
)
from .grammar import slots_grammar
from .naive_names import in_slot_names
from .prompts import task_context

EXAMPLES = LIBRARY / "examples"
KIND_WORDS = {
    "dim": "an expression over the task's dims ({dims}) with integers, + - * and parentheses",
    "expr": "one C expression",
    "body": "C statements, ending in `return` where the contract gives a result",
    "fields": "C member declarations, each ending in `;`",
}
FORMAT = ("Answer with one fenced block per slot, the slot's name right after the three backticks, for "
          "example:\n```{first}\n...\n```")


@dataclass(frozen=True)
class Port:
    """A kernel the model made by filling a skeleton: what it filled, and where each fill landed."""

    skeleton: Skeleton
    fills: dict[str, str]
    instance: Instance


def skeleton_view(skeleton: Skeleton, task: Task, shown: frozenset[str] = frozenset(),
                  failed: Sequence[Mapping[str, str]] = ()) -> dict:
    """The skeleton as the model sees it: its pattern, when it fits, the slots kagent fills from the
    task's shapes (`given`, and `after`: written from the model's own fills), the unused optional
    slots, and the contract of each slot the model is asked for, with only the examples written in
    names the task has (`contract_examples.py`); a slot the worked example `shown` fills keeps only
    those labelled with the task's own operation (`(average)` for avgpool2d under a maxpool2d
    example: the worked example shows the form, not the math to copy); an example that is the fill of
    a port that `failed` (earlier ports' fills, slot to fill) is not shown again."""
    dims = ", ".join(task.dims)
    chosen = plan(skeleton, task)
    renames = stand_ins({s.name: s.contract for s in skeleton.slots}, {**chosen.given, **chosen.after},
                        task.params, task.outputs)
    telling = words_of(f"{task.name} {task.description} {task.reference_source()}")
    slots = [(s, s.optional and s.name not in chosen.needed) for name in chosen.asked
             if (s := skeleton.slot(name)) is not None]
    said = {name: fill for name, fill in chosen.given.items()
            if (slot := skeleton.slot(name)) is not None and slot.kind in ("dim", "expr")}
    loads = given_loads(skeleton, chosen.given)
    return {"name": skeleton.name, "summary": skeleton.summary, "fits": skeleton.fits,
            "slots": [{"name": s.name, "kind": KIND_WORDS[s.kind].format(dims=dims),
                       "contract": _without_params(in_scope_examples(
                           with_given_names(s.contract, said, loads), task.params, renames, telling,
                           telling_only=s.name in shown,
                           withdrawn={code_key(f[s.name]) for f in failed if f.get(s.name, "").strip()})),
                       "scope": _scope(skeleton, task, s.name),
                       "optional": optional} for s, optional in slots],
            "required": [s.name for s, optional in slots if not optional],
            "given": chosen.given, "after": chosen.after, "unused": sorted(chosen.unused)}


def given_loads(skeleton: Skeleton, given: Mapping[str, str]) -> dict[str, str]:
    """The body slots kagent fills whose fill is one `return VALUE;`, as the contracts call them
    (`load_a(p, row, kk)`, the signature's arguments) to VALUE (`x[row * in_features + kk]`)."""
    calls = {}
    for name, fill in given.items():
        m = re.fullmatch(r"\s*return\s+([^;]+);\s*", fill)
        if m and (function := _function_name(skeleton, name)) is not None:
            calls[f"{function}({', '.join(slot_arguments(skeleton, name))})"] = m.group(1).strip()
    return calls


def _without_params(contract: str) -> str:
    """A contract as the model reads it: its signature without the `PARAMS` stand-in for the task's
    parameters (a small model wrote `PARAMS` into its fills), which the slot's scope line names."""
    return re.sub(r"\(PARAMS(?:,\s*|(?=\)))", "(", contract, count=1)


def _scope(skeleton: Skeleton, task: Task, name: str) -> dict[str, list[str]] | None:
    """The names a body slot's code may use without declaring them: the task's parameters and the
    slot's own arguments, which shadow a parameter of the same name there (None for the other kinds
    of slot). Shown in the prompt because a small model's commonest compile error was a name from the
    naive kernel or the example, not in scope."""
    slot = skeleton.slot(name)
    if slot is None or slot.kind != "body":
        return None
    arguments = slot_arguments(skeleton, name)
    return {"params": [p for p in task.params if p not in arguments], "arguments": arguments}


def answer_grammar(skeleton: Skeleton, asked: Sequence[str], optional: Collection[str] = ()) -> str:
    """The grammar of a port answer: a block per asked slot, a dim's or an expression's one line."""
    return slots_grammar(asked, optional, one_line={name for name in asked if (slot := skeleton.slot(name))
                                                    is not None and slot.kind in ("dim", "expr")})


def example_fill(skeleton: Skeleton, task: Task, folder: Path = EXAMPLES, winners: Path | None = None,
                 sample: int = 0, failed: Sequence[Mapping[str, str]] = ()) -> dict | None:
    """The same skeleton filled for another task (a worked example): one of the suite's variants
    re-expressed (`folder`) or an earlier port measured fast (`winners`, `skeletons/winners.py`); one
    that writes its outputs as this task must first, then one of the task's family, then the one whose
    name and description share the most words with the task's (softmax for log_softmax), then the
    shortest. The `sample`-th fresh sample of the skeleton gets the next one of those that write their
    outputs alike (a fresh sample, drawn wider, was word for word an earlier answer in 10 of the local
    model's 69 port answers of the seventh round; another prompt moves the answer). It shows only the
    slots this task's model is asked for (the others kagent fills), in this task's names where the two
    tasks' shapes bind them alike (`example_names`). An example whose shown fills are, slot for slot, those
    of a port that `failed` (the model copied it, and it is not this task's math) is not shown again."""
    chosen = plan(skeleton, task)
    words = words_of(f"{task.name} {task.description}")
    found = []
    for path in sorted(folder.glob("*.md")):
        text = path.read_text()
        other = suite_task(path.stem) if path.stem != task.name and named_skeleton(text) == skeleton.name else None
        if other is not None:
            alike = plan(skeleton, other).unused == chosen.unused  # writes its outputs as this task must
            found.append(_example(skeleton, task, chosen.asked, parse_fills(text, skeleton).values, alike,
                                  other.family == task.family, other.name, other.description, words,
                                  example_names(skeleton, other, task)))
    for path in sorted(winners.glob("*.md")) if winners is not None and winners.is_dir() else []:
        won = read_winner(path, skeleton)
        if won is not None and won.task != task.name:
            alike = not any(won.fills.get(name, "").strip() for name in chosen.unused)
            other = suite_task(won.task)
            found.append(_example(skeleton, task, chosen.asked, won.fills, alike, won.family == task.family, won.task,
                                  f"{won.description}; measured {won.speedup:.2f}x its naive kernel", words,
                                  example_names(skeleton, other, task) if other is not None else {}))
    copied = [{slot: code_key(fill) for slot, fill in fills.items()} for fills in failed]
    found = [f for f in found if not (f[-1]["shown"] and any(
        all(code_key(fill) == c.get(slot) for slot, fill in f[-1]["shown"].items()) for c in copied))]
    if not found:
        return None
    found.sort(key=lambda f: f[:-1])
    pool = [f for f in found if f[:2] == found[0][:2]]
    *_, example = pool[sample % len(pool)]
    return example


def example_names(skeleton: Skeleton, other: Task, task: Task) -> dict[str, str]:
    """The other task's names, as an example fill of `skeleton` uses them, to this task's: a parameter
    the shapes put in a slot (full_sum's N = `n`, IN_A = `x`) to what they put there for this task
    (`batch * n`, `predictions`), then the outputs (and the inputs) in order where both tasks have as
    many. A small model copies an example's names: `out[0] = total;` from full_sum into kl_div_loss,
    whose output is `loss` (seventh round, three compile errors). A name the example's fills declare,
    or a slot argument, is never a target, and a parameter left as it is never becomes one."""
    theirs, mine = plan(skeleton, other).given, plan(skeleton, task).given
    renames: dict[str, str] = {}
    for slot, value in theirs.items():
        target = mine.get(slot, "").strip()
        if value.strip() in other.params and target:
            renames.setdefault(value.strip(), target if target.isidentifier() else f"({target})")
    for a, b in ((other.outputs, task.outputs), (other.inputs, task.inputs)):
        if len(a) == len(b):
            for source, target in zip(_in_order(other, a), _in_order(task, b)):
                renames.setdefault(source, target)
    arguments = {a for s in skeleton.slots for a in slot_arguments(skeleton, s.name)}
    kept = set(other.params) - set(renames)
    return {a: b for a, b in renames.items()
            if a != b and a not in arguments and not (set(re.findall(r"\w+", b)) & (arguments | kept))}


def _in_order(task: Task, names: Collection[str]) -> list[str]:
    return sorted(names, key=lambda n: task.params.index(n) if n in task.params else len(task.params))


def _example(skeleton: Skeleton, task: Task, asked: list[str], fills: Mapping[str, str], alike: bool,
             same_family: bool, name: str, description: str, words: set[str],
             renames: Mapping[str, str]) -> tuple[bool, bool, bool, int, int, str, dict]:
    """A candidate example with its sort key (alike first, then one whose fills use only names in this
    task's scope, then the family's, then the most words shared with the task, then the shortest), its
    fills in this task's names (`renames`)."""
    shown = [slot for slot in asked if fills.get(slot, "").strip()]
    declared = set().union(*(declared_names(fills[slot]) for slot in shown))
    renames = {a: b for a, b in renames.items() if not set(re.findall(r"\w+", b)) & declared}
    written = {slot: renamed_code(fills[slot].strip(), renames) for slot in shown}
    blocks = "\n\n".join(f"```{slot}\n{fill}\n```" for slot, fill in written.items())
    shared = len(words & words_of(f"{name} {description}"))
    return (not alike, _foreign(skeleton, task, written), not same_family, -shared, len(blocks), name,
            {"task": name, "description": description, "fills": blocks, "slots": sorted(shown),
             "renamed": bool(renames), "shown": written})


def _foreign(skeleton: Skeleton, task: Task, fills: Mapping[str, str]) -> bool:
    """Whether a code fill of an example uses a name this task does not have there (rmsnorm's `eps` and
    `weight` shown to log_softmax): a small model copies the example, and the copy cannot compile. In the
    local model's thirteenth round, 3 of log_softmax's 5 compile errors were rmsnorm's and layernorm's `eps`."""
    for slot, fill in fills.items():
        if (scope := _scope(skeleton, task, slot)) is not None:
            known = {*task.params, *scope["arguments"], *(s.name for s in skeleton.slots)}
            if names_used(fill) - known:
                return True
    return False


def fills_reader(skeleton: Skeleton, task: Task, base: Mapping[str, str],
                 header: str) -> Callable[[str, bool], tuple[ParsedAnswer, Port | None]]:
    """Reads an answer's blocks for the asked slots over `base` (a repair's earlier fills) and adds
    the fills kagent derives (`skeletons/derive.py`) into a kernel file. Blocks for slots kagent
    fills are ignored; when one slot is asked, a lone unnamed block is its fill."""
    chosen = plan(skeleton, task)
    asked = chosen.asked
    first = next((name for name in asked if name in skeleton.required), asked[0] if asked else skeleton.slots[0].name)
    own = {k: v for k, v in base.items() if k in asked}
    constants = {k: v for k, v in task.reference_constants().items() if k not in task.params}

    def read(text: str, finished: bool) -> tuple[ParsedAnswer, Port | None]:
        given = {k: v for k, v in parse_fills(text, skeleton).values.items() if k in asked}
        if not given and len(asked) == 1 and (lone := _lone_block(text)) is not None:
            given = {asked[0]: lone}
        given = {k: without_returned_values(skeleton, k, returning(skeleton, task, k, without_own_loops(
            with_numbers(normalize_fills(skeleton, {k: v})[k], constants), slot_arguments(skeleton, k))))
            for k, v in given.items()}
        if not given:
            return ParsedAnswer(None, "none", "no slot blocks found. " + FORMAT.format(first=first)), None
        given = without_lone_self_calls(skeleton, given)
        fills = with_used_members(skeleton, {**own, **given})
        fills.update(derive(skeleton, task, fills).fills)
        fills = with_dim_slots(skeleton, task, fills)
        missing = [f"slot {name} is missing: this task's outputs are written there"
                   for name in sorted(chosen.needed) if not fills.get(name, "").strip()]
        if problems := missing + self_calls(skeleton, given) + check_fills(skeleton, task, fills):
            cut = "" if finished else " (the answer was cut off: send shorter blocks)"
            return ParsedAnswer(None, "slots", "\n".join(problems) + cut), None
        try:
            instance = instantiate(skeleton, task, fills, header=header)
        except SkeletonError as exc:
            return ParsedAnswer(None, "slots", str(exc)), None
        return ParsedAnswer(instance.source, "slots", ""), Port(skeleton, fills, instance)

    return read


def copied(port: Port, task: Task, prompt: str) -> bool:
    """Whether every fill the model was asked for is code its prompt showed (a contract's example, the
    worked example), spacing and index casts aside (`code_key`)."""
    shown = code_key(prompt)
    fills = [port.fills.get(name, "") for name in plan(port.skeleton, task).asked]
    return any(f.strip() for f in fills) and all(code_key(f) in shown for f in fills if f.strip())


def self_calls(skeleton: Skeleton, fills: Mapping[str, str]) -> list[str]:
    """A body fill that calls the function it is the body of (`return term(i, va, vb);` as TERM): the
    local model's fill when it did not write the math (7 compile errors, "identifier term is undefined",
    in its fifth to seventh rounds), said as such."""
    problems = []
    for name, fill in fills.items():
        function = _function_name(skeleton, name)
        if function is not None and re.search(rf"(?<![\w.>]){function}\s*\(", fill):
            problems.append(f"slot {name} calls {function}(), the function its fill is the body of: "
                            "write the math itself, with the names in scope")
    return problems


def without_lone_self_calls(skeleton: Skeleton, fills: Mapping[str, str]) -> dict[str, str]:
    """An optional slot whose whole fill calls its own function (`final(row, s, pre);` as FINAL) left
    empty: the model passed the slot by (the local model's matvec answer of the eleventh round, refused
    for it). A required slot's is left for `self_calls` to refuse."""
    out = dict(fills)
    for name, fill in fills.items():
        slot, function = skeleton.slot(name), _function_name(skeleton, name)
        if slot is not None and slot.optional and function is not None \
                and re.fullmatch(rf"\s*(?:return\s+)?{function}\s*\([^;]*\)\s*;?\s*", fill):
            out[name] = ""
    return out


_DECLARES = re.compile(r"\b(?:long long|int|float|long|double|auto|unsigned|bool)\s*[*&]?\s*([A-Za-z_]\w*)\s*[=;,\[)]")


def with_numbers(fill: str, constants: Mapping[str, str]) -> str:
    """A fill with the reference's named numbers written as numbers (`K` as `11` where the reference
    says `K = 11`): those names are Python's, not C's. A name the fill declares itself, a member and a
    function stay."""
    declared = set(_DECLARES.findall(fill))
    names = {k: v for k, v in constants.items() if k not in declared}
    if not names:
        return fill
    word = re.compile(r"(?<![\w.>])(" + "|".join(map(re.escape, names)) + r")(?!\w)(?!\s*\()")
    return word.sub(lambda m: names[m.group(1)], fill)


_OWN_LOOP = re.compile(r"for\s*\(\s*(?:long long|long|int|size_t|unsigned)\s+(?P<name>[A-Za-z_]\w*)\s*="
                       r"[^;]*;[^;]*;[^)]*\)\s*")


def without_own_loops(fill: str, arguments: Sequence[str]) -> str:
    """A body fill that loops over the slot's own arguments (`for (int row = 0; row < m; ++row) {...}`
    in an epilogue that is given `row`: the naive kernel's loops, written again) reduced to the loops'
    body, which the skeleton runs for each value; loops over other names stay."""
    own, changed = set(arguments), False
    while (m := next((m for m in _OWN_LOOP.finditer(fill) if m.group("name") in own), None)) is not None:
        start, rest = m.start(), m.end()
        if fill.startswith("{", rest):
            if (end := closing(fill, rest)) is None:
                return fill  # unbalanced: left for the compiler to say
            inner = fill[rest + 1:end]
        else:
            end = fill.find(";", rest)
            if end < 0:
                return fill
            inner = fill[rest:end + 1]
        fill, changed = fill[:start] + inner.strip("\n") + fill[end + 1:], True
    return dedent("\n".join(line for line in fill.splitlines() if line.strip())) if changed else fill


_NUMBER = re.compile(r"[\d\s()+*/-]+")
_NAME = re.compile(r"[A-Za-z_]\w*")


def with_dim_slots(skeleton: Skeleton, task: Task, fills: Mapping[str, str]) -> dict[str, str]:
    """The fills with the name of a dim slot, a number slot (a window's `KH`) or a buffer slot (`IN_A`
    filled `x`), used in a code slot as if it were a C name (`row * K + kk`, `acc / (KH * KW)`,
    `IN_A[i]`: the contracts call them so), written as that slot's fill (`row * (L * Cin) + kk`,
    `(x)[i]`), and in another dim slot (`LO` filled `L - 2`: `(H * W) - 2`; the local model's tenth
    round); a task parameter of that name, or a name the fill declares, stays."""
    sized = {slot.name: f"({text.strip()})" for slot in skeleton.slots
             if (text := fills.get(slot.name, "")).strip() and slot.name not in task.params
             and (slot.kind == "dim" or (slot.kind == "expr" and (_NUMBER.fullmatch(text.strip())
                                                                  or _NAME.fullmatch(text.strip()))))}

    def written(name: str, text: str) -> str:
        slot = skeleton.slot(name)
        if slot is not None and slot.kind == "dim":
            return with_numbers(text, {k: v for k, v in sized.items() if k != name})
        return text if slot is None or name in sized else with_numbers(text, sized)
    return {name: written(name, text) for name, text in fills.items()}


_STORE = re.compile(r"^\s*(?P<out>[A-Za-z_]\w*)\s*\[[^\]]*\]\s*=\s*(?P<value>[^;=][^;]*);\s*$")


def returning(skeleton: Skeleton, task: Task, name: str, fill: str) -> str:
    """A fill of a slot that returns a value (`float value(...)`) but that stores it into an output
    instead (`y[i] = v * 2.f;` as its last statement, no `return`) returns it: the skeleton stores it."""
    signature = _signature(skeleton, name)
    if signature is None or signature[0] == "void":
        return fill
    body = normalize_fills(skeleton, {name: fill})[name]
    lines = body.rstrip().splitlines()
    store = _STORE.match(lines[-1]) if lines and "return" not in body else None
    if store is None or store.group("out") not in task.outputs:
        return fill
    return "\n".join([*lines[:-1], f"return {store.group('value').strip()};"])


_RETURN_VALUE = re.compile(r"\breturn\s+(?P<value>[^;]+?)\s*;")


def without_returned_values(skeleton: Skeleton, name: str, fill: str) -> str:
    """A fill of a slot that returns nothing (`void add(...)`) but that returns a value (`return s.acc;`
    after updating s, `return y[row];` after storing it: the local model's matvec and epilogue fills,
    "return value type does not match the function type", 5 compile errors in its twelfth and thirteenth
    rounds) with each value evaluated and dropped: `{ (void)(s.acc); return; }`, as it means."""
    signature = _signature(skeleton, name)
    if signature is None or signature[0] != "void":
        return fill
    return _RETURN_VALUE.sub(lambda m: f"{{ (void)({m.group('value')}); return; }}", fill)


_TYPE_WORDS = {"const", "float", "int", "unsigned", "long", "double", "bool", "short"}


def with_used_members(skeleton: Skeleton, fills: Mapping[str, str]) -> dict[str, str]:
    """The fills with the statistics struct read as the contracts say: a member reached through the
    struct as if it were a pointer (`s->acc`) reached with a dot, and each member the code slots use
    (`s.sq += v * v;`, as the contracts' examples do) but the fields slot does not declare, declared
    `float NAME;` (zero: a sum's empty value); and a fields fill written as the statements that set
    the members (`s.sum = 0.f;`) read as their declarations (`float sum = 0.f;`). The local model wrote
    all three. A member of another type, or one whose empty value is not zero, is the model's to declare."""
    fields = next((slot.name for slot in skeleton.slots if slot.kind == "fields"), None)
    if fields is None:
        return dict(fills)
    out, used = dict(fills), {}
    holders = {a for slot in skeleton.slots for a in _state_arguments(skeleton, slot.name)}
    if holders and (state := out.get(fields, "")):
        out[fields] = _ASSIGNED_MEMBER.sub(
            lambda m: f"{m.group('indent')}{m.group('type') or 'float '}{m.group('name')} ="
            if m.group("object") in holders else m.group(0), state)
    for slot in skeleton.slots:
        objects = _state_arguments(skeleton, slot.name)
        if objects and (text := out.get(slot.name, "")):
            member = re.compile(r"(?<![\w.>])(" + "|".join(objects) + r")\s*(?:\.|->)\s*([A-Za-z_]\w*)")
            out[slot.name] = member.sub(r"\1.\2", text)
            used.update(dict.fromkeys(name for _, name in member.findall(text)))
    declared = _member_names(normalize_fills(skeleton, {fields: out.get(fields, "")})[fields])
    if missing := [name for name in used if name not in declared]:
        state = out.get(fields, "").rstrip()
        out[fields] = "\n".join([*([state] if state.strip() else []), *(f"float {n};" for n in missing)])
    return out


# a fields fill written as the statements that set the struct's members (`s.sum = 0.f;`, `float s.m = 0.f;`)
_ASSIGNED_MEMBER = re.compile(r"^(?P<indent>[ \t]*)(?P<type>(?:float|int|unsigned)\s+)?(?P<object>[A-Za-z_]\w*)\s*"
                              r"(?:\.|->)\s*(?P<name>[A-Za-z_]\w*)\s*=(?!=)", re.MULTILINE)


def _member_names(fields: str) -> set[str]:
    """The names a fields fill declares (`float m = -INFINITY, sum = 0.f;`: m and sum)."""
    names = set()
    for statement in fields.split(";"):
        words = statement.replace(",", " , ").split()
        while words and words[0] in _TYPE_WORDS:
            words = words[1:]
        for part in " ".join(words).split(","):
            if m := _NAME.match(part.strip()):
                names.add(m.group(0))
    return names


def _state_arguments(skeleton: Skeleton, name: str) -> list[str]:
    """The arguments of a body slot's contract signature typed as the statistics struct (`State& s`)."""
    signature = _signature(skeleton, name)
    return [argument for declared, argument in signature[1] if "State" in declared] if signature else []


_BLOCK = re.compile(r"^\s*```[^\n`]*\n(.*?)^\s*```", re.MULTILINE | re.DOTALL)


def _lone_block(text: str) -> str | None:
    """The content of the answer's only fenced block (None for none or several)."""
    blocks = _BLOCK.findall(text)
    return blocks[0] if len(blocks) == 1 and blocks[0].strip() else None


_LOG_LINE = re.compile(r"\((\d+)\): (?:catastrophic )?error")


def failing_slots(port: Port, outcome: Outcome) -> list[str]:
    """The slots a compiler log's error lines fall in (empty when the errors are elsewhere or unknown)."""
    lines = [int(n) for n in _LOG_LINE.findall(outcome.log or outcome.message)]
    return list(dict.fromkeys(s for line in lines if (s := port.instance.slot_at(line)) is not None))


_UNDEFINED = re.compile(r'identifier "(\w+)" is undefined')
_SIGNATURE = re.compile(r"^`(?:const\s+)?(?P<type>[A-Za-z_]\w*)[\s*&]*(?P<name>\w+)\((?P<args>[^)`]*)\)`")


def _function_name(skeleton: Skeleton, name: str) -> str | None:
    """The name of the function a body slot's fill is the body of (`term` for TERM), from the signature
    its contract opens with; None for other slots."""
    slot = skeleton.slot(name)
    m = _SIGNATURE.match(slot.contract) if slot is not None and slot.kind == "body" else None
    return m.group("name") if m else None


def _signature(skeleton: Skeleton, name: str) -> tuple[str, list[tuple[str, str]]] | None:
    """A body slot's function as its contract opens with it (`float combine(PARAMS, float acc,
    float v)`): its return type and its arguments, each as declared and by name, PARAMS among them;
    None for other slots."""
    slot = skeleton.slot(name)
    m = _SIGNATURE.match(slot.contract) if slot is not None and slot.kind == "body" else None
    if m is None:
        return None
    parts = [part.strip() for part in m.group("args").split(",") if part.strip()]
    return m.group("type"), [(part, part.split()[-1].lstrip("*&")) for part in parts]


def slot_arguments(skeleton: Skeleton, slot: str) -> list[str]:
    """The arguments a body slot's contract signature gives beside the task's parameters
    (`float combine(PARAMS, float acc, float v)`: acc, v)."""
    signature = _signature(skeleton, slot)
    return [name for _, name in signature[1] if name != "PARAMS"] if signature else []


def repair_view(port: Port, failed: Attempt, task: Task) -> dict:
    """What the port repair prompt shows of the failure: its class, message and evidence, the slots to
    fix (those the compiler's errors lie in, of the slots the model fills; else every slot the model
    thinks wrong) and, for a name the compiler does not know, the names in scope there."""
    o = failed.outcome
    asked = plan(port.skeleton, task).asked
    view: dict = {"status": o.status.value, "message": o.message, "log": "", "mismatch": None, "launch": None,
                  "slots_to_fix": [], "undefined": [], "scope": {}, "passed": []}
    if o.status.value == "compile_error":
        view["log"] = o.log or o.message
        view["slots_to_fix"] = [name for name in failing_slots(port, o) if name in asked]
        view["undefined"] = list(dict.fromkeys(_UNDEFINED.findall(view["log"])))
        if view["undefined"]:
            view["scope"] = {name: scope for name in view["slots_to_fix"]
                             if (scope := _scope(port.skeleton, task, name)) is not None}
    elif o.status.value == "launch_error":
        size, directives, limit = launch_evidence(port.instance.source, o.message)
        view["launch"] = {"size": size, "directives": directives, "limit": limit}
    elif o.mismatch is not None:
        view["mismatch"] = o.mismatch.model_dump()
        view["passed"] = o.sizes_checked
    return view


def port_prompt_context(task: Task, naive: str, skeleton: Skeleton, earlier: list[str],
                        winners: Path | None = None, sample: int = 0,
                        failed: Sequence[Mapping[str, str]] = ()) -> dict:
    """Variables of `port.j2` (one wording for every model: the answer is a few short blocks anyway);
    `sample`: how many fresh samples of the skeleton were asked before (`example_fill`); `failed`: the
    fills of the skeleton's earlier ports that the model copied from its prompt and that failed their
    check (`copied`; the examples equal to them are not shown again where the model fills one slot: the
    copy is then known wrong. With several slots, which is wrong is not known, and the example's other
    slots are often right: in the local model's tenth round, masked_cumsum lost the cumulative sum's example
    after a copy with a wrong LOAD and then wrote `1.f` and `a * b`)."""
    chosen = plan(skeleton, task)
    if len(chosen.asked) != 1:
        failed = ()
    example = example_fill(skeleton, task, winners=winners, sample=sample, failed=failed)
    shown = frozenset(example["slots"]) if example else frozenset()
    named = in_slot_names(naive, skeleton, task, chosen.given)
    return {"task": task_context(task), "naive": named, "naive_renamed": named != naive,
            "skeleton": skeleton_view(skeleton, task, shown, failed), "example": example, "earlier": earlier}
