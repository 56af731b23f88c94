"""Per-task verdicts of two bench folders side by side (lanes vs --ray), and wall times."""
import json
import sys
from pathlib import Path


def load(folder):
    (results,) = Path(folder).glob("*/results.json")
    return json.loads(results.read_text())


a, b = load(sys.argv[1]), load(sys.argv[2])
ta, tb = ({t["task"]: t for t in r["tasks"]} for r in (a, b))
same = 0
for name in sorted(set(ta) | set(tb)):
    x, y = ta.get(name, {}), tb.get(name, {})
    keys = ("status", "kernel")
    agree = all(x.get(k) == y.get(k) for k in keys)
    same += agree
    ratio = (x.get("time_ms") or 0) / (y.get("time_ms") or 1)
    print(f"{name:16} {x.get('status')}/{y.get('status')} {x.get('kernel')}/{y.get('kernel')} "
          f"{x.get('time_ms')}/{y.get('time_ms')} ms (ratio {ratio:.3f}) wall {x.get('wall_s')}/{y.get('wall_s')} s"
          f"{'' if agree else '  DIFFERENT'}")
print(f"same verdict and kernel: {same} of {len(set(ta) | set(tb))}")
print("infrastructure errors:", a.get("infrastructure_errors"), b.get("infrastructure_errors"))
