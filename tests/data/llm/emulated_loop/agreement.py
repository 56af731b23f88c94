"""Do the CPU emulator's verdicts hold on a GPU? For every model kernel of the given optimize runs whose
verdict came from the emulator (a failure, or correct there and so `not_run`), check the same file with
the same knobs on the GPU and print both classes; a JSON line per kernel goes to OUT.

    python3 tests/data/llm/emulated_loop/agreement.py OUT.jsonl RUN_DIR...
"""
import json
import sys
from pathlib import Path

from kernel_agent.check import check
from kernel_agent.task import load_task
from sandbox import GpuWorker, Settings


def main() -> None:
    out, runs = Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]
    with GpuWorker(0) as worker, out.open("a") as sink:
        for run in runs:
            config = json.loads((run / "run.json").read_text())
            task = load_task(Path(config["task_file"]))
            journal = run / "attempts.compile-only.jsonl"
            if not journal.exists():
                journal = run / "attempts.jsonl"
            for line in journal.read_text().splitlines():
                a = json.loads(line)
                if not a["kernel"].startswith("llm") or ("(CPU emulator)" not in a["outcome"]["message"] \
                        and not a["outcome"]["message"].startswith("correct at")):
                    continue
                path = run / "llm_kernels" / f"{a['kernel']}.cu"
                gpu = check(task, path, dict(a["knobs"]), worker=worker, settings=Settings(budget_ms=20, time_it=False))
                row = {"task": task.name, "run": run.name, "kernel": a["kernel"], "emulator": a["status"],
                       "gpu": gpu.status.value, "emulator_message": a["outcome"]["message"][:200],
                       "gpu_message": gpu.message[:200]}
                sink.write(json.dumps(row) + "\n")
                print(f"{task.name} {a['kernel']}: emulator {a['status']} / gpu {gpu.status.value}", flush=True)


if __name__ == "__main__":  # the GPU worker is a spawned process: it imports this file
    main()
