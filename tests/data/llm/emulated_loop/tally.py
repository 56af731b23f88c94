"""Per task and answer kind (port: slot fills; whole: kernel files), from optimize runs measured by
`kagent measure`: answers, answers that became a kernel, kernels that compiled, correct on the CPU
emulator, correct on the GPU, faster than the naive kernel; and repairs that fixed the failure class
they were sent for. `compiled` counts kernels made and compiled; `text_compiles` counts besides every
answer that repeats one that compiled (word for word, or the same kernel up to names: "no new answer",
no kernel made, but its text compiles as the one it repeats did). Faster than torch is not counted here:
`kagent measure` times no library function (its `library_speedup` is empty);
`time_winners.sh` times each correct kernel beside torch.

    python3 tests/data/llm/emulated_loop/tally.py RESULTS_DIR [ANSWERS.jsonl]   (RESULTS_DIR/TASK/RUN/...)

With ANSWERS.jsonl, every model answer is also written there, one line each, with its kernel's verdicts.
"""
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

COLUMNS = ("answers", "kernels", "compiled", "text_compiles", "cpu_correct", "gpu_correct", "faster_naive")
AGAIN = re.compile(r"no new answer: this kernel is (llm\d+) again")  # the kernel a repeat repeats


def first_verdicts(run: Path) -> tuple[dict, dict]:
    """kernel -> the emulator's verdict (compile-only journal) and the GPU's (measured journal)."""
    def read(name):
        path = run / name
        rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
        first = {}
        for row in rows:
            first.setdefault(row["kernel"], row)  # the file as written comes first, knob variants after
        return first
    return read("attempts.compile-only.jsonl") or read("attempts.jsonl"), read("attempts.jsonl")


def answers(results: Path, out: Path) -> None:
    with out.open("w") as sink:
        for run in sorted(p.parent for p in results.glob("*/*/run.json")):
            cpu, gpu = first_verdicts(run)
            measured = (run / "attempts.compile-only.jsonl").exists()
            for line in (run / "trajectory.jsonl").read_text().splitlines():
                call = json.loads(line)
                if call["type"] != "call":
                    continue
                kernel = call.get("kernel")
                c, g = cpu.get(kernel), gpu.get(kernel) if measured else None
                sink.write(json.dumps({
                    "task": run.parent.name, "role": call["role"], "round": call["round"],
                    "temperature": call.get("temperature"), "seconds": call.get("seconds"), "text": call["text"],
                    "feedback": call.get("feedback"), "kernel": kernel,
                    "emulator": c and {"status": c["status"], "message": c["outcome"]["message"]},
                    "gpu": g and {"status": g["status"], "message": g["outcome"]["message"], "speedup": g["speedup"],
                                  "library_speedup": g["outcome"].get("library_speedup")}}) + "\n")


def tally(results: Path) -> None:
    table = defaultdict(lambda: defaultdict(int))
    repairs = defaultdict(lambda: [0, 0])
    port_tasks = {}
    for run in sorted(p.parent for p in results.glob("*/*/run.json")):
        task = run.parent.name
        cpu, gpu = first_verdicts(run)
        measured = (run / "attempts.compile-only.jsonl").exists()
        port_tasks.setdefault(task, False)
        calls = [json.loads(line) for line in (run / "trajectory.jsonl").read_text().splitlines()]
        calls = [c for c in calls if c["type"] == "call"]
        kernel_of_text: dict[str, str] = {}
        for call in calls:
            kind = "port" if call["role"].startswith("port:") else "whole"
            row = table[(task, kind)]
            row["answers"] += 1
            kernel = call.get("kernel")
            if kernel is not None:
                kernel_of_text.setdefault(call["text"], kernel)
            # an answer sent again (word for word, or the same kernel up to names) made no kernel, but its
            # text compiles as the answer it repeats did
            again = AGAIN.match(call.get("feedback") or "")
            same = kernel or (again.group(1) if again else kernel_of_text.get(call["text"]))
            row["text_compiles"] += same is not None and same in cpu and cpu[same]["status"] != "compile_error"
            if kernel is None:
                continue
            row["kernels"] += 1
            c, g = cpu.get(kernel), gpu.get(kernel)
            if c is None:
                continue
            row["compiled"] += c["status"] != "compile_error"
            row["cpu_correct"] += c["status"] == "not_run" and c["outcome"]["message"].startswith("correct at")
            if measured and g is not None and g["status"] == "ok":
                row["gpu_correct"] += 1
                row["faster_naive"] += (g["speedup"] or 0) > 1
                port_tasks[task] |= kind == "port"
        for call in calls:  # a repair fixed its failure when its kernel's class is not its parent's
            kernel = call.get("kernel")
            if not call["round"] or kernel not in cpu or not cpu[kernel]["parent"]:
                continue
            parent = cpu.get(cpu[kernel]["parent"][0])
            counts = repairs["port" if call["role"].startswith("port:") else "whole"]
            counts[0] += 1
            counts[1] += parent is not None and cpu[kernel]["status"] != parent["status"]
    for kind in ("port", "whole"):
        print(f"\n### {kind} answers\n| task | " + " | ".join(COLUMNS) + " |\n|---|" + "---|" * len(COLUMNS))
        total = defaultdict(int)
        for (task, k), row in sorted(table.items()):
            if k == kind:
                print(f"| {task} | " + " | ".join(str(row[c]) for c in COLUMNS) + " |")
                for c in COLUMNS:
                    total[c] += row[c]
        print("| **all** | " + " | ".join(str(total[c]) for c in COLUMNS) + " |")
    for kind, (made, fixed) in repairs.items():
        print(f"\n{kind} repairs that became a kernel: {made}; of them out of their failure's class: {fixed}")
    print(f"\ntasks with a ported kernel correct on the GPU: {sum(port_tasks.values())} of {len(port_tasks)}: "
          + ", ".join(t for t, ok in sorted(port_tasks.items()) if ok))


if __name__ == "__main__":
    tally(Path(sys.argv[1]))
    if len(sys.argv) > 2:
        answers(Path(sys.argv[1]), Path(sys.argv[2]))
