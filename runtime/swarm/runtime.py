"""`SwarmRuntime`: an in-process swarm of agents talking through mailboxes, on one asyncio loop.

A host puts it in its run context, `Agent(root, context=RunContext(runtime=SwarmRuntime()))`,
and the swarm nodes find it there. The host itself is an agent of the swarm (`host_id`),
so it has a mailbox and can be written to.

- Roles: `register(role, factory)`; `factory(SwarmAgent)` returns the `runtime.Agent` (or a
  bare tree) the agent runs. `spawn()` calls it and runs that agent in its own
  `ReactiveRunner` as an asyncio task, with its own state. The child's input is
  `{"agent_id", "role", "task"}`, plus `messages=[human(task)]` when its state schema has
  a `messages` field (so a ReAct agent starts on its task). Its run context's `runtime`
  is a `SwarmMember`: the same swarm, seen as that agent.
- Messages go to one agent, a group (its members but the sender) or a topic (its
  subscribers but the sender). Each agent's mailbox keeps them in order; `receive()` takes
  the first one from a given sender (others stay queued) and waits for it without polling.
- Events: every spawn, finish, send and receive is published on the host's event bus as a
  `swarm.*` event naming sender, recipient/group/topic and a preview of the message. A
  child's own telemetry (model calls, tools, logs, node errors) is forwarded to that bus
  too, tagged with `"agent"` and with its node paths prefixed `@<agent id>/`.

The swarm belongs to one run of its host: the first use by a host node in a new run (a
new run id on its bus) cancels the previous run's agents and starts an empty swarm.

A host that records checkpoints records its swarm with them (`runtime.memory.checkpoint.agents`):
`dump_agents()` gives the agents' records and mailboxes, `runners()` their runners, and
restoring a checkpoint builds the agents again with `load_agents()` and runs on with
`start_agents()`. In state, the swarm and its members are live handles, never copied, and a
checkpoint keeps them as references (`{"$swarm": host id}`) that a restore resolves again.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal

import py_trees
from pydantic_core import SchemaSerializer, core_schema

from ..engine.deps import RunContext
from ..engine.events import TICK_TELEMETRY, EventType, RuntimeEvent, RuntimeEventBus
from ..messages import human
from .calls import AgentCalls
from .mailbox import Mailbox, SwarmMessage, dump_messages, load_messages
from .naming import agent_path

if TYPE_CHECKING:
    from ..agent import Agent
    from ..engine.runner import ReactiveRunner

log = logging.getLogger(__name__)

AgentStatus = Literal["running", "succeeded", "failed", "cancelled"]
Factory = Callable[["SwarmAgent"], "Agent | py_trees.behaviour.Behaviour"]

PREVIEW_CHARS = 80
# A child's runner mechanics stay private (its own ticks, statuses and state; its lifecycle
# is reported as swarm.agent.*); what it did (model, tools, logs, errors) is forwarded.
FORWARDED_EVENTS = frozenset(
    t for t in EventType
    if not t.startswith(("run.", "tick.", "swarm.")) and t not in TICK_TELEMETRY and t != EventType.STATE_CHANGED)


class SwarmError(RuntimeError):
    """A swarm request that cannot be carried out; the message is one line naming the agent."""


class SwarmTimeout(SwarmError, TimeoutError):
    """No message arrived in time."""


def preview(content: Any) -> str:
    """One short line of a message, for events."""
    text = " ".join(str(content).split())
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS - 1] + "…"


@dataclass
class SwarmAgent:
    """An agent of the swarm as others see it (the runtime keeps its mailbox and task)."""

    id: str
    role: str
    task: str = ""
    constraints: Any = None
    parent: str | None = None
    status: AgentStatus = "running"
    result: str | None = None
    error: str | None = None
    groups: set[str] = field(default_factory=set)
    topics: set[str] = field(default_factory=set)
    spawned_by: str | None = None  # the node that spawned it, as its events name it (None: code outside any node)

    def dump(self) -> dict[str, Any]:
        """Its record as a checkpoint keeps it."""
        saved = {f.name: getattr(self, f.name) for f in fields(self)}
        saved["groups"], saved["topics"] = sorted(self.groups), sorted(self.topics)
        return saved

    @classmethod
    def load(cls, saved: Mapping[str, Any]) -> SwarmAgent:
        names = {f.name for f in fields(cls)}
        record = cls(**{key: value for key, value in saved.items() if key in names})
        record.groups, record.topics = set(record.groups), set(record.topics)
        return record


def _referenced_as(reference: Callable[[Any], dict[str, str]]) -> SchemaSerializer:
    """How a live handle is written out (state snapshots, checkpoints, the debug protocol): as the
    reference a restore resolves again, not as its repr."""
    return SchemaSerializer(core_schema.any_schema(
        serialization=core_schema.plain_serializer_function_ser_schema(reference)))


@dataclass(frozen=True)
class SwarmMember:
    """The swarm seen as one agent: what a spawned agent's `RunContext.runtime` holds."""

    swarm: SwarmRuntime
    agent_id: str

    def locate(self, path: str | None) -> str:
        """An event's node for a path of this agent's tree (the host's paths stay as they are)."""
        return self.swarm.locate(self.agent_id, path)

    def __deepcopy__(self, memo: dict[int, Any]) -> SwarmMember:
        return self  # a handle on the live swarm (see SwarmRuntime.__deepcopy__)

    @property
    def reference(self) -> dict[str, str]:
        return {**self.swarm.reference, "agent": self.agent_id}

    def resolve_reference(self, saved: Any) -> SwarmRuntime | SwarmMember | None:
        return self.swarm.resolve_reference(saved)


SwarmMember.__pydantic_serializer__ = _referenced_as(lambda member: member.reference)


class SwarmRuntime:
    """Agents, their mailboxes, groups and topics; the host (`host_id`) is an agent from the start."""

    def __init__(self, host_id: str = "host", *, roles: Mapping[str, Factory] | None = None,
                 event_bus: RuntimeEventBus | None = None):
        self.host_id = host_id
        self.event_bus = event_bus
        self._factories: dict[str, Factory] = dict(roles or {})
        self._run_id: str | None = None
        self._host_context: RunContext | None = None  # the host's context: its I/O recorder records the agents' calls
        self._runner_watchers: list[Callable[[str, ReactiveRunner], Any]] = []
        self._started = asyncio.Event()  # set but while restored agents wait for `start_agents`
        self._sketches: dict[tuple[str, ...], ReactiveRunner] = {}  # agents' trees built to be drawn, never run
        self._clear()

    def __deepcopy__(self, memo: dict[int, Any]) -> SwarmRuntime:
        """A live service (tasks, mailboxes) held in state is shared, never copied: state hands out
        copies of what it holds, and a `runtime` port bound to a state key must reach this swarm."""
        return self

    @property
    def reference(self) -> dict[str, str]:
        """What a checkpoint keeps of this swarm held in state: `{"$swarm": host id}`."""
        return {"$swarm": self.host_id}

    def resolve_reference(self, saved: Any) -> SwarmRuntime | SwarmMember | None:
        """The live handle a saved `reference` stands for (this swarm, or one of its agents as a
        member), None when it names another swarm or an agent it does not have."""
        if not isinstance(saved, Mapping) or saved.get("$swarm") != self.host_id or not set(saved) <= {"$swarm", "agent"}:
            return None
        if "agent" not in saved:
            return self
        return SwarmMember(self, saved["agent"]) if saved["agent"] in self._agents else None

    def _clear(self) -> None:
        self._agents: dict[str, SwarmAgent] = {self.host_id: SwarmAgent(self.host_id, role="host")}
        self._mailboxes: dict[str, Mailbox] = {self.host_id: Mailbox()}
        self._tasks: dict[str, asyncio.Task] = {}
        self._children: dict[str, Agent] = {}
        self._groups: dict[str, list[str]] = {}
        self._topics: dict[str, list[str]] = {}
        self._next_message = 1
        self._unstarted: list[str] = []  # restored agents that run on once their host does (`start_agents`)
        self._started.set()

    # -- wiring ----------------------------------------------------------------------
    def register(self, role: str, factory: Factory) -> None:
        """What an agent of `role` runs: `factory(SwarmAgent)` -> `Agent` or a tree. A role has one factory."""
        known = self._factories.get(role)
        if known is not None and known is not factory:
            raise SwarmError(f"role {role!r} is registered already, with "
                             f"{getattr(known, '__qualname__', repr(known))}")
        self._factories[role] = factory

    @property
    def roles(self) -> list[str]:
        return sorted(self._factories)

    def attach(self, bus: RuntimeEventBus, context: RunContext | None = None) -> None:
        """Publish on the host's bus (and record the agents' calls with the I/O recorder of the host's
        `context`); a new run there (a new run id) starts an empty swarm."""
        if self._run_id is not None and bus.run_id != self._run_id:
            self.reset()
        self.event_bus, self._run_id = bus, bus.run_id
        if context is not None:
            self._host_context = context

    @property
    def run_id(self) -> str | None:
        """The run of the host this swarm belongs to (None: no host node has used it yet)."""
        return self._run_id

    def member(self, agent_id: str) -> SwarmMember:
        self.agent(agent_id)
        return SwarmMember(self, agent_id)

    def locate(self, agent_id: str, path: str | None) -> str:
        if agent_id == self.host_id:
            return path or agent_id
        return agent_path(agent_id, path)

    # -- agents ----------------------------------------------------------------------
    @property
    def agents(self) -> dict[str, SwarmAgent]:
        return dict(self._agents)

    def agent(self, agent_id: str) -> SwarmAgent:
        found = self._agents.get(agent_id)
        if found is None:
            raise SwarmError(f"no agent {agent_id!r} in the swarm (agents: {', '.join(self._agents)})")
        return found

    def runners(self) -> dict[str, ReactiveRunner]:
        """The runner of each spawned agent that has started (its tree, statuses and state), by id.

        A debugger's seam: it shows the agents' trees beside the host's and watches their
        ticks (`add_tick_hook`); the swarm itself never reads them.
        """
        return {agent_id: child.runner for agent_id, child in self._children.items() if child.runner is not None}

    def watch_runners(self, callback: Callable[[str, ReactiveRunner], Any]) -> Callable[[], None]:
        """Call `callback(agent id, runner)` for each agent's runner once it is built, before its first
        tick (a debugger's seam: a hook added then sees every tick). Returns the way to stop."""
        self._runner_watchers.append(callback)
        return lambda: self._runner_watchers.remove(callback) if callback in self._runner_watchers else None

    def mailbox_size(self, agent_id: str) -> int:
        """Messages queued for an agent and not yet received."""
        self.agent(agent_id)
        return self._mailboxes[agent_id].size

    def spawn(self, role: str, task: str = "", *, agent_id: str | None = None, constraints: Any = None,
              parent: str | None = None, groups: Iterable[str] = (), topics: Iterable[str] = (),
              reuse_if_present: bool = False, node: str | None = None) -> SwarmAgent:
        """Start an agent of `role` on `task`; with `reuse_if_present`, an existing id is returned as is."""
        existing = self._agents.get(agent_id) if agent_id else None
        if existing is not None:
            if not reuse_if_present:
                raise SwarmError(f"agent {agent_id!r} already exists (role {existing.role}, {existing.status}); "
                                 "pass reuse_if_present=True to reuse it")
            if existing.role != role:
                raise SwarmError(f"agent {agent_id!r} exists with role {existing.role!r}, not {role!r}")
            return existing
        if role not in self._factories:
            raise SwarmError(f"no factory for role {role!r} (registered roles: {', '.join(self.roles) or 'none'})")
        if parent is not None:
            self.agent(parent)
        loop = asyncio.get_running_loop()
        record = SwarmAgent(agent_id or self._new_id(role), role, str(task or ""), constraints, parent,
                            spawned_by=node)
        child = self._build(record)
        self._agents[record.id] = record
        self._children[record.id] = child
        self._mailboxes[record.id] = Mailbox()
        for group in groups:
            self.join(record.id, group)
        for topic in topics:
            self.subscribe(record.id, topic)
        self._publish(EventType.SWARM_AGENT_SPAWNED, {
            "agent": record.id, "role": role, "parent": parent, "task": preview(record.task),
            "groups": sorted(record.groups), "topics": sorted(record.topics)}, node)
        self._tasks[record.id] = loop.create_task(self._run(record, child, self._input_of(record, child)),
                                                  name=f"swarm:{record.id}")
        return record

    @staticmethod
    def _input_of(record: SwarmAgent, child: Agent) -> dict[str, Any]:
        """A fresh agent's input: who it is and its task (as its first message, for a ReAct agent)."""
        schema = child.state_schema if isinstance(child.state_schema, type) else type(child.state_schema)
        input_data: dict[str, Any] = {"agent_id": record.id, "role": record.role, "task": record.task}
        if record.task and "messages" in schema.model_fields:
            input_data["messages"] = [human(record.task)]
        return input_data

    def _new_id(self, role: str) -> str:
        return next(f"{role}-{n}" for n in itertools.count(1) if f"{role}-{n}" not in self._agents)

    def _build(self, record: SwarmAgent) -> Agent:
        """What the factory of the agent's role builds for it, wired to this swarm (not started)."""
        factory = self._factories.get(record.role)
        if factory is None:
            raise SwarmError(f"agent {record.id!r}: no factory for role {record.role!r} "
                             f"(registered roles: {', '.join(self.roles) or 'none'})")
        try:
            child = self._as_agent(factory(record))
        except Exception as exc:
            raise SwarmError(f"agent {record.id!r}: the factory of role {record.role!r} raised "
                             f"{type(exc).__name__}: {exc}") from exc
        self._wire(record, child)
        return child

    def sketch(self, saved: Mapping[str, Any]) -> ReactiveRunner:
        """A runner over the tree an agent of a saved record runs (`dump_agents()`), built by its
        role's factory and never started (so built once per agent): an agent's shape as a debugger
        shows it at a past checkpoint. `SwarmError` when its role has no factory here."""
        key = tuple(str(saved.get(name)) for name in ("id", "role", "task", "parent", "constraints"))
        if key not in self._sketches:
            self._sketches[key] = self._build(SwarmAgent.load(saved)).make_runner()
        return self._sketches[key]

    @staticmethod
    def _as_agent(built: Any) -> Agent:
        from ..agent import Agent  # runtime.agent imports the node package, which imports this one

        if isinstance(built, Agent):
            return built
        if isinstance(built, py_trees.behaviour.Behaviour):
            return Agent(built)
        raise TypeError(f"it returned {type(built).__name__}, expected a runtime.Agent or a behaviour tree")

    def _wire(self, record: SwarmAgent, child: Agent) -> None:
        """The child's context: this swarm seen as the child, and a private bus forwarded to ours."""
        bus = RuntimeEventBus(history=0)
        bus.subscribe(lambda event: self._forward(record.id, event), types=FORWARDED_EVENTS)
        child.context.runtime = SwarmMember(self, record.id)
        child.context.runtime_event_bus = bus
        if child.context.io_recorder is None and self._host_context is not None:
            child.context.io_recorder = AgentCalls(self._host_context, record.id)
        if record.constraints is not None:
            child.context.constraints = record.constraints

    def _forward(self, agent_id: str, event: RuntimeEvent) -> None:
        self._publish(event.type, {"agent": agent_id, **event.payload}, self.locate(agent_id, event.node))

    def _tell_watchers(self, agent_id: str, runner: ReactiveRunner) -> None:
        """An agent's runner is built: the watchers hear of it before its first tick."""
        for watcher in tuple(self._runner_watchers):
            watcher(agent_id, runner)

    async def _run(self, record: SwarmAgent, child: Agent, input_data: Mapping[str, Any] | None) -> None:
        """The agent's run to its end: a fresh one from `input_data`, or (a restored agent, its runner
        loaded) on from where its checkpoint left it."""
        try:
            if child.runner is None:
                child.runner = child.make_runner()  # what child.run() would build: built here, shown first
                self._tell_watchers(record.id, child.runner)
            result = await child.run(input_data=input_data)
        except asyncio.CancelledError:
            self._finish(record, "cancelled")
            raise
        except Exception as exc:  # a crash of the child's runner ends that agent, not the swarm
            log.debug("swarm agent %s crashed", record.id, exc_info=True)
            self._finish(record, "failed", error=f"{type(exc).__name__}: {exc}")
        else:
            if result.ok:
                self._finish(record, "succeeded", result=result.final_answer)
            else:
                self._finish(record, "failed", error=result.error or f"stopped: {result.termination_reason}")
        finally:
            if child.runner is not None and child.runner.root.status == py_trees.common.Status.RUNNING:
                child.runner.stop()  # cancels the tasks of its nodes still in flight; a finished
                # tree keeps its final statuses, which debuggers show

    def _finish(self, record: SwarmAgent, status: AgentStatus, *, result: str | None = None,
                error: str | None = None) -> None:
        if record.status != "running":
            return
        record.status, record.result, record.error = status, result, error
        payload: dict[str, Any] = {"agent": record.id, "role": record.role, "status": status}
        if result is not None:
            payload["result"] = preview(result)
        if error is not None:
            payload["error"] = error
        self._publish(EventType.SWARM_AGENT_FINISHED, payload, self.locate(record.id, None))
        if self._agents.get(record.id) is record:  # not an agent of a previous run
            for agent_id, mailbox in self._mailboxes.items():
                mailbox.sender_gone(record.id, self._gone(agent_id, record))

    @staticmethod
    def _gone(agent_id: str, sender: SwarmAgent) -> SwarmError:
        return SwarmError(f"agent {agent_id!r}: agent {sender.id!r} has {sender.status} without writing to it")

    def _cancel_all(self) -> list[asyncio.Task]:
        tasks = []
        for agent_id in self._unstarted:
            self._finish(self._agents[agent_id], "cancelled")
        self._unstarted = []
        self._started.set()
        for agent_id, task in self._tasks.items():
            self._finish(self._agents[agent_id], "cancelled")
            task.cancel()
            tasks.append(task)
        return tasks

    def reset(self) -> None:
        """Cancel every agent and start over with the host alone (registered roles are kept)."""
        self._cancel_all()
        self._clear()

    async def shutdown(self) -> None:
        """Cancel the agents still running and wait until they have stopped."""
        tasks = self._cancel_all()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def wait_finished(self, agent_id: str) -> SwarmAgent:
        """The agent's record once its run has ended (a restored agent's: once it runs on, see
        `start_agents`; one restored finished: at once)."""
        record = self.agent(agent_id)
        if agent_id == self.host_id:
            raise SwarmError(f"agent {agent_id!r} runs no tree of its own (it is the host)")
        if agent_id in self._unstarted:
            await self._started.wait()
        task = self._tasks.get(agent_id)
        if task is not None:
            await asyncio.wait([task])
        return record

    # -- what a host's checkpoint keeps (runtime.memory.checkpoint.agents) -----------
    def dump_agents(self) -> dict[str, dict[str, Any]]:
        """The swarm as a checkpoint keeps it: by agent id (the host's too) its record and the messages
        waiting for it (`mailbox`, those in transit to a receive included); under "" the next message
        id, and the members of each group and topic in the order they joined."""
        saved: dict[str, dict[str, Any]] = {"": {"next_message": self._next_message, "groups": self._groups,
                                                 "topics": self._topics}}
        for agent_id, record in self._agents.items():
            saved[agent_id] = {**record.dump(), "mailbox": dump_messages(self._mailboxes[agent_id].messages())}
        return saved

    def load_agents(self, saved: Mapping[str, Mapping[str, Any]], host: ReactiveRunner, run_id: str | None,
                    prepare: Callable[[str, ReactiveRunner], Any]) -> None:
        """The swarm as `dump_agents()` gave it, for the run `run_id` of `host` (its bus, its context).
        First each agent is built again by its role's factory, in the order they were spawned, with a
        runner of its own that `prepare(agent id, runner)` loads as saved (compiling the subtrees it
        had compiled may register the roles of the agents it spawned); an exception there changes
        nothing. Then the agents of now are cancelled without a word, and the saved ones, their
        mailboxes, groups and topics put in their place; `start_agents()` runs on those that were
        running."""
        records = {agent_id: SwarmAgent.load(data) for agent_id, data in saved.items() if agent_id}
        context, self._host_context = self._host_context, host.context  # (their calls: the host's recorder)
        children: dict[str, Agent] = {}
        try:
            for agent_id, record in records.items():
                if agent_id != self.host_id:
                    child = children[agent_id] = self._build(record)
                    child.runner = child.make_runner()
                    prepare(agent_id, child.runner)
        except BaseException:
            self._host_context = context
            raise
        for agent_id, task in self._tasks.items():
            self._agents[agent_id].status = "cancelled"  # what was running belongs to another timeline
            task.cancel()
        self._clear()
        self.event_bus, self._run_id = host.event_bus, run_id
        swarm = saved.get("", {})
        self._next_message = int(swarm.get("next_message", 1))
        self._groups = {group: list(members) for group, members in swarm.get("groups", {}).items()}
        self._topics = {topic: list(members) for topic, members in swarm.get("topics", {}).items()}
        self._agents = {self.host_id: self._agents[self.host_id], **records}
        self._mailboxes = {agent_id: Mailbox(load_messages(saved[agent_id]["mailbox"])) if agent_id in saved
                           else Mailbox() for agent_id in self._agents}
        self._children = children
        self._unstarted = [agent_id for agent_id in children if records[agent_id].status == "running"]
        if self._unstarted:
            self._started.clear()
        for agent_id, child in children.items():
            self._tell_watchers(agent_id, child.runner)

    def start_agents(self) -> None:
        """Run on the restored agents that were running, each from where its loaded runner stands (one
        whose runner was not loaded had not started: it starts afresh). Call on the running loop; the
        host's checkpointer calls it just before the host's next tick."""
        loop = asyncio.get_running_loop()
        for agent_id in self._unstarted:
            record, child = self._agents[agent_id], self._children[agent_id]
            input_data = self._input_of(record, child) if child.runner.run_id is None else None
            self._tasks[agent_id] = loop.create_task(self._run(record, child, input_data), name=f"swarm:{agent_id}")
        self._unstarted = []
        self._started.set()

    # -- groups and topics -----------------------------------------------------------
    def join(self, agent_id: str, group: str) -> None:
        record = self.agent(agent_id)
        members = self._groups.setdefault(group, [])
        if agent_id not in members:
            members.append(agent_id)
        record.groups.add(group)

    def subscribe(self, agent_id: str, topic: str) -> None:
        record = self.agent(agent_id)
        subscribers = self._topics.setdefault(topic, [])
        if agent_id not in subscribers:
            subscribers.append(agent_id)
        record.topics.add(topic)

    # -- messages --------------------------------------------------------------------
    def send(self, sender: str, content: Any, *, to: str | None = None, group: str | None = None,
             topic: str | None = None, node: str | None = None) -> list[SwarmMessage]:
        """Deliver to one agent, a group or a topic (exactly one); returns the delivered copies."""
        given = [name for name, value in (("to", to), ("group", group), ("topic", topic)) if value]
        if len(given) != 1:
            raise SwarmError(f"agent {sender!r}: a message goes to exactly one of an agent, a group or a topic "
                             f"(got {', '.join(given) or 'none'})")
        self.agent(sender)
        if to:
            recipients = [self.agent(to).id]
            channel = {"recipient": to}
        elif group:
            if group not in self._groups:
                raise SwarmError(f"agent {sender!r}: no group {group!r} (groups: {', '.join(self._groups) or 'none'})")
            recipients = [m for m in self._groups[group] if m != sender]
            channel = {"group": group}
        else:
            recipients = [m for m in self._topics.get(topic, ()) if m != sender]
            channel = {"topic": topic}
        message_id, self._next_message = self._next_message, self._next_message + 1
        messages = [SwarmMessage(message_id, sender, r, content, group or None, topic or None) for r in recipients]
        payload = {"sender": sender, **channel}
        if not to:
            payload["recipients"] = recipients
        self._publish(EventType.SWARM_MESSAGE_SENT,
                      {**payload, "message_id": message_id, "preview": preview(content)}, node)
        for message in messages:
            self._mailboxes[message.recipient].put(message)
        return messages

    async def receive(self, agent_id: str, *, sender: str | None = None, timeout: float | None = None,
                      node: str | None = None) -> SwarmMessage:
        """The first message for `agent_id` from `sender` (any sender if None); others stay queued."""
        self.agent(agent_id)
        mailbox = self._mailboxes[agent_id]
        source = self.agent(sender) if sender is not None else None
        if source is not None and source.status != "running" and not mailbox.holds_from(source.id):
            raise self._gone(agent_id, source)
        try:
            message = await mailbox.take(sender, timeout)
        except TimeoutError:
            raise SwarmTimeout(f"agent {agent_id!r}: no message from {sender or 'any agent'!r} "
                               f"within {timeout:g}s") from None
        self._publish(EventType.SWARM_MESSAGE_RECEIVED, {
            "recipient": agent_id, "sender": message.sender, **message.channel, "message_id": message.id,
            "preview": preview(message.content)}, node)
        return message

    def _publish(self, event_type: str, payload: dict[str, Any], node: str | None) -> None:
        if self.event_bus is not None:
            self.event_bus.publish(event_type, payload, node=node)


SwarmRuntime.__pydantic_serializer__ = _referenced_as(lambda swarm: swarm.reference)


__all__ = ["AgentStatus", "Factory", "Mailbox", "SwarmAgent", "SwarmError", "SwarmMember", "SwarmMessage",
           "SwarmRuntime", "SwarmTimeout", "preview"]
