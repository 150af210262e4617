"""The served run's past, read from its checkpoint store for a debugger in another process.

A run records checkpoints only when its runner has a checkpointer (`make_runner(checkpointer=
store)`); then the client gets every checkpoint as a timeline row (id, tick, branch, parent,
what it changed) and can ask for one checkpoint as the studio draws it: node statuses and
loop counters, state, the keys that differ from its parent, and the port bindings of then;
a swarm's agents as the checkpoint holds them, their nodes described (`agents`) since the
client may know none of them live. Everything is read from the store, so nothing later
than the checkpoint leaks into it.

The keys marked as changed are the ones a local studio marks (`studio.frames`): a checkpoint's
differences from its parent, a key written only by work finishing after the parent's tick
(between ticks) labelled with that tick, and live, what was written since the newest
checkpoint was saved. So the server is told which writes happen between ticks (`wrote`).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Any

from py_trees.common import Status

from ..engine.behaviour import JianmuNodeMixin, binding_key
from ..engine.runner import ReactiveRunner, TickReport
from ..memory.checkpoint import Checkpoint, CheckpointError, CheckpointInfo, StoreError
from ..memory.checkpoint.whatif_marks import Mark, marks
from ..node.composites import loop_counter
from .changes import changed_keys, checkpoint_summary, row_numbers
from .children import PastAgents, agents_state, state_manager_of, swarm_of
from .names import State, StateNames
from .protocol import ProtocolError, returns_json, whole_number
from .summaries import TickSummaries
from .whatif_notes import marked

CACHED = 8  # decoded checkpoints kept: the newest, its parent, the one viewed and its parent, ...
ROWS_PER_UPDATE = 50  # rows summed up per update: a busy recording run's rows follow in later ones
WRITES_KEPT = 10_000  # ticks whose written keys are remembered (to label a past checkpoint's marks)
NO_STORE = "this run records no checkpoints: give its runner a checkpoint store (make_runner(checkpointer=store))"


class RunPast:
    """Rows and checkpoints of the runner's run, decoded from its store (a few kept)."""

    def __init__(self, runner: ReactiveRunner):
        self.runner = runner
        self._cache: OrderedDict[tuple[int, bool], Checkpoint] = OrderedDict()
        self._summaries: dict[int, str] = {}
        self._listed: tuple[str | None, int | None] = (None, None)  # (run id, last id) listed from the store
        self._unsent: deque[CheckpointInfo] = deque()  # listed, not sent as rows yet (a busy run's, in turn)
        self.names = StateNames(runner.state_manager.schema)
        self._ticks = TickSummaries(self.names)  # rows summed up from the ticks that saved them
        self._writes: OrderedDict[tuple[str, int, bool], set[str]] = OrderedDict()  # (branch, tick, between)
        self._head: tuple[int, int, State, dict[str, list[Any]]] | None = None  # the newest: id, tick, state, marks
        self._whatifs: tuple[str | None, list[Mark]] = (None, [])  # a run's what-if marks, for the rows' notes

    @property
    def recording(self) -> bool:
        return getattr(self.runner.checkpoints, "store", None) is not None

    @property
    def branch(self) -> str:
        checkpoints = self.runner.checkpoints
        return checkpoints.branch if checkpoints is not None else "main"

    @property
    def location(self) -> str | None:
        """Where the run records (a file or a PostgreSQL URL without its password), for `jianmu-studio
        replay` once the run has returned; None when it records nowhere another process can open."""
        location = getattr(getattr(self.runner.checkpoints, "store", None), "location", None)
        return location if location and location != ":memory:" else None

    def store(self):
        if not self.recording:
            raise ProtocolError("bad_request", NO_STORE)
        return self.runner.checkpoints.store

    # -- rows ------------------------------------------------------------------------
    def rows(self) -> list[dict[str, Any]]:
        """The current run's checkpoints from its first, all branches, oldest first: the first
        `ROWS_PER_UPDATE` of them (the rest follow as new rows), remembered as sent."""
        self._listed = (self.runner.run_id, None)
        self._unsent.clear()
        return self.new_rows()

    def new_rows(self, limit: int = ROWS_PER_UPDATE) -> list[dict[str, Any]]:
        """The checkpoints saved since the rows last sent (the oldest `limit` of them). Each is listed
        from the store once: those a busy run saved beyond `limit` wait here for the next updates."""
        if not self.recording or self.runner.run_id is None:
            return []
        run_id, after = self._listed
        if run_id != self.runner.run_id:
            run_id, after = self.runner.run_id, None
            self._unsent.clear()
        if len(self._unsent) < limit:
            self._unsent.extend(self.runner.checkpoints.store.list(run_id, after=after))
            after = self._unsent[-1].id if self._unsent else after
        self._listed = (run_id, after)
        return [self.row(self._unsent.popleft()) for _ in range(min(limit, len(self._unsent)))]

    def row(self, info: CheckpointInfo) -> dict[str, Any]:
        return {"id": info.id, "tick": info.tick, "status": info.status, "branch": info.branch,
                "parent_id": info.parent_id, "source": info.source, "event_position": info.event_position,
                "summary": self.shown(info)}

    def shown(self, info: CheckpointInfo) -> str:
        """A row's summary as a local timeline shows it: with the what-ifs made there (`whatif_notes`)."""
        run_id, kept = self._whatifs
        if run_id != info.run_id:
            try:
                kept = marks(self.store(), info.run_id)
            except StoreError:
                kept = []
            self._whatifs = (info.run_id, kept)
        return marked(self.summary(info), info, kept)

    def forget_whatifs(self) -> None:
        """A what-if was made: the rows' notes are read from the store again."""
        self._whatifs = (None, [])

    def summary(self, info: CheckpointInfo) -> str:
        """`3 nodes; messages, rounds`: node statuses and state keys changed since the parent."""
        cached = self._summaries.get(info.id)
        if cached is None and (noted := self._ticks.take(info.id, info.parent_id)) is not None:
            cached = self._summaries[info.id] = checkpoint_summary(info, *noted)
        if cached is None:
            checkpoint = self.get(info.id, lists=False)
            parent = self.get(info.parent_id, lists=False) if info.parent_id is not None else None
            transient = checkpoint.returns.transient(checkpoint.statuses) if checkpoint.returns is not None else ()
            cached = checkpoint_summary(info, *row_numbers(
                checkpoint.statuses, transient, self._compared(checkpoint),
                None if parent is None else (parent.statuses, self._compared(parent))))
            self._summaries[info.id] = cached
        return cached

    def _compared(self, checkpoint: Checkpoint) -> State:
        """A checkpoint's state read without its stored lists, each list by its reference (id, length)
        instead, every key by the name the studio shows, in its order (as a local timeline's row)."""
        state = {ns: dict(values) for ns, values in checkpoint.state.items()}
        for ns, refs in checkpoint.lists.items():
            state.setdefault(ns, {}).update(refs)
        return self.names.state(state, parsed=True)

    # -- one checkpoint --------------------------------------------------------------
    def get(self, checkpoint_id: Any, *, lists: bool = True) -> Checkpoint:
        """The decoded checkpoint (stored lists left as references unless `lists`: enough to compare
        two checkpoints); `bad_request` for an id the store does not hold."""
        store = self.store()
        if not whole_number(checkpoint_id):
            raise ProtocolError("bad_request", f"checkpoint {checkpoint_id!r:.40}: a checkpoint id is a whole number")
        key = (checkpoint_id, lists)
        try:
            checkpoint = self._cache.pop(key, None) or store.get(checkpoint_id, read_lists=lists)
        except (CheckpointError, StoreError, ValueError, TypeError) as exc:
            raise ProtocolError("bad_request", f"checkpoint {checkpoint_id!r}: {exc}") from None
        self._cache[key] = checkpoint
        while len(self._cache) > CACHED:
            self._cache.popitem(last=False)
        return checkpoint

    def info(self, checkpoint_id: Any) -> CheckpointInfo:
        checkpoint = self.get(checkpoint_id)
        if checkpoint.run_id != self.runner.run_id:
            raise ProtocolError("bad_request", f"checkpoint {checkpoint.id} belongs to run {checkpoint.run_id}, "
                                               f"not to the run served ({self.runner.run_id})")
        return checkpoint.info

    def describe(self, checkpoint_id: Any) -> dict[str, Any]:
        """One checkpoint as a frame: statuses, what its tick returned, loop counters, state, marks, ports
        bound then, and the nodes of the swarm's agents it holds."""
        checkpoint = self.get(checkpoint_id)
        nodes, agents = self.runner.nodes, PastAgents(self.runner, checkpoint)
        counters, ports = {}, {}
        for path in checkpoint.statuses:
            node = nodes.get(path) or agents.nodes.get(path)
            data = (checkpoint.resume.get(path) or {}).get("data")
            if isinstance(data, dict) and "iteration_count" in data:
                counter = loop_counter(node, Status(checkpoint.statuses[path]), data["iteration_count"])
                if counter is not None:
                    counters[path] = counter
            if isinstance(node, JianmuNodeMixin):
                inputs, outputs = ((node.input_bindings, node.output_bindings) if path in agents.nodes  # never rebound
                                   else self.runner.checkpoints.bindings_at(checkpoint, path))
                ports[path] = [[direction, port, binding_key(port, bound.get(port))]
                               for direction, declared, bound in (("in", node.input_ports, inputs),
                                                                  ("out", node.output_ports, outputs))
                               for port in dict.fromkeys([*declared, *bound])]
        return {"checkpoint": self.row(checkpoint.info), "statuses": checkpoint.statuses, "counters": counters,
                "returns": returns_json(checkpoint.returns),
                "ports": ports, "rebound": sorted(self.runner.checkpoints.rebound(checkpoint)),
                "state": self.names.state(checkpoint.state), "marks": self.marks(checkpoint),
                "agents": [_agent_node(agents, path, node) for path, node in agents.nodes.items()]}

    # -- what changed, as the studio marks it ----------------------------------------
    def wrote(self, namespace: str | None, keys: Any, *, between: bool) -> None:
        """State keys written now: during a tick, or `between` ticks (after its checkpoint was saved); a
        swarm agent's in its namespaces as a debugger names them (`@agent[.ns]`). Only a run that
        records has marks to label."""
        if not self.recording:
            return
        self._ticks.wrote(namespace or "", keys)
        where = (self.branch, self.runner.tick_count, between)
        written = self._writes.pop(where, None) or set()
        written.update((namespace or "", self.names.key(key) if not namespace else key) for key in keys)
        self._writes[where] = written
        while len(self._writes) > WRITES_KEPT:
            self._writes.popitem(last=False)

    def ticked(self, report: TickReport) -> None:
        """A tick ended, its checkpoint saved: its row's summary is noted now, not decoded later
        (`TickSummaries`); a swarm's agents change with it, so its rows are read from the store."""
        if self.recording:
            self._ticks.saved(self.runner.checkpoints.head, report, followed=swarm_of(self.runner) is None)

    def _written(self, branch: str, tick: int, between: bool) -> set[str]:
        return {self.names.qualified(ns, key) for ns, key in self._writes.get((branch, tick, between), ())}

    def marks(self, checkpoint: Checkpoint) -> list[list[Any]]:
        """`[key, old, new, between]` for each key that differs from the parent checkpoint; `between`
        is the parent's tick for a key written only after that tick's checkpoint (not during this
        tick), else null."""
        if checkpoint.parent_id is None:
            return []
        parent = self.get(checkpoint.parent_id)
        between = (self._written(parent.branch, parent.tick, True)
                   - self._written(checkpoint.branch, checkpoint.tick, False))
        return [[key, old, new, parent.tick if key in between else None] for key, old, new
                in changed_keys(self.names.state(parent.state), self.names.state(checkpoint.state))]

    def head_marks(self, *, whole: bool = False) -> list[list[Any]]:
        """The live run's marks as `[key, old, between]` (new: the value the client holds): its newest
        checkpoint's, and what was written since it was saved (`between` that checkpoint's tick).
        Only the keys written since are compared with the state, unless `whole` (a client attaching
        now, who may have missed writes); none for a run that records no checkpoints."""
        head = self.runner.checkpoints.head if self.recording else None
        if head is None:
            return []
        if self._head is None or self._head[0] != head:
            checkpoint = self.get(head)
            self._head = (head, checkpoint.tick, self.names.state(checkpoint.state),
                          {key: [key, old, between] for key, old, _, between in self.marks(checkpoint)})
        _, tick, saved, marks = self._head
        if whole:  # the swarm's agents' namespaces too, as the checkpoints hold them
            now = self.names.state({**self.runner.state_manager.snapshot(), **agents_state(self.runner)})
        else:  # written after the checkpoint, or during the next tick (held before a node)
            now, then = {}, {}
            for ns, key in {*self._writes.get((self.branch, tick, True), ()),
                            *self._writes.get((self.branch, tick + 1, False), ())}:
                sm, local = state_manager_of(self.runner, ns) or (None, None)  # (an agent's: its own)
                if sm is not None and sm.contains(key, local):
                    now.setdefault(ns, {})[key] = sm.get(key, local)
                if key in saved.get(ns, {}):
                    then.setdefault(ns, {})[key] = saved[ns][key]
            now, saved = self.names.state(now), then
        since = {key: [key, old, tick] for key, old, _ in changed_keys(saved, now)}
        return list({**marks, **since}.values())


def _agent_node(agents: PastAgents, path: str, node: Any) -> dict[str, Any]:
    """The shape of a swarm agent's node at a past checkpoint, as the protocol describes a node (its
    status, counter and ports are the checkpoint's); `agent` names the agent."""
    agent_id = path[1:].partition("/")[0]
    return {"path": path, "name": node.name, "class": type(node).__name__, "parent": agents.parent(path),
            "children": agents.children(path), "namespace": getattr(node, "namespace", None), "agent": agent_id}


__all__ = ["NO_STORE", "RunPast", "changed_keys"]
