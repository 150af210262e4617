"""The swarm nodes: spawn agents, send and wait for messages, keep a daemon agent alive.

They find the swarm in `RunContext.runtime`: a `SwarmRuntime` (the host's tree, which then
speaks as `host_id`) or a `SwarmMember` (a spawned agent's tree, speaking as that agent).
Each input is the constructor's value unless its port is bound, in which case it is read
from state; a bound port always wins. Unbound ports never fall back to a state key of the
same name: a spawned agent's state holds `agent_id`, which must not become a spawn's id.

    SpawnAgent("Hire", role="researcher", agent_id="r1", reuse_if_present=True)
    SendMessage("Ask", to_agent_id="r1").bind(inputs={"message": "question"})
    WaitMessage("Answer", from_agent_id="r1", timeout=30).bind(outputs={"message": "answer"})
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import py_trees
from py_trees.common import Status

from ..engine.behaviour import AsyncBehaviour, JianmuNodeMixin
from ..node.flattened import FlattenedAgentNode
from .runtime import Factory, SwarmError, SwarmMember, SwarmRuntime


def member_of(node: JianmuNodeMixin) -> SwarmMember:
    """The swarm as the agent whose tree holds `node`; a bound `runtime` port overrides the context's."""
    if "runtime" in node.input_bindings:
        runtime, where = node.read_port("runtime"), f"port 'runtime' ({node.resolve_input_port('runtime')})"
    else:
        runtime, where = (node.ctx.runtime if node.ctx is not None else None), "RunContext.runtime"
    if isinstance(runtime, SwarmMember):
        return runtime
    if isinstance(runtime, SwarmRuntime):
        if node.event_bus is not None:
            runtime.attach(node.event_bus, node.ctx)
        return runtime.member(runtime.host_id)
    found = "nothing" if runtime is None else f"a {type(runtime).__name__}"
    raise SwarmError(f"{type(node).__name__} {node.path!r} needs a swarm: {where} holds {found} "
                     "(run it with RunContext(runtime=SwarmRuntime()))")


class SwarmBehaviour(AsyncBehaviour):
    """Base of the nodes that talk to the swarm: each input is a bound port or a constructor constant."""

    def __init__(self, name: str, namespace: str | None, **constants: Any):
        super().__init__(name=name, namespace=namespace)
        self._constants = constants

    def _input(self, port: str) -> Any:
        return self.read_port(port) if port in self._input_bindings else self._constants.get(port)

    def _required(self, port: str) -> Any:
        value = self._input(port)
        if value is None or value == "":
            source = (f"port {port!r} is bound to {self.resolve_input_port(port)!r}, which is empty"
                      if port in self._input_bindings else f"pass {port}= or bind the {port!r} port")
            raise SwarmError(f"{type(self).__name__} {self.path!r}: no {port} ({source})")
        return value


class SpawnAgent(SwarmBehaviour):
    """Start an agent of a registered role; its id goes to `spawned_agent_id`.

    With `reuse_if_present=True` spawning an id that exists returns it and starts nothing,
    so a tree that runs the node again (a retry loop, a replay) keeps one agent per id.
    """

    input_ports = ("role", "task", "agent_id", "constraints")
    output_ports = ("spawned_agent_id",)

    def __init__(self, name: str = "SpawnAgent", role: str | None = None, task: str | None = None, *,
                 agent_id: str | None = None, constraints: Any = None, reuse_if_present: bool = False,
                 groups: Iterable[str] = (), topics: Iterable[str] = (), namespace: str | None = None):
        super().__init__(name, namespace, role=role, task=task, agent_id=agent_id, constraints=constraints)
        self.reuse_if_present = reuse_if_present
        self.groups = tuple(groups)
        self.topics = tuple(topics)

    async def update_async(self) -> Status:
        me = member_of(self)
        agent = me.swarm.spawn(self._required("role"), self._input("task") or "", agent_id=self._input("agent_id"),
                               constraints=self._input("constraints"), parent=me.agent_id, groups=self.groups,
                               topics=self.topics, reuse_if_present=self.reuse_if_present,
                               node=me.locate(self.path))
        self.write_port("spawned_agent_id", agent.id)
        return Status.SUCCESS


class SendMessage(SwarmBehaviour):
    """Send `message` to one agent (`to_agent_id`), a `group` or a `topic`, as `agent_id` (default: me)."""

    input_ports = ("runtime", "to_agent_id", "message", "agent_id", "topic", "group")

    def __init__(self, name: str = "SendMessage", to_agent_id: str | None = None, message: Any = None, *,
                 group: str | None = None, topic: str | None = None, agent_id: str | None = None,
                 namespace: str | None = None):
        super().__init__(name, namespace, to_agent_id=to_agent_id, message=message, group=group, topic=topic,
                         agent_id=agent_id)

    async def update_async(self) -> Status:
        me = member_of(self)
        me.swarm.send(self._input("agent_id") or me.agent_id, self._required("message"),
                      to=self._input("to_agent_id"), group=self._input("group"), topic=self._input("topic"),
                      node=me.locate(self.path))
        return Status.SUCCESS


class WaitMessage(SwarmBehaviour):
    """Wait for the next message from `from_agent_id` (any sender if None) to `agent_id` (default: me).

    Messages from other senders stay queued for later waits. The content goes to
    `message` and its sender to `sender`. FAILURE (a `SwarmTimeout`) after `timeout`
    seconds (None: no limit), or at once when that sender has finished without writing.
    """

    input_ports = ("from_agent_id", "agent_id")
    output_ports = ("message", "sender")

    def __init__(self, name: str = "WaitMessage", from_agent_id: str | None = None, *,
                 timeout: float | None = 60.0, agent_id: str | None = None, namespace: str | None = None):
        super().__init__(name, namespace, from_agent_id=from_agent_id, agent_id=agent_id)
        if timeout is not None and timeout < 0:
            raise ValueError(f"WaitMessage {name!r}: timeout must be >= 0 or None, not {timeout!r}")
        self.timeout = timeout

    async def update_async(self) -> Status:
        me = member_of(self)
        message = await me.swarm.receive(self._input("agent_id") or me.agent_id, sender=self._input("from_agent_id"),
                                         timeout=self.timeout, node=me.locate(self.path))
        self.write_ports({"message": message.content, "sender": message.sender})
        return Status.SUCCESS


class WaitForever(AsyncBehaviour):
    """RUNNING until stopped: keeps a daemon agent alive (its mailbox, groups, topics) until cancelled.

    Nothing polls: the task awaits a future nobody resolves, and `terminate()` cancels it.
    """

    async def update_async(self) -> Status:
        return await asyncio.get_running_loop().create_future()


class SwarmNode(FlattenedAgentNode):
    """A swarm collaboration as a deferred subtree, built when the node is first reached.

        SwarmNode("Research team", build=coordinate, roles={"researcher": researcher})

    On compiling, `roles` are registered with the run's swarm (so a tree that never reaches
    the node never needs them) and `build()` gives the coordinating subtree: spawns, sends
    and waits, speaking as the agent whose tree holds this node. The subtree runs in its own
    namespace (`FlattenedAgentNode`); when it succeeds, the value it left under
    `result_key` there goes to the `swarm_result` port, before the namespace is cleared.
    """

    output_ports = ("swarm_result",)

    def __init__(self, name: str, build: Callable[[], py_trees.behaviour.Behaviour], *,
                 roles: Mapping[str, Factory] | None = None, result_key: str = "result",
                 namespace: str | None = None):
        super().__init__(name=name, namespace=namespace)
        self.build = build
        self.roles = dict(roles or {})
        self.result_key = result_key

    def build_subtree(self) -> py_trees.behaviour.Behaviour:
        swarm = member_of(self).swarm
        for role, factory in self.roles.items():
            swarm.register(role, factory)
        return self.build()

    def update(self) -> Status:
        status = super().update()
        if status == Status.SUCCESS:
            self.write_port("swarm_result", self._require_state().get(self.result_key, self._ns))
        return status


__all__ = ["SendMessage", "SpawnAgent", "SwarmBehaviour", "SwarmNode", "WaitForever", "WaitMessage", "member_of"]
