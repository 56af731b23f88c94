"""`kagent repair`: an interactive (or `--auto`) repair session on one broken kernel, and
`kagent repair-bench`: `--auto K` over a corpus of broken kernels, with the share repaired per class."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import typer
from rich.markup import escape

from sandbox import Settings, Status

from ..llm.client import LLMClient
from ..llm.settings import LLMConfigError, is_small_model, load_llm_config
from ..render import console
from ..repair.auto import auto_repair
from ..repair.bench import BenchOptions, EntryResult, run_entry, summary, write_report
from ..repair.checks import Checker
from ..repair.corpus import CorpusError, corpus_files, read_entry
from ..repair.fixer import HOW_TO_CONFIGURE, Fixer
from ..repair.session import RepairSession, SessionError, default_folder
from .app import app, arch_option, fail, knob_pairs
from .gpu_checks import EXECUTOR, gpu_session, shared_gpu


def _model(no_llm: bool, model: str | None, base_url: str | None, timeout_s: float | None, small: bool | None,
           grammar: str | None) -> tuple[LLMClient | None, bool, str]:
    """The client (None without a model), whether it gets the small-model prompts, and why there is none."""
    if no_llm:
        return None, False, "the model is switched off (--no-llm)"
    try:
        config = load_llm_config(model=model, base_url=base_url, timeout_s=timeout_s, grammar=grammar)
    except LLMConfigError as exc:
        fail(2, str(exc))
    if config is None:
        return None, False, HOW_TO_CONFIGURE
    return LLMClient(config), is_small_model(config.model, config.base_url) if small is None else small, ""


LLM_MODEL = typer.Option(None, "--llm", help="Model name [default: KAGENT_LLM_MODEL or the config file's].")
LLM_URL = typer.Option(None, "--llm-base-url", help="OpenAI-compatible endpoint [default: OPENAI_BASE_URL].")
LLM_TIMEOUT = typer.Option(None, "--llm-timeout", min=1.0, help="Seconds one answer may take.")
LLM_SMALL = typer.Option(None, "--llm-small/--llm-large",
                         help="Small-model prompts (whole files for short kernels) [default: by the model's size].")
LLM_GRAMMAR = typer.Option(None, "--llm-grammar", help="llama.cpp, vllm or off: the server decodes under kagent's "
                                                       "answer grammar (one ```cuda block).")
NO_LLM = typer.Option(False, "--no-llm", help="No model, even if one is configured.")


@app.command()
def repair(
    task_file: Path | None = typer.Argument(None, help="Task YAML the kernel is for (not needed with --resume)."),
    kernel: Path | None = typer.Argument(None, help="The broken kernel .cu file (not needed with --resume)."),
    resume: Path | None = typer.Option(None, "--resume", help="Continue the session kept in this folder."),
    session_dir: Path | None = typer.Option(None, "--session",
                                            help="Folder for the session [default: OUT/repair/TASK-KERNEL-TIME]."),
    out: Path = typer.Option(Path("results"), help="Folder under which sessions are kept (OUT/repair/)."),
    auto: int | None = typer.Option(None, "--auto", min=0, max=100,
                                    help="No prompt: up to N check -> fix rounds with the model; exit 0 only "
                                         "with a correct kernel."),
    evidence: bool = typer.Option(True, "--evidence/--no-evidence",
                                  help="With --auto: give the model the failure's evidence (default), or only the "
                                       "kernel (a whole-file rewrite)."),
    knob: list[str] = typer.Option([], "--knob", "-k", help="Knob value NAME=VALUE for the checks (repeatable)."),
    checks: list[Path] = typer.Option([], "--checks",
                                      help="Outcomes recorded by another session (its checks.jsonl): the same "
                                           "kernel is not checked again (repeatable)."),
    executor: str = EXECUTOR,
    device: int = typer.Option(0, help="GPU index."),
    arch: str | None = typer.Option(None, help="Target architecture [default: the GPU's, else sm_90]."),
    budget_ms: float = typer.Option(200.0, help="Time spent in timed launches per check (GPU)."),
    llm: str | None = LLM_MODEL,
    llm_base_url: str | None = LLM_URL,
    llm_timeout: float | None = LLM_TIMEOUT,
    llm_small: bool | None = LLM_SMALL,
    llm_grammar: str | None = LLM_GRAMMAR,
    no_llm: bool = NO_LLM,
) -> None:
    """Repair one kernel: check it, read the evidence, fix it (yourself or with the model), version by version.

    On start the kernel is checked (on the GPU; without one, compile-side only, and the session says what
    was not run) and its verdict shown with the evidence. Then commands (`help` lists them): check [SIZE],
    show, explain, fix (a diff to accept or reject), edit ($EDITOR), watch (re-check on every save of the
    kernel file), knob NAME VALUE, undo, redo, versions, goto N, diff [N], save [PATH], optimize, quit.
    Every version, verdict, prompt and answer is kept in the session folder: `--resume FOLDER` continues.
    With `--auto N` there is no prompt: up to N rounds of check, then a fix from the model.
    Exit code 0 only when the final version is correct (for compile-only checks: never, nothing ran).
    """
    arch_option(arch)
    client, small, why_none = _model(no_llm, llm, llm_base_url, llm_timeout, llm_small, llm_grammar)
    gpu = shared_gpu(executor, device)
    try:
        if resume is not None:
            if task_file or kernel:
                fail(2, "--resume continues a session: give no task or kernel with it")
            session = RepairSession.resume(resume, tuple(checks))
        else:
            if task_file is None or kernel is None:
                fail(2, "give a task file and a kernel file (or --resume FOLDER)")
            folder = session_dir or default_folder(out, str(task_file), kernel)
            session = RepairSession.start(folder, task_file, kernel, knob_pairs(knob), tuple(checks))
    except SessionError as exc:
        fail(2, str(exc))
    checker = Checker(session.task, session.recorded, gpu, arch, Settings(budget_ms=budget_ms),
                      include_roots=(Path(session.info.kernel).parent,), emulate=executor == "emulate")
    fixer = Fixer(session, client, small, arch or "sm_90", why_none)
    with gpu_session(gpu, f"the session is kept; continue with kagent repair --resume {session.folder}"):
        if auto is None:
            from ..repair.repl import Repl  # prompt_toolkit: 0.2 s of imports only the interactive session needs

            code = Repl(session, checker, fixer, console).run()
        else:
            result = auto_repair(session, checker, fixer, auto, evidence,
                                 lambda text: console.print(text, markup=False, highlight=False))
            detail = f": {result.detail}" if result.detail else ""
            console.print(f"{result.ending} after {result.rounds} round(s){detail}; session kept in "
                          f"{session.folder}", markup=False)
            code = 0 if result.outcome.status is Status.ok else 1
    raise typer.Exit(code)


@app.command("repair-bench")
def repair_bench(
    corpus: Path = typer.Argument(..., help="A repair corpus: a folder of broken kernels with `// @repair` lines "
                                            "(e.g. tests/data/repair), or one such file."),
    out: Path = typer.Option(Path("results/repair-bench"),
                             help="One session per kernel (OUT/NAME/), report.md and report.json; an existing "
                                  "session is continued."),
    rounds: int = typer.Option(3, "--auto", min=1, max=100, help="Fix rounds per kernel (K)."),
    evidence: bool = typer.Option(True, "--evidence/--no-evidence",
                                  help="Fix prompts with the failure's evidence (default), or the control arm: "
                                       "the kernel alone, a whole-file rewrite asked for."),
    only: list[str] = typer.Option([], "--only", help="Only kernels whose name matches this pattern (repeatable)."),
    executor: str = EXECUTOR,
    device: int = typer.Option(0, help="GPU index."),
    arch: str | None = typer.Option(None, help="Target architecture [default: the GPU's, else sm_90]."),
    llm: str | None = LLM_MODEL,
    llm_base_url: str | None = LLM_URL,
    llm_timeout: float | None = LLM_TIMEOUT,
    llm_small: bool | None = LLM_SMALL,
    llm_grammar: str | None = LLM_GRAMMAR,
    no_llm: bool = NO_LLM,
) -> None:
    """Run `kagent repair --auto K` on every kernel of a repair corpus; report the share repaired within 1, 2
    and K rounds per failure class, and the tokens spent.

    Runs in steps where the model and the GPU are on different machines: where the model is, fixes are
    written and compiled (a kernel that compiles waits as `pending`); where the GPU is, the same command
    with --no-llm checks every pending kernel and records the verdicts in its session; back where the model
    is, the next round starts from those verdicts. Copy OUT between the machines.
    """
    arch_option(arch)
    try:
        entries = [read_entry(path) for path in corpus_files(corpus)]
    except (CorpusError, OSError, IndexError) as exc:
        fail(2, f"{corpus}: {exc}")
    if only:
        entries = [e for e in entries if any(fnmatch.fnmatch(e.name, pattern) for pattern in only)]
    if not entries:
        fail(2, f"no corpus files under {corpus}" + (f" matching {', '.join(only)}" if only else ""))
    client, small, _ = _model(no_llm, llm, llm_base_url, llm_timeout, llm_small, llm_grammar)
    gpu = shared_gpu(executor, device)
    out.mkdir(parents=True, exist_ok=True)
    options = BenchOptions(rounds=rounds, evidence=evidence, arch=arch, emulate=executor == "emulate")
    results: list[EntryResult] = []
    with gpu_session(gpu, f"every finished kernel is in {out}/report.md; run the same command to go on"):
        for number, entry in enumerate(entries, start=1):
            console.print(f"[{number}/{len(entries)}] {escape(entry.name)} (expected {entry.expect})")
            try:
                results.append(run_entry(entry, out, gpu, client, small, options,
                                         lambda text: console.print(f"    {escape(text)}")))
            except SessionError as exc:
                fail(2, f"{entry.name}: {exc}")
            write_report(out, results, rounds, evidence)
    for row in summary(results, rounds):
        shares = ", ".join(f"{row[k]}/{row['entries']} within {k[7:]}" for k in row if k.startswith("within_"))
        console.print(f"{row['class']}: {shares}; {row['pending']} pending; {row['tokens']} tokens", markup=False)
    console.print(f"report: {out / 'report.md'}", markup=False)
