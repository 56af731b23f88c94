"""What an imported task's `reference.py` calls: the KernelBench problem's PyTorch model run on given
values, on the CPU as the reference (NumPy in and out) or on the GPU as torch eager (the library
baseline). The model is built at the size the sandbox hands over (its dims), and its parameters are
replaced by the task's inputs of the same names, so that a kernel and the model see the same weights."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .problem import load, rewritten


@dataclass
class Runner:
    problem: Path  # the problem file, copied beside the task
    inputs: list[tuple[str, str]]  # (task name, "tensor" or "scalar") in get_inputs order
    params: dict[str, str]  # task name: the model's dotted parameter name
    sizes: list[str]  # the size constants, passed as the task's dims
    _models: dict[Any, Any] = field(default_factory=dict, repr=False)

    def model(self, values: dict[str, Any], device: str) -> Any:
        import torch

        setting = {name: int(values[name]) for name in self.sizes}
        key = (device, tuple(sorted(setting.items())))
        if key not in self._models:
            module = load(rewritten(self.problem.read_text(encoding="utf-8"), setting), str(self.problem))
            torch.manual_seed(0)
            with torch.device(device):
                self._models = {key: module.Model(*module.get_init_inputs()).eval()}  # one size at a time
        return self._models[key]

    def run(self, values: dict[str, Any], device: str) -> Any:
        import torch

        model = self.model(values, device)
        named = {**dict(model.named_parameters()), **dict(model.named_buffers())}
        for task_name, dotted in self.params.items():
            named[dotted].data = _tensor(values[task_name], device).reshape(named[dotted].shape)
        args = [_tensor(values[name], device) if kind == "tensor" else values[name] for name, kind in self.inputs]
        with torch.no_grad():
            return model(*args)

    def reference(self, values: dict[str, Any]) -> Any:
        """On the CPU, NumPy arrays in and out (a tuple for several outputs)."""
        result = self.run(values, "cpu")
        if isinstance(result, (tuple, list)):
            return tuple(r.numpy() for r in result)
        return result.numpy()

    def library(self, values: dict[str, Any]) -> Any:
        """Torch eager on the GPU, on the very tensors the kernel read."""
        return self.run(values, "cuda")


def _tensor(value: Any, device: str) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    return torch.from_numpy(value).to(device)
