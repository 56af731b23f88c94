"""A fake OpenAI-compatible endpoint that answers each prompt with the fixture kernel of the task the
prompt names ("## Task: NAME"): the "fixture-served model" of `kagent bench` over many tasks, e.g. the
imported KernelBench problems with the kernels in tests/data/kernelbench_kernels. A prompt for a task
without a fixture gets an answer with no kernel in it.

    python3 -m tests.llm.routing_server tests/data/kernelbench_kernels --port 8777
"""

from __future__ import annotations

import argparse
import re
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.llm.fake_server import FakeOpenAI, Step, answer

TASK = re.compile(r"^## Task: (\S+)", re.MULTILINE)


class RoutingOpenAI(FakeOpenAI):
    def __init__(self, kernels: dict[str, str]):
        super().__init__([answer("unused")], models=("fixture",))
        self.kernels = kernels

    def record(self, handler: BaseHTTPRequestHandler, body: Any) -> Step | None:
        step = super().record(handler, body)
        if step is None:
            return None
        messages = body.get("messages", []) if isinstance(body, dict) else []
        found = TASK.search("\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict)))
        kernel = self.kernels.get(found.group(1)) if found else None
        if kernel is None:
            return answer("I have no kernel for this task.")
        return answer(f"```cuda\n{kernel}```")


def kernels_in(folder: Path) -> dict[str, str]:
    return {path.stem: path.read_text(encoding="utf-8") for path in sorted(folder.glob("*.cu"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="TASK.cu files")
    parser.add_argument("--port", type=int, default=8777)
    args = parser.parse_args()
    server = RoutingOpenAI(kernels_in(args.folder))
    server.start(port=args.port)
    print(f"serving {len(server.kernels)} fixture kernels at {server.base_url}", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
