"""Port bindings of every node of the core: bind(), read/write ports, namespaces."""

import logging
import operator
from typing import Annotated

import pytest
from py_trees.common import Status
from py_trees.composites import Sequence
from pydantic import BaseModel

from runtime.engine import EventType, ReactiveRunner
from runtime.messages import Message, ai, human
from runtime.node import AsyncNode, Log, Node, StateCondition, node
from runtime.state import StateManager


class PortState(BaseModel):
    text: str = ""
    normalized: str = ""
    messages: Annotated[list[Message], operator.add] = []
    history: list[Message] = []
    eval_score: float = 0.0
    score: float = 0.0


class Normalize(AsyncNode):
    async def update_async(self) -> Status:
        raw = str(self.read_port("source_text", default=""))
        self.write_port("normalized_text", " ".join(raw.strip().lower().split()))
        return Status.SUCCESS


class Echo(Node):
    def update(self) -> Status:
        self.write_port("out", self.read_port("inp"))
        return Status.SUCCESS


def _injected(node_, schema=PortState) -> StateManager:
    runner = ReactiveRunner(node_, schema)
    return runner.state_manager


# -- bind() -------------------------------------------------------------------------------
def test_bind_is_chainable_and_normalises_keys():
    n = Echo(name="e")
    assert n.bind(inputs={"inp": "state.text"}) is n
    same = n.bind(outputs={"out": "state.normalized"}).bind(inputs={"other": ""}, outputs={"none": None})
    assert same is n
    assert n.input_bindings == {"inp": "text", "other": "other"}
    assert n.output_bindings == {"out": "normalized", "none": "none"}
    assert n.resolve_input_port("inp") == n.resolve_input_port("inp", "ignored") == "text"


def test_state_prefix_and_plain_key_are_equivalent():
    a = Echo(name="a").bind(inputs={"inp": "state.text"})
    b = Echo(name="b").bind(inputs={"inp": "text"})
    assert a.resolve_input_port("inp") == b.resolve_input_port("inp") == "text"


def test_read_write_port_fallbacks():
    n = Echo(name="n")
    sm = _injected(n)
    sm.update({"text": "hello", "inp": "raw port"})
    # no binding, no state_key: the port name itself
    assert n.read_port("inp") == "raw port"
    # no binding: state_key
    assert n.read_port("inp", state_key="state.text") == "hello"
    assert n.read_port("nothing", default="d") == "d"
    # a binding wins over the state_key
    n.bind(inputs={"inp": "text"})
    assert n.read_port("inp", state_key="normalized") == "hello"
    n.write_port("result", 1)
    assert sm.get("result") == 1
    n.write_port("result", "x", state_key="normalized")
    assert sm.get("normalized") == "x"


async def test_custom_async_node_with_bindings_runs():
    n = Normalize(name="norm").bind(inputs={"source_text": "text"}, outputs={"normalized_text": "normalized"})
    runner = ReactiveRunner(n, PortState)
    status = await runner.run(input_data={"text": "  Hello   WORLD "})
    assert status == Status.SUCCESS
    assert runner.state_manager.get("normalized") == "hello world"
    assert not runner.state_manager.contains("normalized_text")


async def test_custom_sync_node_with_bindings_runs():
    n = Echo(name="echo").bind(inputs={"inp": "state.text"}, outputs={"out": "normalized"})
    runner = ReactiveRunner(n, PortState)
    assert await runner.run(input_data={"text": "t"}) == Status.SUCCESS
    assert runner.state_manager.get("normalized") == "t"


# -- write_ports / append_port_messages ---------------------------------------------------
def test_write_ports_is_one_update_one_notification_one_wake():
    n = Echo(name="n").bind(outputs={"a": "text", "b": "normalized"})
    sm = _injected(n)
    changes, wakes = [], []
    sm.subscribe(changes.append)
    sm.add_wake_listener(lambda: wakes.append(1))
    n.write_ports({"a": "A", "b": "B", "c": 0.5}, state_keys={"c": "state.score"})
    assert len(changes) == 1
    assert set(changes[0].keys) == {"text", "normalized", "score"}
    assert len(wakes) == 1
    assert (sm.get("text"), sm.get("normalized"), sm.get("score")) == ("A", "B", 0.5)


def test_write_ports_with_signal_false_does_not_wake():
    n = Echo(name="n")
    sm = _injected(n)
    wakes = []
    sm.add_wake_listener(lambda: wakes.append(1))
    n.write_ports({"text": "x"}, signal=False)
    assert wakes == [] and sm.get("text") == "x"


def test_append_port_messages_uses_reducer():
    n = Echo(name="n").bind(outputs={"chat": "state.messages"})
    sm = _injected(n)
    sm.update({"messages": [human("first")]})
    changes = []
    sm.subscribe(changes.append)
    n.append_port_messages("chat", [ai("second"), human("third")])
    assert [m.content for m in sm.get("messages")] == ["first", "second", "third"]
    assert len(changes) == 1


def test_append_port_messages_without_reducer():
    n = Echo(name="n").bind(outputs={"chat": "history"})
    sm = _injected(n)
    n.append_port_messages("chat", [human("a")])
    n.append_port_messages("chat", [ai("b")])
    assert [m.content for m in sm.get("history")] == ["a", "b"]
    # a key the schema does not declare
    n.append_port_messages("log", ["x"])
    n.append_port_messages("log", ["y"])
    assert sm.get("log") == ["x", "y"]


def test_append_port_messages_in_namespace_uses_reducer():
    n = Echo(name="n", namespace="agent").bind(outputs={"chat": "messages"})
    sm = _injected(n)
    n.append_port_messages("chat", [human("a")])
    n.append_port_messages("chat", [ai("b")])
    assert [m.content for m in sm.get("messages", "agent")] == ["a", "b"]
    assert sm.get("messages") == []


# -- namespaces ---------------------------------------------------------------------------
async def test_namespaced_nodes_are_isolated():
    class Counter(Node):
        def update(self) -> Status:
            self.write_state({"count": (self.read_state("count") or 0) + 1})
            return Status.SUCCESS

    a = Counter(name="A", namespace="left")
    b = Counter(name="B", namespace="right")
    b2 = Counter(name="B2", namespace="right")
    root = Sequence("root", memory=True, children=[a, b, b2])
    runner = ReactiveRunner(root, PortState)
    assert await runner.run() == Status.SUCCESS
    sm = runner.state_manager
    assert sm.get("count", "left") == 1
    assert sm.get("count", "right") == 2
    assert sm.get("count") is None
    assert a.read_state("count") == 1 and b.read_state("count") == 2


def test_node_with_bad_namespace_raises():
    with pytest.raises(ValueError, match="a.."):
        Echo(name="bad", namespace="a..b")


def test_node_without_runner_reports_missing_state():
    with pytest.raises(RuntimeError, match="state manager"):
        Echo(name="alone").read_port("x")


# -- StateCondition -----------------------------------------------------------------------
async def test_state_condition_declarative_through_bound_port():
    cond = StateCondition("good enough", key="score", op=">=", value=0.8).bind(inputs={"score": "eval_score"})
    runner = ReactiveRunner(cond, PortState)
    assert await runner.run(input_data={"eval_score": 0.9, "score": 0.1}) == Status.SUCCESS
    assert await runner.run(input_data={"eval_score": 0.5, "score": 0.95}) == Status.FAILURE


async def test_state_condition_unbound_reads_its_key_and_predicate_form():
    cond = StateCondition("c", key="score", op=">", value=0.5)
    runner = ReactiveRunner(cond, PortState)
    assert await runner.run(input_data={"score": 0.6}) == Status.SUCCESS
    pred = StateCondition("p", predicate=lambda s: s.text == "go")
    runner = ReactiveRunner(pred, PortState)
    assert await runner.run(input_data={"text": "go"}) == Status.SUCCESS
    assert await runner.run(input_data={"text": "stop"}) == Status.FAILURE


def test_state_condition_rejects_bad_arguments():
    with pytest.raises(ValueError, match="op"):
        StateCondition("c", key="x", op="~")
    with pytest.raises(ValueError):
        StateCondition("c")


# -- @node ----------------------------------------------------------------------------------
async def test_function_node_with_bound_inputs_and_outputs():
    @node(name="double")
    def double(state):
        """Double the input."""
        return {"result": state["input"] * 2}

    n = double().bind(inputs={"input": "raw"}, outputs={"result": "state.doubled"})
    assert n.name == "double"
    assert "Double" in type(n).__doc__
    runner = ReactiveRunner(n, PortState)
    assert await runner.run(input_data={"raw": 21}) == Status.SUCCESS
    assert runner.state_manager.get("doubled") == 42
    assert not runner.state_manager.contains("result")


async def test_async_function_node_and_return_kinds():
    @node
    async def check(state):
        return state.get("text") == "ok"

    runner = ReactiveRunner(check(), PortState)
    assert await runner.run(input_data={"text": "ok"}) == Status.SUCCESS
    assert await runner.run(input_data={"text": "no"}) == Status.FAILURE


async def test_function_node_in_namespace_writes_there():
    @node
    def mark(state):
        return {"done_here": True}

    runner = ReactiveRunner(mark(namespace="ns"), PortState)
    await runner.run()
    assert runner.state_manager.get("done_here", "ns") is True
    assert not runner.state_manager.contains("done_here")


# -- Log ------------------------------------------------------------------------------------
async def test_log_template_reads_namespace_and_bound_ports(caplog):
    log = Log("say", message="text={text} port={shown} missing={nope}").bind(inputs={"shown": "normalized"})
    runner = ReactiveRunner(log, PortState)
    events = []
    runner.event_bus.subscribe(events.append, types=[EventType.LOG])
    with caplog.at_level(logging.INFO, logger="jianmu.log"):
        assert await runner.run(input_data={"text": "T", "normalized": "N"}) == Status.SUCCESS
    assert events[0].payload["message"] == "text=T port=N missing={nope}"
    assert events[0].node == "say"
    assert "text=T port=N" in caplog.text


def test_log_rejects_unknown_level():
    with pytest.raises(ValueError, match="loud"):
        Log("l", message="x", level="loud")
