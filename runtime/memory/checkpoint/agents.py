"""A swarm's agents, recorded with their host's checkpoints and brought back by a restore.

A host whose `RunContext.runtime` is a swarm (`runtime.swarm.SwarmRuntime`: anything with the
`Swarm` methods below) runs each agent in a runner of its own, which keeps no checkpoints.
Each checkpoint of the host holds its agents as they were when it was saved, in the same
record as the host's nodes and state, by the names a debugger shows them
(`runtime.swarm.naming`):

- an agent's node statuses, composite positions, resume data and model position under
  `@agent/<path>`;
- its namespaces as `@agent` (its global one) and `@agent.<namespace>`;
- under `@agent` in the resume data its record (role, task, parent, status, the node that
  spawned it, groups, topics), the messages waiting for it and where its runner stood (tick,
  run id, wake); the host's own record and mailbox under `@<host id>`; under `@` the swarm's
  next message id and the members of its groups and topics.

A record stores what changed since the previous one, so an agent that did nothing since
costs nothing. Agents run on between their host's ticks: a checkpoint catches each of them
between two of its own ticks, where work that has finished since its last tick is not
reported yet (kept as `done`: a restore reports it, rather than doing it again) and a message
handed to a receive that has not returned yet still counts as waiting. So a checkpoint is one
moment of the whole swarm.

Restoring builds each agent again with its role's factory, loads its runner and state as
saved, and runs on those that were running once the host runs again (its next tick, or a
`run()` of a host restored finished).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from py_trees.common import Status

from ...engine.capture import RunnerState
from ...engine.events import EventType
from ...state import GLOBAL, StateManager
from ...swarm.naming import PREFIX, agent_namespace, agent_path, split_agent_namespace, split_agent_path
from .deferred import compile_deferred
from .model import Checkpoint, jsonable
from .positions import resumable_models
from .store import CheckpointError

if TYPE_CHECKING:
    from ...engine.runner import ReactiveRunner

RUNNER = "runner"  # in an agent's saved record: where its runner stood (absent: it had not started)


class Swarm(Protocol):
    """What a host's `RunContext.runtime` offers to have its agents recorded with the host's checkpoints."""

    run_id: str | None  # the host run it belongs to (None: not used yet)
    host_id: str

    def runners(self) -> dict[str, ReactiveRunner]: ...

    def dump_agents(self) -> dict[str, dict[str, Any]]: ...

    def load_agents(self, saved: Mapping[str, Mapping[str, Any]], host: ReactiveRunner, run_id: str | None,
                    prepare: Callable[[str, ReactiveRunner], Any]) -> None: ...

    def start_agents(self) -> None: ...

    def sketch(self, saved: Mapping[str, Any]) -> ReactiveRunner: ...

    def resolve_reference(self, saved: Any) -> Any: ...


def swarm_of(runner: ReactiveRunner) -> Swarm | None:
    """The runner's swarm (its `RunContext.runtime`, when that has agents to record), else None: a look
    at one attribute, as every save asks (a runtime-checkable protocol's isinstance costs ~80 us)."""
    runtime = runner.context.runtime
    return runtime if callable(getattr(runtime, "dump_agents", None)) else None


def recorded_namespace(agent_id: str, namespace: str) -> str:
    """An agent's namespace as a record names it (`@agent` or `@agent.<namespace>`)."""
    return agent_namespace(agent_id, namespace or None)


def saved_agents(checkpoint: Checkpoint) -> dict[str, dict[str, Any]]:
    """The swarm a checkpoint holds, as `dump_agents()` gave it: by agent id (the host's too) its
    saved record, under "" the swarm's own; empty for a run with no swarm (or none recorded)."""
    return {path[len(PREFIX):]: entry["data"] for path, entry in checkpoint.resume.items()
            if path.startswith(PREFIX) and "/" not in path and "data" in (entry or {})}


def is_agent_path(path: str) -> bool:
    """A path a checkpoint holds for a swarm's agent (`@agent/...`, `@agent`, `@`), not a host node."""
    return path.startswith(PREFIX)


class AgentCheckpoints:
    """The agents of one runner's swarm, as that runner's checkpoints record and restore them."""

    def __init__(self, runner: ReactiveRunner):
        self.runner = runner
        self._recorded: dict[str, set[str]] = {}  # agent id -> the resume paths last recorded for it
        self._whole: dict[str, ReactiveRunner] = {}  # agent id -> the runner whose whole state is recorded
        self._drop_start: Callable[[], None] = lambda: None

    def reset(self) -> None:
        """A new line of checkpoints: each agent is recorded whole again."""
        self._recorded.clear()
        self._whole.clear()

    def mark(self) -> tuple[dict[str, set[str]], dict[str, ReactiveRunner]]:
        """What has been recorded of the agents, for `back` to return to."""
        return dict(self._recorded), dict(self._whole)

    def back(self, mark: tuple[dict[str, set[str]], dict[str, ReactiveRunner]]) -> None:
        """Recorded as at `mark` (the records taken since were never stored)."""
        self._recorded, self._whole = mark

    def _swarm(self) -> Swarm | None:
        """The swarm to record: the runner's, unless it still holds another run's agents (a fresh run's
        first checkpoint: its host nodes have not used the swarm yet, which then starts empty)."""
        swarm = swarm_of(self.runner)
        return swarm if swarm is not None and swarm.run_id in (None, self.runner.run_id) else None

    # -- recording -------------------------------------------------------------------
    def capture(self, captured: RunnerState) -> dict[str, dict[str, Any] | None]:
        """Each agent's node statuses, added to `captured` after the host's; returns the resume entries
        of the agents (path -> entry, None: an entry gone since the last record), the swarm's own
        records and mailboxes included."""
        swarm = self._swarm()
        if swarm is None:
            return {}
        entries: dict[str, dict[str, Any] | None] = {}
        where: dict[str, dict[str, Any]] = {}
        for agent_id, runner in swarm.runners().items():
            state = runner.capture()
            where[agent_id] = {"tick": state.tick, "run_id": state.run_id, "position": state.event_position,
                               "wake": state.wake}
            now = self._entries(agent_id, runner, state, captured)
            for gone in self._recorded.get(agent_id, set()) - now.keys():
                entries[gone] = None
            self._recorded[agent_id] = set(now)
            entries.update(now)
        for agent_id, saved in swarm.dump_agents().items():
            if agent_id in where:
                saved = {**saved, RUNNER: where[agent_id]}
            entries[agent_path(agent_id, None)] = {"data": jsonable(saved)}
        return entries

    @staticmethod
    def _entries(agent_id: str, runner: ReactiveRunner, state: RunnerState,
                 captured: RunnerState) -> dict[str, dict[str, Any]]:
        """An agent's statuses into `captured`, and its resume entries: its composites' positions, its
        nodes' resume data, its model's position, and the end of work not reported yet (`done`)."""
        for path, status in state.statuses.items():
            captured.statuses[agent_path(agent_id, path)] = status
        entries: dict[str, dict[str, Any]] = {}

        def entry(path: str) -> dict[str, Any]:
            return entries.setdefault(agent_path(agent_id, path), {})

        for path, index in state.positions.items():
            entry(path)["child"] = index
        for path, data in state.resume.items():
            entry(path)["data"] = jsonable(data)
        for path, provider in resumable_models(runner.nodes):
            entry(path)["model"] = jsonable(provider.dump_resume_state())
        for path, node in runner.nodes.items():
            finished = node.finished_work() if hasattr(node, "finished_work") else None
            if finished is not None:
                entry(path)["done"] = finished.value
        return entries

    def states(self, full: bool) -> list[tuple[Callable[[str], str], StateManager, bool]]:
        """Each agent's state to record: (how a namespace of it is named in the record, its state
        manager, whether to record it whole: a full record, or an agent not recorded whole yet)."""
        swarm = self._swarm()
        if swarm is None:
            return []
        out = []
        for agent_id, runner in swarm.runners().items():
            whole = full or self._whole.get(agent_id) is not runner
            self._whole[agent_id] = runner
            out.append((functools.partial(recorded_namespace, agent_id), runner.state_manager, whole))
        return out

    def state_managers(self) -> list[tuple[str, StateManager]]:
        """Each recorded agent's id and state, as they are now (nothing marked recorded)."""
        swarm = self._swarm()
        return [] if swarm is None else [(agent_id, runner.state_manager) for agent_id, runner in swarm.runners().items()]

    def node(self, path: str) -> Any:
        """The live node at an agent's path (`@agent/path`), None for another path."""
        split = split_agent_path(path)
        swarm = swarm_of(self.runner)
        runner = swarm.runners().get(split[0]) if split is not None and swarm is not None else None
        return runner.nodes.get(split[1]) if runner is not None else None

    def state_manager(self, namespace: str, checkpoint: Checkpoint | None = None) -> tuple[StateManager, str | None] | None:
        """(the state manager holding an agent's namespace `@agent[.ns]`, the namespace there), None for a
        host namespace: the agent's live runner's, else (an agent not running here, a checkpoint
        given) one of its role's tree built for the purpose."""
        swarm = swarm_of(self.runner)
        if swarm is None or not namespace.startswith(PREFIX):
            return None
        runners = swarm.runners()
        saved = saved_agents(checkpoint) if checkpoint is not None else {}
        split = split_agent_namespace(namespace, {*runners, *saved} - {""})
        if split is None:
            return None
        agent_id, local = split
        runner = runners.get(agent_id)
        if runner is None and agent_id in saved:
            try:
                runner = swarm.sketch(saved[agent_id])
            except RuntimeError as exc:
                raise CheckpointError(f"checkpoint {checkpoint.id}: {exc}") from None
        return (runner.state_manager, local) if runner is not None else None

    # -- restoring -------------------------------------------------------------------
    def restore(self, checkpoint: Checkpoint) -> None:
        """Build the checkpoint's agents again (`CheckpointError`, nothing changed, when one cannot be
        built), load each agent's runner and state as saved, and run on those that were running once
        the host runs again (call before the host runner's own `load`: its restart of async work,
        just before its next tick, may wait for what the agents send)."""
        saved = saved_agents(checkpoint)
        swarm = swarm_of(self.runner)
        if swarm is None:
            if saved:
                raise CheckpointError(f"checkpoint {checkpoint.id} holds a swarm's agents, and this runner's "
                                      "context has none (RunContext.runtime)")
            return
        parts = agent_parts(checkpoint, set(saved) - {""})

        def prepare(agent_id: str, runner: ReactiveRunner) -> None:
            statuses, resume, state, lists = parts[agent_id]
            if RUNNER in saved[agent_id]:  # (else it had not started: it starts afresh)
                compile_deferred(runner, checkpoint.id, resume, state, lists)  # its subtrees compiled then
                self._load_runner(runner, saved[agent_id][RUNNER], statuses, resume, self.live(state), lists)

        try:
            swarm.load_agents(saved, self.runner, checkpoint.run_id, prepare)
        except RuntimeError as exc:  # a SwarmError: a role with no factory here, a factory that raised
            raise CheckpointError(f"checkpoint {checkpoint.id}: {exc}") from None
        self._drop_start()
        if any(record.get("status") == "running" for agent_id, record in saved.items()
               if agent_id not in ("", swarm.host_id)):
            self._start_with_host(swarm, checkpoint.run_id)

    def _start_with_host(self, swarm: Swarm, run_id: str) -> None:
        """Run on the restored agents once their host runs again: its next tick, or a `run()` (of a host
        restored finished, which ticks no more) of the same run, whichever comes first."""
        def start(*_: Any) -> None:
            self._drop_start()
            if self.runner.run_id == run_id:
                swarm.start_agents()

        remove_hook = self.runner.add_tick_hook(before=start)
        subscription = self.runner.event_bus.subscribe(start, types=(EventType.RUN_STARTED,))

        def drop() -> None:
            remove_hook()
            subscription.close()
            self._drop_start = lambda: None

        self._drop_start = drop

    @staticmethod
    def _load_runner(runner: ReactiveRunner, where: Mapping[str, Any], statuses: dict[str, str],
                     resume: dict[str, dict[str, Any]], state: dict[str, dict[str, Any]],
                     lists: dict[str, list[str]]) -> None:
        runner.state_manager.restore(state, trusted=lists)
        runner.load(RunnerState(
            int(where.get("tick", 0)), where.get("run_id"), int(where.get("position", 0)), bool(where.get("wake")),
            statuses=statuses, positions={p: r["child"] for p, r in resume.items() if "child" in r},
            resume={p: r["data"] for p, r in resume.items() if "data" in r}))
        for path, provider in resumable_models(runner.nodes):
            position = (resume.get(path) or {}).get("model")
            if position is not None:
                provider.restore_resume_state(position)
        for path, entry in resume.items():
            node = runner.nodes.get(path)
            if "done" in entry and hasattr(node, "resume_finished"):
                node.resume_finished(Status(entry["done"]))

    def live(self, state: Mapping[str, Mapping[str, Any]], holder: StateManager | None = None) -> dict[str, dict[str, Any]]:
        """A saved state with each saved reference to a live handle (a swarm, or one of its members, held
        in state) replaced by that handle: as the run's swarm resolves it, or the handle `holder` (the
        state being restored over) holds under that key now. Only mappings are asked about: no stored
        list is read."""
        out = {ns: dict(values) for ns, values in state.items()}
        for ns, values in out.items():
            for key, value in values.items():
                if isinstance(value, Mapping):
                    now = holder.stored(key, ns or None) if holder is not None else None
                    for resolver in (self.runner.context.runtime, now):
                        resolve = getattr(resolver, "resolve_reference", None)
                        handle = resolve(value) if callable(resolve) else None
                        if handle is not None:
                            values[key] = handle
                            break
        return out


def agent_parts(checkpoint: Checkpoint, agent_ids: set[str]) -> dict[str, tuple[dict, dict, dict, dict]]:
    """The checkpoint's statuses, resume entries, state and stored lists of each agent, named as in
    the agent's own runner (its paths, its namespaces)."""
    parts: dict[str, tuple[dict, dict, dict, dict]] = {agent_id: ({}, {}, {}, {}) for agent_id in agent_ids}
    for path, status in checkpoint.statuses.items():
        split = split_agent_path(path)
        if split is not None and split[0] in parts:
            parts[split[0]][0][split[1]] = status
    for path, entry in checkpoint.resume.items():
        split = split_agent_path(path)
        if split is not None and split[0] in parts and entry:
            parts[split[0]][1][split[1]] = entry
    for namespace, values in checkpoint.state.items():
        split = split_agent_namespace(namespace, agent_ids) if namespace.startswith(PREFIX) else None
        if split is not None:
            agent_id, local = split
            parts[agent_id][2][local or GLOBAL] = values
            if namespace in checkpoint.lists:
                parts[agent_id][3][local or GLOBAL] = list(checkpoint.lists[namespace])
    return parts


def host_part(checkpoint: Checkpoint) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, list]]]:
    """The checkpoint's state and stored lists without its agents' namespaces: the host's own."""
    return ({ns: values for ns, values in checkpoint.state.items() if not ns.startswith(PREFIX)},
            {ns: lists for ns, lists in checkpoint.lists.items() if not ns.startswith(PREFIX)})


__all__ = ["AgentCheckpoints", "Swarm", "agent_parts", "host_part", "is_agent_path", "saved_agents", "swarm_of"]
