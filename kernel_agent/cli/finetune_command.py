"""`kagent finetune`: LoRA SFT, DPO or GRPO of a local model on what `kagent export` wrote."""

from __future__ import annotations

from pathlib import Path

import typer

from ..render import console
from ..repair.checks import RecordedChecks
from ..task import TaskError
from ..train.finetune import METHODS, FinetuneConfig, FinetuneError, finetune
from ..train.gguf_adapter import AdapterError, architecture_of, write_gguf_adapter
from ..train.judge import Judge, KernelReward
from .app import app, arch_option, fail, notice
from .gpu_checks import EXECUTOR, gpu_session, shared_gpu

SERVING = """To serve the tuned model:
- llama.cpp (the local server): keep the base GGUF and add the GGUF adapter (OUT/adapter.gguf, written when the
  base is a .gguf file or with --gguf-adapter; `kagent adapter-gguf` converts an adapter folder):
  llama-server -m BASE.gguf --lora adapter.gguf, or python -m llama_cpp.server --model BASE.gguf
  --lora_path adapter.gguf. Or fold the adapter in with --merge and convert OUT/merged with llama.cpp's
  convert_hf_to_gguf.py.
- vLLM: vllm serve BASE --enable-lora --lora-modules kagent=ADAPTER, and --llm kagent.
kagent then uses it like any endpoint: --llm NAME --llm-base-url http://HOST:PORT/v1."""


@app.command("finetune")
def finetune_command(
    method: str = typer.Argument(..., help=f"One of {', '.join(METHODS)}: SFT on correct answers, DPO on preference "
                                           "pairs, or GRPO on the task prompts with kagent's checks as reward."),
    model: str = typer.Option(..., help="Base model: a transformers model folder, or a .gguf file (dequantised "
                                        "to train; needs the gguf package)."),
    data: Path = typer.Option(Path("results/datasets"), help="The folder `kagent export` wrote."),
    out: Path = typer.Option(Path("results/finetune"), help="Checkpoints, the adapter, finetune.json. A run "
                                                            "started again with the same OUT resumes."),
    max_steps: int = typer.Option(-1, help="Optimizer steps (-1: --epochs decide)."),
    epochs: float = typer.Option(1.0, min=0.01, help="Passes over the training rows."),
    learning_rate: float = typer.Option(1e-4, min=0.0),
    batch_size: int = typer.Option(1, min=1, help="Rows per device step."),
    grad_accumulation: int = typer.Option(4, min=1, help="Device steps per optimizer step."),
    lora_rank: int = typer.Option(16, min=1),
    lora_alpha: int = typer.Option(32, min=1),
    lora_layers: int = typer.Option(0, min=0, help="Adapt only the last N transformer blocks (0: all). The "
                                                   "backward pass then stops there: on a CPU, a step costs "
                                                   "little more than the forward pass."),
    max_length: int = typer.Option(4096, min=64, help="Tokens of prompt plus answer kept (kagent's prompts "
                                                      "run to 3,500 tokens)."),
    max_completion_tokens: int = typer.Option(1024, min=8, help="GRPO: tokens per generated answer."),
    generations: int = typer.Option(4, min=2, help="GRPO: answers per prompt, rewarded by rank among each other."),
    save_steps: int = typer.Option(50, min=1, help="A checkpoint every N steps."),
    seed: int = typer.Option(0),
    merge: bool = typer.Option(False, help="Also write the base model with the adapter folded in (OUT/merged)."),
    gguf_adapter: bool | None = typer.Option(None, "--gguf-adapter/--no-gguf-adapter",
                                             help="Also write the adapter as llama.cpp serves it (OUT/adapter.gguf) "
                                                  "[default: when --model is a .gguf file]."),
    cpu: bool = typer.Option(False, help="Train on the CPU even where there is a GPU."),
    executor: str = EXECUTOR,
    checks: list[Path] = typer.Option([], "--checks", help="GRPO: recorded checks (a repair session's or "
                                                           "bench's checks.jsonl) that answer for a kernel "
                                                           "without running it (repeatable)."),
    tasks: list[Path] = typer.Option([Path("tasks")], "--tasks", help="GRPO: folders searched for a task file by "
                                                                      "name when the recorded path is not here."),
    device: int = typer.Option(0, help="GPU index for GRPO's checks."),
    arch: str | None = typer.Option(None, help="Target architecture [default: the GPU's, else sm_90]."),
) -> None:
    """Fine-tune a local model with LoRA on kagent's own answers (needs the train extra:
    `pip install 'kagent[train]'`).

    Reads `DATA/sft.train.jsonl`, `preference.train.jsonl` or `prompts.train.jsonl` as `kagent export`
    wrote them; the `.test` files stay for evaluation on tasks the model never saw. GRPO generates
    `--generations` answers per prompt, reads each as kagent reads answers to that prompt, checks the
    kernel (recorded checks first, then the GPU, else compile-only: a kernel that compiles but cannot
    run scores between every failure and every correct one) and rewards by rank within the group.
    Progress is the trainer's; checkpoints go to OUT/checkpoints and a stopped run resumes from the last.
    """
    arch_option(arch)
    config = FinetuneConfig(method=method, model=model, data=data, out=out, max_steps=max_steps, epochs=epochs,
                            learning_rate=learning_rate, batch_size=batch_size, grad_accumulation=grad_accumulation,
                            lora_rank=lora_rank, lora_alpha=lora_alpha, lora_layers=lora_layers, max_length=max_length,
                            max_completion_tokens=max_completion_tokens, generations=generations,
                            save_steps=save_steps, seed=seed, merge=merge, gguf_adapter=gguf_adapter,
                            cpu=cpu)
    missing = [str(p) for p in checks if not p.is_file()]
    if missing:
        fail(2, f"no such checks file: {', '.join(missing)}")
    gpu = shared_gpu(executor, device) if method == "grpo" else None
    reward = None
    if method == "grpo":
        judge = Judge(out / "judged", RecordedChecks(out / "checks.jsonl", tuple(checks)), gpu, arch, tasks,
                      emulate=executor == "emulate")
        reward = KernelReward(judge)
    out.mkdir(parents=True, exist_ok=True)
    with gpu_session(gpu, f"checkpoints are in {out / 'checkpoints'}; run the same command to resume"):
        try:
            report = finetune(config, reward)
        except (FinetuneError, TaskError) as exc:
            fail(2, str(exc))
    console.print(f"{method}: {report['steps']} steps on {report['rows']} rows in {report['seconds']} s; "
                  f"last loss {report['losses'][-1] if report['losses'] else 'n/a'}", markup=False)
    if reward is not None:
        console.print(f"answers judged: {report['verdicts']}", markup=False)
        for line in reward.problems[:5]:
            console.print(f"not judged: {line}", markup=False)
    console.print(f"adapter: {report['adapter']}" + (f"; GGUF adapter: {report['gguf_adapter']}"
                                                     if report["gguf_adapter"] else "")
                  + (f"; merged model: {report['merged']}" if report["merged"] else ""), markup=False)
    if "gguf_adapter_problem" in report:
        notice(report["gguf_adapter_problem"])
    console.print(SERVING, markup=False)


@app.command("adapter-gguf")
def adapter_gguf_command(
    adapter: Path = typer.Argument(..., help="A LoRA adapter folder in PEFT's format (`kagent finetune` writes "
                                             "OUT/adapter)."),
    base: Path = typer.Option(..., "--base", help="The base model it was trained on: its .gguf file, or a model "
                                                  "folder whose model_type llama.cpp names the same way."),
    out: Path = typer.Option(Path("adapter.gguf"), "--out", "-o", help="GGUF adapter file to write."),
) -> None:
    """Convert a LoRA adapter to a GGUF adapter file, which llama.cpp applies over the GGUF base model.

    Serve it with `llama-server -m BASE.gguf --lora OUT` (or llama-cpp-python's server: --model BASE.gguf
    --lora_path OUT); quantised bases take it. Only LoRA weights convert: an adapter that also trained
    embeddings or other modules is refused, naming them.
    """
    try:
        served = write_gguf_adapter(adapter, out, architecture_of(base))
    except AdapterError as exc:
        fail(2, str(exc))
    console.print(f"{served.path}: {served.pairs} adapted weights, rank {served.rank}, alpha {served.alpha:g}, "
                  f"for {served.architecture}", markup=False)
