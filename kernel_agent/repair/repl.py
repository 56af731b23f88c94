"""The interactive repair session (`kagent repair TASK KERNEL.cu`): a prompt with history and
completion (prompt_toolkit, as IPython and aider use), commands over the session's versions.

Each command is a method `do_NAME(arg)`; its docstring's first line is its help. Everything a command
changes goes through RepairSession, so it is on disk before the next prompt.
"""

from __future__ import annotations

import difflib
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory
from rich.console import Console
from rich.markup import escape

from sandbox import Outcome, Status, parse_directives

from ..check import size_labels
from ..llm.prompts import error_lines
from .auto import check_current
from .checks import Checker
from .evidence import show_verdict
from .fixer import Fixer, NoModel
from .session import RepairSession

WATCH_POLL_S = 0.3


class Quit(Exception):
    """The user asked to leave."""


class Repl:
    def __init__(self, session: RepairSession, checker: Checker, fixer: Fixer, console: Console,
                 read: Callable[[str], str] | None = None):
        """`read(prompt)` returns the next line typed (EOFError at the end); by default a prompt with the
        session's command history and completion, or, without a terminal, standard input's lines."""
        self.session, self.checker, self.fixer, self.console = session, checker, fixer, console
        self.sizes = size_labels(session.task)
        self.read, self.ask = (read, read) if read else self._readers()

    @property
    def knobs(self) -> dict[str, list[str]]:
        """The current version's knobs and their values (a fix may add or drop some)."""
        try:
            return {k.name: list(k.values) for k in parse_directives(self.session.source()).knobs.values()}
        except ValueError:
            return {}

    # -- the loop -------------------------------------------------------------------------------

    def run(self, check_first: bool = True) -> int:
        """The session until `quit` or end of input; exit code 0 when the current version is correct."""
        self._banner()
        if check_first:
            self.do_check("")
        while True:
            try:
                line = self.read(f"v{self.session.current.number:03d}> ").strip()
            except KeyboardInterrupt:
                continue
            except EOFError:
                break
            if not line:
                continue
            name, _, arg = line.partition(" ")
            command = getattr(self, f"do_{name.lower()}", None)
            if command is None:
                self.console.print(f"[red]unknown command {escape(name)!r}[/]: `help` lists them")
                continue
            self.session.log({"type": "command", "line": line})
            try:
                command(arg.strip())
            except Quit:
                break
            except KeyboardInterrupt:
                self.console.print("(interrupted)")
        verdict = self.session.verdicts.get(self.session.current.number)
        self.console.print(f"session kept in {self.session.folder} (continue with: kagent repair --resume "
                           f"{self.session.folder})", markup=False)
        return 0 if verdict is not None and verdict.status is Status.ok else 1

    def _banner(self) -> None:
        s = self.session
        where = "on the GPU" if self.checker.on_gpu else \
            "compile-side only (no GPU here: results, bounds, races, hangs and timing are not checked)"
        model = self.fixer.client.config.model if self.fixer.client else "none (fix and explain say how to set one)"
        self.console.print(f"[bold]kagent repair[/] {escape(s.task.name)}: {escape(s.info.kernel)}\n"
                           f"checks: {where}; model: {escape(model)}\nsession: {escape(str(s.folder))}\n"
                           "`help` lists the commands.")

    def _readers(self) -> tuple[Callable[[str], str], Callable[[str], str]]:
        """Readers of commands and of answers to questions (kept out of the command history)."""
        if not sys.stdin.isatty():  # piped commands: one per line, no terminal to draw on
            def plain(prompt: str) -> str:
                line = sys.stdin.readline()
                if not line:
                    raise EOFError
                self.console.print(prompt + line.rstrip("\n"), markup=False, highlight=False)
                return line
            return plain, plain
        commands: PromptSession[str] = PromptSession(history=FileHistory(str(self.session.folder / "history")),
                                                     completer=CommandCompleter(self))
        answers: PromptSession[str] = PromptSession()
        return commands.prompt, answers.prompt

    # -- checking -----------------------------------------------------------------------------

    def do_check(self, arg: str) -> None:
        """check [SIZE]: check the current version at every size, or at one (a number from `sizes`, or its label)."""
        size = self._size(arg) if arg else None
        if arg and size is None:
            return
        outcome, recorded = check_current(self.session, self.checker, size)
        show_verdict(self.console, outcome, self.session.source(), recorded, size)

    def do_sizes(self, arg: str) -> None:
        """sizes: the task's sizes (the timed one first), to check one of them alone."""
        for number, label in enumerate(self.sizes, start=1):
            self.console.print(f"{number}. {escape(label)}{' (timed)' if number == 1 else ''}")

    def do_show(self, arg: str) -> None:
        """show: the current version with line numbers; lines the compiler or the launch points at are marked >>."""
        source = self.session.source()
        marked = _marked_lines(source, self._verdict())
        for number, line in enumerate(source.splitlines(), start=1):
            mark = ">>" if number in marked else "  "
            style = "bold red" if number in marked else ""
            self.console.print(f"{mark} {number:4d} | {line}", style=style, markup=False, highlight=False,
                               soft_wrap=True)

    # -- the model --------------------------------------------------------------------------------

    def do_explain(self, arg: str) -> None:
        """explain: ask the model why the current version fails (words, no code)."""
        outcome = self._failing()
        if outcome is None:
            return
        try:
            with self.console.status("waiting for the model..."):
                text = self.fixer.explain(outcome)
        except NoModel as exc:
            self.console.print(f"[yellow]{escape(str(exc))}[/]")
            return
        self.console.print(text, markup=False, highlight=False)

    def do_fix(self, arg: str) -> None:
        """fix: ask the model for a fix of the current failure, shown as a diff to accept or reject."""
        outcome = self._failing()
        if outcome is None:
            return
        try:
            with self.console.status("waiting for the model..."):
                fix = self.fixer.fix(outcome)
        except NoModel as exc:
            self.console.print(f"[yellow]{escape(str(exc))}[/]")
            return
        if fix.source is None:
            self.console.print(f"[yellow]the answer could not be used[/]: {escape(fix.feedback)}")
            return
        self._diff(self.session.source(), fix.source, "current", "fix")
        answer = self.ask("accept this fix? [y/N] ").strip().lower()
        accepted = answer in ("y", "yes")
        self.session.log({"type": "decision", "call": fix.call, "accepted": accepted})
        if accepted:
            self._new(fix.source, "fix", f"the model's fix (call {fix.call})", call=fix.call)
        else:
            self.console.print("rejected; the current version stays")

    # -- editing ---------------------------------------------------------------------------------

    def do_edit(self, arg: str) -> None:
        """edit: open the current version in $EDITOR (or $VISUAL, else vi); a changed file becomes a version."""
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        path = self.session.folder / "edit.cu"
        path.write_text(self.session.source(), encoding="utf-8")
        try:
            subprocess.run([*shlex.split(editor), str(path)], check=False)
        except OSError as exc:
            self.console.print(f"[red]cannot run the editor {escape(editor)!r}[/]: {escape(str(exc))}")
            return
        text = path.read_text(encoding="utf-8")
        if text == self.session.source():
            self.console.print("unchanged")
            return
        self._new(text, "editor", f"edited in {editor}")

    def do_watch(self, arg: str) -> None:
        """watch: re-check whenever the kernel file is saved (by your own editor); Ctrl-C stops watching."""
        path = Path(self.session.info.kernel)
        self.console.print(f"watching {escape(str(path))}: save it to check it (Ctrl-C stops)")
        seen = _read(path)
        try:
            while True:
                _wait(WATCH_POLL_S)
                text = _read(path)
                if text is None or text == seen:
                    continue
                seen = text
                if text != self.session.source():
                    self._new(text, "file", f"saved to {path}")
        except KeyboardInterrupt:
            self.console.print("stopped watching")

    def do_knob(self, arg: str) -> None:
        """knob NAME VALUE: set a knob for the checks (a new version); `knob NAME` back to its default."""
        name, _, value = arg.partition(" ")
        if not name:
            self.do_knobs("")
            return
        if name not in self.knobs:
            self.console.print(f"[red]no knob {escape(name)}[/]; the kernel's knobs: {escape(', '.join(self.knobs))}")
            return
        knobs = dict(self.session.current.knobs)
        if value.strip():
            knobs[name] = value.strip()
        else:
            knobs.pop(name, None)
        self._new(self.session.source(), "knob", f"{name}={value.strip() or 'default'}", knobs=knobs)

    def do_knobs(self, arg: str) -> None:
        """knobs: the kernel's knobs with their values and the ones set in this session."""
        set_here = self.session.current.knobs
        for name, values in self.knobs.items():
            chosen = f"  set: {set_here[name]}" if name in set_here else ""
            self.console.print(f"{escape(name)}: {escape(' '.join(values))}{escape(chosen)}")
        if not self.knobs:
            self.console.print("the kernel declares no knobs")

    # -- versions --------------------------------------------------------------------------------

    def do_undo(self, arg: str) -> None:
        """undo: back to the version the current one was made from."""
        self._moved(self.session.move("undo"), "nothing to undo: this is the first version")

    def do_redo(self, arg: str) -> None:
        """redo: forward to the version undone last."""
        self._moved(self.session.move("redo"), "nothing to redo")

    def do_goto(self, arg: str) -> None:
        """goto N: make version N current (`versions` lists them)."""
        try:
            self._moved(self.session.move("goto", int(arg)), "")
        except (ValueError, KeyError):
            self.console.print(f"[red]goto needs a version number from 1 to {len(self.session.history.versions)}[/]")

    def do_versions(self, arg: str) -> None:
        """versions: every version, where it came from and its last verdict."""
        for v in self.session.history.versions:
            verdict = self.session.verdicts.get(v.number)
            status = verdict.status.value if verdict else "not checked"
            mark = "*" if v.number == self.session.current.number else " "
            parent = f" from v{v.parent:03d}" if v.parent else ""
            self.console.print(f"{mark} v{v.number:03d}{parent} {v.origin}: {escape(v.note)} -> {status}")

    def do_diff(self, arg: str) -> None:
        """diff [N]: the current version against the original (or version N)."""
        try:
            other = int(arg) if arg else 1
            self.session.history.get(other)
        except (ValueError, KeyError):
            self.console.print(f"[red]diff takes a version number from 1 to {len(self.session.history.versions)}[/]")
            return
        self._diff(self.session.source(other), self.session.source(), f"v{other:03d}",
                   f"v{self.session.current.number:03d}")

    def do_save(self, arg: str) -> None:
        """save [PATH]: write the current version to PATH [default: the kernel file the session started from]."""
        path = Path(arg).expanduser() if arg else Path(self.session.info.kernel)
        try:
            path.write_text(self.session.source(), encoding="utf-8")
        except OSError as exc:
            self.console.print(f"[red]cannot write {escape(str(path))}[/]: {escape(str(exc))}")
            return
        self.session.log({"type": "save", "path": str(path.resolve()), "version": self.session.current.number})
        self.console.print(f"saved v{self.session.current.number:03d} to {escape(str(path))}")

    def do_optimize(self, arg: str) -> None:
        """optimize [OPTIONS]: save the current version to the session folder and run `kagent optimize` from it
        (OPTIONS are optimize's, e.g. --budget 20)."""
        path = self.session.folder / f"v{self.session.current.number:03d}.cu"
        path.write_text(self.session.source(), encoding="utf-8")
        command = [sys.executable, "-m", "kernel_agent", "optimize", self.session.info.task, "--kernel", str(path),
                   *shlex.split(arg)]
        self.console.print("$ " + " ".join(shlex.quote(c) for c in command[1:]), markup=False)
        self.session.log({"type": "optimize", "command": command[3:]})
        subprocess.run(command, check=False)

    def do_help(self, arg: str) -> None:
        """help: this list."""
        for name in sorted(n[3:] for n in dir(self) if n.startswith("do_")):
            doc = (getattr(self, f"do_{name}").__doc__ or "").split("\n")[0]
            self.console.print(escape(doc))

    def do_quit(self, arg: str) -> None:
        """quit: leave (the session stays on disk: `kagent repair --resume FOLDER`)."""
        raise Quit

    do_exit = do_quit

    # -- helpers --------------------------------------------------------------------------------

    def _new(self, source: str, origin: str, note: str, knobs: dict[str, str] | None = None,
             call: int | None = None) -> None:
        version = self.session.add(source, origin, note, knobs, call)
        self.console.print(f"v{version.number:03d} ({escape(origin)}: {escape(note)})")
        self.do_check("")

    def _moved(self, version: object, nothing: str) -> None:
        if version is None:
            self.console.print(nothing)
            return
        current = self.session.current
        verdict = self.session.verdicts.get(current.number)
        said = f"{verdict.status.value}: {verdict.message}" if verdict else "not checked yet"
        self.console.print(f"now at v{current.number:03d} ({escape(current.origin)}: {escape(current.note)}); "
                           f"last verdict: {escape(said)}")

    def _verdict(self) -> Outcome | None:
        return self.session.verdicts.get(self.session.current.number)

    def _failing(self) -> Outcome | None:
        outcome = self._verdict()
        if outcome is None:
            self.console.print("check the current version first (`check`)")
        elif outcome.status is Status.ok:
            self.console.print("the current version is correct: nothing to fix")
        elif outcome.status is Status.not_run:
            self.console.print("it compiles and its launches plan at every size; without a GPU nothing more was "
                               "checked, so there is no failure to work from")
        else:
            return outcome
        return None

    def _size(self, arg: str) -> str | None:
        if arg.isdigit() and 1 <= int(arg) <= len(self.sizes):
            return self.sizes[int(arg) - 1]
        if arg in self.sizes:
            return arg
        self.console.print(f"[red]no size {escape(arg)}[/]: give a number from 1 to {len(self.sizes)} (`sizes`)")
        return None

    def _diff(self, before: str, after: str, old: str, new: str) -> None:
        lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), old, new, lineterm=""))
        if not lines:
            self.console.print("no difference")
        for line in lines:
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else \
                "cyan" if line.startswith("@@") else ""
            self.console.print(line, style=style, markup=False, highlight=False, soft_wrap=True)


class CommandCompleter(Completer):
    """Commands first; then a command's arguments: sizes for check, knob names for knob, version numbers."""

    def __init__(self, repl: Repl):
        self.repl = repl

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if " " not in text:
            names = sorted(n[3:] for n in dir(self.repl) if n.startswith("do_"))
            yield from (Completion(n, -len(text)) for n in names if n.startswith(text))
            return
        command, _, arg = text.partition(" ")
        options: list[str] = []
        if command == "check":
            options = [str(i) for i in range(1, len(self.repl.sizes) + 1)] + self.repl.sizes
        elif command == "knob" and " " not in arg:
            options = list(self.repl.knobs)
        elif command == "knob":
            name = arg.split(" ")[0]
            options = [f"{name} {v}" for v in self.repl.knobs.get(name, [])]
        elif command in ("goto", "diff"):
            options = [str(v.number) for v in self.repl.session.history.versions]
        yield from (Completion(o, -len(arg)) for o in options if o.startswith(arg))


def _marked_lines(source: str, outcome: Outcome | None) -> set[int]:
    if outcome is None:
        return set()
    if outcome.status is Status.compile_error:
        return set(error_lines(source, outcome.log or outcome.message))
    if outcome.status in (Status.launch_error, Status.timeout):
        return {n for n, line in enumerate(source.splitlines(), start=1)
                if line.lstrip().startswith("// @kagent") and any(w in line for w in ("grid", "block", "smem"))}
    return set()


def _wait(seconds: float) -> None:
    time.sleep(seconds)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
