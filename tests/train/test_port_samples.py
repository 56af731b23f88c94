"""Port fixtures as SFT samples: the prompt is the one kagent sends when it ports, and the answer, read
back the way kagent reads a port answer, builds a kernel that compiles."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kernel_agent.cli import app
from kernel_agent.repair.checks import RecordedChecks
from kernel_agent.train.judge import Judge
from kernel_agent.train.ports import answer_text, port_samples
from tests.llm.fake_server import answer
from tests.llm.test_compile_only_loop import no_gpu  # noqa: F401  (a fixture)
from tests.llm.test_porting import run
from tests.paths import ROOT

PORTS = ROOT / "tests" / "data" / "ports"
FIXTURES = sorted(PORTS.glob("*.md"))


def test_every_fixture_is_a_sample_with_the_slots_its_prompt_asks_for():
    samples, skipped = port_samples(FIXTURES, [ROOT / "tasks"])
    assert skipped == [] and len(samples) == len(FIXTURES) == 15
    bmm = next(s for s in samples if s.task == "bmm")
    assert bmm.role == "port:matmul" and bmm.status == "ok" and bmm.task_file.endswith("naive/bmm.yaml")
    assert bmm.completion == "```EPILOGUE\nc[(p * m + row) * n + col] = acc;\n```\n"  # LOAD_A, M, ... are given
    assert "Fill every slot (EPILOGUE)." in bmm.messages[-1][1] and bmm.messages[0][0] == "system"


def test_the_sample_prompt_is_the_prompt_kagent_sends_when_it_ports(tmp_path, no_gpu):  # noqa: F811
    (softplus,), _ = port_samples([PORTS / "softplus.md"], [ROOT / "tasks"])
    _, _, calls, _ = run(tmp_path, [answer(softplus.completion)], "--batch", "1")
    sent = [(m["role"], m["content"]) for m in calls[0]["messages"]]
    assert calls[0]["role"] == softplus.role == "port:elementwise"
    assert tuple(sent) == softplus.messages


def test_every_fixture_answer_builds_a_kernel_that_compiles(tmp_path):
    judge = Judge(tmp_path / "work", RecordedChecks(tmp_path / "checks.jsonl"), arch="sm_90")
    samples, _ = port_samples(FIXTURES, [ROOT / "tasks"])
    verdicts = {s.task: judge.verdict(s.task_file, s.role, "", {}, s.completion)[0] for s in samples}
    assert verdicts == dict.fromkeys(verdicts, "not_run")  # compiled and launch-planned; nothing runs here


def test_files_that_cannot_be_samples_say_why(tmp_path):
    (tmp_path / "nothing.md").write_text("```VALUE\nreturn 1;\n```\n")
    (tmp_path / "unknown_task.md").write_text("skeleton: elementwise\n\n```VALUE\nreturn 1;\n```\n")
    (tmp_path / "softplus.md").write_text("skeleton: elementwise\n\n```OUT\ny\n```\n")
    samples, skipped = port_samples(sorted(tmp_path.glob("*.md")), [ROOT / "tasks"])
    assert samples == []
    assert [line.split(":")[0].rsplit("/", 1)[-1] for line in skipped] == ["nothing.md", "softplus.md",
                                                                            "unknown_task.md"]
    assert "no `skeleton:` line" in skipped[0] and "no fill for VALUE" in skipped[1]
    assert "none named unknown_task.yaml" in skipped[2]


def test_an_answer_holds_the_asked_slots_in_order_and_leaves_out_empty_ones():
    assert answer_text(["A", "B", "C"], {"C": " c ", "A": "a\n", "B": ""}) == "```A\na\n```\n```C\nc\n```\n"


def test_export_writes_the_fixtures_as_sft_rows_split_by_task(tmp_path):
    result = CliRunner().invoke(app, ["export", "--ports", str(PORTS), "--test-tasks", "bmm,softplus",
                                      "--out", str(tmp_path / "ds")])
    assert result.exit_code == 0, result.output
    train = [json.loads(line) for line in (tmp_path / "ds" / "sft.train.jsonl").read_text().splitlines()]
    test = [json.loads(line) for line in (tmp_path / "ds" / "sft.test.jsonl").read_text().splitlines()]
    assert sorted(r["task"] for r in test) == ["bmm", "softplus"] and len(train) == 13
    assert train[0]["prompt"][0]["role"] == "system" and train[0]["completion"][0]["content"].startswith("```")
    prompts = (tmp_path / "ds" / "prompts.train.jsonl").read_text().splitlines()
    assert len(prompts) == 13 and json.loads(prompts[0])["role"].startswith("port:")


def test_export_needs_runs_or_ports(tmp_path):
    result = CliRunner().invoke(app, ["export", "--out", str(tmp_path / "ds")])
    assert result.exit_code == 2 and "--ports" in result.output


def test_a_missing_ports_folder_is_refused(tmp_path):
    result = CliRunner().invoke(app, ["export", "--ports", str(tmp_path / "none"), "--out", str(tmp_path / "ds")])
    assert result.exit_code == 2 and "no such" in result.output
