"""A swarm's agents in a check: held to the pace the recording shows them at.

A swarm's agents run in runners of their own, between their host's ticks, as far as their
work lets them; each checkpoint of the host catches every agent at some tick of its own (the
agent's saved record keeps where its runner stood). With every answer served without a
model's latency, a re-run's agents would run ahead of that. So each agent's runner waits at a
gate before each of its ticks: before the host's tick N, an agent may run up to the tick the
recording's checkpoint N shows it at, and the host's tick N waits until it has (agent ticks
between two checkpoints all come before the host's next tick: a tick never waits, and its
checkpoint is saved as it ends).

An agent that had not started when the recording's checkpoint was taken (spawned, its task
not begun) is built in the re-run and waits at its first gate holding only its input: it is
compared from its first tick on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from typing import TYPE_CHECKING, Any

from py_trees.common import Status

from ..engine.events import EventType
from ..memory.checkpoint.agents import RUNNER, saved_agents, swarm_of
from ..swarm.naming import agent_path, split_agent_namespace
from .compare import Difference
from .served import AgentIO, ServedIO

if TYPE_CHECKING:
    from ..engine.runner import ReactiveRunner
    from ..memory.checkpoint import Checkpoint


class AgentPace:
    """The gates of one re-run's agents, opened checkpoint by checkpoint as the recording's were."""

    def __init__(self, host: ReactiveRunner, served: ServedIO):
        self.swarm = swarm_of(host)
        self.served = served
        self.allowed: dict[str, int] = {}  # agent id -> ticks it may have run before the host's next tick
        self._runners: dict[str, ReactiveRunner] = {}
        self._opened = asyncio.Event()  # replaced each time the gates open
        self._moved = asyncio.Event()  # an agent ticked, was built or ended
        self._closed = False  # the re-run is over: the gates stay open
        watch = getattr(self.swarm, "watch_runners", None)
        self._unwatch = watch(self._built) if callable(watch) else (lambda: None)
        self._ended = host.event_bus.subscribe(lambda _event: self._moved.set(),
                                               types=(EventType.SWARM_AGENT_FINISHED,))

    def _built(self, agent_id: str, runner: ReactiveRunner) -> None:
        runner.context.io_recorder = AgentIO(self.served, agent_id)
        runner.add_tick_hook(before=functools.partial(self._gate, agent_id), after=self._ticked)
        self._runners[agent_id] = runner
        self._moved.set()

    async def _gate(self, agent_id: str, _runner: Any, tick: int) -> None:
        while not self._closed and tick > self.allowed.get(agent_id, 0):
            await self._opened.wait()

    def _ticked(self, *_: Any) -> None:
        self._moved.set()

    def open(self, recorded: Checkpoint) -> None:
        """Let each agent run as far as `recorded` (the checkpoint of the host's next tick) shows it."""
        self.allowed = {agent_id: int(saved[RUNNER].get("tick", 0)) for agent_id, saved in saved_agents(recorded).items()
                        if agent_id and RUNNER in saved}
        opened, self._opened = self._opened, asyncio.Event()
        opened.set()

    async def reach(self, tick: int, idle: float) -> Difference | None:
        """Wait until every agent of the re-run has run as far as it may before the host's `tick` (or
        ended); a Difference when one stays short of it for `idle` seconds."""
        while True:
            behind = self._behind()
            if behind is None:
                return None
            self._moved.clear()
            try:
                await asyncio.wait_for(self._moved.wait(), idle)
            except TimeoutError:
                agent_id, ticks = behind
                return Difference(tick, agent_path(agent_id, None), "wake", f"the agent stopped at its tick {ticks} "
                                  f"(nothing woke it in {idle:g} s); the recording's ran to its tick "
                                  f"{self.allowed[agent_id]} before the host's tick {tick}")

    def _behind(self) -> tuple[str, int] | None:
        """(an agent short of its allowed tick, the ticks it ran), None when none is."""
        spawned = None
        for agent_id, allowed in self.allowed.items():
            runner = self._runners.get(agent_id)
            if runner is None:  # spawned here but its task has not begun: it will build its runner
                spawned = self.swarm.dump_agents() if spawned is None else spawned
                if allowed and (spawned.get(agent_id) or {}).get("status") == "running":
                    return agent_id, 0
            elif runner.tick_count < allowed and not (runner.tick_count and runner.root.status != Status.RUNNING):
                return agent_id, runner.tick_count
        return None

    def close(self) -> None:
        self._closed = True
        self._unwatch()
        self._ended.close()
        self._opened.set()


def without_unstarted(recorded: Checkpoint, now: Checkpoint) -> Checkpoint:
    """`now` without the state of the agents that wait at their first gate in it and had not started in
    `recorded`."""
    then = saved_agents(recorded)
    waiting = {agent_id for agent_id, saved in saved_agents(now).items()
               if agent_id and (saved.get(RUNNER) or {}).get("tick", 1) == 0 and RUNNER not in then.get(agent_id, {})}
    if not waiting:
        return now
    return dataclasses.replace(now, state={ns: v for ns, v in now.state.items() if not split_agent_namespace(ns, waiting)},
                               lists={ns: v for ns, v in now.lists.items() if not split_agent_namespace(ns, waiting)})


__all__ = ["AgentPace", "without_unstarted"]
