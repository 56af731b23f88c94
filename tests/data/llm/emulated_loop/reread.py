"""Read a round's recorded port answers again with today's fills reader and compile them (NVRTC, no GPU):
how many of the answers that did not compile then (or were refused as fills) compile now. A replay of the
same texts: in a new round the model's later answers would differ.

    python3 tests/data/llm/emulated_loop/reread.py ANSWERS.jsonl
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from kernel_agent.llm.porting import fills_reader
from kernel_agent.skeletons import library
from kernel_agent.task import load_task
from sandbox import compile_many


def main(answers: str) -> None:
    rows = [json.loads(line) for line in Path(answers).read_text().splitlines()]
    port = [r for r in rows if r["role"].startswith("port:")]
    compiled = sum(r["kernel"] is not None and (r.get("emulator") or {}).get("status") != "compile_error" for r in port)
    jobs = []
    for r in port:
        if r["feedback"].startswith("no new answer") or (
                r["kernel"] is not None and (r.get("emulator") or {}).get("status") != "compile_error"):
            continue
        task, skeleton = load_task(f"tasks/naive/{r['task']}.yaml"), library()[r["role"].split(":")[1]]
        _, port_ = fills_reader(skeleton, task, {}, "reread")(r["text"], True)
        if port_ is not None:
            source = port_.instance.source
            jobs.append((r, {"source": source, "entries": re.findall(r"@kagent entry: (\w+)", source),
                             "knobs": {}, "arch": "sm_90"}))
    now = [(r["task"], r["kernel"]) for (r, _), c in zip(jobs, compile_many([j for _, j in jobs])) if c.ok]
    print(f"port answers {len(port)}; compiled when recorded {compiled}; now compiling too: {len(now)} {now}")


if __name__ == "__main__":
    main(sys.argv[1])
