"""Answer grammars (GBNF): their text, what they let through, and that they reach the server only when
the config says it takes them. Whether llama.cpp's own grammar reader takes them is checked where one is
served (the closing notes of issue 15); here a port grammar, which is regular, is read as a Python
regular expression (`_as_regex`) to try answers against it."""

from __future__ import annotations

import re

import pytest

from kernel_agent.llm.client import LLMClient
from kernel_agent.llm.grammar import KERNEL_GRAMMAR, request_fields, slots_grammar
from kernel_agent.llm.porting import answer_grammar
from kernel_agent.llm.settings import LLMConfig
from kernel_agent.skeletons import library
from tests.llm.fake_server import FakeOpenAI, answer

_TOKEN = re.compile(r'\s*("(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]|[\w-]+|[()*+?])')


def _as_regex(grammar: str) -> re.Pattern[str]:
    """The GBNF subset the port grammars use (literals, character classes, rule names, groups and
    `* + ?`, no recursion) as one regular expression for the whole answer."""
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines() if line.strip())

    def body(name: str) -> str:
        out, text, position = [], rules[name], 0
        while position < len(text.rstrip()):
            token = _TOKEN.match(text, position)
            assert token is not None, text[position:]
            position, part = token.end(), token.group(1)
            if part.startswith('"'):
                out.append(re.escape(part[1:-1].replace("\\n", "\n").replace('\\"', '"')))
            elif part.startswith("[") or part in "()*+?":
                out.append(part.replace("(", "(?:") if part == "(" else part)
            else:
                out.append(f"(?:{body(part)})")
        return "".join(out)
    return re.compile(body("root"))


def test_a_slot_that_must_be_filled_opens_with_code_not_a_blank_line_or_the_placeholder():
    grammar = _as_regex(slots_grammar(["K", "ADD", "FINAL"], optional={"FINAL"}, one_line={"K"}))
    good = "```K\n8\n```\n```ADD\n  s.sum += v;\n\n  v = 1.f;\n```\n"
    assert grammar.fullmatch(good)
    assert grammar.fullmatch(good + "```FINAL\n...\n```\n")  # an optional slot may be passed by
    assert grammar.fullmatch(good.replace("8", ".5f")) is None  # a fill may not open with a dot (write 0.5f)
    for bad in ("...", "   ...", "…", "", "   ", ". . ."):
        assert grammar.fullmatch(good.replace("  s.sum += v;", bad)) is None, bad
        assert grammar.fullmatch(good.replace("8", bad)) is None, bad
    assert grammar.fullmatch(good.replace("```K", "```k")) is None
    assert grammar.fullmatch(good.replace("8\n", "8\n9\n")) is None  # a dim is one line


def test_a_slot_grammar_is_the_asked_blocks_in_order_the_optional_ones_may_be_left_out():
    text = slots_grammar(["STATE", "ADD", "FINAL"], optional={"FINAL"})
    root = text.splitlines()[0]
    assert root == 'root ::= slot-state "\\n" slot-add "\\n" (slot-final "\\n")?'
    assert 'slot-add ::= "```ADD\\n" code-line line* "```"' in text  # a slot to fill: not an empty block
    assert 'slot-final ::= "```FINAL\\n" line* "```"' in text
    assert 'line ::= [^`\\n]* "\\n"' in text
    # every rule used is defined, once
    used = set(re.findall(r"\b(slot-[a-z-]+|code-line|line)\b", text))
    defined = re.findall(r"^([\w-]+) ::=", text, re.MULTILINE)
    assert used <= set(defined) and len(defined) == len(set(defined))
    assert slots_grammar(["LOAD_A"]).splitlines()[1].startswith("slot-load-a ::= ")
    with pytest.raises(ValueError):
        slots_grammar([])


def test_a_dims_or_an_expressions_block_is_one_line():
    text = slots_grammar(["K", "ACCUMULATE"], one_line={"K"})
    assert 'slot-k ::= "```K\\n" code-line "```"' in text
    assert 'slot-accumulate ::= "```ACCUMULATE\\n" code-line line* "```"' in text


def test_a_port_answers_grammar_holds_the_skeletons_dims_and_expressions_to_one_line():
    grammar = answer_grammar(library()["window1d"], ["K", "S", "IDENTITY", "ACCUMULATE"])
    for name in ("K", "S", "IDENTITY"):
        assert f'"```{name}\\n" code-line' in grammar
    assert '"```ACCUMULATE\\n" code-line line*' in grammar


def test_the_kernel_grammar_is_one_cuda_block():
    assert KERNEL_GRAMMAR.startswith('root ::= "```cuda\\n" line+ "```"')


def test_the_grammar_travels_in_the_field_the_server_reads():
    assert request_fields("llama.cpp", "g") == {"grammar": "g"}
    assert request_fields("vllm", "g") == {"guided_grammar": "g"}
    assert request_fields("off", "g") == {} and request_fields("llama.cpp", None) == {}


@pytest.mark.parametrize("dialect, field", [("llama.cpp", "grammar"), ("vllm", "guided_grammar"), ("off", None)])
def test_the_client_sends_a_grammar_only_to_a_server_that_takes_one(dialect, field):
    with FakeOpenAI([answer("```VALUE\nreturn x[i];\n```")]) as server:
        config = LLMConfig(model="m", base_url=server.base_url, api_key="k", grammar=dialect, max_attempts=1)
        LLMClient(config).complete([{"role": "user", "content": "hi"}], grammar="root ::= \"x\"")
        body = server.requests[0]
    sent = {k for k in ("grammar", "guided_grammar") if k in body}
    assert sent == ({field} if field else set())
    if field:
        assert body[field] == "root ::= \"x\""

