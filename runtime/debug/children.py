"""Swarm agents seen from the debugger: their trees, states and ticks beside the host's.

A `SwarmRuntime` runs each spawned agent in its own runner (`runners()`, its seam for
debuggers). Here an agent's node paths are shown as `@<agent id>/<path>` (the form the
swarm already gives its forwarded events), its root hangs under the node that spawned
it, and its namespaces appear as `@<agent id>` / `@<agent id>.<namespace>`.

An agent's ticks are watched with an after-tick hook. A breakpoint on one of its nodes
fires when that node's status changes: the hook then holds the agent's runner (awaiting
holds the tick) until the debugger continues, and asks it to stop.

Both debuggers use this: a local studio session, and the debug server for a studio
attached from another process (which sends the agents' nodes and namespaces by these names).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ..engine.events import EventType, RuntimeEvent
from ..engine.runner import ReactiveRunner, TickReport

PREFIX = "@"


def child_path(agent_id: str, path: str) -> str:
    return f"{PREFIX}{agent_id}/{path}"


def child_namespace(agent_id: str, namespace: str | None) -> str:
    """How the state pane names an agent's namespace: `@agent` (its global one) or `@agent.<namespace>`."""
    return f"{PREFIX}{agent_id}" + (f".{namespace}" if namespace else "")


def split_child_path(path: str) -> tuple[str, str] | None:
    """(agent id, path in the agent's tree) for `@agent/path`, None for a host path."""
    if not path.startswith(PREFIX):
        return None
    agent_id, sep, inner = path[1:].partition("/")
    return (agent_id, inner) if sep and inner else None


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
        self.spawned_by: dict[str, str] = {}  # agent id -> the node that spawned it (its SpawnAgent)
        self._watched: dict[str, ReactiveRunner] = {}
        self._unhook: list[Callable[[], None]] = []
        self._released = asyncio.Event()
        self._released.set()
        self.held: set[str] = set()  # the agents waiting in their after-tick hook for `release()`
        swarm = getattr(host.context, "runtime", None)
        if callable(getattr(swarm, "watch_runners", None)):  # each agent watched from its first tick
            self._unhook.append(swarm.watch_runners(lambda agent_id, runner: self.runners()))

    def on_event(self, event: RuntimeEvent) -> None:
        if event.type == EventType.SWARM_AGENT_SPAWNED and event.node:
            self.spawned_by[str(event.payload.get("agent"))] = event.node

    def runners(self) -> dict[str, ReactiveRunner]:
        """Every agent runner started so far (watched from now on)."""
        swarm = getattr(self._host.context, "runtime", None)
        found = swarm.runners() if callable(getattr(swarm, "runners", None)) else {}
        for agent_id, runner in found.items():
            if self._watched.get(agent_id) is not runner:
                self._watched[agent_id] = runner
                self._unhook.append(runner.add_tick_hook(after=self._hook(agent_id)))
        return found

    def parent_of(self, agent_id: str) -> str:
        """The line an agent's root hangs under: the node that spawned it, else (spawned by code
        outside any node) the root of the agent that spawned it, the host's when none did; never
        nothing, or the agent's whole tree would be missing from the debugger's."""
        spawner = self.spawned_by.get(agent_id)
        if spawner is not None:
            return spawner
        swarm = getattr(self._host.context, "runtime", None)
        record = swarm.agents.get(agent_id) if swarm is not None else None
        runner = self.runners().get(record.parent) if record is not None and record.parent else None
        if runner is None:
            return self._host.path_of(self._host.root)
        return child_path(record.parent, runner.path_of(runner.root))

    def close(self) -> None:
        """Stop watching (a debugger detaching): the hooks removed, a held agent released."""
        for unhook in self._unhook:
            unhook()
        self._unhook = []
        self.release()

    def _hook(self, agent_id: str):
        async def after(runner: ReactiveRunner, report: TickReport) -> None:
            prefixed = TickReport(report.tick, report.status,
                                  changed={child_path(agent_id, p): v for p, v in report.changed.items()},
                                  ticked=[child_path(agent_id, p) for p in report.ticked])
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
                out[child_namespace(agent_id, namespace)] = values
        return out

    @property
    def shape(self) -> tuple:
        """Changes when an agent starts or its tree grows (the tree pane then redraws them)."""
        return tuple((agent_id, len(runner.nodes)) for agent_id, runner in self.runners().items())


__all__ = ["PREFIX", "SwarmChildren", "child_namespace", "child_path", "refused_moment", "split_child_path"]
