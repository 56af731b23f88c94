"""A PEFT LoRA adapter written as a GGUF adapter file, which llama.cpp applies on top of a GGUF base model
(`llama-server -m BASE.gguf --lora FILE`, or llama-cpp-python's server `--lora_path FILE`). Quantised bases
take it too: llama.cpp adds the low-rank product at run time instead of folding it into the weights.

The file holds, per adapted weight `blk.N.NAME.weight`, the tensors `….lora_a` (rank × inputs) and
`….lora_b` (outputs × rank) as PEFT keeps them, and the keys `general.type = adapter`,
`adapter.type = lora`, `adapter.lora.alpha` (llama.cpp scales by alpha / rank, as PEFT does).
Needs the `gguf` and `safetensors` packages (the train extra).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ADAPTER_WEIGHTS = "adapter_model.safetensors"
ADAPTER_CONFIG = "adapter_config.json"
_PEFT_KEY = re.compile(r"^(?:base_model\.model\.)?(?P<module>.+)\.lora_(?P<half>[AB])(?:\.default)?\.weight$")
BLOCK_INDEX = re.compile(r"\.layers\.(\d+)\.")  # a transformer block's index in a module name


class AdapterError(RuntimeError):
    """An adapter folder or base model that cannot be converted: the message says why."""


@dataclass(frozen=True)
class GgufAdapter:
    path: Path
    architecture: str
    rank: int
    alpha: float
    pairs: int  # adapted weights (each a lora_a and a lora_b tensor)


def architecture_of(base: Path) -> str:
    """The llama.cpp architecture name of a base model: a GGUF file's `general.architecture`, or a model
    folder's `config.json` `model_type` where llama.cpp names the architecture the same way."""
    gguf = _gguf()
    if base.suffix == ".gguf":
        if not base.is_file():
            raise AdapterError(f"{base}: no such GGUF file")
        field = gguf.GGUFReader(str(base)).get_field(gguf.Keys.General.ARCHITECTURE)
        if field is None:
            raise AdapterError(f"{base}: no general.architecture key; is it a GGUF model?")
        return str(field.contents())
    config = base / "config.json"
    if not config.is_file():
        raise AdapterError(f"{base}: neither a .gguf file nor a model folder with config.json")
    model_type = str(json.loads(config.read_text(encoding="utf-8")).get("model_type", ""))
    if model_type not in gguf.MODEL_ARCH_NAMES.values():
        raise AdapterError(f"{base}: model_type {model_type!r} is not a llama.cpp architecture name; "
                           "give the base model's .gguf file instead")
    return model_type


def write_gguf_adapter(adapter: Path, out: Path, architecture: str) -> GgufAdapter:
    """Convert the PEFT adapter folder `adapter` (adapter_config.json, adapter_model.safetensors) to `out`."""
    gguf = _gguf()
    from safetensors.numpy import load_file

    config_path, weights_path = adapter / ADAPTER_CONFIG, adapter / ADAPTER_WEIGHTS
    for path in (config_path, weights_path):
        if not path.is_file():
            raise AdapterError(f"{path}: missing (give the adapter folder `kagent finetune` wrote, OUT/adapter)")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    if str(config.get("peft_type", "LORA")).upper() != "LORA":
        raise AdapterError(f"{adapter}: a {config.get('peft_type')} adapter; only LoRA converts to a GGUF adapter")
    arch = {name: key for key, name in gguf.MODEL_ARCH_NAMES.items()}.get(architecture)
    if arch is None:
        raise AdapterError(f"unknown llama.cpp architecture {architecture!r}")
    weights = load_file(str(weights_path))
    halves = _paired(weights, adapter)
    blocks = 1 + max((int(m.group(1)) for m in map(BLOCK_INDEX.search, halves) if m), default=0)
    names = gguf.get_tensor_name_map(arch, blocks)
    rank, alpha = int(config["r"]), float(config["lora_alpha"])
    writer = gguf.GGUFWriter(str(out), architecture)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, alpha)
    for module, (a, b) in sorted(halves.items()):
        name = names.get_name(f"{module}.weight", try_suffixes=(".weight",))
        if name is None:
            raise AdapterError(f"{module}: no {architecture} tensor of llama.cpp matches this adapted weight")
        if a.shape[0] != rank or b.shape[1] != rank:
            raise AdapterError(f"{module}: lora_A {a.shape} and lora_B {b.shape} do not have rank {rank}")
        writer.add_tensor(f"{name}.lora_a", a.astype("float32"))
        writer.add_tensor(f"{name}.lora_b", b.astype("float32"))
    out.parent.mkdir(parents=True, exist_ok=True)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return GgufAdapter(out, architecture, rank, alpha, len(halves))


def _paired(weights: dict[str, Any], adapter: Path) -> dict[str, tuple[Any, Any]]:
    """module name (as the base model names it) -> (lora_A, lora_B)."""
    found: dict[str, dict[str, Any]] = {}
    for key, value in weights.items():
        match = _PEFT_KEY.match(key)
        if match is None:
            raise AdapterError(f"{adapter}: {key} is not a LoRA weight (an adapter with saved embeddings or "
                               "other trained modules cannot be served as a llama.cpp LoRA)")
        found.setdefault(match["module"], {})[match["half"]] = value
    unpaired = [module for module, halves in found.items() if set(halves) != {"A", "B"}]
    if unpaired:
        raise AdapterError(f"{adapter}: {', '.join(sorted(unpaired)[:3])} lack a lora_A or lora_B weight")
    if not found:
        raise AdapterError(f"{adapter}: no LoRA weights in {ADAPTER_WEIGHTS}")
    return {module: (halves["A"], halves["B"]) for module, halves in found.items()}


def _gguf() -> Any:
    try:
        import gguf
    except ImportError:
        raise AdapterError("writing a GGUF adapter needs the gguf package (pip install 'kagent[train]')") from None
    return gguf
