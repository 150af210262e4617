"""The swarm: routing, spawning, waiting for messages, daemons, events, and the sample."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import py_trees
import pytest
from py_trees.common import Status
from pydantic import BaseModel

from runtime import Agent, ReactiveRunner, RunContext, RuntimeEventBus
from runtime.engine.behaviour import JianmuNodeMixin
from runtime.engine.events import EventType
from runtime.node import Sequence
from runtime.node.flattened import Deferred
from runtime.swarm import (
    SendMessage,
    SpawnAgent,
    SwarmAgent,
    SwarmError,
    SwarmNode,
    SwarmRuntime,
    SwarmTimeout,
    WaitForever,
    WaitMessage,
)
from runtime.swarm.runtime import Mailbox, SwarmMessage
from studio.loader import load_tree

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_trees" / "swarm_chat.py"


class HostState(BaseModel):
    pass


def daemon(agent: SwarmAgent) -> py_trees.behaviour.Behaviour:
    """An agent that only keeps its mailbox open (a bare tree: the runtime wraps it in an Agent)."""
    return Sequence(f"Daemon {agent.id}", memory=True, children=[WaitForever("Idle")])


def swarm_with(**roles) -> SwarmRuntime:
    return SwarmRuntime(roles={"daemon": daemon, **roles})


def host(swarm: SwarmRuntime, *children, bus: RuntimeEventBus | None = None) -> Agent:
    root = Sequence("Host", memory=True, children=list(children))
    return Agent(root, state_schema=HostState,
                 context=RunContext(runtime=swarm, runtime_event_bus=bus or RuntimeEventBus()))


async def run(agent: Agent):
    return await asyncio.wait_for(agent.run(), timeout=5)


def events(agent: Agent, prefix: str = "swarm.") -> list:
    return [e for e in agent.runner.event_bus.history if e.type.startswith(prefix)]


@pytest.fixture
async def swarm():
    swarm = swarm_with()
    yield swarm
    await swarm.shutdown()


# -- routing ---------------------------------------------------------------------------------
async def test_messages_route_to_an_agent_a_group_and_a_topic(swarm):
    agent = host(
        swarm,
        SpawnAgent("a", role="daemon", agent_id="a", groups=["team"], topics=["news"]),
        SpawnAgent("b", role="daemon", agent_id="b", groups=["team"]),
        SpawnAgent("c", role="daemon", agent_id="c", topics=["news"]),
        SendMessage("direct", to_agent_id="b", message="for b"),
        SendMessage("group", group="team", message="for the team"),
        SendMessage("topic", topic="news", message="headline"),
        SendMessage("group as a", group="team", message="from a", agent_id="a"),
    )
    result = await run(agent)
    assert result.ok, result.error

    async def inbox(agent_id: str) -> list[tuple[str, str]]:
        got = []
        while swarm.mailbox_size(agent_id):
            message = await swarm.receive(agent_id)
            got.append((message.sender, message.content))
        return got

    assert await inbox("a") == [("host", "for the team"), ("host", "headline")]
    assert await inbox("b") == [("host", "for b"), ("host", "for the team"), ("a", "from a")]
    assert await inbox("c") == [("host", "headline")]
    sent = [e.payload for e in events(agent) if e.type == EventType.SWARM_MESSAGE_SENT]
    assert sent[0] == {"sender": "host", "recipient": "b", "message_id": 1, "preview": "for b"}
    assert sent[1]["group"] == "team" and sent[1]["recipients"] == ["a", "b"]
    assert sent[2]["topic"] == "news" and sent[2]["recipients"] == ["a", "c"]
    assert sent[3]["recipients"] == ["b"]  # a group message never comes back to its sender


@pytest.mark.parametrize(("call", "error"), [
    (lambda s: s.send("host", "x"), "exactly one of an agent, a group or a topic (got none)"),
    (lambda s: s.send("host", "x", to="a", topic="t"), "(got to, topic)"),
    (lambda s: s.send("host", "x", to="ghost"), "no agent 'ghost' in the swarm"),
    (lambda s: s.send("host", "x", group="nobody"), "no group 'nobody'"),
    (lambda s: s.spawn("pilot"), "no factory for role 'pilot' (registered roles: daemon)"),
    (lambda s: s.register("daemon", lambda agent: None), "role 'daemon' is registered already, with daemon"),
])
async def test_bad_requests_are_one_line_errors(swarm, call, error):
    with pytest.raises(SwarmError) as exc:
        call(swarm)
    assert error in str(exc.value) and "\n" not in str(exc.value)


async def test_a_topic_without_subscribers_drops_the_message(swarm):
    assert swarm.send("host", "anyone?", topic="void") == []


# -- spawning ----------------------------------------------------------------------------------
async def test_reuse_if_present_makes_spawn_idempotent(swarm):
    built: list[str] = []

    def counted(agent: SwarmAgent):
        built.append(agent.id)
        return daemon(agent)

    swarm.register("worker", counted)
    agent = host(swarm, *[SpawnAgent(f"spawn {i}", role="worker", agent_id="w", reuse_if_present=True)
                          .bind(outputs={"spawned_agent_id": f"id{i}"}) for i in range(2)])
    assert (await run(agent)).ok
    assert built == ["w"]
    assert [e.payload["agent"] for e in events(agent) if e.type == EventType.SWARM_AGENT_SPAWNED] == ["w"]
    state = agent.runner.state_manager
    assert state.get("id0") == state.get("id1") == "w"
    assert swarm.agent("w").parent == "host" and swarm.agent("w").status == "running"


async def test_a_duplicate_id_without_reuse_fails_the_node_naming_the_agent(swarm):
    agent = host(swarm, SpawnAgent("first", role="daemon", agent_id="w"),
                 SpawnAgent("again", role="daemon", agent_id="w"))
    result = await run(agent)
    assert result.status == Status.FAILURE
    assert result.error.startswith("Host/again: SwarmError: agent 'w' already exists (role daemon, running)")
    assert "reuse_if_present=True" in result.error


async def test_reuse_with_another_role_is_an_error(swarm):
    swarm.register("other", daemon)
    swarm.spawn("daemon", agent_id="w")
    with pytest.raises(SwarmError, match="agent 'w' exists with role 'daemon', not 'other'"):
        swarm.spawn("other", agent_id="w", reuse_if_present=True)


async def test_spawn_reads_bound_ports_and_numbers_ids_per_role(swarm):
    class Plan(BaseModel):
        role: str = "daemon"
        brief: str = "watch the door"

    agent = Agent(Sequence("Host", memory=True, children=[
        SpawnAgent("one").bind(inputs={"role": "role", "task": "brief"}, outputs={"spawned_agent_id": "first"}),
        SpawnAgent("two").bind(inputs={"role": "role"}, outputs={"spawned_agent_id": "second"}),
    ]), state_schema=Plan, context=RunContext(runtime=swarm))
    assert (await run(agent)).ok
    state = agent.runner.state_manager
    assert (state.get("first"), state.get("second")) == ("daemon-1", "daemon-2")
    assert swarm.agent("daemon-1").task == "watch the door"


async def test_a_missing_swarm_fails_the_node_with_one_line():
    agent = Agent(Sequence("Host", memory=True, children=[SpawnAgent("Hire", role="x")]), state_schema=HostState)
    result = await run(agent)
    assert result.error == ("Host/Hire: SwarmError: SpawnAgent 'Host/Hire' needs a swarm: RunContext.runtime "
                            "holds nothing (run it with RunContext(runtime=SwarmRuntime()))")


async def test_a_send_without_message_names_the_port(swarm):
    agent = host(swarm, SendMessage("Tell", to_agent_id="host").bind(inputs={"message": "note"}))
    result = await run(agent)
    assert "SendMessage 'Host/Tell': no message (port 'message' is bound to 'note', which is empty)" in result.error


async def test_a_failing_factory_is_reported_at_the_spawn(swarm):
    def broken(agent):
        raise ValueError("no model configured")

    swarm.register("broken", broken)
    with pytest.raises(SwarmError, match="agent 'broken-1': the factory of role 'broken' raised ValueError"):
        swarm.spawn("broken")
    assert "broken-1" not in swarm.agents


# -- waiting for messages ----------------------------------------------------------------------
async def test_wait_message_takes_the_given_senders_message_and_leaves_the_others(swarm):
    for name in ("a", "b"):
        swarm.spawn("daemon", agent_id=name)
    agent = host(swarm, WaitMessage("from b", from_agent_id="b", timeout=2)
                 .bind(outputs={"message": "got", "sender": "got_from"}))
    swarm.send("a", "queued before", to="host")
    task = asyncio.ensure_future(run(agent))
    await asyncio.sleep(0.02)
    swarm.send("a", "sent while waiting", to="host")
    await asyncio.sleep(0.02)
    assert not task.done()  # a's messages did not satisfy the wait
    swarm.send("b", "signal", to="host")
    assert (await task).ok
    state = agent.runner.state_manager
    assert (state.get("got"), state.get("got_from")) == ("signal", "b")
    assert swarm.mailbox_size("host") == 2
    assert [(await swarm.receive("host")).content for _ in range(2)] == ["queued before", "sent while waiting"]
    received = [e for e in events(agent) if e.type == EventType.SWARM_MESSAGE_RECEIVED]
    assert received[0].node == "Host/from b"
    assert received[0].payload == {"recipient": "host", "sender": "b", "message_id": 3, "preview": "signal"}


async def test_wait_message_times_out_with_a_clear_failure(swarm):
    swarm.spawn("daemon", agent_id="a")
    agent = host(swarm, WaitMessage("Answer", from_agent_id="a", timeout=0.05))
    result = await run(agent)
    assert result.status == Status.FAILURE
    assert result.error == "Host/Answer: SwarmTimeout: agent 'host': no message from 'a' within 0.05s"
    errors = events(agent, "node.error")
    assert [e.node for e in errors] == ["Host/Answer"]
    with pytest.raises(SwarmTimeout):  # also a TimeoutError, for callers of the runtime's API
        await swarm.receive("host", sender="a", timeout=0)


async def test_waiting_on_an_agent_that_finished_without_writing_fails_at_once(swarm):
    swarm.register("quiet", lambda agent: Sequence("Quiet", memory=True, children=[]))
    swarm.spawn("quiet", agent_id="q")
    await asyncio.wait_for(swarm.wait_finished("q"), timeout=2)
    with pytest.raises(SwarmError, match="agent 'host': agent 'q' has succeeded without writing to it"):
        await asyncio.wait_for(swarm.receive("host", sender="q", timeout=5), timeout=1)


async def test_a_wait_pending_when_its_sender_finishes_fails_at_once(swarm):
    swarm.spawn("daemon", agent_id="d")
    waiting = asyncio.ensure_future(swarm.receive("host", sender="d", timeout=5))
    await asyncio.sleep(0.01)
    await swarm.shutdown()
    with pytest.raises(SwarmError, match="agent 'd' has cancelled without writing to it"):
        await asyncio.wait_for(waiting, timeout=1)


async def test_a_message_delivered_as_the_wait_is_cancelled_is_not_lost():
    mailbox = Mailbox()
    waiting = asyncio.ensure_future(mailbox.take("a", None))
    await asyncio.sleep(0)
    mailbox.put(SwarmMessage(1, "a", "me", "hello"))  # resolves the waiter...
    waiting.cancel()  # ...which is cancelled before it could resume
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert mailbox.size == 1 and mailbox.pop("a").content == "hello"


# -- daemons -------------------------------------------------------------------------------------
async def test_wait_forever_stays_running_without_ticks_and_stops_cleanly():
    node = WaitForever("Idle")
    runner = ReactiveRunner(node, HostState)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(runner.run(), timeout=0.2)
    assert node.status == Status.RUNNING and runner.tick_count == 1  # nothing polled or woke it
    task = node.async_task
    runner.stop()
    await asyncio.sleep(0)
    assert task.cancelled() and node.async_task is None
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_shutdown_cancels_daemon_agents_and_leaves_no_tasks(swarm):
    bus = RuntimeEventBus()
    swarm.event_bus = bus
    swarm.spawn("daemon", agent_id="d")
    await asyncio.sleep(0.02)
    assert swarm.agent("d").status == "running"
    await swarm.shutdown()
    assert swarm.agent("d").status == "cancelled"
    assert asyncio.all_tasks() == {asyncio.current_task()}
    finished = [e.payload for e in bus.history if e.type == EventType.SWARM_AGENT_FINISHED]
    assert finished == [{"agent": "d", "role": "daemon", "status": "cancelled"}]


# -- SwarmNode -----------------------------------------------------------------------------------
def echo(agent: SwarmAgent) -> py_trees.behaviour.Behaviour:
    """Answers its parent's first message with the same words."""
    return Sequence("Echo", memory=True, children=[
        WaitMessage("Hear", from_agent_id=agent.parent, timeout=2).bind(outputs={"message": "heard"}),
        SendMessage("Answer", to_agent_id=agent.parent).bind(inputs={"message": "heard"}),
    ])


def team(name: str, agent_id: str, words: str) -> SwarmNode:
    def coordinate() -> py_trees.behaviour.Behaviour:
        return Sequence("Coordinate", memory=True, children=[
            SpawnAgent("Hire", role="echo", agent_id=agent_id),
            SendMessage("Ask", to_agent_id=agent_id, message=words),
            WaitMessage("Reply", from_agent_id=agent_id, timeout=2).bind(outputs={"message": "result"}),
        ])

    return SwarmNode(name, coordinate, roles={"echo": echo}).bind(outputs={"swarm_result": f"{name}_says"})


async def test_swarm_node_compiles_on_first_entry_in_its_own_namespace(swarm):
    first, second = team("TeamA", "echo-a", "ping"), team("TeamB", "echo-b", "pong")
    agent = host(swarm, first, second)
    assert isinstance(first.decorated, Deferred) and "echo" not in swarm.roles
    result = await run(agent)
    assert result.ok, result.error
    state = agent.runner.state_manager
    assert (state.get("TeamA_says"), state.get("TeamB_says")) == ("ping", "pong")
    assert "echo" in swarm.roles  # registered when the first node compiled, once for both
    assert first._ns.startswith("skill_runtime.TeamA_") and second._ns.startswith("skill_runtime.TeamB_")
    assert {n.namespace for n in first.decorated.iterate() if isinstance(n, JianmuNodeMixin)} == {first._ns}
    assert "Host/TeamA/Coordinate/Reply" in agent.runner.nodes  # the runner indexed the compiled nodes
    written = [(e.payload["namespace"], e.payload["keys"]) for e in events(agent, "state.changed")]
    assert (first._ns, ["message", "sender"]) not in written  # outputs go through the node's bindings
    assert (first._ns, ["result", "sender"]) in written and (second._ns, ["result", "sender"]) in written
    assert first._ns not in state.namespaces()  # cleared when the node finished
    spawned = [e.node for e in events(agent) if e.type == EventType.SWARM_AGENT_SPAWNED]
    assert spawned == ["Host/TeamA/Coordinate/Hire", "Host/TeamB/Coordinate/Hire"]


async def test_swarm_node_without_a_swarm_fails_naming_itself():
    agent = Agent(Sequence("Host", memory=True, children=[team("Team", "e", "hi")]), state_schema=HostState)
    result = await run(agent)
    assert result.status == Status.FAILURE
    assert "SwarmNode 'Host/Team' needs a swarm: RunContext.runtime holds nothing" in result.error


# -- events and the sample -----------------------------------------------------------------------
async def test_the_sample_runs_to_success_and_tells_who_talked_to_whom():
    loaded = load_tree(str(SAMPLE))
    agent = loaded.agent
    swarm = agent.context.runtime
    result = await run(agent)
    try:
        assert result.ok, result.error
        assert result.final_answer == "Draft: 3 hives of 40,000 bees hold 120000 bees. (checked by the calculator)"
        swarm_events = events(agent)
        talk = [(e.type.removeprefix("swarm."), e.payload.get("agent") or e.payload["sender"],
                 e.payload.get("recipient") or e.payload.get("group") or e.payload.get("status"))
                for e in swarm_events if e.type != EventType.SWARM_AGENT_SPAWNED]
        assert ("message.sent", "coordinator", "team") in talk
        assert ("message.sent", "researcher", "writer") in talk
        assert ("message.received", "researcher", "writer") in talk
        assert ("message.sent", "writer", "coordinator") in talk
        assert talk[-2:] == [("message.received", "writer", "coordinator"), ("agent.finished", "writer", "succeeded")]
        assert ("agent.finished", "researcher", "succeeded") in talk
        # the researcher's own telemetry reaches the host's bus, tagged with its id
        tools = events(agent, "tool.call.completed")
        assert [(e.payload["agent"], e.node.split("/")[0]) for e in tools] == [("researcher", "@researcher")]
        assert swarm.mailbox_size("writer") == 1  # the group note, never asked for
    finally:
        await swarm.shutdown()


async def test_a_fresh_run_starts_an_empty_swarm():
    agent = load_tree(str(SAMPLE)).agent
    swarm = agent.context.runtime
    first = await run(agent)
    first_writer = swarm.agent("writer")
    second = await run(agent)
    assert first.ok and second.ok, (first.error, second.error)
    assert swarm.agent("writer") is not first_writer
    spawned = [e for e in events(agent) if e.type == EventType.SWARM_AGENT_SPAWNED]
    assert len({e.run_id for e in spawned}) == 2 and len(spawned) == 4
    await swarm.shutdown()


def test_the_sample_runs_headless():
    result = subprocess.run([sys.executable, "-m", "studio.cli", "run", str(SAMPLE)], capture_output=True,
                            text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "final answer: Draft: 3 hives" in result.stdout


class SwarmInState(BaseModel):
    swarm: object = None
    member: object = None


async def test_send_message_runtime_port_bound_to_state_holding_the_swarm():
    """Seed 001's port table: SendMessage's `runtime` port, read from state like any other."""
    swarm = swarm_with()
    try:
        root = Sequence("Host", memory=True, children=[
            SpawnAgent("Hire", role="daemon", agent_id="a").bind(inputs={"runtime": "swarm"}),
            SendMessage("Tell", to_agent_id="a", message="hello").bind(inputs={"runtime": "swarm"})])
        agent = Agent(root, state_schema=SwarmInState)  # RunContext.runtime is empty
        result = await asyncio.wait_for(agent.run({"swarm": swarm}), timeout=5)
        assert result.ok, result.error
        assert result.state.swarm is swarm  # a live handle: shared, not copied
        assert (await swarm.receive("a")).content == "hello"
    finally:
        await swarm.shutdown()


async def test_send_message_runtime_port_bound_to_a_member_speaks_as_that_agent():
    """A `SwarmMember` in state (the swarm seen as one agent) is a `runtime` too: the message is from it."""
    swarm = swarm_with()
    try:
        swarm.spawn("daemon", agent_id="a")
        member = swarm.member(swarm.spawn("daemon", agent_id="b").id)
        tell = SendMessage("Tell", to_agent_id="a", message="from b").bind(inputs={"runtime": "member"})
        result = await asyncio.wait_for(Agent(tell, state_schema=SwarmInState).run({"member": member}), timeout=5)
        assert result.ok, result.error
        assert result.state.member is member  # a live handle: shared, not copied
        received = await swarm.receive("a")
        assert (received.sender, received.content) == ("b", "from b")
    finally:
        await swarm.shutdown()
