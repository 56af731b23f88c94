"""`kagent finetune`: LoRA fine-tuning of a local model on the datasets `kagent export` writes, with TRL
(SFT on correct answers, DPO on preference pairs, GRPO on the task prompts with kagent's checks as the
reward). Needs the `train` extra (torch, transformers, TRL, PEFT); nothing here imports them until a
run starts, so the rest of kagent works without them.

Output folder:
    checkpoints/checkpoint-N/   the trainer's checkpoints (a run started again resumes from the last)
    adapter/                    the LoRA adapter (PEFT format) and the tokenizer
    adapter.gguf                the adapter as llama.cpp serves it over the GGUF base (gguf_adapter.py)
    merged/                     with --merge: the base model with the adapter folded in (a plain model folder)
    finetune.json               what was trained on what, for how long, and the last losses
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .gguf_adapter import BLOCK_INDEX, AdapterError, architecture_of, write_gguf_adapter
from .judge import KernelReward

METHODS = ("sft", "dpo", "grpo")
DATASET = {"sft": "sft", "dpo": "preference", "grpo": "prompts"}
# the columns each trainer reads; the others are dropped (GRPO hands its extra columns to the reward)
COLUMNS = {"sft": ("prompt", "completion"), "dpo": ("prompt", "chosen", "rejected"),
           "grpo": ("prompt", "task_file", "role", "parent", "base_fills")}


class FinetuneError(RuntimeError):
    """Bad input or a missing extra: the message says what to do."""


@dataclass
class FinetuneConfig:
    method: str
    model: str  # a model folder (transformers format), a .gguf file, or a hub name the machine has cached
    data: Path  # the folder `kagent export` wrote
    out: Path
    max_steps: int = -1  # -1: epochs decide
    epochs: float = 1.0
    learning_rate: float = 1e-4
    batch_size: int = 1
    grad_accumulation: int = 4
    lora_rank: int = 16
    lora_alpha: int = 32
    lora_layers: int = 0  # adapt only the last N transformer blocks (0: all): backward stops there, for CPUs
    max_length: int = 4096  # prompt + answer tokens (our prompts run to 3,500 tokens)
    max_completion_tokens: int = 1024  # GRPO: the answer's length when generating
    generations: int = 4  # GRPO: answers per prompt (the group rewards are ranked within)
    save_steps: int = 50
    seed: int = 0
    merge: bool = False
    gguf_adapter: bool | None = None  # write OUT/adapter.gguf; None: when the base model is a .gguf file
    cpu: bool = False
    extra: dict[str, Any] = field(default_factory=dict)  # more trainer arguments (tests: tiny sizes)


def _imports() -> tuple[Any, Any, Any, Any]:
    try:
        import datasets
        import peft
        import transformers
        import trl
    except ImportError as exc:
        raise FinetuneError(f"kagent finetune needs the train extra ({exc.name} is missing): "
                            "pip install 'kagent[train]' (on a machine without a GPU, install torch from "
                            "https://download.pytorch.org/whl/cpu first)") from None
    return datasets, peft, transformers, trl


def load_model(source: str) -> tuple[Any, Any]:
    """The model and its tokenizer from a folder, a GGUF file (transformers dequantises it) or a name."""
    _, _, transformers, _ = _imports()
    path = Path(source)
    where, extra = (str(path.parent), {"gguf_file": path.name}) if path.suffix == ".gguf" else (source, {})
    if path.suffix == ".gguf" and not path.is_file():
        raise FinetuneError(f"{source}: no such GGUF file")
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(where, **extra)
        model = transformers.AutoModelForCausalLM.from_pretrained(where, **extra)
    except (OSError, ValueError) as exc:
        raise FinetuneError(f"cannot load the model {source}: {exc}") from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if extra:  # GGUF weights arrive dequantised to float; only the marks of a quantised model stop the trainer
        _unmark_quantised(model)
    return model, tokenizer


def _unmark_quantised(model: Any) -> None:
    model.hf_quantizer = None
    with contextlib.suppress(AttributeError):  # a plain attribute in some transformers releases
        model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config


def load_rows(config: FinetuneConfig) -> Any:
    """The method's training split as a `datasets.Dataset`, with only the columns its trainer reads."""
    datasets, _, _, _ = _imports()
    path = config.data / f"{DATASET[config.method]}.train.jsonl"
    if not path.is_file():
        raise FinetuneError(f"{path}: no such file (write the datasets with `kagent export ... --out {config.data}`)")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not rows:
        raise FinetuneError(f"{path}: no rows to train on (see {config.data / 'manifest.json'} for what the "
                            "export found)")
    return datasets.Dataset.from_list([{k: row.get(k, "") for k in COLUMNS[config.method]} for row in rows])


def finetune(config: FinetuneConfig, reward: KernelReward | None = None) -> dict[str, Any]:
    """Train; resume from the last checkpoint under `out` when there is one. Returns finetune.json's
    content. `reward`: GRPO's reward function (required for grpo)."""
    if config.method not in METHODS:
        raise FinetuneError(f"unknown method {config.method!r}: one of {', '.join(METHODS)}")
    if config.method == "grpo" and reward is None:
        raise FinetuneError("grpo needs a reward function")
    _, peft, transformers, trl = _imports()
    dataset = load_rows(config)
    model, tokenizer = load_model(config.model)
    lora = peft.LoraConfig(r=config.lora_rank, lora_alpha=config.lora_alpha, lora_dropout=0.05,
                           target_modules=_targets(model, config.lora_layers), task_type="CAUSAL_LM")
    checkpoints = config.out / "checkpoints"
    common: dict[str, Any] = {
        "output_dir": str(checkpoints), "max_steps": config.max_steps, "num_train_epochs": config.epochs,
        "learning_rate": config.learning_rate, "per_device_train_batch_size": config.batch_size,
        "gradient_accumulation_steps": config.grad_accumulation, "save_steps": config.save_steps,
        "save_total_limit": 2, "logging_steps": 1, "seed": config.seed, "report_to": "none",
        "use_cpu": config.cpu, "disable_tqdm": False, **_precision(config), **config.extra}
    trainer: Any
    if config.method == "sft":
        args = trl.SFTConfig(max_length=config.max_length, completion_only_loss=True, **common)
        trainer = trl.SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                                 peft_config=lora)
    elif config.method == "dpo":
        args = trl.DPOConfig(max_length=config.max_length, **common)
        trainer = trl.DPOTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                                 peft_config=lora)
    else:
        common["per_device_train_batch_size"] = max(config.batch_size, config.generations)
        args = trl.GRPOConfig(num_generations=config.generations, max_completion_length=config.max_completion_tokens,
                              **common)
        trainer = trl.GRPOTrainer(model=model, reward_funcs=[reward], args=args, train_dataset=dataset,
                                  processing_class=tokenizer, peft_config=lora)
    if trainer.train_dataset is not None and len(trainer.train_dataset) == 0:
        raise FinetuneError(f"no row of {len(dataset)} is left to train on: each prompt fills --max-length "
                            f"({config.max_length} tokens) before its answer starts; raise it")
    last = transformers.trainer_utils.get_last_checkpoint(str(checkpoints)) if checkpoints.is_dir() else None
    started = time.monotonic()
    result = trainer.train(resume_from_checkpoint=last)
    seconds = time.monotonic() - started
    adapter = config.out / "adapter"
    trainer.save_model(str(adapter))
    tokenizer.save_pretrained(str(adapter))
    served, unserved = None, None  # the training is kept even when the conversion fails: the report says why
    if config.gguf_adapter or (config.gguf_adapter is None and config.model.endswith(".gguf")):
        try:
            served = write_gguf_adapter(adapter, config.out / "adapter.gguf", architecture_of(Path(config.model)))
        except AdapterError as exc:
            unserved = f"no GGUF adapter written: {exc}"
    merged = None
    if config.merge:
        merged = config.out / "merged"
        trainer.model.merge_and_unload().save_pretrained(str(merged))
        tokenizer.save_pretrained(str(merged))
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    report = {"config": {**asdict(config), "data": str(config.data), "out": str(config.out)},
              "rows": len(dataset), "steps": trainer.state.global_step, "resumed_from": last,
              "seconds": round(seconds, 1), "train_loss": result.training_loss, "losses": losses[-20:],
              "adapter": str(adapter), "gguf_adapter": str(served.path) if served else None,
              **({"gguf_adapter_problem": unserved} if unserved else {}),
              "merged": str(merged) if merged else None,
              **({"reward_problems": reward.problems[:20], "verdicts": _tally(reward)} if reward else {})}
    (config.out / "finetune.json").write_text(json.dumps(report, indent=2, default=str))
    return report


def _precision(config: FinetuneConfig) -> dict[str, bool]:
    """TRL trains in bf16 by default. On a CPU that is emulated unless the CPU has bf16 instructions, and it
    made a LoRA step of the 1.5B model take over 10 minutes on 2 AVX2 cores: train on the CPU in float32,
    with the whole graph kept (no recomputation; a CPU machine has the memory a GPU lacks)."""
    import torch

    if config.cpu or not torch.cuda.is_available():
        return {"bf16": False, "fp16": False, "gradient_checkpointing": False}
    return {}


def _targets(model: Any, last_blocks: int) -> str | list[str]:
    """LoRA's target modules: every linear layer but the output head, or only those of the last
    `last_blocks` transformer blocks (the modules under `layers.N.`, by their full names)."""
    if last_blocks <= 0:
        return "all-linear"
    import torch

    blocks = int(getattr(model.config, "num_hidden_layers", 0))
    first = blocks - last_blocks
    names = [name for name, module in model.named_modules() if isinstance(module, torch.nn.Linear)
             and (found := BLOCK_INDEX.search(name)) and int(found.group(1)) >= first]
    if not names:
        raise FinetuneError("--lora-layers: no linear layer under `layers.N.` in this model; leave it at 0")
    return names


def _tally(reward: KernelReward) -> dict[str, int]:
    counts: dict[str, int] = {}
    for status, _ms in reward.verdicts:
        counts[status] = counts.get(status, 0) + 1
    return counts
