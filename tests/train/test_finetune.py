"""`kagent finetune` end to end on a tiny randomly initialised model (no download, CPU): export → SFT →
DPO → two GRPO steps whose rewards come from kagent's judge over replayed checks. Needs the train extra;
skipped where it is not installed (CI installs it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernel_agent.cli import app
from kernel_agent.llm.answers import parse_answer
from kernel_agent.repair.checks import RecordedChecks, check_key
from kernel_agent.task import load_task
from kernel_agent.train.export import export
from kernel_agent.train.finetune import FinetuneConfig, FinetuneError, finetune
from kernel_agent.train.judge import Judge, KernelReward
from kernel_agent.train.samples import read_samples
from sandbox import Outcome, Status, Timing
from tests.paths import ROOT
from tests.train.test_judge import BROKEN, FAST, WRONG

pytest.importorskip("trl")
pytest.importorskip("peft")
from tests.train.tiny_model import build  # (imports transformers)

pytestmark = pytest.mark.slow

TASK_FILE = "tasks/level1/add.yaml"
FIX = FAST
PROMPT = [{"role": "system", "content": "Fix CUDA kernels."},
          {"role": "user", "content": "Fix the bound of add."}]


def trajectory(folder: Path) -> None:
    """An optimize run's folder: two answers to one repair prompt, the fix correct, the other wrong."""
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"task": "add", "task_file": TASK_FILE}))
    rows = []
    for call, (text, status) in enumerate([(FIX, "ok"), (WRONG, "wrong_result")], start=1):
        rows.append({"type": "call", "call": call, "role": "planner", "round": 0, "messages": PROMPT, "text": text,
                     "kernel": f"llm{call}", "feedback": "", "parent_source": BROKEN})
        rows.append({"type": "result", "call": call, "kernel": f"llm{call}", "status": status,
                     "median_ms": 0.01 if status == "ok" else None, "speedup": 1.0 if status == "ok" else None})
    (folder / "trajectory.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def replayed(path: Path) -> RecordedChecks:
    """The GPU's verdicts on both answers' kernels, as a GPU machine would have recorded them."""
    task = load_task(ROOT / TASK_FILE)
    checks = RecordedChecks(path)
    timing = Timing(median_ms=0.01, p10_ms=0.01, p90_ms=0.01, min_ms=0.01, max_ms=0.01, repetitions=10)
    for text, outcome in [(FIX, Outcome(status=Status.ok, timing=timing)),
                          (WRONG, Outcome(status=Status.wrong_result, message="wrong out"))]:
        source = parse_answer(text, BROKEN).source
        assert source is not None
        checks.add(check_key(task, source, {}, None), outcome)
    return checks


def test_export_sft_dpo_grpo_on_a_tiny_model(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the run names its task file relative to the checkout
    trajectory(tmp_path / "runs" / "add" / "run1")
    samples, skipped = read_samples([tmp_path / "runs"])
    assert not skipped and [s.parent for s in samples] == [BROKEN, BROKEN]
    data = tmp_path / "data"
    export(samples, data, test_tasks=set())
    prompts = [json.loads(line) for line in (data / "prompts.train.jsonl").read_text().splitlines()]
    assert prompts == [{"prompt": PROMPT, "task": "add", "role": "planner", "task_file": TASK_FILE,
                        "parent": BROKEN, "base_fills": "{}"}]

    model = build(tmp_path / "tiny", [FIX, WRONG, BROKEN, json.dumps(PROMPT)] * 4)
    tiny = {"batch_size": 1, "grad_accumulation": 1, "max_length": 2048, "save_steps": 100, "cpu": True}
    # SFT until the model has learnt the correct answer by heart: the GRPO below then writes real kernels
    sft = finetune(FinetuneConfig(method="sft", model=str(model), data=data, out=tmp_path / "sft", max_steps=30,
                                  learning_rate=1e-2, lora_rank=32, lora_alpha=64, merge=True, gguf_adapter=True,
                                  **tiny))
    assert sft["rows"] == 1 and sft["steps"] == 30 and sft["losses"][-1] < sft["losses"][0] / 4
    assert (tmp_path / "sft" / "adapter" / "adapter_config.json").is_file()
    assert (tmp_path / "sft" / "merged" / "config.json").is_file()
    assert sft["gguf_adapter"] == str(tmp_path / "sft" / "adapter.gguf")  # asked for: the base is a model folder
    assert (tmp_path / "sft" / "adapter.gguf").stat().st_size > 0

    dpo = FinetuneConfig(method="dpo", model=str(model), data=data, out=tmp_path / "dpo", max_steps=2,
                         **{**tiny, "save_steps": 1})
    first = finetune(dpo)
    assert first["rows"] == 1 and first["steps"] == 2 and len(first["losses"]) == 2 and first["resumed_from"] is None
    dpo.max_steps = 3  # started again: goes on from the last checkpoint
    again = finetune(dpo)
    assert again["resumed_from"].endswith("checkpoint-2") and again["steps"] == 3
    assert again["losses"][:2] == first["losses"] and len(again["losses"]) == 3  # the history goes on too

    reward = KernelReward(Judge(tmp_path / "judged", replayed(tmp_path / "checks.jsonl")))
    grpo = finetune(FinetuneConfig(method="grpo", model=str(tmp_path / "sft" / "merged"), data=data,
                                   out=tmp_path / "grpo", max_steps=2, generations=2, max_completion_tokens=64,
                                   extra={"temperature": 0.2}, **tiny), reward)
    assert grpo["steps"] == 2 and not grpo["reward_problems"]
    assert len(reward.verdicts) == 4
    assert ("ok", 0.01) in reward.verdicts  # the replayed GPU verdict of the fix: the model wrote it


def test_finetune_says_what_is_missing(tmp_path):
    with pytest.raises(FinetuneError, match="kagent export"):
        finetune(FinetuneConfig(method="sft", model="x", data=tmp_path, out=tmp_path / "o"))
    with pytest.raises(FinetuneError, match="reward"):
        finetune(FinetuneConfig(method="grpo", model="x", data=tmp_path, out=tmp_path / "o"))


def test_the_command_trains_and_tells_how_to_serve(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    trajectory(tmp_path / "runs" / "add" / "run1")
    assert CliRunner().invoke(app, ["export", str(tmp_path / "runs"), "--out", str(tmp_path / "data"),
                                    "--test-tasks", "none"]).exit_code == 0
    model = build(tmp_path / "tiny", [FIX, WRONG, BROKEN] * 4)
    result = CliRunner().invoke(app, ["finetune", "grpo", "--model", str(model), "--data", str(tmp_path / "data"),
                                      "--out", str(tmp_path / "out"), "--max-steps", "1", "--generations", "2",
                                      "--grad-accumulation", "1", "--max-completion-tokens", "8", "--cpu",
                                      "--executor", "compile-only"])
    assert result.exit_code == 0, result.output
    assert "grpo: 1 steps on 1 rows" in result.output and "answers judged: {'no_kernel': 2}" in result.output
    assert "convert_hf_to_gguf.py" in result.output
    report = json.loads((tmp_path / "out" / "finetune.json").read_text())
    assert report["verdicts"] == {"no_kernel": 2} and Path(report["adapter"]).is_dir()
    assert report["gguf_adapter"] is None  # not asked for, and the base is not a .gguf file
    bad = CliRunner().invoke(app, ["finetune", "rl", "--model", str(model), "--data", str(tmp_path / "data")])
    assert bad.exit_code == 2 and "unknown method 'rl'" in bad.output


def test_lora_on_the_last_blocks_only_adapts_them_and_serves_them(tmp_path, monkeypatch):
    import gguf

    monkeypatch.chdir(ROOT)
    trajectory(tmp_path / "runs" / "add" / "run1")
    export(read_samples([tmp_path / "runs"])[0], tmp_path / "data", test_tasks=set())
    model = build(tmp_path / "tiny", [FIX, WRONG, BROKEN, json.dumps(PROMPT)] * 4)  # two blocks
    report = finetune(FinetuneConfig(method="sft", model=str(model), data=tmp_path / "data", out=tmp_path / "sft",
                                     max_steps=1, grad_accumulation=1, lora_layers=1, gguf_adapter=True, cpu=True))
    names = {t.name for t in gguf.GGUFReader(report["gguf_adapter"]).tensors}
    assert len(names) == 14 and all(name.startswith("blk.1.") for name in names)  # 7 linear layers, a and b


def test_asking_for_the_last_blocks_of_a_model_without_blocks_is_refused():
    from types import SimpleNamespace

    from kernel_agent.train.finetune import _targets

    flat = SimpleNamespace(config=SimpleNamespace(num_hidden_layers=2), named_modules=lambda: iter([]))
    with pytest.raises(FinetuneError, match="no linear layer"):
        _targets(flat, 1)
    assert _targets(flat, 0) == "all-linear"


def test_on_a_cpu_training_runs_in_float32_without_recomputation():
    """TRL's defaults (bf16, gradient checkpointing) are emulated on a CPU without bf16 instructions: a step of
    the 1.5B model took over 10 min on 2 cores, 130-230 s in float32 (tests/data/llm/finetune_ab)."""
    from kernel_agent.train.finetune import _precision

    on_cpu = _precision(FinetuneConfig(method="sft", model="m", data=Path("d"), out=Path("o"), cpu=True))
    assert on_cpu == {"bf16": False, "fp16": False, "gradient_checkpointing": False}
