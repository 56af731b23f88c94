"""Undo and redo along a session's version tree: every version kept, a branch after an undo."""

import pytest

from kernel_agent.repair.versions import History


def history(*origins: str) -> History:
    h = History()
    for origin in origins:
        h.add(origin)
    return h


def test_undo_walks_back_to_the_first_version_and_redo_forward_again():
    h = history("original", "fix", "editor")
    assert [h.undo().number, h.undo().number, h.undo()] == [2, 1, None]
    assert [h.redo().number, h.redo().number, h.redo()] == [2, 3, None]


def test_a_version_made_after_an_undo_starts_a_branch_and_keeps_the_undone_one():
    h = history("original", "fix")
    h.undo()
    branch = h.add("editor")
    assert (branch.number, branch.parent) == (3, 1) and len(h.versions) == 3
    assert h.undo().number == 1
    assert h.redo().number == 3  # the child undone last, not the older one
    assert h.goto(2).number == 2 and h.head.ancestry(h) == [2, 1]


def test_a_new_version_inherits_the_knobs_unless_given_and_names_its_model_call():
    h = History()
    h.add("original", knobs={"BLOCK": "128"})
    assert h.add("fix", call=4).knobs == {"BLOCK": "128"} and h.head.call == 4
    assert h.add("knob", knobs={}).knobs == {}


def test_goto_refuses_a_version_that_does_not_exist():
    with pytest.raises(KeyError, match="no version 5; there are 1"):
        history("original").goto(5)
