"""A session's versions of the kernel: every one kept, undo and redo along the tree they form.

Each version has a parent (the version it was made from); undo moves to the parent, redo to the
child undone most recently (the newest child if none was). A new version made after an undo starts a
branch: the versions undone stay in the tree, reachable by number (`goto`).
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class Version(BaseModel):
    number: int  # 1 is the kernel the session started from
    parent: int | None
    origin: str  # original | fix (a model's, accepted) | editor | file (saved outside, seen by watch) | knob
    note: str = ""
    knobs: dict[str, str] = Field(default_factory=dict)
    call: int | None = None  # the transcript's model call whose answer this version is

    def ancestry(self, history: History) -> list[int]:
        """This version's number and its ancestors', back to the first."""
        chain: list[int] = []
        number: int | None = self.number
        while number is not None:
            chain.append(number)
            number = history.get(number).parent
        return chain


class History(BaseModel):
    versions: list[Version] = Field(default_factory=list)
    current: int = 1
    undone: list[int] = Field(default_factory=list)  # versions left by undo, most recent last

    def get(self, number: int) -> Version:
        if not 1 <= number <= len(self.versions):
            raise KeyError(f"no version {number}; there are {len(self.versions)}")
        return self.versions[number - 1]

    @property
    def head(self) -> Version:
        return self.get(self.current)

    def add(self, origin: str, note: str = "", knobs: dict[str, str] | None = None, call: int | None = None) -> Version:
        parent = self.current if self.versions else None
        version = Version(number=len(self.versions) + 1, parent=parent, origin=origin, note=note, call=call,
                          knobs=dict(self.head.knobs if knobs is None and self.versions else knobs or {}))
        self.versions.append(version)
        self.current = version.number
        self.undone = [n for n in self.undone if n != version.number]
        return version

    def undo(self) -> Version | None:
        """Back to the parent; None at the first version."""
        parent = self.head.parent
        if parent is None:
            return None
        self.undone.append(self.current)
        self.current = parent
        return self.head

    def redo(self) -> Version | None:
        """Forward to the child undone most recently (else the newest child); None when there is none."""
        children = [v.number for v in self.versions if v.parent == self.current]
        if not children:
            return None
        undone = [n for n in self.undone if n in children]
        self.current = undone[-1] if undone else children[-1]
        self.undone = [n for n in self.undone if n != self.current]
        return self.head

    def goto(self, number: int) -> Version:
        self.get(number)
        self.current = number
        return self.head
