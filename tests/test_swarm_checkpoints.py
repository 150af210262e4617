"""A swarm survives a checkpoint: its agents are recorded with the host's checkpoints (compactly), and
restoring any checkpoint, in this process or another, brings back the agents, their runners and their
mailboxes, and the run finishes as the original did."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from py_trees.common import Status
from pydantic import BaseModel

from runtime import Agent, ModelClient, ReActState, RunContext, ScriptedProvider, create_react_node
from runtime.debug.children import PastAgents
from runtime.memory.checkpoint import InMemoryCheckpointStore, IOReplayer, open_store
from runtime.memory.checkpoint.agents import saved_agents
from runtime.node import Node, Sequence
from runtime.state import StateValidationError
from runtime.swarm import SendMessage, SpawnAgent, SwarmNode, SwarmRuntime, WaitForever, WaitMessage
from runtime.swarm.mailbox import Mailbox, SwarmMessage
from studio.loader import load_tree

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = str(ROOT / "sample_trees" / "swarm_chat.py")
RESEARCH_LLM = "@researcher/Researcher/Research/Research.loop/Research.llm"


def agents_of(agent: Agent) -> dict[str, tuple]:
    """Each agent of the run's swarm as a user sees it end: its record, its tree's statuses, its state."""
    swarm = agent.context.runtime
    runners = swarm.runners()
    return {agent_id: (record.status, record.result, swarm.mailbox_size(agent_id),
                       {p: s.value for p, s in runners[agent_id].statuses().items()} if agent_id in runners else None,
                       runners[agent_id].state_manager.snapshot() if agent_id in runners else None)
            for agent_id, record in swarm.agents.items()}


async def run_sample(store) -> tuple[Agent, dict, dict]:
    """The sample run to its end recording into `store`: (its agent, its final state, its agents at the end)."""
    loaded = load_tree(SAMPLE)
    agent = loaded.agent
    agent.runner = agent.make_runner(checkpointer=store)
    result = await asyncio.wait_for(agent.run(loaded.input_data), 30)
    assert result.ok, result.error
    return agent, agent.runner.state_manager.snapshot(), agents_of(agent)


async def restored(store, checkpoint_id: int) -> Agent:
    """The sample built again (as another process would) and restored at a checkpoint, not run yet."""
    agent = load_tree(SAMPLE).agent
    agent.runner = agent.make_runner(checkpointer=store)
    agent.runner.restore(checkpoint_id)
    return agent


async def test_restoring_any_checkpoint_of_a_swarm_run_finishes_as_the_original(store_name):
    store = open_store(store_name)
    original, final, agents = await run_sample(store)
    await original.context.runtime.shutdown()
    checkpoints = store.list(original.runner.run_id)
    assert [c.tick for c in checkpoints] == [0, 1, 2, 3, 4]
    assert set(saved_agents(store.get(checkpoints[-1].id))) == {"", "coordinator", "researcher", "writer"}
    for checkpoint in checkpoints:
        agent = await restored(store, checkpoint.id)
        try:
            result = await asyncio.wait_for(agent.run(), 30)
            assert result.ok, f"restoring tick {checkpoint.tick}: {result.error}"
            assert agent.runner.state_manager.snapshot() == final, f"restoring tick {checkpoint.tick}"
            await agent.context.runtime.wait_finished("writer")
            assert agents_of(agent) == agents, f"restoring tick {checkpoint.tick}"
        finally:
            await agent.context.runtime.shutdown()
    store.close()


async def test_a_restored_checkpoint_brings_back_the_agents_runners_and_mailboxes(tmp_path):
    store = open_store(tmp_path / "runs.db")
    original, _, _ = await run_sample(store)
    await original.context.runtime.shutdown()
    mid = store.list(original.runner.run_id)[3]  # tick 3: the coordinator waits, its agents have worked
    agent = await restored(store, mid.id)
    swarm = agent.context.runtime
    try:
        runners = swarm.runners()
        assert set(runners) == {"researcher", "writer"}
        saved = store.get(mid.id)
        for agent_id, runner in runners.items():  # each as the checkpoint holds it
            assert runner.state_manager.snapshot()[""] == saved.state[f"@{agent_id}"]
            assert {p: s.value for p, s in runner.statuses().items()} == {
                path.removeprefix(f"@{agent_id}/"): status for path, status in saved.statuses.items()
                if path.startswith(f"@{agent_id}/")}
            assert runner.tick_count == saved_agents(saved)[agent_id]["runner"]["tick"] > 0
        assert runners["researcher"].state_manager.get("messages")[0].content.startswith("Three hives")
        assert swarm.mailbox_size("writer") == 1  # the coordinator's group note, still unread
        assert swarm.agent("writer").spawned_by == "Coordinator/Hire/Hire writer"
        assert swarm.agent("researcher").groups == {"team"}
    finally:
        await swarm.shutdown()
    store.close()


RESTORE_IN_A_NEW_PROCESS = """
import asyncio, json, sys
from runtime.memory.checkpoint import open_store
from studio.loader import load_tree

async def main():
    store = open_store(sys.argv[2])
    agent = load_tree(sys.argv[1]).agent
    agent.runner = agent.make_runner(checkpointer=store)
    agent.runner.restore(int(sys.argv[3]))
    result = await agent.run()
    swarm = agent.context.runtime
    await swarm.wait_finished("writer")
    print(json.dumps({"ok": result.ok, "state": agent.runner.state_manager.snapshot(),
                      "agents": {a: r.status for a, r in swarm.agents.items()},
                      "writer": swarm.runners()["writer"].state_manager.snapshot()}))
    await swarm.shutdown()

asyncio.run(main())
"""


async def test_a_swarm_run_restored_in_a_new_process_finishes_as_the_original(store_name):
    store = open_store(store_name)
    original, final, agents = await run_sample(store)
    await original.context.runtime.shutdown()
    checkpoints = store.list(original.runner.run_id)
    store.close()
    for checkpoint in (checkpoints[2], checkpoints[3]):  # the agents just spawned; the agents done, unread
        done = subprocess.run([sys.executable, "-c", RESTORE_IN_A_NEW_PROCESS, SAMPLE, store_name, str(checkpoint.id)],
                              capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout.strip().splitlines()[-1])
        assert out["ok"] and out["state"] == final
        assert out["agents"] == {agent_id: record[0] for agent_id, record in agents.items()}
        assert out["writer"] == agents["writer"][4]


class RecordingStore(InMemoryCheckpointStore):
    """Keeps every record it is asked to write: what a checkpoint costs."""

    def __init__(self) -> None:
        super().__init__()
        self.records = []

    def save(self, record, events=()):
        self.records.append(record)
        return super().save(record, events)


class Ticks(BaseModel):
    n: int = 0


class Count(Node):
    """Counts to three, one tick each (a write that wakes the runner for the next)."""

    def update(self) -> Status:
        n = self.read_state("n") + 1
        self.write_state({"n": n})
        return Status.SUCCESS if n >= 3 else Status.RUNNING


def idle(agent) -> Agent:
    return Agent(Sequence("Idle", memory=True, children=[WaitForever("Wait")]), state_schema=Ticks)


async def test_an_agent_that_did_nothing_since_the_last_checkpoint_costs_it_nothing():
    swarm = SwarmRuntime(host_id="host", roles={"idle": idle})
    store = RecordingStore()
    root = Sequence("Host", memory=True, children=[SpawnAgent("Hire", role="idle", agent_id="a"), Count("Count")])
    agent = Agent(root, state_schema=Ticks, context=RunContext(runtime=swarm))
    agent.runner = agent.make_runner(checkpointer=store)
    try:
        result = await asyncio.wait_for(agent.run(), 10)
        assert result.ok, result.error
        mentions = [[key for part in (record.statuses, record.resume, record.state) for key in part
                     if key.startswith("@a")] for record in store.records]
        first = next(i for i, keys in enumerate(mentions) if keys)
        assert "@a/Idle/Wait" in mentions[first] and "@a" in mentions[first]  # recorded once, whole
        assert len(store.records) - first >= 3 and not any(mentions[first + 1:])  # then never again
    finally:
        await swarm.shutdown()


class HostState(BaseModel):
    reply: str = ""


class WorkerState(BaseModel):
    order: str = ""


def worker(agent) -> Agent:
    return Agent(Sequence("Worker", memory=True, children=[
        WaitMessage("Wait for order", from_agent_id="host", timeout=30).bind(outputs={"message": "order"}),
        SendMessage("Report", to_agent_id="host").bind(inputs={"message": "order"}),
    ]), state_schema=WorkerState)


def hiring_host(store, role: str, factory, *, task: str = "", between=()) -> Agent:
    """A host recording into `store` that hires one agent of `role` (its id the role's name), runs `between`,
    then waits for the agent's message into `reply`."""
    root = Sequence("Host", memory=True, children=[
        SpawnAgent("Hire", role=role, agent_id=role, task=task), *between,
        WaitMessage("Wait", from_agent_id=role, timeout=30).bind(outputs={"message": "reply"})])
    agent = Agent(root, state_schema=HostState, context=RunContext(runtime=SwarmRuntime(roles={role: factory})))
    agent.runner = agent.make_runner(checkpointer=store)
    return agent


def ordering_host(store) -> Agent:
    return hiring_host(store, "worker", worker, between=[SendMessage("Order", to_agent_id="worker", message="build it")])


async def run_to_reply(agent: Agent) -> str:
    """A (restored) host run to its end: the reply its agent sent."""
    try:
        result = await asyncio.wait_for(agent.run(), 10)
        assert result.ok, result.error
        return agent.runner.state_manager.get("reply")
    finally:
        await agent.context.runtime.shutdown()


async def until(condition) -> None:
    async def holds() -> None:
        while not condition():
            await asyncio.sleep(0)
    await asyncio.wait_for(holds(), 10)


async def test_work_an_agent_finished_but_has_not_ticked_yet_is_reported_after_a_restore_not_done_again():
    """The worker has taken its order (its mailbox is empty) and is held before the tick that would
    report it when the host saves: a restore must not make it wait for the order again."""
    store = InMemoryCheckpointStore()
    agent = ordering_host(store)
    swarm, runner = agent.context.runtime, agent.runner
    gate = asyncio.Event()

    async def hold_second_tick(_runner, tick) -> None:
        if tick == 2:
            await gate.wait()

    swarm.watch_runners(lambda agent_id, child: child.add_tick_hook(before=hold_second_tick))
    try:
        while runner.nodes["Host/Order"].status != Status.RUNNING:  # its message goes once the tick ends
            await asyncio.wait_for(runner.step(), 10)
        await until(lambda: "worker" in swarm.runners()
                    and swarm.runners()["worker"].nodes["Worker/Wait for order"].finished_work() == Status.SUCCESS)
        await asyncio.wait_for(runner.step(), 10)  # saved: the worker's wait done, not reported yet
        saved = store.get(store.latest(runner.run_id).id)
        assert saved.resume["@worker/Worker/Wait for order"]["done"] == "SUCCESS"
        assert saved.statuses["@worker/Worker/Wait for order"] == "RUNNING"
        assert saved_agents(saved)["worker"]["mailbox"] == [] and saved.state["@worker"]["order"] == "build it"
        gate.set()
        assert (await asyncio.wait_for(agent.run(), 10)).ok
        again = ordering_host(store)
        again.runner.restore(saved.id)
        assert await run_to_reply(again) == "build it"
    finally:
        gate.set()
        await swarm.shutdown()


async def test_a_message_handed_to_a_receive_that_has_not_returned_is_still_waiting():
    mailbox = Mailbox()
    waiting = asyncio.ensure_future(mailbox.take("a", None))
    await asyncio.sleep(0)
    message = SwarmMessage(1, "a", "me", "hello")
    mailbox.put(message)  # handed to the wait, which has not run since
    assert mailbox.messages() == [message] and mailbox.size == 0
    assert await waiting is message
    assert mailbox.messages() == []


class SwarmInState(BaseModel):
    swarm: object = None
    member: object = None


async def test_a_swarm_handle_held_in_state_is_saved_as_a_reference_and_restored_as_the_handle():
    swarm = SwarmRuntime(host_id="team", roles={"idle": idle})
    store = InMemoryCheckpointStore()
    root = Sequence("Host", memory=True, children=[
        SpawnAgent("Hire", role="idle", agent_id="a").bind(inputs={"runtime": "swarm"})])
    agent = Agent(root, state_schema=SwarmInState)  # RunContext.runtime is empty: the swarm is in state only
    agent.runner = agent.make_runner(checkpointer=store)
    try:
        assert (await asyncio.wait_for(agent.run({"swarm": swarm, "member": swarm.member("team")}), 10)).ok
        checkpoints = store.list(agent.runner.run_id)
        saved = store.get(checkpoints[-1].id)
        assert saved.state[""]["swarm"] == {"$swarm": "team"}  # not "<runtime.swarm.runtime.SwarmRuntime object at 0x…>"
        assert saved.state[""]["member"] == {"$swarm": "team", "agent": "team"}
        assert agent.runner.state_manager.snapshot()[""]["swarm"] == {"$swarm": "team"}  # what a debugger shows
        agent.runner.restore(checkpoints[1].id)
        assert agent.runner.state_manager.get("swarm") is swarm  # the live handle again
        assert agent.runner.state_manager.get("member") == swarm.member("team")
    finally:
        await swarm.shutdown()


def asking_host(store, answer: str) -> Agent:
    """A host that hires a ReAct agent (its scripted model answers `answer`) and waits for its reply."""
    def asker(agent) -> Agent:
        client = ModelClient(ScriptedProvider([answer]))
        return Agent(Sequence("Asker", memory=True, children=[
            create_react_node(name="Ask", model_client=client),
            SendMessage("Reply", to_agent_id="host").bind(inputs={"message": "final_answer"})]), state_schema=ReActState)

    return hiring_host(store, "asker", asker, task="What is the answer?")


async def test_the_agents_model_calls_are_recorded_with_the_host_and_a_replay_serves_them():
    store = InMemoryCheckpointStore()
    original = asking_host(store, "42")
    assert (await asyncio.wait_for(original.run(), 10)).ok
    await original.context.runtime.shutdown()
    run_id = original.runner.run_id
    assert store.get_io(run_id, "model", "@asker/Asker/Ask/Ask.loop/Ask.llm", 0, 0) is not None
    replay = asking_host(store, "a different answer")  # what its model would say now, live
    replay.runner.restore(store.list(run_id)[1].id)  # before the agent was hired
    replayer = IOReplayer(store, run_id, strict=True)
    replay.runner.context.io_recorder = replayer
    replayer.attach(replay.runner.checkpoints)
    try:
        result = await asyncio.wait_for(replay.run(), 10)
        assert result.ok, result.error
        assert replay.runner.state_manager.get("reply") == "42" and replayer.divergences == []
    finally:
        await replay.context.runtime.shutdown()


async def test_a_fork_edits_an_agents_namespace_in_that_agents_own_state(tmp_path):
    store = open_store(tmp_path / "runs.db")
    original, _, _ = await run_sample(store)
    await original.context.runtime.shutdown()
    waiting = next(info for info in store.list(original.runner.run_id)
                   if store.get(info.id).statuses.get("@writer/Writer/Wait for notes") == "RUNNING")
    agent = load_tree(SAMPLE).agent
    agent.runner = agent.make_runner(checkpointer=store)
    swarm = agent.context.runtime
    try:
        with pytest.raises(StateValidationError, match="notes"):  # checked against the writer's schema
            agent.runner.fork(waiting.id, state_updates={"@writer.notes": ["not", "text"]})
        assert agent.runner.run_id is None and swarm.runners() == {}  # refused before anything changed
        agent.runner.fork(waiting.id, state_updates={"@writer.draft": "an edited draft"})
        assert swarm.runners()["writer"].state_manager.get("draft") == "an edited draft"
        assert not any(ns and ns.startswith("@") for ns in agent.runner.state_manager.namespaces())
    finally:
        await swarm.shutdown()
    store.close()


def helper(agent) -> Agent:
    return Agent(Sequence("Helper", memory=True, children=[
        SendMessage("Hi", to_agent_id=agent.parent, message="hi from the helper")]), state_schema=WorkerState)


def lead(agent) -> Agent:
    """An agent whose tree compiles a subtree when first reached (a swarm node): it hires a helper."""
    def coordinate():
        return Sequence("Coordinate", memory=True, children=[
            SpawnAgent("Hire helper", role="helper", agent_id="helper"),
            WaitMessage("Hear", from_agent_id="helper", timeout=30).bind(outputs={"message": "result"})])

    return Agent(Sequence("Lead", memory=True, children=[
        SwarmNode("Team", coordinate, roles={"helper": helper}).bind(outputs={"swarm_result": "order"}),
        SendMessage("Tell", to_agent_id="host").bind(inputs={"message": "order"})]), state_schema=WorkerState)


async def test_an_agents_subtree_compiled_before_the_checkpoint_is_compiled_again_by_a_restore():
    store = InMemoryCheckpointStore()
    agent = hiring_host(store, "lead", lead)
    swarm, runner = agent.context.runtime, agent.runner
    gate = asyncio.Event()

    async def hold_the_helper(_runner, _tick) -> None:
        await gate.wait()

    swarm.watch_runners(lambda agent_id, child: child.add_tick_hook(before=hold_the_helper) if agent_id == "helper"
                        else None)
    try:
        while runner.nodes["Host/Wait"].status != Status.RUNNING:
            await asyncio.wait_for(runner.step(), 10)
        await until(lambda: "lead" in swarm.runners() and "Lead/Team/Coordinate/Hear" in swarm.runners()["lead"].nodes
                    and swarm.runners()["lead"].nodes["Lead/Team/Coordinate/Hear"].status == Status.RUNNING)
        runner.signal()
        await asyncio.wait_for(runner.step(), 10)  # saved: the lead's subtree compiled, waiting for the helper
        saved = store.get(store.latest(runner.run_id).id)
        assert saved.statuses["@lead/Lead/Team/Coordinate/Hear"] == "RUNNING"
        gate.set()
        assert (await asyncio.wait_for(agent.run(), 10)).ok
        again = hiring_host(store, "lead", lead)
        drawn = PastAgents(again.runner, store.get(saved.id)).nodes  # a past view of it, the lead not running here
        assert drawn["@lead/Lead/Team/Coordinate/Hear"].name == "Hear"
        again.runner.restore(saved.id)
        assert "Lead/Team/Coordinate/Hear" in again.context.runtime.runners()["lead"].nodes
        assert await run_to_reply(again) == "hi from the helper"
    finally:
        gate.set()
        await swarm.shutdown()
