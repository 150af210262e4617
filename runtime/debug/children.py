"""Swarm agents seen from the debugger: their trees, states and ticks beside the host's.

A `SwarmRuntime` runs each spawned agent in its own runner (`runners()`, its seam for
debuggers). Here an agent's node paths are shown as `@<agent id>/<path>` and its namespaces
as `@<agent id>` / `@<agent id>.<namespace>` (`runtime.swarm.naming`: the names of its
forwarded events and of the host's checkpoints), and its root hangs under the node that
spawned it.

At a past checkpoint (`PastAgents`) the agents are those the checkpoint holds: their
statuses and state from there, their trees drawn with their live runners' nodes, or with
a tree their role builds when they are not running now (a recording, an earlier run).

An agent's ticks are watched with an after-tick hook. A breakpoint on one of its nodes
fires when that node's status changes: the hook then holds the agent's runner (awaiting
holds the tick) until the debugger continues, and asks it to stop.

Both debuggers use this: a local studio session, and the debug server for a studio
attached from another process (which sends the agents' nodes and namespaces by these names).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from ..engine.runner import ReactiveRunner, TickReport
from ..memory.checkpoint import Checkpoint, CheckpointError
from ..memory.checkpoint.agents import RUNNER, agent_parts, saved_agents
from ..memory.checkpoint.deferred import compile_deferred
from ..state import StateManager
from ..swarm.naming import PREFIX, split_agent_namespace
from ..swarm.naming import agent_namespace as child_namespace
from ..swarm.naming import agent_path as child_path
from ..swarm.naming import split_agent_path as split_child_path


def swarm_of(host: ReactiveRunner) -> Any:
    """The host's swarm (its `RunContext.runtime`, when that runs agents), else None."""
    swarm = getattr(host.context, "runtime", None)
    return swarm if callable(getattr(swarm, "runners", None)) else None


def agent_runners(host: ReactiveRunner) -> dict[str, ReactiveRunner]:
    """The runners of the host's swarm's agents, by agent id (none without a swarm)."""
    swarm = swarm_of(host)
    return swarm.runners() if swarm is not None else {}


def agents_state(host: ReactiveRunner) -> dict[str, dict[str, Any]]:
    """Each agent's namespaces as stored (read them, never change them), named `@agent[.ns]`: what the
    host's checkpoints hold of them."""
    return {child_namespace(agent_id, ns): runner.state_manager.stored_view(ns)
            for agent_id, runner in agent_runners(host).items() for ns in runner.state_manager.namespaces()}


def state_manager_of(host: ReactiveRunner, namespace: str | None) -> tuple[StateManager, str | None] | None:
    """(the state manager holding a namespace as a debugger names it, the namespace there): the host's, or
    for `@agent[.ns]` that agent's; None for an agent not there."""
    if not namespace or not namespace.startswith(PREFIX):
        return host.state_manager, namespace or None
    runners = agent_runners(host)
    found = split_agent_namespace(namespace, runners)
    return (runners[found[0]].state_manager, found[1]) if found is not None else None


def hanging_line(spawned_by: str | None, parent_root: str | None, host_root: str) -> str:
    """The line an agent's root hangs under: the node that spawned it, else (spawned by code outside
    any node) the root of the agent that spawned it (`parent_root`), else the host's root; never
    nothing, or the agent's whole tree would be missing from the debugger's."""
    return spawned_by or parent_root or host_root


def refused_moment(path: str, when: str) -> str | None:
    """Why a node breakpoint cannot stop `when` at `path`, or None: before a swarm agent's node, since
    the agent's runner runs on its own and a debugger sees its ticks end, never begin."""
    if when == "before" and split_child_path(path) is not None:
        return f"{path}: a swarm agent runs on its own; its nodes stop after their status changes (use after)"
    return None


class SwarmChildren:
    """The spawned agents' runners, where each was spawned, and the watch on their ticks.

    `on_tick(agent_id, report)` is called after every tick of an agent (paths prefixed);
    it returns True to hold that agent until `release()`.
    """

    def __init__(self, host: ReactiveRunner, on_tick: Callable[[str, TickReport], bool]):
        self._host = host
        self._on_tick = on_tick
        self._watched: dict[str, ReactiveRunner] = {}
        self._unhook: list[Callable[[], None]] = []
        self._released = asyncio.Event()
        self._released.set()
        self.held: set[str] = set()  # the agents waiting in their after-tick hook for `release()`
        swarm = getattr(host.context, "runtime", None)
        if callable(getattr(swarm, "watch_runners", None)):  # each agent watched from its first tick
            self._unhook.append(swarm.watch_runners(lambda agent_id, runner: self.runners()))

    def runners(self) -> dict[str, ReactiveRunner]:
        """Every agent runner started so far (watched from now on)."""
        found = agent_runners(self._host)
        for agent_id, runner in found.items():
            if self._watched.get(agent_id) is not runner:
                self._watched[agent_id] = runner
                self._unhook.append(runner.add_tick_hook(after=self._hook(agent_id)))
        return found

    def parent_of(self, agent_id: str) -> str:
        """The line an agent's root hangs under (`hanging_line`)."""
        swarm = swarm_of(self._host)
        record = swarm.agents.get(agent_id) if swarm is not None else None
        parent = self.runners().get(record.parent) if record is not None and record.parent else None
        return hanging_line(record.spawned_by if record is not None else None,
                            child_path(record.parent, parent.path_of(parent.root)) if parent is not None else None,
                            self._host.path_of(self._host.root))

    def close(self) -> None:
        """Stop watching (a debugger detaching): the hooks removed, a held agent released."""
        for unhook in self._unhook:
            unhook()
        self._unhook = []
        self.release()

    def _hook(self, agent_id: str):
        async def after(runner: ReactiveRunner, report: TickReport) -> None:
            prefixed = TickReport(report.tick, report.status,  # its record too: an after-breakpoint reads `moved`
                                  changed={child_path(agent_id, p): v for p, v in report.changed.items()},
                                  ticked=[child_path(agent_id, p) for p in report.ticked],
                                  returned=report.returned, unseen=report.unseen)
            if self._on_tick(agent_id, prefixed):
                self._released.clear()
                self.held.add(agent_id)
                try:
                    await self._released.wait()
                finally:
                    self.held.discard(agent_id)

        return after

    def release(self) -> None:
        """Let the held agents carry on (each to its next tick's end, where `on_tick` is asked again)."""
        self._released.set()

    def resolve(self, path: str) -> tuple[ReactiveRunner, str] | None:
        """(the agent's runner, the path in its tree) for `@agent/path`."""
        split = split_child_path(path)
        if split is None:
            return None
        runner = self.runners().get(split[0])
        return (runner, split[1]) if runner is not None and split[1] in runner.nodes else None

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Each agent's namespaces as `@agent` (its global one) and `@agent.<namespace>`."""
        out: dict[str, dict[str, Any]] = {}
        for agent_id, runner in self.runners().items():
            for namespace, values in runner.state_manager.snapshot().items():
                out[child_namespace(agent_id, namespace or None)] = values
        return out

    @property
    def shape(self) -> tuple:
        """Changes when an agent starts or its tree grows (the tree pane then redraws them)."""
        return tuple((agent_id, len(runner.nodes)) for agent_id, runner in self.runners().items())


class PastAgents:
    """The agents a past checkpoint of the host holds: where each node of theirs is, drawn with which
    node (the live agent's, or one of a tree its role builds: names, classes and ports never change
    with time), and the lines their roots hang under."""

    def __init__(self, host: ReactiveRunner, checkpoint: Checkpoint):
        self.checkpoint = checkpoint
        saved = saved_agents(checkpoint)
        swarm, live = swarm_of(host), agent_runners(host)
        self.runners: dict[str, ReactiveRunner] = {}
        for agent_id in (agent_id for agent_id, record in saved.items() if RUNNER in record):  # it had a tree then
            runner = live.get(agent_id)
            record = swarm.agents.get(agent_id) if swarm is not None else None
            if runner is None or record is None or record.role != saved[agent_id].get("role"):
                runner = _sketched(swarm, saved[agent_id], checkpoint, agent_id)
            if runner is not None:
                self.runners[agent_id] = runner
        self.nodes: dict[str, Any] = {child_path(agent_id, path): node for agent_id, runner in self.runners.items()
                                      for path, node in runner.nodes.items()
                                      if child_path(agent_id, path) in checkpoint.statuses}
        self.roots: dict[str, str] = {}  # an agent's root -> the line it hangs under
        for agent_id, runner in self.runners.items():
            record, parent = saved[agent_id], self.runners.get(saved[agent_id].get("parent") or "")
            root = child_path(agent_id, runner.path_of(runner.root))
            if root in self.nodes:
                self.roots[root] = hanging_line(
                    record.get("spawned_by"), child_path(record["parent"], parent.path_of(parent.root))
                    if parent is not None else None, host.path_of(host.root))

    def parent(self, path: str) -> str:
        """The line an agent's node hangs under."""
        agent_id, inner = split_child_path(path)
        return self.roots[path] if path in self.roots else child_path(agent_id, inner.rpartition("/")[0])

    def children(self, path: str) -> list[str]:
        """The lines under a node at the checkpoint: an agent's node's children, then the roots of the
        agents the node spawned."""
        spawned = [root for root, line in self.roots.items() if line == path]
        split = split_child_path(path)
        if split is None:
            return spawned
        runner = self.runners[split[0]]
        own = [found for child in runner.nodes[split[1]].children
               if (found := child_path(split[0], runner.path_of(child))) in self.nodes]
        return own + spawned

    def state_of(self, path: str) -> tuple[dict[str, Any], dict[str, Any], str]:
        """The checkpoint's state of the agent whose node is at `path` and its stored lists, by the agent's
        own namespaces, and its global namespace as the state pane names it (`@agent`)."""
        agent_id = split_child_path(path)[0]
        state, lists = {}, {}
        for ns, values in self.checkpoint.state.items():
            found = split_agent_namespace(ns, self.runners)
            if found is not None and found[0] == agent_id:
                state[found[1] or ""] = values
                lists[found[1] or ""] = self.checkpoint.lists.get(ns, {})
        return state, lists, child_namespace(agent_id, None)


def _sketched(swarm: Any, saved: Mapping[str, Any], checkpoint: Checkpoint, agent_id: str) -> ReactiveRunner | None:
    """A tree the agent's role builds, to draw a past agent that does not run now, with the subtrees it
    had compiled by the checkpoint compiled; None when its role has no factory here (the checkpoint
    still shows its state)."""
    try:
        runner = swarm.sketch(saved) if swarm is not None else None
    except RuntimeError:
        return None
    prefix = child_path(agent_id, None) + "/"
    if runner is not None and any(path.startswith(prefix) and path[len(prefix):] not in runner.nodes
                                  for path in checkpoint.statuses):
        statuses, resume, state, lists = agent_parts(checkpoint, {agent_id})[agent_id]
        with contextlib.suppress(CheckpointError):  # (drawn as far as it compiles)
            compile_deferred(runner, checkpoint.id, resume, state, lists)
    return runner


__all__ = ["PREFIX", "PastAgents", "SwarmChildren", "agent_runners", "agents_state", "child_namespace", "child_path",
           "hanging_line", "refused_moment", "split_child_path", "state_manager_of", "swarm_of"]
