"""Deferred subtrees: `FlattenedAgentNode` compiling on first entry, and skills run by `SkillNode`.

The research skill here is a ReAct sub-agent with its own tool, on a model that needs no
script position (it answers from the conversation it is sent), so two researchers side by
side, or a run restored in a fresh tree, get the same answers whatever the order of calls.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pytest
from py_trees.common import ParallelPolicy, Status

from runtime import (
    Agent,
    Ephemeral,
    ModelClient,
    ReActState,
    RunContext,
    StateManager,
    create_react_node,
    human,
    tool,
)
from runtime.engine.behaviour import JianmuNodeMixin
from runtime.engine.deps import InjectPayload
from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import InMemoryCheckpointStore, SQLiteCheckpointStore
from runtime.messages import ToolCall, ai
from runtime.model import ModelResponse, Usage
from runtime.node import (
    AsyncNode,
    FlattenedAgentNode,
    Node,
    Parallel,
    Sequence,
    Skill,
    SkillNode,
    node,
)
from runtime.node.flattened import subtree_namespace
from studio.app import StudioApp
from studio.session import DebugSession
from studio.widgets.tree_pane import TreePane

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = str(ROOT / "sample_trees/skill_subagent.py")
NAMESPACE = re.compile(r"skill_runtime\.[A-Za-z0-9_-]+_[0-9a-f]{8}")


class State(ReActState):
    city_a: str = "Paris"
    city_b: str = "Kyoto"
    notes_a: str | None = None
    notes_b: str | None = None
    skill_result: Annotated[Any, Ephemeral(scope="run")] = None


class Researcher:
    """A model without a script position: asks the guidebook once, then answers from what it said."""

    async def complete(self, messages, config, on_delta=None) -> ModelResponse:
        observations = [m.content for m in messages if m.role == "tool"]
        if observations:
            reply = ai(f"notes: {observations[-1]}")
        else:
            city = next(m.content for m in messages if m.role == "user")
            reply = ai(None, [ToolCall.from_raw(f"call_{city}", "guidebook", {"city": city})])
        return ModelResponse(message=reply, usage=Usage.estimate(messages, reply), model="researcher",
                             finish_reason="tool_calls" if reply.tool_calls else "stop")


@tool
def guidebook(city: str) -> str:
    """A city's entry."""
    return f"{city} in spring"


@node(name="frame")
def frame(state: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [human(state["city"])]}


def research() -> Sequence:
    return Sequence("research", memory=True, children=[frame(), create_react_node(name="agent", tools=[guidebook])])


RESEARCH = Skill("research", build=research, inputs=("city",))
AGENT = "research/agent/agent.loop"  # under a SkillNode's path: the compiled ReAct loop


def context() -> RunContext:
    return RunContext(model_client=ModelClient(Researcher()))


def researchers(composite=Sequence, name_b: str = "research") -> Any:
    """The same skill twice: city_a → notes_a, city_b → notes_b."""
    children = [SkillNode("research", RESEARCH, inputs={"city": "city_a"}, outputs={"skill_result": "notes_a"}),
                SkillNode(name_b, RESEARCH, inputs={"city": "city_b"}, outputs={"skill_result": "notes_b"})]
    if composite is Parallel:
        return Parallel("both", policy=ParallelPolicy.SuccessOnAll(synchronise=True), children=children)
    return Sequence("both", memory=True, children=children)


def skill_namespaces(runner: ReactiveRunner) -> set[str]:
    return {ns for ns in runner.state_manager.namespaces() if ns and ns.startswith("skill_runtime.")}


# -- namespaces ------------------------------------------------------------------------------------
async def test_two_instances_of_a_skill_side_by_side_run_in_their_own_namespaces():
    runner = ReactiveRunner(researchers(Parallel), State, context())
    conversations: dict[str, set[str]] = {}

    def watch(runner: ReactiveRunner, report) -> None:
        for ns in skill_namespaces(runner):
            for message in runner.state_manager.get("messages", ns):
                conversations.setdefault(ns, set()).add(message.content or message.tool_calls[0].arguments["city"])

    runner.add_tick_hook(after=watch)
    assert await runner.run() == Status.SUCCESS
    first, second = runner.nodes["both/research"], runner.nodes["both/research#2"]
    assert first._ns != second._ns
    assert NAMESPACE.fullmatch(first._ns) and first._ns.startswith("skill_runtime.research_")
    assert conversations == {  # both ran at once, each in its own namespace, nothing mixed
        first._ns: {"Paris", "Paris in spring", "notes: Paris in spring"},
        second._ns: {"Kyoto", "Kyoto in spring", "notes: Kyoto in spring"}}
    assert runner.state_manager.get("notes_a") == "notes: Paris in spring"
    assert runner.state_manager.get("notes_b") == "notes: Kyoto in spring"
    # derived from the path alone: the same tree gets the same namespaces in any process
    assert first._ns == subtree_namespace("research", "both/research")
    again = ReactiveRunner(researchers(Parallel), State, context())
    await again.step()
    assert skill_namespaces(again) == {first._ns, second._ns}


def test_a_namespace_is_one_segment_whatever_the_name():
    assert NAMESPACE.fullmatch(subtree_namespace("look up: a.b", "root/look up: a.b"))
    assert subtree_namespace("x", "root/x") != subtree_namespace("x", "root/x#2")


# -- injection -------------------------------------------------------------------------------------
class Probe(AsyncNode):
    """Records the services it was injected with, and emits an event through them."""

    def __init__(self, name: str = "probe", namespace: str | None = None):
        super().__init__(name=name, namespace=namespace)
        self.seen: dict[str, Any] = {}

    async def update_async(self) -> Status:
        self.seen = {"ctx": self.ctx, "state": self.state_manager, "bus": self.event_bus,
                     "model": self.model_client, "namespace": self.namespace}
        self.write_state({"probed": True})
        self.emit("probe.ran", {})
        return Status.SUCCESS


def seed(city: str) -> AsyncNode:
    @node(name="seed")
    def write_city(state: dict[str, Any]) -> dict[str, Any]:
        return {"city": city}

    return write_city()


class Nested(FlattenedAgentNode):
    """A deferred subtree shaped by the state it reads at compile time, holding another deferred subtree."""

    def build_subtree(self):
        city = self.read_port("city")
        return Sequence("outer", memory=True, children=[Probe(), seed(city), SkillNode(f"inner_{city}", PROBING)])


PROBING = Skill("probing", build=lambda: Sequence("body", memory=True, children=[Probe(), research()]),
                inputs=("city",))


async def test_compiled_nodes_get_the_runners_services_at_any_depth():
    runner = ReactiveRunner(Sequence("root", memory=True, children=[Nested("nested")]), State, context())
    events = []
    runner.event_bus.subscribe(events.append, types=["probe.ran", "subtree.compiled"])
    runner.state_manager.update({"city": "Lima"})
    results = []  # the inner skill's result lands in the outer subtree's namespace, cleared in the same tick
    runner.state_manager.subscribe(lambda c: results.append((c.namespace, c.changes.get("skill_result"))))
    assert await runner.run() == Status.SUCCESS
    outer_probe = runner.nodes["root/nested/outer/probe"]
    inner = runner.nodes["root/nested/outer/inner_Lima"]
    inner_probe = runner.nodes["root/nested/outer/inner_Lima/body/probe"]
    for probe in (outer_probe, inner_probe):
        assert probe.seen["ctx"] is runner.context and probe.seen["state"] is runner.state_manager
        assert probe.seen["bus"] is runner.event_bus and probe.seen["model"] is runner.context.model_client
    # the inner skill reads its inputs in the outer subtree's namespace and runs in its own
    outer_ns = runner.nodes["root/nested"]._ns
    assert inner.namespace == outer_probe.seen["namespace"] == outer_ns
    assert inner_probe.seen["namespace"] == inner._ns == subtree_namespace("inner_Lima", "root/nested/outer/inner_Lima")
    assert (outer_ns, (None, "notes: Lima in spring")) in results  # the inner researcher's model came from ctx
    assert [(e.type, e.node) for e in events] == [
        ("subtree.compiled", "root/nested"), ("probe.ran", "root/nested/outer/probe"),
        ("subtree.compiled", "root/nested/outer/inner_Lima"), ("probe.ran", "root/nested/outer/inner_Lima/body/probe")]


def test_compiled_nodes_get_the_services_the_node_got_even_without_a_runner():
    context, state = RunContext(), StateManager(State)
    skill_node = SkillNode("s", RESEARCH)
    skill_node.inject(InjectPayload(context, state, wake_up=None))  # no runner to tell: tree_changed is None
    assert skill_node._compile_subtree() and not skill_node._compile_subtree()
    compiled = [n for n in skill_node.decorated.iterate() if isinstance(n, JianmuNodeMixin)]
    assert compiled and all(n.ctx is context and n.state_manager is state for n in compiled)


# -- terminate -------------------------------------------------------------------------------------
async def test_terminate_clears_the_namespace_and_the_ones_nested_in_it():
    builds = []

    def scratch() -> Sequence:
        builds.append(1)
        return Sequence("body", memory=True, children=[Probe("probe", namespace="scratch"), research()])

    skill = Skill("scratchy", build=scratch, inputs=("city",))
    runner = ReactiveRunner(SkillNode("s", skill, inputs={"city": "city_a"}), State, context())
    await runner.run(max_ticks=3)
    ns = runner.nodes["s"]._ns
    assert {ns, f"{ns}.scratch"} <= set(runner.state_manager.namespaces())
    runner.stop()
    assert skill_namespaces(runner) == set()
    runner.nodes["s"].stop(Status.INVALID)  # a second terminate is harmless (pitfall 5)
    assert await runner.run() == Status.SUCCESS
    assert skill_namespaces(runner) == set()
    assert runner.state_manager.get("skill_result") == "notes: Paris in spring"
    # re-entered, not rebuilt: one subtree for the life of the node
    assert builds == [1] and runner.nodes["s/body"] is runner.nodes["s"].decorated


# -- inputs, outputs and bad input -----------------------------------------------------------------
async def test_inputs_come_through_bindings_and_the_result_lands_in_skill_result():
    echo = Skill("echo", build=lambda: Sequence("body", memory=True, children=[research()]), inputs=("city",),
                 outputs=("final_answer", "rounds"))
    desk = SkillNode("desk", echo, namespace="trip", inputs={"city": "where"})
    assert desk.input_ports == ("city",) and desk.output_ports == ("skill_result",)
    runner = ReactiveRunner(desk, State, context())
    runner.state_manager.update({"where": "Oslo"}, "trip")
    assert await runner.run() == Status.SUCCESS
    # two declared outputs: the result names them; written in the node's own namespace
    assert runner.state_manager.get("skill_result", "trip") == {"final_answer": "notes: Oslo in spring", "rounds": 2}
    assert runner.state_manager.get("skill_result") is None


async def test_a_missing_input_fails_the_node_with_one_line_naming_it():
    agent = Agent(Sequence("root", memory=True, children=[SkillNode("research", RESEARCH, inputs={"city": "nowhere"})]),
                  state_schema=State, context=context())
    result = await agent.run()
    assert result.status == Status.FAILURE
    assert result.error == ("root/research: SkillInputError: skill 'research' needs input 'city', but state key "
                            "'nowhere' is not set (bind the input: inputs={'city': '<state key>'})")
    assert skill_namespaces(agent.runner) == set()


def test_binding_a_port_the_skill_does_not_declare_is_refused():
    with pytest.raises(ValueError, match="SkillNode 'r': skill 'research' has no input 'town' \\(inputs: city\\)"):
        SkillNode("r", RESEARCH, inputs={"town": "city_a"})
    with pytest.raises(ValueError, match="has no output 'notes'"):
        SkillNode("r", RESEARCH, outputs={"notes": "notes_a"})
    with pytest.raises(ValueError, match="declare at least one output"):
        Skill("empty", build=research, outputs=())


def _broken() -> Any:
    raise KeyError("no such tool: atlas")


@pytest.mark.parametrize("build, error", [
    (_broken, "SubtreeBuildError: building the subtree failed: KeyError: 'no such tool: atlas'"),
    (lambda: "research", "SubtreeBuildError: build_subtree() returned str, not a py_trees behaviour"),
])
async def test_a_skill_whose_build_fails_fails_its_node(build, error):
    agent = Agent(Sequence("root", memory=True, children=[SkillNode("broken", Skill("broken", build=build))]),
                  state_schema=State)
    result = await agent.run()
    assert result.status == Status.FAILURE and result.error == f"root/broken: {error}"
    assert "root/broken/(not compiled)" in agent.runner.nodes  # nothing half-installed


def test_a_subtree_that_already_has_a_parent_is_refused():
    shared = research()
    Sequence("elsewhere", memory=True, children=[shared])
    node_ = SkillNode("s", Skill("shared", build=lambda: shared))
    with pytest.raises(Exception, match="already belongs to 'elsewhere'"):
        node_._compile_subtree()


# -- the runner's view -----------------------------------------------------------------------------
class Mark(Node):
    def update(self) -> Status:
        return Status.SUCCESS


async def test_the_runner_indexes_compiled_nodes_in_the_tick_that_compiles_them():
    store = InMemoryCheckpointStore()
    root = Sequence("root", memory=True, children=[Mark("before"), researchers()])
    runner = ReactiveRunner(root, State, context(), checkpointer=store)
    assert "root/both/research/(not compiled)" in runner.nodes
    report = await runner.step()
    assert "root/both/research/(not compiled)" not in runner.nodes
    assert "root/both/research#2/(not compiled)" in runner.nodes  # not entered yet
    frame_path = "root/both/research/research/frame"
    assert runner.nodes[frame_path].path == frame_path
    assert runner.statuses()[frame_path] == Status.RUNNING and frame_path in report.ticked
    # a re-index in the middle of the tick keeps the changes made before it
    assert report.changed["root/before"] == (Status.INVALID, Status.SUCCESS)
    assert report.changed[frame_path] == (Status.INVALID, Status.RUNNING)
    assert store.get(runner.checkpoints.head).statuses[frame_path] == "RUNNING"


async def test_a_run_nobody_watches_still_knows_the_compiled_paths():
    runner = ReactiveRunner(Sequence("root", memory=True, children=[Nested("nested")]), State, context())
    runner.state_manager.update({"city": "Lima"})
    assert await runner.run() == Status.SUCCESS  # no observer: ticks are not detailed
    inner = runner.nodes["root/nested/outer/inner_Lima"]
    assert inner.path == "root/nested/outer/inner_Lima"
    assert "root/nested/outer/inner_Lima/body/research/agent" in runner.statuses()


# -- checkpoints -----------------------------------------------------------------------------------
def _comparable(events) -> list[tuple]:
    return [(e.type, e.tick, e.node, {k: v for k, v in e.payload.items() if not k.endswith("_ms")})
            for e in events if e.type != "run.started"]


async def _run(runner: ReactiveRunner) -> list:
    events = []
    subscription = runner.event_bus.subscribe(events.append)
    await runner.run()
    subscription.close()
    return events


async def test_every_checkpoint_restores_in_a_fresh_tree_and_runs_on_to_the_same_end(tmp_path):
    path = tmp_path / "runs.db"
    store = SQLiteCheckpointStore(path)
    runner = ReactiveRunner(researchers(Parallel), State, context(), checkpointer=store)
    events = await _run(runner)
    final = runner.state_manager.snapshot()
    running = [c.id for c in store.list(runner.run_id) if c.status == "RUNNING"]
    store.close()
    inside = 0
    for checkpoint_id in running:
        store = SQLiteCheckpointStore(path)  # a fresh process: a new store handle, a new tree
        saved = store.get(checkpoint_id)
        again = ReactiveRunner(researchers(Parallel), State, context(), checkpointer=store)
        again.restore(checkpoint_id)
        if saved.statuses.get(f"both/research/{AGENT}") == "RUNNING":
            inside += 1
            assert saved.resume["both/research"]["data"] == {"compiled": True}
            assert set(again.nodes) == set(saved.statuses)  # compiled again, nothing missing
            assert again.state_manager.snapshot() == saved.state
            assert again.nodes["both/research"].status == Status.RUNNING
        resumed = await _run(again)
        assert again.state_manager.snapshot() == final, f"state differs after restoring checkpoint {checkpoint_id}"
        position = saved.event_position
        assert _comparable(resumed) == _comparable(e for e in events if e.seq > position)
        store.close()
    assert inside >= 3


async def test_rewinding_to_before_the_compile_keeps_the_compiled_subtree():
    store = InMemoryCheckpointStore()
    runner = ReactiveRunner(researchers(), State, context(), checkpointer=store)
    await runner.run()
    final, subtree = runner.state_manager.snapshot(), runner.nodes["both/research"].decorated
    first = store.list(runner.run_id)[0]
    assert "both/research/(not compiled)" in store.get(first.id).statuses
    runner.restore(first.id)  # compiled once: the subtree stays, INVALID, and is entered again
    assert runner.nodes["both/research"].decorated is subtree and subtree.status == Status.INVALID
    assert await runner.run() == Status.SUCCESS
    assert runner.state_manager.snapshot() == final
    assert runner.fork(first.id, state_updates={"city_b": "Lima"}) == "fork-1"
    await runner.run()
    assert runner.state_manager.get("notes_b") == "notes: Lima in spring"


async def test_a_restored_subtree_is_built_from_the_checkpoints_state():
    """`Nested` names its inner skill after state it reads at compile time; a fresh tree has none of it."""
    store = InMemoryCheckpointStore()
    runner = ReactiveRunner(Sequence("root", memory=True, children=[Nested("nested")]), State, context(),
                            checkpointer=store)
    await runner.run(input_data={"city": "Lima"})
    final = runner.state_manager.snapshot()
    inner = "root/nested/outer/inner_Lima/body/research/agent"
    mid = next(c.id for c in store.list(runner.run_id) if store.get(c.id).statuses.get(inner) == "RUNNING")
    again = ReactiveRunner(Sequence("root", memory=True, children=[Nested("nested")]), State, context(),
                           checkpointer=store)
    again.restore(mid)
    assert again.state_manager.get("city") == "Lima" and inner in again.nodes
    assert await again.run() == Status.SUCCESS
    assert again.state_manager.snapshot() == final


async def test_a_fork_can_rebind_a_node_inside_a_compiled_subtree():
    store = InMemoryCheckpointStore()
    runner = ReactiveRunner(researchers(), State, context(), checkpointer=store)
    await runner.run()
    mid = next(c.id for c in store.list(runner.run_id)
               if store.get(c.id).statuses.get(f"both/research/{AGENT}") == "RUNNING")
    again = ReactiveRunner(researchers(), State, context(), checkpointer=store)
    done = f"both/research/{AGENT}/agent.done"
    again.fork(mid, binding_changes={done: {"inputs": {"done": "never"}}})
    assert again.nodes[done].input_bindings == {"done": "never"}


# -- the studio ------------------------------------------------------------------------------------
PARIS_LLM = "TripBrief/ResearchParis/research/researcher/researcher.loop/researcher.llm"


@pytest.fixture
def scripted(monkeypatch):
    for name in ("JIANMU_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


async def test_a_debug_session_shows_compiled_nodes_and_their_namespace(tmp_path, scripted):
    db = tmp_path / "runs.db"
    session = DebugSession.load(SAMPLE, db=db)
    assert "TripBrief/ResearchParis/(not compiled)" in {view.path for view in session.node_views()}
    for _ in range(2):
        await session.step()
    views = {view.path: view for view in session.node_views()}
    assert views["TripBrief/ResearchParis"].children == ["TripBrief/ResearchParis/research"]
    assert views[PARIS_LLM].status == Status.RUNNING
    assert views[PARIS_LLM].namespace == subtree_namespace("ResearchParis", "TripBrief/ResearchParis")
    assert "TripBrief/ResearchKyoto/(not compiled)" in views
    assert (await session.continue_()).kind == "finished"
    assert session.agent.result_from(session.runner).final_answer.startswith("Kyoto")
    mid = next(row.id for row in session.checkpoints() if row.tick == 2)
    # the recorded run, reopened without running it: the viewed checkpoint's subtrees are shown
    recorded = DebugSession.open_recorded(db)
    recorded.select_checkpoint(mid)
    views = {view.path: view for view in recorded.node_views()}
    assert views[PARIS_LLM].status == Status.RUNNING
    # compiled later: not drawn at tick 2 (issue #10: the past is wholly the past)
    assert "TripBrief/ResearchKyoto/research/frame" not in views
    assert views["TripBrief/ResearchKyoto"].children == []


async def test_the_tree_pane_follows_the_compiled_subtree(tmp_path, scripted):
    app = StudioApp(DebugSession.load(SAMPLE, db=tmp_path / "runs.db"))
    async with app.run_test(size=(140, 45)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("n")
        await app.workers.wait_for_complete()
        await pilot.pause()
        app.main.drain()
        await pilot.pause()
        pane = app.main.query_one(TreePane)
        assert "TripBrief/ResearchParis/(not compiled)" not in pane.statuses()
        assert "⟨skill_runtime.ResearchParis_" in str(pane.label_of("TripBrief/ResearchParis/research/frame"))


def test_the_sample_runs_headless_to_its_answer(tmp_path):
    result = subprocess.run([sys.executable, "-m", "studio.cli", "run", SAMPLE, "--db", str(tmp_path / "r.db")],
                            capture_output=True, text=True, cwd=ROOT, timeout=120,
                            env={k: v for k, v in os.environ.items() if not k.endswith("_BASE_URL")})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].startswith("final answer: Kyoto: warmer, drier")
