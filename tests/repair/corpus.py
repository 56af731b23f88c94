"""The project's repair corpus (tests/data/repair), read by the CPU test here and the GPU test in
tests/gpu through kernel_agent.repair.corpus."""

from __future__ import annotations

from pathlib import Path

from kernel_agent.repair import corpus
from kernel_agent.repair.corpus import Entry
from tests.paths import ROOT

CORPUS = ROOT / "tests" / "data" / "repair"


def read_entry(path: Path) -> Entry:
    return corpus.read_entry(path, ROOT)


def corpus_files() -> list[Path]:
    return corpus.corpus_files(CORPUS)
