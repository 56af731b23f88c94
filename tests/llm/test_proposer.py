"""The proposer against the real client and the scripted server: it says when it waits for the
model, no call outlives the run's deadline, and nothing it writes to trajectory.jsonl holds a secret."""

from __future__ import annotations

import json
import random
import time

from kernel_agent.llm.client import LLMClient
from kernel_agent.llm.proposer import LLMProposer
from kernel_agent.llm.settings import LLMConfig
from kernel_agent.optimize.knowledge import KnowledgeBase
from kernel_agent.optimize.space import Space
from kernel_agent.seams import Plan, SearchState
from kernel_agent.task import load_task
from sandbox.redact import MASK
from tests.llm.fake_server import FakeOpenAI, answer, drip, truncated
from tests.paths import LAYERNORM, ROOT

ROWBLOCK = (ROOT / "tasks" / "level1" / "layernorm" / "rowblock.cu").read_text()


def proposer_for(client: LLMClient, run_dir, waits: list, notices: list) -> LLMProposer:
    task = load_task(LAYERNORM)
    space = Space.of_task(task, generic=False)
    del space.kernels["rowblock"]  # so that the model's rowblock is new
    return LLMProposer(client, task, space, run_dir, generic=False, arch="sm_90", notice=notices.append,
                       on_wait=waits.append)


def ask_planner(proposer: LLMProposer):
    state = SearchState(proposer.space, random.Random(0), KnowledgeBase())
    plan = Plan("rewrite", "planner", proposer.space.default("baseline"), "a test", "planner.j2")
    return proposer.propose(state, plan)


def test_the_proposer_says_it_is_waiting_and_when_it_is_done(tmp_path):
    waits, notices = [], []
    with FakeOpenAI([answer("Use vector loads."), answer(f"```cuda\n{ROWBLOCK}```")]) as server:
        client = LLMClient(LLMConfig(base_url=server.base_url, model="test-model", timeout_s=30, max_attempts=4))
        proposal = ask_planner(proposer_for(client, tmp_path, waits, notices))
    assert proposal is not None and proposal.candidate.kernel == "llm1"
    assert waits == ["waiting for the LLM (planner, 1st ask, up to 120 s)", None,
                     "waiting for the LLM (planner, 2nd ask, up to 120 s)", None]
    assert notices == []


def test_no_call_outlives_the_runs_deadline(tmp_path):
    waits, notices = [], []
    with FakeOpenAI([drip(0.5)]) as server:  # 120 s an attempt, 5 attempts: 10 minutes without a deadline
        proposer = proposer_for(LLMClient(LLMConfig(base_url=server.base_url, model="test-model")), tmp_path,
                                waits, notices)
        began = time.monotonic()
        proposer.deadline = began + 1.5
        proposal = ask_planner(proposer)
        seconds = time.monotonic() - began
    assert proposal is None and 1.4 <= seconds <= 2.5, seconds
    assert waits == ["waiting for the LLM (planner, 1st ask, up to 2 s)", None]
    assert not proposer.enabled and "the run's time limit" in proposer.disabled_reason
    assert len(notices) == 1 and "continuing with the offline specialists" in notices[0]


def test_trajectory_rows_and_prompts_hold_no_secret(tmp_path):
    key = "sk-quoted-by-the-model-31337"
    waits, notices = [], []
    script = [answer(f"I cannot use the key {key} here."), answer(f"```cuda\n{ROWBLOCK}```")]
    with FakeOpenAI(script) as server:
        client = LLMClient(LLMConfig(base_url=server.base_url, model="test-model", api_key=key))
        assert ask_planner(proposer_for(client, tmp_path, waits, notices)) is not None
    trajectory = (tmp_path / "trajectory.jsonl").read_text()
    assert key not in trajectory and f"the key {MASK} here" in trajectory
    rows = [json.loads(line) for line in trajectory.splitlines()]
    assert [r["type"] for r in rows] == ["call", "call"]
    re_ask = server.requests[1]["messages"]  # the model's own first answer goes back to it, redacted
    assert re_ask[-2] == {"role": "assistant", "content": f"I cannot use the key {MASK} here."}
    assert key not in json.dumps(server.requests)


def test_a_cut_off_answer_is_not_sent_back_with_the_re_ask(tmp_path):
    """The re-ask after a cut-off answer is the prompt again with the feedback: sent back, a long answer
    beside a long prompt outgrows a small model's context (the server refuses the call)."""
    waits, notices = [], []
    half = ROWBLOCK[: len(ROWBLOCK) // 2]
    with FakeOpenAI([truncated(f"```cuda\n{half}"), answer(f"```cuda\n{ROWBLOCK}```")]) as server:
        client = LLMClient(LLMConfig(base_url=server.base_url, model="test-model", timeout_s=30, max_attempts=4))
        proposal = ask_planner(proposer_for(client, tmp_path, waits, notices))
        first, second = server.requests
    assert proposal is not None and proposal.candidate.kernel == "llm1"
    assert [m["role"] for m in second["messages"]] == ["system", "user"]
    assert second["messages"][1]["content"].startswith(first["messages"][1]["content"])
    assert "cut off" in second["messages"][1]["content"] and half not in second["messages"][1]["content"]
