"""Paths the tests share."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "tests" / "kernels"
LAYERNORM = ROOT / "tasks" / "level1" / "layernorm.yaml"
