"""Answer grammars (GBNF): their text, and that they reach the server only when the config says it
takes them. Whether the grammars parse is checked against llama.cpp's own grammar reader where one
is served (the experiment in the closing note of issue 15); here their shape is checked."""

from __future__ import annotations

import re

import pytest

from kernel_agent.llm.client import LLMClient
from kernel_agent.llm.grammar import KERNEL_GRAMMAR, request_fields, slots_grammar
from kernel_agent.llm.porting import answer_grammar
from kernel_agent.llm.settings import LLMConfig
from kernel_agent.skeletons import library
from tests.llm.fake_server import FakeOpenAI, answer


def test_a_slot_grammar_is_the_asked_blocks_in_order_the_optional_ones_may_be_left_out():
    text = slots_grammar(["STATE", "ADD", "FINAL"], optional={"FINAL"})
    root = text.splitlines()[0]
    assert root == 'root ::= slot-state "\\n" slot-add "\\n" (slot-final "\\n")?'
    assert 'slot-add ::= "```ADD\\n" one-line line* "```"' in text  # a slot to fill: not an empty block
    assert 'slot-final ::= "```FINAL\\n" line* "```"' in text
    assert 'line ::= [^`\\n]* "\\n"' in text
    # every rule used is defined, once
    used = set(re.findall(r"\b(slot-[a-z-]+|one-line|line)\b", text))
    defined = re.findall(r"^([\w-]+) ::=", text, re.MULTILINE)
    assert used <= set(defined) and len(defined) == len(set(defined))
    assert slots_grammar(["LOAD_A"]).splitlines()[1].startswith("slot-load-a ::= ")
    with pytest.raises(ValueError):
        slots_grammar([])


def test_a_dims_or_an_expressions_block_is_one_line():
    text = slots_grammar(["K", "ACCUMULATE"], one_line={"K"})
    assert 'slot-k ::= "```K\\n" one-line "```"' in text
    assert 'slot-accumulate ::= "```ACCUMULATE\\n" one-line line* "```"' in text
    assert 'one-line ::= [^`\\n]+ "\\n"' in text


def test_a_port_answers_grammar_holds_the_skeletons_dims_and_expressions_to_one_line():
    grammar = answer_grammar(library()["window1d"], ["K", "S", "IDENTITY", "ACCUMULATE"])
    for name in ("K", "S", "IDENTITY"):
        assert f'"```{name}\\n" one-line' in grammar
    assert '"```ACCUMULATE\\n" one-line line*' in grammar


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

