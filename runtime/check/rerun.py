"""`check_run`: re-run a tree against a recorded run, offline, and say where it parts from it.

The tree is built afresh and run from the recorded input (the run's first checkpoint: what
the run really started from, edits before its first step included), tick by tick, into a
scratch store in memory (the recording is only read). Every model answer and tool result is
served from the recording (`ServedIO`): nothing is called, no provider is started (its
tools are stood in for from the recorded schemas), and a request the recording does not
hold stops the check. After each recorded tick the two pictures of the run are compared
with `compare`: what each node returned in the tick (in order), the statuses it left, then
each state key. Between ticks the recording's own
answers are given again: the approvals it resolved, the edits it saved (an `update` or a
`fork` checkpoint); where the recording suspended between ticks (a `suspend` checkpoint), the
re-run must suspend too. The first difference ends the check.

How far async work got between two ticks depends on who drove the recorded run: `Agent.run`
ticks again as soon as a wake is pending, the studio and `jianmu-studio run` first let the
event loop turn once. So a tick whose picture differs is tried again, in a fresh re-run
from the start, with the work started before it let run first (`SETTLE_TURNS`); only a
difference that stays is reported. A recorded run spends no time waiting for a model, so a
check costs what running the tree costs, without the model's latency.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..agent import Agent
from ..engine.behaviour import JianmuNodeMixin
from ..engine.events import EventType, RuntimeEvent
from ..engine.runner import TickReport
from ..memory.checkpoint import (
    Checkpoint,
    CheckpointInfo,
    CheckpointStore,
    InMemoryCheckpointStore,
    ReplayDivergence,
    Source,
)
from ..memory.checkpoint.agents import swarm_of
from ..memory.checkpoint.lineage import lineage
from ..state import StateChange, StateValidationError
from .agents import AgentPace, without_unstarted
from .compare import Difference, Pictures
from .served import ServedIO
from .stand_ins import stand_in_providers

SETTLE_TURNS = 8  # event-loop turns given to work in flight before a tick tried again
RERUNS = 8  # fresh re-runs at most, each settling one more tick
TASK_PREFIX = "jianmu:"  # an async node's task is named this and its path (`AsyncBehaviour.initialise`)
IDLE = 30.0  # seconds a re-run may wait for a wake the recording had before it is called stuck


@dataclass
class CheckReport:
    """How a re-run compared with its recording: `divergence` is None when every tick matched."""

    run_id: str
    branch: str
    ticks: int  # recorded ticks compared
    divergence: Difference | None = None
    also: list[str] = field(default_factory=list)  # what else differed at that tick, named
    tools_run: int = 0  # tool calls run for real (`tools_live`)

    @property
    def ok(self) -> bool:
        return self.divergence is None

    def lines(self) -> list[str]:
        """What a user reads of a divergence: its line (prefixed with the run), then its excerpt."""
        if self.divergence is None:
            return [f"run {self.run_id}: ok, {self.ticks} ticks match the recording"]
        out = [f"run {self.run_id}: {self.divergence.line}", *(f"  {line}" for line in self.divergence.detail)]
        if self.also:
            out.append(f"  (also differing at tick {self.divergence.tick}: {', '.join(self.also)})")
        return out


async def check_run(store: CheckpointStore, run_id: str, build: Callable[[], Agent], *, branch: str = "main",
                    tools_live: bool = False, rebuild: bool = True, idle: float = IDLE) -> CheckReport:
    """Re-run the tree `build()` makes against run `run_id` of `store` (its branch `branch`).

    `rebuild=False` (a tree that cannot be built twice) and `tools_live` (its tools would run
    again) check once, with no second try of a tick that differs."""
    path = lineage(store, run_id, branch)
    approvals = _recorded_approvals(store, run_id, path)
    settled: set[int] = set()
    while True:
        rerun = _Rerun(store, run_id, branch, build(), path, list(approvals), settled, tools_live, idle)
        try:
            report = await rerun.go()
        finally:
            await rerun.close()
        tick = rerun.differing_tick
        if report.ok or tick is None or tick in settled or tools_live or not rebuild or len(settled) >= RERUNS:
            return report
        settled.add(tick)


def _recorded_approvals(store: CheckpointStore, run_id: str, path: Sequence[CheckpointInfo]) -> list[RuntimeEvent]:
    """The approvals resolved along the lineage, in order (each tick's from the branch it was on)."""
    branch_at = {info.tick: info.branch for info in path}
    return [event for branch, event in store.events(run_id)
            if event.type == EventType.APPROVAL_RESOLVED and branch_at.get(event.tick) == branch]


class _Rerun:
    def __init__(self, store: CheckpointStore, run_id: str, branch: str, agent: Agent,
                 path: list[CheckpointInfo], approvals: list[RuntimeEvent], settled: set[int],
                 tools_live: bool, idle: float):
        self.store, self.run_id, self.agent, self.path = store, run_id, agent, path
        self.approvals, self.settled, self.idle = approvals, settled, idle
        self.scratch = InMemoryCheckpointStore()
        self.served = ServedIO(store, run_id, branch, tools_live=tools_live)
        agent.context.io_recorder = self.served
        self.runner = agent.make_runner(checkpointer=self.scratch)
        if not tools_live:
            stand_in_providers(self.runner.nodes, store, run_id, branch)
        self.pace = AgentPace(self.runner, self.served) if swarm_of(self.runner) is not None else None
        self._writers: dict[tuple[str, str], str] = {}  # (namespace, key) -> the node whose work last wrote it
        self.runner.state_manager.subscribe(self._written)
        self.report = CheckReport(run_id, branch, 0)
        self.differing_tick: int | None = None  # a tick whose picture differed (tried again settled)
        self._last: TickReport | None = None

    def _written(self, change: StateChange) -> None:
        """Remember which node's work wrote each key: an async node's work runs in a task named after
        its path (`jianmu:<path>`)."""
        task = asyncio.current_task()
        name = task.get_name() if task is not None else ""
        if name.startswith(TASK_PREFIX):
            for key in change.changes:
                self._writers[(change.namespace or "", key)] = name[len(TASK_PREFIX):]

    async def go(self) -> CheckReport:
        first = self.store.get(self.path[0].id)
        runner = self.runner
        runner.start_fresh(None)
        try:
            runner.state_manager.restore(first.state)
        except StateValidationError as exc:
            return self._diverged(Difference(first.tick, None, "state", f"the recorded input does not fit the "
                                             f"tree's state: {exc}"))
        self._bind(first.bindings, {})
        runner.event_bus.publish(EventType.RUN_STARTED, {"fresh": True, "tick": first.tick})
        pictures = Pictures(self.served.sides, self.store.read_list, self.scratch.read_list)
        for i, info in enumerate(self.path):
            recorded = self.store.get(info.id, read_lists=False)
            if i:
                problem = await (self._tick(info, recorded) if info.source == Source.LOOP else
                                 self._suspended(info) if info.source == Source.SUSPEND else self._edit(info))
                if problem is not None:
                    return self._diverged(problem)
            now = self.scratch.get(runner.checkpoints.head, read_lists=False)
            if self.pace is not None:
                now = without_unstarted(recorded, now)
            found = pictures.differences(info.tick, recorded, now, self._writer)
            if found:
                if info.source == Source.LOOP:
                    self.differing_tick = info.tick
                self.report.also = [f"{d.what}" + (f" at {d.node}" if d.node else "") for d in found[1:]]
                return self._diverged(found[0])
            self.report.ticks = info.tick
            if self.served.release(info.tick):  # the answers that landed after this tick, before the next
                await _settle()
        self.report.tools_run = self.served.tools_run
        return self.report

    def _diverged(self, difference: Difference) -> CheckReport:
        self.report.divergence = difference
        self.report.tools_run = self.served.tools_run
        return self.report

    async def _tick(self, info: CheckpointInfo, recorded: Checkpoint) -> Difference | None:
        """Run the recorded tick `info.tick` (after answering what the recording answered before it,
        and letting a swarm's agents run as far as the recording's had by then)."""
        if self.pace is not None:
            self.pace.open(recorded)
            problem = await self.pace.reach(info.tick, self.idle)
            if problem is not None:
                return problem
            await _settle()  # the work their last ticks started, served at once, lands before the host ticks
        problem = await self._ready(info.tick)
        if problem is not None:
            return problem
        if info.tick in self.settled:
            await _settle()
        try:
            self._last = await self.runner.step()
        except ReplayDivergence:
            return self.served.first
        except Exception as exc:  # the tree itself broke (a node raising past the runner)
            return Difference(self.runner.tick_count, None, "run", f"the re-run raised {type(exc).__name__}: {exc}")
        return None

    async def _ready(self, tick: int) -> Difference | None:
        """Wait until the next tick can run, answering approvals as the recording did."""
        runner = self.runner
        while True:
            if runner.suspended:
                problem = self._answer()
                if problem is not None:
                    return problem
                continue
            if runner.can_tick_now:
                return None
            try:
                await asyncio.wait_for(runner.wait_until_ready(), self.idle)
            except TimeoutError:
                waiting = [path for path, node in runner.nodes.items()
                           if not node.children and node.status.value == "RUNNING"]
                return Difference(runner.tick_count, waiting[0] if waiting else None, "wake",
                                  f"nothing woke the run in {self.idle:g} s, the recording ticked again (tick {tick})")

    def _answer(self) -> Difference | None:
        """Resolve the pending approvals with the recording's answers, in order."""
        manager = self.agent.context.approval_manager
        pending = manager.pending() if manager is not None else []
        tick = self.runner.tick_count
        if not pending:
            return Difference(tick, None, "interaction", "the run waits for an answer the recording never gave")
        for request in pending:
            if not self.approvals:
                return Difference(tick, request.node, "approval", f"{request.tool} waits for an approval the "
                                  "recording never gave", (f"+ now {request.tool}({request.arguments})",))
            answer = self.approvals.pop(0).payload
            if answer.get("tool") != request.tool:
                return Difference(tick, request.node, "approval", f"recorded {answer.get('tool')}, "
                                  f"now {request.tool}")
            if answer.get("decision") == "approved":
                manager.approve(request.id, answer.get("reason"), arguments=answer.get("arguments"))
            else:
                manager.deny(request.id, answer.get("reason"))
        return None

    async def _suspended(self, info: CheckpointInfo) -> Difference | None:
        """The recording suspended after tick `info.tick`, before another: so must the re-run."""
        suspended = asyncio.Event()

        def check(_: object = None) -> None:
            if self.runner.suspended:
                suspended.set()

        unsubscribe = self.runner.state_manager.subscribe(check)
        check()
        try:
            await asyncio.wait_for(suspended.wait(), self.idle)
        except TimeoutError:
            return Difference(info.tick, None, "interaction", f"the recording suspended after tick {info.tick}, "
                              f"the re-run did not within {self.idle:g} s")
        finally:
            unsubscribe()
        self.runner.checkpoints.save(Source.SUSPEND)
        return None

    async def _edit(self, info: CheckpointInfo) -> Difference | None:
        """An edit the recording saved between ticks (an update, a fork's edits): made again."""
        after = self.store.get(info.id)
        before = self.store.get(after.parent_id)
        sm = self.runner.state_manager
        try:
            for ns, values in after.state.items():
                changed = {k: v for k, v in values.items() if before.state.get(ns, {}).get(k, _GONE) != v}
                if changed:
                    sm.load(changed, ns or None)
        except StateValidationError as exc:
            return Difference(after.tick, None, "state", f"a recorded edit does not fit the tree's state: {exc}")
        self._bind(after.bindings, before.bindings)
        self.runner.checkpoints.save(Source.UPDATE)
        return None

    def _bind(self, bindings: dict[str, Any], before: dict[str, Any]) -> None:
        for path, ports in bindings.items():
            node = self.runner.nodes.get(path)
            if isinstance(node, JianmuNodeMixin) and ports != before.get(path):
                node.bind(ports.get("inputs"), ports.get("outputs"))

    def _writer(self, namespace: str, key: str) -> str | None:
        """The node that wrote a state key: the async node whose work wrote it last, else one whose
        output resolves to it, among those that changed in the last tick first, then those ticked."""
        written = self._writers.get((namespace, key))
        if written is not None:
            return written
        report = self._last
        nodes = self.runner.nodes
        for path in dict.fromkeys([*(report.changed if report else ()), *(report.ticked if report else ())]):
            node = nodes.get(path)
            if isinstance(node, JianmuNodeMixin) and (node.namespace or "") == namespace and key in _outputs(node):
                return path
        return None

    async def close(self) -> None:
        if self.pace is not None:
            self.pace.close()
        if not self.runner.finished:  # work in flight (a divergence, a recording cut short) is cancelled
            self.runner.stop()
        await self.agent.close()
        self.scratch.close()


_GONE = object()


async def _settle() -> None:
    """Let work in flight run on for a few turns of the event loop (nothing it waits for takes time)."""
    for _ in range(SETTLE_TURNS):
        await asyncio.sleep(0)


def _outputs(node: JianmuNodeMixin) -> set[str]:
    ports = [*node.output_ports, *node.output_bindings]
    key_for = getattr(node, "key_for", None)
    return {key_for(port) if key_for is not None else node.resolve_output_port(port) for port in ports}


__all__ = ["IDLE", "CheckReport", "check_run", "lineage"]
