"""Issue #13 point 7: an edit that cannot apply is an `EditError` of one line, and changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.session import DebugSession, EditError

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = str(ROOT / "sample_trees/text_pipeline.py")
APPROVALS = str(ROOT / "sample_trees/approval_guard.py")
NORMALIZE = "TextPipeline/Normalize"


@pytest.fixture
def session(tmp_path) -> DebugSession:
    return DebugSession.load(PIPELINE, db=tmp_path / "s.db")


def rejected(action, match: str) -> str:
    with pytest.raises(EditError, match=match) as caught:
        action()
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_binding_an_undeclared_port_or_a_non_string_key_is_an_edit_error(session):
    before = session.bindings()
    rejected(lambda: session.edit_binding(NORMALIZE, "in", "no_such_port", "text"),
             "has no input port 'no_such_port' \\(ports: source_text\\)")
    rejected(lambda: session.edit_binding(NORMALIZE, "out", "source_text", "text"), "has no output port")
    for key in (5, None, ["text"], {"k": "v"}):
        rejected(lambda key=key: session.edit_binding(NORMALIZE, "in", "source_text", key), "a state key is text")
    assert session.bindings() == before
    assert not any(e.type == "binding.changed" for e in session.events)


def test_editing_an_unknown_state_key_or_namespace_is_an_edit_error(session):
    before = session.state_snapshot()
    rejected(lambda: session.edit_state(None, "no_such_key", 1), "no state key 'no_such_key'")
    rejected(lambda: session.edit_state("nowhere", "words", 1), "no namespace 'nowhere' \\(namespaces: all, unique\\)")
    rejected(lambda: session.edit_state(None, 7, 1), "a state key is non-empty text")
    rejected(lambda: session.edit_state(3, "words", 1), "namespace must be a string")
    assert session.state_snapshot() == before
    session.edit_state("all", "words", 3)  # a key the schema declares, in a namespace of the tree
    assert session.state_snapshot()["all"]["words"] == 3


async def test_answering_an_unknown_approval_is_an_edit_error(tmp_path):
    session = DebugSession.load(APPROVALS, db=tmp_path / "s.db")
    stop = await session.continue_()
    assert stop.kind == "suspended" and session.pending_approvals()
    rejected(lambda: session.approve("no-such-id"), "unknown approval 'no-such-id'")
    rejected(lambda: session.deny("no-such-id", "because"), "unknown approval 'no-such-id'")
    request = session.pending_approvals()[0]
    session.approve(request.id)
    rejected(lambda: session.deny(request.id, "too late"), "is already approved")
