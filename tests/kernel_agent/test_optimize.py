"""`kagent optimize` end to end on replayed H200 sweeps (no GPU): outputs, determinism, resume,
bad input; and the parts it is made of: rewards, failure rules, policies, generic edits."""

from __future__ import annotations

import json
import random
import sqlite3

import pytest
from typer.testing import CliRunner

from kernel_agent.cli import app
from kernel_agent.optimize.generic import GENERIC, apply_generic
from kernel_agent.optimize.knowledge import KnowledgeBase
from kernel_agent.optimize.loop import RunConfig, search
from kernel_agent.optimize.policy import PolicyBook
from kernel_agent.optimize.rewards import rank_rewards
from kernel_agent.optimize.space import Space
from kernel_agent.optimize.store import Journal, Store
from kernel_agent.optimize.strategies import STRATEGIES, make_strategy
from kernel_agent.seams import Candidate
from kernel_agent.task import discover, load_task
from kernel_agent.validate import validate_task  # noqa: F401 (import check: no cycles)
from sandbox import Outcome, Status, Timing
from tests.paths import LAYERNORM, ROOT

runner = CliRunner()
from kernel_agent.recording import RECORDINGS as RECORDED  # noqa: E402


def kagent(*args):
    return runner.invoke(app, [str(a) for a in args])


def attempts_of(run_dir):
    return [json.loads(line) for line in (run_dir / "attempts.jsonl").read_text().splitlines()]


def only_run(out, task="layernorm"):
    (run_dir,) = (out / task).iterdir()
    return run_dir


def test_replay_run_writes_every_output_and_says_it_is_replayed(tmp_path):
    result = kagent("optimize", LAYERNORM, "--budget", 12, "--out", tmp_path, "--executor", "replay")
    assert result.exit_code == 0, result.output
    assert "replay" in result.output and "best:" in result.output
    run_dir = only_run(tmp_path)
    for name in ("best.cu", "report.md", "progress.png", "attempts.jsonl", "run.json"):
        assert (run_dir / name).is_file(), name
    report = (run_dir / "report.md").read_text()
    assert "Replayed timings" in report and "Credit by specialist" in report and "Failures by class" in report
    rows = attempts_of(run_dir)
    assert [r["number"] for r in rows] == list(range(1, 13))
    assert len({(r["kernel"], json.dumps(r["knobs"], sort_keys=True)) for r in rows}) == 12  # nothing twice
    best = min((r for r in rows if r["median_ms"]), key=lambda r: r["median_ms"])
    assert f"{best['median_ms']:.4f} ms" in report
    # best.cu is a self-contained kernel: its defaults are the winning knob values
    from sandbox import load_kernel

    kernel = load_kernel(run_dir / "best.cu")
    assert kernel.knobs == best["knobs"]
    with sqlite3.connect(tmp_path / "kagent.sqlite") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == 12
    assert (tmp_path / "policies" / "sm_90" / "rowwise.json").is_file()


def test_without_a_gpu_auto_falls_back_to_replay_and_gpu_is_refused(tmp_path):
    from tests.conftest import GPU

    if GPU:
        pytest.skip("this machine has a GPU")
    result = kagent("optimize", LAYERNORM, "--budget", 3, "--out", tmp_path)
    assert result.exit_code == 0 and "no CUDA GPU found: replaying" in result.output
    result = kagent("optimize", LAYERNORM, "--executor", "gpu", "--out", tmp_path)
    assert result.exit_code == 3 and "no CUDA GPU" in result.output


def _run(tmp_path, strategy, seed, budget=20, name="run", on_batch=None):
    task = load_task(LAYERNORM)
    space = Space.of_task(task, generic=False)
    from kernel_agent.optimize.executors import ReplayExecutor

    executor = ReplayExecutor(task, space, RECORDED / "layernorm.json")
    config = RunConfig(run_id=name, task_file=str(LAYERNORM), task=task.name, family="rowwise", arch="sm_90",
                       strategy=strategy, seed=seed, budget=budget, executor="replay", warm_start=False,
                       generic=False)
    run_dir = tmp_path / name
    run_dir.mkdir(exist_ok=True)
    store = Store(tmp_path / "store.sqlite")
    try:
        return search(config, space, executor, make_strategy(strategy), run_dir, store, on_batch), run_dir
    finally:
        store.close()


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_is_deterministic_for_a_seed_and_never_repeats(tmp_path, strategy):
    first, _ = _run(tmp_path, strategy, seed=3, name="a")
    second, _ = _run(tmp_path, strategy, seed=3, name="b")
    sequence = [a.candidate for a in first.state.attempts]
    assert sequence == [a.candidate for a in second.state.attempts]
    assert len(set(sequence)) == len(sequence) == 20
    assert first.best.ms < first.baseline.timing.median_ms / 10  # every strategy finds rowblock
    other, _ = _run(tmp_path, strategy, seed=4, name="c")
    if strategy != "exhaustive":
        assert [a.candidate for a in other.state.attempts] != sequence


def test_an_interrupted_run_resumes_to_the_same_result(tmp_path):
    whole, _ = _run(tmp_path, "agent", seed=1, budget=24, name="whole")
    batches = []

    def interrupt(state, batch):
        batches.append(batch)
        if len(batches) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, "agent", seed=1, budget=24, name="cut", on_batch=interrupt)
    run_dir = tmp_path / "cut"
    kept = attempts_of(run_dir)
    assert 1 < len(kept) < 24
    with (run_dir / "attempts.jsonl").open("a") as f:
        f.write('{"number": 99, "kernel": "rowbl')  # the line a crash cut short
    resumed, _ = _run(tmp_path, "agent", seed=1, budget=24, name="cut")
    assert resumed.resumed_attempts == len(kept) and resumed.evaluated == 24 - len(kept)
    assert [a.candidate for a in resumed.state.attempts] == [a.candidate for a in whole.state.attempts]
    assert [r["number"] for r in attempts_of(run_dir)] == list(range(1, 25))


def test_resume_from_the_command_line_extends_the_budget(tmp_path):
    assert kagent("optimize", LAYERNORM, "--budget", 6, "--out", tmp_path, "--executor", "replay").exit_code == 0
    run_dir = only_run(tmp_path)
    result = kagent("optimize", "--resume", run_dir.name, "--out", tmp_path, "--budget", 10)
    assert result.exit_code == 0, result.output
    assert "resuming" in result.output
    assert len(attempts_of(run_dir)) == 10
    assert "6 from an earlier part of this run" in (run_dir / "report.md").read_text()


@pytest.mark.parametrize("args, code, words", [
    (["tasks/nope.yaml"], 2, "nope.yaml"),
    ([LAYERNORM, "--budget", "0"], 2, "greater than or equal to 1"),
    ([LAYERNORM, "--strategy", "annealing"], 2, "unknown strategy"),
    ([LAYERNORM, "--executor", "replay", "--fix", "BLOCK=333"], 2, "not one of its values"),
    ([LAYERNORM, "--executor", "replay", "--fix", "NOPE=1"], 2, "no kernel of the task has a knob"),
    ([LAYERNORM, "--executor", "replay", "--recording", "missing.json"], 3, "no recorded sweep"),
    (["--resume", "no-such-run"], 2, "no run folder"),
    ([], 2, "give a task file"),
])
def test_bad_input_gets_a_message_and_an_exit_code(tmp_path, args, code, words):
    result = kagent("optimize", *args, "--out", tmp_path)
    assert result.exit_code == code, result.output
    assert words in result.output and "Traceback" not in result.output


def test_unwritable_out_and_a_kernel_without_entry_are_refused(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = kagent("optimize", LAYERNORM, "--executor", "replay", "--out", blocker / "sub")
    assert result.exit_code == 2 and "cannot write" in result.output
    task_dir = tmp_path / "task"
    task_dir.mkdir()
    text = LAYERNORM.read_text().replace("layernorm/", str(LAYERNORM.parent / "layernorm") + "/")
    text = text.replace(str(LAYERNORM.parent / "layernorm/rowblock.cu"), "broken.cu")
    (task_dir / "t.yaml").write_text(text)
    (task_dir / "broken.cu").write_text("__global__ void k(float* y) {}\n")
    result = kagent("optimize", task_dir / "t.yaml", "--executor", "replay", "--out", tmp_path / "o")
    assert result.exit_code == 2 and "no '// @kagent entry" in result.output


def test_fix_pins_a_knob_for_the_whole_run(tmp_path):
    result = kagent("optimize", LAYERNORM, "--executor", "replay", "--budget", 8, "--fix", "VEC=2", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    rows = [r for r in attempts_of(only_run(tmp_path)) if r["kernel"] == "rowblock"]
    assert rows and all(r["knobs"]["VEC"] == "2" for r in rows)


def _outcome(status, ms=None):
    timing = Timing(median_ms=ms, p10_ms=ms, p90_ms=ms, min_ms=ms, max_ms=ms, repetitions=3) if ms else None
    return Outcome(status=status, timing=timing)


def test_rank_rewards_order_by_time_and_put_failures_lowest():
    outs = [_outcome(Status.ok, 2.0), _outcome(Status.ok, 1.0), _outcome(Status.wrong_result),
            _outcome(Status.resource_error), _outcome(Status.ok, 3.0)]
    rewards = rank_rewards(outs, best_before_ms=1.5)
    assert rewards[1] > rewards[0] > rewards[4] > rewards[3] > rewards[2]
    assert rewards[1] == pytest.approx(1.25)  # fastest + new-best bonus
    assert rank_rewards([_outcome(Status.ok, 2.0)], best_before_ms=1.0) == [1.0]


def test_failure_rules_need_two_failures_and_no_success_and_prune():
    kb = KnowledgeBase()
    c = lambda block, vec: Candidate.make("k", {"BLOCK": block, "VEC": vec})  # noqa: E731
    kb.observe(c("1024", "1"), Status.resource_error)
    assert kb.rules == []
    kb.observe(c("1024", "2"), Status.resource_error)
    assert [r.text() for r in kb.rules] == ["k: BLOCK=1024 -> resource_error (2 failures, no success)"]
    assert kb.blocking_rule(c("1024", "4")) is not None and kb.blocking_rule(c("256", "4")) is None
    kb.observe(c("1024", "4"), Status.ok)  # a success removes the rule
    assert kb.rules == []  # no value or pair has two failures and no success any more
    kb.observe(c("512", "8"), Status.wrong_result)
    kb.observe(c("256", "8"), Status.wrong_result)
    assert any(r.conditions == (("VEC", "8"),) and r.status is Status.wrong_result for r in kb.rules)


def test_one_knowledge_base_holds_knob_rules_and_compile_rules():
    kb = KnowledgeBase()
    log = 'k.cu(3): error: identifier "uint32_t" is undefined'
    for vec in ("1", "2"):
        kb.learn_from(Candidate.make("k", {"VEC": vec, "BLOCK": "64"}), Status.compile_error, log)
    kb.learn_from(Candidate.make("llm1", {}), Status.compile_error, log, knobs=False)  # another run's LLM kernel
    assert [r.text() for r in kb.rules] == ["k: any knob values -> compile_error (2 failures, no success)"]
    (text, hits), = kb.compile_rules.items()
    assert "uint32_t" in text and hits == 3
    assert kb.as_dont() == [f"{kb.rules[0].as_dont()} (pruned 0 proposals)", f"{text} (hit 3 times)"]


class _FailingReplay:
    """A replay executor in which every VEC=1 candidate fails: the agent must learn it and prune."""

    name = "replay"

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, item):
        return getattr(self.inner, item)

    def evaluate(self, candidates):
        out = []
        for c, (o, s) in zip(candidates, self.inner.evaluate(candidates)):
            if c.values.get("VEC") == "1":
                o = Outcome(status=Status.resource_error, message="too many registers (test)")
            out.append((o, s))
        return out


def test_the_agent_learns_a_failure_rule_and_stops_proposing_it(tmp_path):
    from kernel_agent.optimize.executors import ReplayExecutor

    task = load_task(LAYERNORM)
    space = Space.of_task(task, generic=False)
    executor = _FailingReplay(ReplayExecutor(task, space, RECORDED / "layernorm.json"))
    config = RunConfig(run_id="r", task_file=str(LAYERNORM), task=task.name, family="rowwise", arch="sm_90",
                       strategy="agent", seed=0, budget=30, executor="replay", warm_start=False, generic=False)
    (tmp_path / "r").mkdir()
    store = Store(tmp_path / "s.sqlite")
    strategy = make_strategy("agent")
    result = search(config, space, executor, strategy, tmp_path / "r", store)
    store.close()
    rule = next(r for r in result.state.kb.rules if r.conditions == (("VEC", "1"),))
    assert rule.status is Status.resource_error
    assert "do not use VEC=1 in rowblock" in rule.as_dont()
    numbers = [a.number for a in result.state.attempts if a.candidate.values.get("VEC") == "1"]
    # once the rule exists, only the occasional deliberate probe tries VEC=1 again, and the run ends
    # when everything the rule allows has been tried
    assert len(numbers) <= 3
    assert len(result.state.attempts) < 30 and "exhausted" in result.stopped
    assert len(result.state.attempts) >= space.size - 12 + len(numbers)


def test_policies_round_trip_and_learn_toward_rewarded_values(tmp_path):
    book = PolicyBook()
    from sandbox import Knob

    knob = Knob(name="BLOCK", specialist="launch", values=["128", "256", "512"])
    for _ in range(5):
        book["launch"].update("BLOCK", "512", 1.0)
    rng = random.Random(0)
    picks = [book["launch"].sample(knob, rng) for _ in range(200)]
    assert picks.count("512") > 150
    path = PolicyBook.path(tmp_path, "sm_90", "rowwise")
    book.save(path)
    assert PolicyBook.load(path)["launch"].logits == book["launch"].logits


def test_generic_edits_compile_for_every_suite_kernel():
    """__restrict__, #pragma unroll and __launch_bounds__ applied to every kernel of the suite still
    compile with NVRTC (the flags are checked by the compiler's allow-list)."""
    from sandbox import compile_many, load_kernel

    jobs, labels = [], []
    for task_file in discover(ROOT / "tasks"):
        task = load_task(task_file)
        space = Space.of_task(task, generic=True)
        for label, ks in space.kernels.items():
            knobs = {k.name: k.values[-1] for k in ks.knobs.values() if k.name in GENERIC}
            if not knobs:
                continue
            candidate = Candidate.make(label, {**space.default(label).values, **knobs})
            kernel = space.build(candidate)
            jobs.append(kernel.compile_job("sm_90"))
            labels.append(f"{task.name}/{label} {knobs}")
            assert load_kernel(ks.kernel.path).source != kernel.source or not any(
                k in knobs for k in ("G_RESTRICT", "G_UNROLL", "G_LAUNCH_BOUNDS"))
    results = compile_many(jobs)
    failed = [f"{label}: {r.log[:300]}" for label, r in zip(labels, results) if not r.ok]
    assert not failed, "\n".join(failed)
    assert len(jobs) >= 40


def test_generic_edit_text():
    source = "__global__ void k(const float* x, float *y, int n) {\n  for (int i = 0; i < n; ++i) y[i] = x[i];\n}\n"
    edited, flags, own = apply_generic(source, {"G_RESTRICT": "1", "G_UNROLL": "4", "G_LAUNCH_BOUNDS": "1",
                                                "G_FAST_MATH": "1", "G_MAXRREG": "64", "BLOCK": "128"}, ["BLOCK"])
    assert "const float* __restrict__ x" in edited and "float * __restrict__ y" in edited
    assert "#pragma unroll 4\n  for" in edited and "__launch_bounds__(128)" in edited
    assert flags == ["-use_fast_math", "-maxrregcount=64"] and own == {"BLOCK": "128"}


def test_journal_reads_back_what_it_wrote(tmp_path):
    journal = Journal(tmp_path / "attempts.jsonl")
    from kernel_agent.seams import Attempt

    a = Attempt(1, Candidate.make("rowblock", {"BLOCK": "256"}), _outcome(Status.ok, 1.5), 0.2, "launch",
                Candidate.make("rowblock", {"BLOCK": "128"}), "best", 0.7)
    journal.append(a)
    (back,) = journal.read()
    assert back.candidate == a.candidate and back.parent == a.parent and back.ms == 1.5 and back.reward == 0.7


def test_the_gpu_executor_path_with_a_stand_in_worker(tmp_path):
    """The GPU loop (compile generic edits with NVRTC, run, re-measure the winner beside the baseline)
    against a stand-in worker that times grids: the real GPU run is in the closing note."""
    from kernel_agent.optimize.executors import GpuExecutor
    from sandbox import GpuWorker, Settings
    from tests.sandbox import fake_workers

    task = load_task(LAYERNORM)
    space = Space.of_task(task, generic=True)
    assert {"G_FAST_MATH", "G_MAXRREG"} <= set(space.kernels["rowblock"].knobs)  # it has __restrict__ already
    config = RunConfig(run_id="g", task_file=str(LAYERNORM), task=task.name, family="rowwise", arch="sm_90",
                       strategy="agent", seed=0, budget=10, executor="gpu", warm_start=False, generic=True)
    (tmp_path / "g").mkdir()
    store = Store(tmp_path / "s.sqlite")
    with GpuWorker(target=fake_workers.timed) as worker:
        executor = GpuExecutor(task, space, worker, "sm_90", Settings())
        result = search(config, space, executor, make_strategy("agent"), tmp_path / "g", store)
    store.close()
    assert len(result.state.attempts) == 10 and result.baseline.timing.median_ms == 2.0
    assert all(a.outcome.status is Status.ok for a in result.state.attempts)
    assert any(k.startswith("G_") and v != "0" for a in result.state.attempts for k, v in a.candidate.knobs)
    assert result.final.speedup == pytest.approx(2.0) and result.final.candidate_id


def test_replay_bench_prints_the_strategy_table():
    result = kagent("replay-bench", LAYERNORM, "--seeds", 2, "--no-warm")
    assert result.exit_code == 0, result.output
    assert "layernorm" in result.output and "to 95%: agent" in result.output
    assert "1 of 1 tasks meet both bars" in result.output


class _CountingLLM:
    """Stands in for the LLM proposer (a seams.Proposer): counts the planner's rewrite plans it is
    given (and never proposes)."""

    enabled = True

    def __init__(self):
        self.asked = []

    def has_repair(self) -> bool:
        return False

    def ports_first(self) -> bool:
        return False

    def port_pending(self) -> bool:
        return False

    def port_passed(self) -> bool:
        return False

    def next_repair(self, state):
        return None

    def propose(self, state, plan):
        stalled = state.since_improvement >= 6
        self.asked.append(((len(state.attempts) - 2) // 4 + 1, "planner" if stalled else "scheduled", plan.role))
        assert plan.action == "rewrite" and plan.prompt.endswith(".j2") and plan.parent is not None
        return None

    def observe(self, state, batch):
        pass


@pytest.mark.parametrize("every, expected", [(1, [1, 2, 3, 4]), (2, [1, 3]), (3, [1, 4])])
def test_the_agent_asks_the_llm_every_n_batches(tmp_path, every, expected):
    from kernel_agent.optimize.executors import ReplayExecutor
    from kernel_agent.optimize.strategies.agent import AgentStrategy

    task = load_task(LAYERNORM)
    space = Space.of_task(task, generic=False)
    llm = _CountingLLM()
    config = RunConfig(run_id="r", task_file=str(LAYERNORM), task=task.name, family="rowwise", arch="sm_90",
                       strategy="agent", seed=0, budget=2 + 4 * 4, batch=4, executor="replay", warm_start=False,
                       generic=False)
    (tmp_path / "r").mkdir()
    store = Store(tmp_path / "s.sqlite")
    search(config, space, ReplayExecutor(task, space, RECORDED / "layernorm.json"),
           AgentStrategy(llm=llm, llm_every=every), tmp_path / "r", store)
    store.close()
    scheduled = [batch for batch, why, _ in llm.asked if why == "scheduled"]
    assert set(scheduled) <= set(expected) and scheduled[0] == 1  # never off schedule unless stalled
    assert set(expected) <= {batch for batch, _, _ in llm.asked}  # plus asks for a new structure when stalled
    assert all(role == "planner" for _, why, role in llm.asked if why == "planner")


def test_replay_answers_a_rewritten_file_that_only_changed_its_knob_lists(tmp_path):
    from kernel_agent.optimize.executors import ReplayExecutor

    task = load_task(LAYERNORM)
    space = Space.of_task(task, generic=False)
    executor = ReplayExecutor(task, space, RECORDED / "layernorm.json")
    source = (LAYERNORM.parent / "layernorm" / "rowblock.cu").read_text()
    same = tmp_path / "same.cu"
    same.write_text(source.replace("ROWS_PER_BLOCK [launch]: 1 2 4", "ROWS_PER_BLOCK [launch]: 2 8"))
    space.add_kernel("llm1", same, generic=False)
    other = tmp_path / "other.cu"
    other.write_text(source.replace("float s = 0.f;", "float s = 0.0f;"))
    space.add_kernel("llm2", other, generic=False)
    recorded, unrecorded, changed = executor.evaluate([
        Candidate.make("llm1", {"BLOCK": "256", "VEC": "4", "ROWS_PER_BLOCK": "2"}),
        Candidate.make("llm1", {"BLOCK": "256", "VEC": "4", "ROWS_PER_BLOCK": "8"}),
        Candidate.make("llm2", {"BLOCK": "256", "VEC": "4", "ROWS_PER_BLOCK": "1"})])
    twin = executor.records[Candidate.make("rowblock", {"BLOCK": "256", "VEC": "4", "ROWS_PER_BLOCK": "2"})]
    assert recorded[0].timing == twin.outcome.timing
    assert unrecorded[0].status is Status.not_run and "not run" in unrecorded[0].message
    assert changed[0].status is Status.not_run  # compiled here for real, never measured


class _PortingLLM(_CountingLLM):
    """A small model's proposer: ports first; `pending` says whether one of its ports awaits a verdict
    or a repair."""

    def __init__(self, pending, passed=False, small=True):
        super().__init__()
        self.pending, self.passed, self.small = pending, passed, small

    def ports_first(self) -> bool:
        return self.small

    def port_pending(self) -> bool:
        return self.pending

    def port_passed(self) -> bool:
        return self.passed


class _NothingFast:
    """A search state with no kernel measured correct yet: porting goes on."""

    space = Space.of_task(load_task(LAYERNORM), generic=False)

    def correct(self):
        return []


def test_a_small_models_rewrites_wait_for_its_ports_and_their_repairs():
    from kernel_agent.optimize.planner import PORT_SAMPLES, Planner

    planner = Planner(specialists={}, ports=["rowwise", "full_reduce"])
    planner.ported.update({"rowwise": 1})
    assert planner.rewrite_plan(_NothingFast(), 1, _PortingLLM(pending=False)) is None  # full_reduce is left
    planner.ported.update({"full_reduce": 1})
    assert planner.rewrite_plan(_NothingFast(), 1, _PortingLLM(pending=True)) is None  # a port under repair
    assert planner.rewrite_plan(_NothingFast(), 1, _PortingLLM(pending=False)) is None  # samples are left
    planner.ported.update({"rowwise": PORT_SAMPLES, "full_reduce": PORT_SAMPLES})
    assert planner._next_port(_NothingFast(), _PortingLLM(pending=False)) is None  # then rewrites may come


class _RepairingLLM(_PortingLLM):
    """A small model's proposer with two of its ports queued for repair: the first repair's answer is no
    new answer (nothing to propose), the second's a kernel."""

    def __init__(self):
        super().__init__(pending=True)
        self.repairs = [None, "repaired"]
        self.plans = []

    def has_repair(self) -> bool:
        return bool(self.repairs)

    def next_repair(self, state):
        return self.repairs.pop(0)

    def propose(self, state, plan):
        self.plans.append(plan.action)
        return None


def test_with_nothing_else_to_try_a_small_models_queued_repairs_go_before_any_rewrite():
    """A repair that came to nothing leaves the others queued: the next one is asked for, not a whole-kernel
    rewrite (the local model's conv1d run spent a third of its time on rewrites while ports awaited repair)."""
    from kernel_agent.optimize.strategies.agent import AgentStrategy

    llm = _RepairingLLM()
    strategy = AgentStrategy(llm=llm, ports=["rowwise"])
    strategy.planner.ported["rowwise"] = 1
    assert strategy._new_structure(_NothingFast()) == ["repaired"] and llm.plans == []
    assert strategy._new_structure(_NothingFast()) == [] and "rewrite" in llm.plans  # no repair left: a rewrite


def test_a_small_model_ports_each_fitting_skeleton_again_once_its_ports_are_judged_and_repaired():
    """Fresh samples, the least-sampled first and the likeliest among equals; none while a port awaits its
    verdict or a repair, none once a port passed, none for a model that is not small."""
    from kernel_agent.optimize.planner import PORT_SAMPLES, Planner

    planner = Planner(specialists={}, ports=["rowwise", "full_reduce"])
    llm = _PortingLLM(pending=False)
    plans = [planner.port_plan(_NothingFast(), llm) for _ in range(2 * PORT_SAMPLES)]
    assert [p.role for p in plans] == ["rowwise", "full_reduce"] * PORT_SAMPLES
    assert [p.why.endswith("another sample of a skeleton that fits the task") for p in plans] == \
        [False, False] + [True] * (2 * PORT_SAMPLES - 2)
    assert planner.port_plan(_NothingFast(), llm) is None

    planner = Planner(specialists={}, ports=["rowwise", "full_reduce"])
    assert [planner.port_plan(_NothingFast(), _PortingLLM(pending=True)).role for _ in range(2)] == \
        ["rowwise", "full_reduce"]  # the first port of each does not wait
    assert planner.port_plan(_NothingFast(), _PortingLLM(pending=True)) is None
    assert planner.port_plan(_NothingFast(), _PortingLLM(pending=False, passed=True)) is None
    assert planner.port_plan(_NothingFast(), _PortingLLM(pending=False)).role == "rowwise"
    assert planner.port_plan(_NothingFast(), _PortingLLM(pending=False, small=False)) is None


def test_a_structure_slower_at_its_defaults_is_tuned_a_few_times_before_it_is_judged():
    """The baseline (generic edits make it tunable) is fastest; the rowblock variant, measured once at its
    defaults, is slower: it is the parent of some tune moves ("a structure barely tuned") until it has had
    YOUNG_EVALUATIONS evaluations, then only the usual odds pick it."""
    from kernel_agent.optimize.planner import YOUNG, YOUNG_EVALUATIONS, YOUNG_ODDS, Planner
    from kernel_agent.seams import Attempt, SearchState

    space = Space.of_task(load_task(LAYERNORM), generic=True)
    assert space.kernels["baseline"].tunable and space.kernels["rowblock"].tunable
    state = SearchState(space=space, rng=random.Random(0), kb=KnowledgeBase())
    fast, slow = space.default("baseline"), space.default("rowblock")
    state.attempts = [Attempt(n, fast, _outcome(Status.ok, 1.0), 0.0) for n in range(5)]
    state.attempts.append(Attempt(5, slow, _outcome(Status.ok, 1.2), 0.0))
    planner = Planner(specialists={})
    picks = [planner.choose_parent(state) for _ in range(400)]
    young = [parent for parent, why in picks if why == YOUNG]
    assert young and all(parent == slow for parent in young)
    assert abs(len(young) / len(picks) - YOUNG_ODDS) < 0.06
    state.attempts += [Attempt(6 + n, slow, _outcome(Status.ok, 1.2), 0.0) for n in range(YOUNG_EVALUATIONS - 1)]
    assert all(why != YOUNG for _, why in (planner.choose_parent(state) for _ in range(200)))
