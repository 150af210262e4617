"""StateManager, Ephemeral scopes and the agreed key names."""

import json
import operator
from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from runtime.messages import Message, ai, human
from runtime.state import (
    Ephemeral,
    InteractionKeys,
    StateKeys,
    StateManager,
    StateValidationError,
    normalize_namespace,
)


class AgentState(BaseModel):
    messages: Annotated[list[Message], operator.add] = []
    items: list[int] = []
    done: bool = False
    score: Annotated[float, Field(ge=0, le=1)] = 0.0
    scratch: Annotated[list[str], Ephemeral(scope="step")] = []
    visits: Annotated[int, Ephemeral(scope="run")] = 0


@pytest.fixture
def sm() -> StateManager:
    return StateManager(AgentState)


# -- get / update / clear ---------------------------------------------------------------
def test_get_returns_schema_default_then_written_value(sm):
    assert sm.get("done") is False
    assert sm.get("missing") is None
    assert sm.get("missing", default=7) == 7
    sm.update({"done": True, "extra_key": "x"})
    assert sm.get("done") is True
    assert sm.get("extra_key") == "x"


def test_get_returns_copies(sm):
    sm.update({"items": [1, 2]})
    got = sm.get("items")
    got.append(3)
    assert sm.get("items") == [1, 2]
    sm.update({"blob": {"a": [1]}}, namespace="ns")
    blob = sm.get("blob", "ns")
    blob["a"].append(2)
    assert sm.get("blob", "ns") == {"a": [1]}


def test_update_keeps_no_reference_to_the_callers_value(sm):
    acc = []
    seen = []
    sm.subscribe(seen.append)
    for i in range(2):
        acc.append(i)
        sm.update({"acc": acc})  # a key the schema does not declare: stored as given
    assert sm.get("acc") == [0, 1]
    assert [c.changes["acc"] for c in seen] == [(None, [0]), ([0], [0, 1])]
    acc.append(99)
    assert sm.get("acc") == [0, 1]


def test_failing_state_subscriber_does_not_break_writes(sm):
    seen = []
    sm.subscribe(lambda change: 1 / 0)
    sm.subscribe(seen.append)
    wakes = []
    sm.add_wake_listener(lambda: wakes.append(1))
    sm.update({"done": True})
    assert sm.get("done") is True
    assert len(seen) == 1 and wakes == [1]


def test_view_returns_copies(sm):
    sm.update({"items": [1]})
    view = sm.view()
    view["items"].append(2)
    assert sm.get("items") == [1]


def test_clear_global_resets_defaults_and_drops_extras(sm):
    sm.update({"done": True, "items": [1], "extra": 1})
    sm.clear(None)
    assert sm.get("done") is False
    assert sm.get("items") == []
    assert not sm.contains("extra")


def test_clear_namespace_leaves_others_alone(sm):
    sm.update({"done": True}, namespace="a")
    sm.update({"done": True}, namespace="b")
    sm.update({"done": True})
    sm.clear("a")
    assert not sm.contains("done", "a")
    assert sm.get("done", "a") is False  # back to the field's default
    assert sm.get("done", "b") is True
    assert sm.get("done") is True
    assert "a" not in sm.namespaces()


# -- reducers ---------------------------------------------------------------------------
def test_reducer_appends_in_global_and_namespaced(sm):
    sm.update({"messages": [human("hi")]})
    sm.update({"messages": [ai("hello")]})
    assert [m.content for m in sm.get("messages")] == ["hi", "hello"]

    sm.update({"messages": [human("a")]}, namespace="agent")
    sm.update({"messages": [human("b")]}, namespace="agent")
    assert [m.content for m in sm.get("messages", "agent")] == ["a", "b"]
    assert len(sm.get("messages")) == 2  # the global list is untouched


def test_field_without_reducer_replaces(sm):
    sm.update({"items": [1]})
    sm.update({"items": [2]})
    assert sm.get("items") == [2]


def test_reducer_values_are_validated(sm):
    sm.update({"messages": [{"role": "user", "content": "dict in"}]})
    assert isinstance(sm.get("messages")[0], Message)


# -- validation -------------------------------------------------------------------------
def test_validation_error_names_key(sm):
    with pytest.raises(StateValidationError, match="done") as info:
        sm.update({"done": "not a bool"})
    assert isinstance(info.value, ValueError)
    assert sm.get("done") is False


def test_validation_error_names_namespaced_key(sm):
    with pytest.raises(StateValidationError, match=r"agent\.items"):
        sm.update({"items": ["x"]}, namespace="agent")


def test_validation_applies_field_constraints(sm):
    with pytest.raises(StateValidationError, match="score"):
        sm.update({"score": 1.5})
    sm.update({"score": 0.5})
    assert sm.get("score") == 0.5


def test_failed_update_is_atomic(sm):
    with pytest.raises(StateValidationError):
        sm.update({"items": [1], "done": "nope"})
    assert sm.get("items") == []


# -- namespaces -------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["a.", " a", "a ", ".a", "a..b"])
def test_bad_namespace_raises_naming_it(sm, bad):
    with pytest.raises(ValueError, match=repr(bad).replace(".", r"\.")):
        sm.update({"x": 1}, namespace=bad)
    with pytest.raises(ValueError):
        normalize_namespace(bad)


@pytest.mark.parametrize("empty", ["", None])
def test_empty_namespace_is_global(sm, empty):
    sm.update({"done": True}, namespace=empty)
    assert sm.get("done") is True
    assert sm.get("done", namespace="") is True
    assert normalize_namespace(empty) is None


def test_nested_namespace_is_allowed(sm):
    sm.update({"done": True}, namespace="a.b")
    assert sm.get("done", "a.b") is True
    assert sm.get("done", "a") is False


# -- change subscription ----------------------------------------------------------------
def test_subscription_reports_changed_keys_with_old_and_new(sm):
    seen = []
    unsubscribe = sm.subscribe(seen.append)
    sm.update({"done": True, "items": [1]})
    assert len(seen) == 1
    change = seen[0]
    assert change.namespace is None
    assert set(change.keys) == {"done", "items"}
    assert change.changes["done"] == (False, True)
    assert change.changes["items"] == ([], [1])

    sm.update({"done": True})  # no actual change
    assert len(seen) == 1

    sm.update({"messages": [human("x")]}, namespace="ns")
    assert seen[-1].namespace == "ns"
    old, new = seen[-1].changes["messages"]
    assert old is None and [m.content for m in new] == ["x"]

    unsubscribe()
    sm.update({"done": False})
    assert len(seen) == 2


def test_update_wakes_only_with_signal(sm):
    wakes = []
    sm.add_wake_listener(lambda: wakes.append(1))
    sm.update({"done": True}, signal=False)
    assert wakes == []
    sm.update({"done": False})
    assert wakes == [1]


# -- snapshot / restore -----------------------------------------------------------------
def test_snapshot_is_json_and_restore_round_trips(sm):
    sm.update({"messages": [human("hi"), ai("yo")], "done": True, "llm.usage": {"total": 3}})
    sm.update({"messages": [human("ns")], "note": "n"}, namespace="agent")
    snap = sm.snapshot()
    text = json.dumps(snap)

    other = StateManager(AgentState)
    other.restore(json.loads(text))
    msgs = other.get("messages")
    assert all(isinstance(m, Message) for m in msgs)
    assert [m.content for m in msgs] == ["hi", "yo"]
    assert other.get("done") is True
    assert other.get("llm.usage") == {"total": 3}
    assert isinstance(other.get("messages", "agent")[0], Message)
    assert other.get("note", "agent") == "n"
    assert other.snapshot() == snap


def test_restore_does_not_reapply_reducers(sm):
    sm.update({"messages": [human("a")]})
    snap = sm.snapshot()
    sm.update({"messages": [human("b")]})
    sm.restore(snap)
    assert [m.content for m in sm.get("messages")] == ["a"]
    sm.restore(snap)
    assert [m.content for m in sm.get("messages")] == ["a"]


def test_restore_drops_keys_absent_from_snapshot(sm):
    snap = sm.snapshot()
    sm.update({"done": True, "later": 1})
    sm.update({"x": 1}, namespace="ns")
    sm.restore(snap)
    assert sm.get("done") is False
    assert not sm.contains("later")
    assert not sm.contains("x", "ns")


def test_state_instance_initial_values():
    sm = StateManager(AgentState(done=True, items=[4]))
    assert sm.get("done") is True
    assert sm.get("items") == [4]


# -- ephemeral --------------------------------------------------------------------------
def test_ephemeral_invalid_scope_raises():
    with pytest.raises(ValueError, match="scope"):
        Ephemeral(scope="tick")


def test_reset_ephemeral_by_scope(sm):
    sm.update({"scratch": ["a"], "visits": 3})
    sm.update({"scratch": ["b"], "visits": 2}, namespace="loop")
    sm.reset_ephemeral("step", "loop")
    assert sm.get("scratch", "loop") == []
    assert sm.get("scratch") == ["a"]
    assert sm.get("visits", "loop") == 2
    sm.reset_ephemeral("run")
    assert sm.get("visits") == 0
    assert sm.get("visits", "loop") == 0
    assert sm.get("scratch") == ["a"]


# -- keys -------------------------------------------------------------------------------
def test_state_keys_defaults():
    keys = StateKeys()
    assert keys.usage == "llm.usage"
    assert keys.messages == "messages"
    assert keys.actions == "actions"
    assert StateKeys(messages="chat").messages == "chat"
    assert InteractionKeys.TERMINATION
    assert len({InteractionKeys.TERMINATION, InteractionKeys.PENDING, InteractionKeys.RESPONSES}) == 3


def test_a_stored_history_is_validated_from_its_json_in_one_pass_and_bad_text_is_named():
    class Chat(BaseModel):
        messages: list[Message] = []

    sm = StateManager(Chat)
    history = [human("hi"), ai("hello")]
    text = json.dumps([m.model_dump(mode="json") for m in history])
    assert sm.validate_json("messages", text) == history
    assert sm.validate_json("free", '{"a": [1]}') == {"a": [1]}  # a key the schema does not name: plain JSON
    with pytest.raises(StateValidationError, match=r"^state key 'agent\.messages': 1\.role: "):
        sm.validate_json("messages", '[{"role": "user"}, {"role": "robot"}]', "agent")
    with pytest.raises(StateValidationError, match=r"^state key 'messages': Invalid JSON: EOF"):
        sm.validate_json("messages", '[{"role": "user"')
    with pytest.raises(StateValidationError, match=r"^state key 'free': not JSON"):
        sm.validate_json("free", "{")
