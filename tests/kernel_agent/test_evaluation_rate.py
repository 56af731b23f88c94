"""The evaluation-rate benchmark's bookkeeping, with stand-in source trees (no GPU): each tree's own
code runs, its attempts are counted from its journal, and the ratio is after over before."""

import textwrap
from pathlib import Path

import pytest

from kernel_agent.bench import evaluation_rate

FAKE_MAIN = """
import json, sys, time
from pathlib import Path
out = Path(sys.argv[sys.argv.index("--out") + 1]) / "task" / "run"
out.mkdir(parents=True)
seconds = {seconds}
with open(out / "attempts.jsonl", "w") as f:
    for i in range(int(sys.argv[sys.argv.index("--budget") + 1])):
        outcome = {{"status": "ok" if i else "compile_error", "speedup": 2.0 + i, "timing": {{"repetitions": 10 + i}}}}
        f.write(json.dumps({{"seconds": seconds, "outcome": outcome}}) + "\\n")
print(" ".join(sys.argv[1:]))
"""


def fake_tree(root: Path, seconds: float) -> Path:
    (root / "kernel_agent").mkdir(parents=True)
    (root / "kernel_agent" / "__main__.py").write_text(textwrap.dedent(FAKE_MAIN.format(seconds=seconds)))
    return root


def test_each_tree_runs_its_own_code_and_the_ratio_is_after_over_before(tmp_path, capsys):
    before, after = fake_tree(tmp_path / "before", 1.5), fake_tree(tmp_path / "after", 0.5)
    evaluation_rate.main(["--before", str(before), "--after", str(after), "--budget", "6", "--runs", "2",
                          "--out", str(tmp_path / "out"), "--after-args", "--precision 0.01"])
    printed = capsys.readouterr().out
    assert "in evaluate: 120.0 vs 40.0 per minute = 3.00x" in printed
    report = (tmp_path / "out" / "evaluation_rate.md").read_text()
    assert report.count("| before | 6 | 9.0 | 40.0 |") == 2 and report.count("| after | 6 | 3.0 | 120.0 |") == 2
    assert report.count("| 13 | 7.00x |") == 4  # the median repetitions; the best speedup of an ok attempt
    assert "--precision 0.01" in (tmp_path / "out" / "after-0" / "command.log").read_text()
    assert "--precision" not in (tmp_path / "out" / "before-1" / "command.log").read_text()


def test_a_tree_that_is_not_kagent_is_refused(tmp_path):
    with pytest.raises(SystemExit):
        evaluation_rate.main(["--before", str(tmp_path), "--out", str(tmp_path / "out")])


def test_a_failing_search_names_its_log(tmp_path):
    broken = tmp_path / "broken"
    (broken / "kernel_agent").mkdir(parents=True)
    (broken / "kernel_agent" / "__main__.py").write_text("raise SystemExit(3)\n")
    with pytest.raises(SystemExit, match=r"command\.log"):
        evaluation_rate.main(["--before", str(broken), "--after", str(broken), "--runs", "1",
                              "--out", str(tmp_path / "out")])
