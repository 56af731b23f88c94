"""A PEFT LoRA adapter written as a GGUF adapter file (`kernel_agent/train/gguf_adapter.py`): the names llama.cpp
looks up, the keys it reads, and weights that, applied the way llama.cpp applies them (W + alpha / r · B A),
give the model PEFT's own merge gives. Needs the train extra; skipped where it is not installed (CI
installs it). That llama.cpp itself loads such a file is shown on the real model in the closing note of the
fine-tuning experiment (llama-cpp-python's server, --lora_path)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from kernel_agent.cli import app
from kernel_agent.train.gguf_adapter import AdapterError, architecture_of, write_gguf_adapter

gguf = pytest.importorskip("gguf")
peft = pytest.importorskip("peft")
from tests.train.tiny_model import build  # (imports transformers)

RANK, ALPHA = 4, 8
PROJECTIONS = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}


@pytest.fixture(scope="module")
def adapted(tmp_path_factory) -> tuple[Path, Path, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """A tiny Qwen2 model, a LoRA adapter on all its linear layers with random (not zero) weights, and the
    base and merged weights by their transformers names."""
    import torch
    from transformers import AutoModelForCausalLM

    root = tmp_path_factory.mktemp("adapter")
    base = build(root / "tiny", ["kernel", "slot", "fill"] * 4)
    model = AutoModelForCausalLM.from_pretrained(base)
    before = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    torch.manual_seed(0)
    lora = peft.LoraConfig(r=RANK, lora_alpha=ALPHA, target_modules="all-linear", init_lora_weights=False)
    tuned = peft.get_peft_model(model, lora)
    tuned.save_pretrained(root / "adapter")
    merged = {k: v.detach().numpy() for k, v in tuned.merge_and_unload().state_dict().items()}
    return base, root / "adapter", before, merged


def test_the_gguf_adapter_holds_what_llama_cpp_reads_and_applies_as_peft_merges(adapted, tmp_path):
    base, adapter, before, merged = adapted
    assert architecture_of(base) == "qwen2"
    written = write_gguf_adapter(adapter, tmp_path / "a.gguf", "qwen2")
    assert (written.rank, written.alpha, written.pairs) == (RANK, ALPHA, 2 * len(PROJECTIONS))

    reader = gguf.GGUFReader(str(tmp_path / "a.gguf"))
    keys = {name: reader.get_field(name).contents() for name in
            ("general.architecture", "general.type", "adapter.type", "adapter.lora.alpha")}
    assert keys == {"general.architecture": "qwen2", "general.type": "adapter", "adapter.type": "lora",
                    "adapter.lora.alpha": ALPHA}
    tensors = {t.name: np.array(t.data) for t in reader.tensors}
    assert set(tensors) == {f"blk.{block}.{proj}.weight.lora_{half}" for block in (0, 1) for proj in PROJECTIONS
                            for half in "ab"}

    hf = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
          "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
          "ffn_down": "mlp.down_proj"}
    for block in (0, 1):
        for proj, module in hf.items():
            a = tensors[f"blk.{block}.{proj}.weight.lora_a"]
            b = tensors[f"blk.{block}.{proj}.weight.lora_b"]
            name = f"model.layers.{block}.{module}.weight"
            assert a.shape == (RANK, before[name].shape[1]) and b.shape == (before[name].shape[0], RANK)
            delta = merged[name] - before[name]
            assert np.abs(delta).max() > 1e-3  # the adapter changes this weight
            np.testing.assert_allclose(before[name] + ALPHA / RANK * b @ a, merged[name], rtol=1e-5, atol=1e-5)


def test_the_command_converts_and_bad_input_is_told(adapted, tmp_path):
    base, adapter, _, _ = adapted
    result = CliRunner().invoke(app, ["adapter-gguf", str(adapter), "--base", str(base), "-o", str(tmp_path / "x.gguf")])
    assert result.exit_code == 0, result.output
    assert f"14 adapted weights, rank {RANK}, alpha {ALPHA}, for qwen2" in " ".join(result.output.split())
    assert (tmp_path / "x.gguf").is_file()

    missing = CliRunner().invoke(app, ["adapter-gguf", str(tmp_path), "--base", str(base)])
    assert missing.exit_code == 2 and "adapter_config.json: missing" in " ".join(missing.output.split())
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps({"model_type": "not-a-model"}))
    with pytest.raises(AdapterError, match="not a llama.cpp architecture"):
        architecture_of(tmp_path / "m")
    with pytest.raises(AdapterError, match="unknown llama.cpp architecture"):
        write_gguf_adapter(adapter, tmp_path / "y.gguf", "nonesuch")


def test_an_adapter_with_trained_embeddings_is_refused(adapted, tmp_path):
    from safetensors.numpy import load_file, save_file

    _, adapter, _, _ = adapted
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "adapter_config.json").write_text((adapter / "adapter_config.json").read_text())
    weights = load_file(str(adapter / "adapter_model.safetensors"))
    weights["base_model.model.model.embed_tokens.weight"] = np.zeros((4, 4), np.float32)
    save_file(weights, str(odd / "adapter_model.safetensors"))
    with pytest.raises(AdapterError, match="embed_tokens.weight is not a LoRA weight"):
        write_gguf_adapter(odd, tmp_path / "z.gguf", "qwen2")
