"""Port answers' compile shares from ANSWERS.jsonl files written by tally.py: every answer counted once;
a refused repeat ("no new answer") counted as the answer it repeats; distinct answers only (repeats out
of both counts).

With --asks, also by kind of ask: a skeleton's first ask, a fresh sample, or a re-ask after the answer
before it (same task and skeleton, itself no re-ask) was refused or no new answer. Only for rounds before
3b22737, which re-asked a small model's unused port answers; later rounds have no port re-asks, and
there this reading would take a fresh sample after a refused one for a re-ask.

    python3 tests/data/llm/emulated_loop/shares.py [--asks] ANSWERS.jsonl...
"""
import json
import sys
from collections import Counter
from pathlib import Path

from tally import AGAIN


def compiled(row: dict) -> bool:
    status = (row.get("emulator") or {}).get("status")
    return status is not None and status != "compile_error"


def ask_kind(row: dict, last: tuple[str, str, bool] | None) -> str:
    """`last`: the answer before it of the same task (its skeleton, its feedback, whether it was a re-ask)."""
    if last and last[0] == row["role"] and last[1] and not last[2]:
        return "re-ask after no new answer" if last[1].startswith("no new answer") else "re-ask after a refused fill"
    return "first ask" if row["temperature"] is None else "fresh sample"


def main(paths: list[str], asks: bool) -> None:
    kinds, kinds_compiled = Counter(), Counter()
    strict = counting = repeats = total = 0
    for path in paths:
        rows = [json.loads(line) for line in Path(path).read_text().splitlines()]
        ports = [r for r in rows if r["role"].startswith("port:") and r["round"] == 0]
        before: dict[str, tuple[str, str, bool]] = {}
        for i, row in enumerate(ports):
            feedback = row["feedback"] or ""
            total += 1
            strict += compiled(row)
            if feedback.startswith("no new answer"):
                repeats += 1
                again = AGAIN.search(feedback)
                earlier = [e for e in ports[:i] if e["task"] == row["task"]]
                source = next((e for e in earlier if (e["kernel"] == again.group(1) if again
                                                      else e["text"].strip() == row["text"].strip())), None)
                counting += bool(source and compiled(source))
            else:
                counting += compiled(row)
            kind = ask_kind(row, before.get(row["task"]))
            kinds[kind] += 1
            kinds_compiled[kind] += compiled(row)
            before[row["task"]] = (row["role"], feedback, kind.startswith("re-ask"))
    print(f"port answers {total}: compiled {strict} ({strict / total:.0%}); counting a repeat as what it repeats "
          f"{counting} ({counting / total:.0%}); distinct {strict} of {total - repeats} "
          f"({strict / (total - repeats):.0%}); repeats {repeats}")
    for kind, n in kinds.most_common() if asks else ():
        print(f"  {kind}: {n} answers, {kinds_compiled[kind]} compiled ({kinds_compiled[kind] / n:.0%})")


if __name__ == "__main__":
    main([a for a in sys.argv[1:] if a != "--asks"], "--asks" in sys.argv[1:])
