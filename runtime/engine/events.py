"""The telemetry bus: every runtime event a debugger or a log can observe.

Events are built only when somebody listens (a subscriber whose filter accepts the type,
or a history buffer): on the tick path the runner asks `wants(type)` first, so a run
that nobody watches pays for a boolean test, not for the event. The per-node tick
telemetry (`TICK_TELEMETRY`: one `node.status` per changed node, one `node.returned` per return
the tick's end does not show) is built only for a subscriber that asked for it, never just for
the default history.

An event is a plain slotted dataclass, built without validation: its fields come from
the runtime itself. Events from outside the process (a trace file, a store) are checked
once, at that edge, by `RuntimeEvent.validate`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from typing import Any

from pydantic import TypeAdapter

log = logging.getLogger(__name__)


class EventType(StrEnum):
    RUN_STARTED = "run.started"
    RUN_COMPLETED = "run.completed"
    RUN_SUSPENDED = "run.suspended"
    RUN_FAILED = "run.failed"
    TICK_STARTED = "tick.started"
    TICK_COMPLETED = "tick.completed"
    TICK_PAUSED = "tick.paused"  # the runner holds the tick before `node` (a node boundary)
    NODE_STATUS = "node.status"
    NODE_RETURNED = "node.returned"  # a return the tick's end does not show (`runtime.engine.record`)
    NODE_ERROR = "node.error"
    STATE_CHANGED = "state.changed"
    LOG = "log"
    # the ReAct seed's telemetry
    REPLY_STARTED = "reply.started"
    MODEL_CALL_STARTED = "model.call.started"
    TEXT_DELTA = "text.delta"
    MODEL_CALL_COMPLETED = "model.call.completed"
    MODEL_CALL_FAILED = "model.call.failed"
    REPLY_COMPLETED = "reply.completed"
    TOOL_CALL_STARTED = "tool.call.started"
    TOOL_CALL_COMPLETED = "tool.call.completed"
    TOOL_CALL_FAILED = "tool.call.failed"
    APPROVAL_REQUESTED = "approval.requested"
    APPROVAL_RESOLVED = "approval.resolved"
    # the swarm (runtime.swarm): who was spawned, who talked to whom
    SWARM_AGENT_SPAWNED = "swarm.agent.spawned"
    SWARM_AGENT_FINISHED = "swarm.agent.finished"
    SWARM_MESSAGE_SENT = "swarm.message.sent"
    SWARM_MESSAGE_RECEIVED = "swarm.message.received"
    # debugger edits, recorded so a trace explains why a fork diverged
    BINDING_CHANGED = "binding.changed"
    STATE_EDITED = "state.edited"


# The types the runner tests or publishes every tick, as plain strings: reading a member (`EventType.TICK_STARTED`)
# costs ~100 ns in Python 3.11 against ~10 ns for a module constant, and a plain str is looked up in `wants`'
# cache and `str()`-ed faster than a StrEnum member (a dozen reads a tick, ~1 us of a small tree's ~30 us).
TICK_STARTED, TICK_COMPLETED, TICK_PAUSED = (EventType.TICK_STARTED.value, EventType.TICK_COMPLETED.value,
                                             EventType.TICK_PAUSED.value)
NODE_STATUS, NODE_RETURNED, STATE_CHANGED = (EventType.NODE_STATUS.value, EventType.NODE_RETURNED.value,
                                             EventType.STATE_CHANGED.value)
TICK_TELEMETRY = frozenset({TICK_STARTED, TICK_COMPLETED, NODE_STATUS, NODE_RETURNED})
INTERRUPTED = "INTERRUPTED"
"""The status of a `run.failed` for a run stopped from outside (a signal, a cancelled task): a checkpoint
store records it as the run's last checkpoint, so the run reads as interrupted, never as still RUNNING."""


@dataclass(slots=True)
class RuntimeEvent:
    """One thing that happened in a run, stamped with where and when."""

    seq: int
    type: str
    time: float
    tick: int = 0
    node: str | None = None
    run_id: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def validate(cls, data: Mapping[str, Any]) -> RuntimeEvent:
        """An event from outside the process, its fields checked (`pydantic.ValidationError`)."""
        return _EVENT.validate_python(dict(data))


_EVENT = TypeAdapter(RuntimeEvent)


def tick_completed_payload(status: str, duration_ms: float, changed: Mapping[str, list[str]],
                           state_keys: list[str], ticked: int) -> dict[str, Any]:
    """The payload of `tick.completed` (the runner's, and the one a store rebuilds)."""
    return {"status": status, "duration_ms": round(duration_ms, 3), "changed": changed,
            "state_keys": state_keys, "ticked": ticked}


EventFilter = Callable[[RuntimeEvent], bool]


class Subscription:
    """Handle returned by `subscribe`; call it (or `close()`) to stop receiving events."""

    def __init__(self, bus: RuntimeEventBus, callback: Callable[[RuntimeEvent], Any],
                 types: frozenset[str] | None, predicate: EventFilter | None, skip: frozenset[str] = frozenset()):
        self._bus = bus
        self.callback = callback
        self.types = types
        self.skip = skip
        self.predicate = predicate

    def accepts_type(self, event_type: str) -> bool:
        return (self.types is None or event_type in self.types) and event_type not in self.skip

    def close(self) -> None:
        self._bus._remove(self)

    __call__ = close


class EventBatch(Subscription):
    """Events kept for a reader that takes them in batches (the debug server, as it seals an update), not
    handed over one by one: the bus appends each to a list (a call in C, no Python frame an event) and
    calls `wake` only for the first one after a `take`. At most `limit` are kept, the newest: `take`
    and `trim` count the older ones in `dropped`; the reader calls `trim` as often as it likes (the
    list grows meanwhile, so between two of a running tree's ticks at least)."""

    def __init__(self, bus: RuntimeEventBus, wake: Callable[[], Any], limit: int, types: frozenset[str] | None,
                 skip: frozenset[str]):
        super().__init__(bus, self._first, types, None, skip)
        self.wake, self.limit, self.dropped = wake, limit, 0
        self.events: list[RuntimeEvent] = []

    def _first(self, event: RuntimeEvent) -> None:
        self._deliver(self.events.append)  # the rest of the batch: no Python call an event
        self.events.append(event)
        self.wake()

    def _deliver(self, callback: Callable[[RuntimeEvent], Any]) -> None:
        """Have the bus hand events to `callback` from now on (its routes name the callbacks themselves)."""
        self.callback = callback
        self._bus._routes.clear()

    def trim(self) -> None:
        """Let the oldest go, counted in `dropped`, until `limit` are left."""
        events = self.events
        if len(events) > self.limit:
            self.dropped += len(events) - self.limit
            del events[:len(events) - self.limit]

    def take(self) -> list[RuntimeEvent]:
        """The events kept, oldest first; the next one wakes the reader again."""
        self.trim()
        taken, self.events = self.events, []
        self._deliver(self._first)
        return taken


class RuntimeEventBus:
    """Publish/subscribe for `RuntimeEvent`s, with an optional bounded history.

    The history keeps the last `history` events of every type except the per-node tick
    telemetry (`TICK_TELEMETRY`), which it keeps only with `history_ticks=True`: a large
    tree would otherwise build thousands of events a tick for a buffer nobody reads.

    The runner stamps `run_id` and `tick` on the bus so that nodes can publish without
    knowing where in the run they are.
    """

    def __init__(self, history: int = 1000, *, history_ticks: bool = False):
        self._history: deque[RuntimeEvent] = deque(maxlen=history) if history > 0 else deque(maxlen=0)
        self._keep_history = history > 0
        self._history_ticks = history_ticks
        self._subscriptions: list[Subscription] = []
        self._wants: dict[str | frozenset[str], bool] = {}
        self._routes: dict[str, tuple[Callable[[RuntimeEvent], Any], ...]] = {}  # by type: whom `emit` hands it
        self._seq = 0
        self.run_id: str | None = None
        self.tick = 0

    # -- who listens ---------------------------------------------------------------
    def wants(self, event_type: str) -> bool:
        """True when publishing `event_type` would reach somebody (cached per type)."""
        cached = self._wants.get(event_type)
        if cached is None:
            cached = self._keeps(event_type) or any(s.accepts_type(event_type) for s in self._subscriptions)
            self._wants[event_type] = cached
        return cached

    def wants_any(self, event_types: frozenset[str]) -> bool:
        """Whether any of `event_types` would reach somebody (cached per set: one call, not one a type)."""
        cached = self._wants.get(event_types)
        if cached is None:
            cached = self._wants[event_types] = any(map(self.wants, event_types))
        return cached

    def _keeps(self, event_type: str) -> bool:
        """Whether the history takes events of this type."""
        return self._keep_history and (self._history_ticks or event_type not in TICK_TELEMETRY)

    @property
    def position(self) -> int:
        """Sequence number of the last event built (the event-stream position)."""
        return self._seq

    def reserve(self, count: int) -> int:
        """Number `count` events without building them (a recorder rebuilds them later from what
        it stores anyway); returns the first number."""
        first = self._seq + 1
        self._seq += count
        return first

    def seek(self, position: int) -> None:
        """Continue numbering after `position` (used when a run is restored)."""
        self._seq = position

    @property
    def history(self) -> list[RuntimeEvent]:
        return list(self._history)

    # -- publishing ----------------------------------------------------------------
    def publish(self, event_type: str, payload: dict[str, Any] | None = None, *,
                node: str | None = None) -> RuntimeEvent | None:
        if not self.wants(event_type):
            return None
        self._seq += 1
        event = RuntimeEvent(self._seq, str(event_type), time.time(), self.tick, node, self.run_id,
                             {} if payload is None else payload)
        self.emit(event)
        return event

    def publish_each(self, event_type: str, nodes: Collection[str | None], payloads: Iterable[dict[str, Any]],
                     now: float | None = None) -> int | None:
        """One event per node, with the payload at its place in `payloads`, all of one type and one
        moment (a tick's node statuses), numbered as one block (a subscriber publishing meanwhile
        comes after it); returns the block's first number, None when nobody wants them. Two
        sequences, not (node, payload) pairs: a pair per event would be one more object the
        garbage collector tracks while the block is built."""
        if not self.wants(event_type):
            return None
        first = self.reserve(len(nodes))
        now = time.time() if now is None else now
        event_type, tick, run_id, emit = str(event_type), self.tick, self.run_id, self.emit
        for seq, node, payload in zip(range(first, first + len(nodes)), nodes, payloads, strict=True):
            emit(RuntimeEvent(seq, event_type, now, tick, node, run_id, payload))
        return first

    def emit(self, event: RuntimeEvent) -> None:
        """Deliver an already-built event (publish, or a trace being imported): to the callables its type's
        route names (the history's append, each subscriber's callback), worked out once per type, not
        each subscriber's filters tested for each event (a tick's few events: ~0.2 us each a subscriber)."""
        routes = self._routes.get(event.type)
        if routes is None:
            routes = self._route(event.type)
        for deliver in routes:
            try:
                deliver(event)
            except Exception:  # a broken listener (or its filter) must never break the run
                log.exception("event subscriber %r failed on %s", deliver, event.type)

    def _route(self, event_type: str) -> tuple[Callable[[RuntimeEvent], Any], ...]:
        routes = [self._history.append] if self._keeps(event_type) else []
        routes += [sub.callback if sub.predicate is None else partial(_filtered, sub)
                   for sub in self._subscriptions if sub.accepts_type(event_type)]
        self._routes[event_type] = routes = tuple(routes)
        return routes

    # -- subscribing ---------------------------------------------------------------
    def subscribe(self, callback: Callable[[RuntimeEvent], Any], *, types: Iterable[str] | None = None,
                  filter: EventFilter | None = None, skip: Iterable[str] = ()) -> Subscription:
        """Deliver events of `types` (None: every type) except those in `skip`, and only those
        `filter` accepts; a type nobody subscribes to is never built."""
        sub = Subscription(self, callback, frozenset(str(t) for t in types) if types is not None else None, filter,
                           frozenset(str(t) for t in skip))
        return self._add(sub)

    def _remove(self, sub: Subscription) -> None:
        if sub in self._subscriptions:
            self._subscriptions = [s for s in self._subscriptions if s is not sub]
            self._wants.clear()
            self._routes.clear()

    def batch(self, wake: Callable[[], Any], limit: int, *, types: Iterable[str] | None = None,
              skip: Iterable[str] = ()) -> EventBatch:
        """Keep events of `types` except those in `skip` for a reader that takes them in batches
        (`EventBatch`); `wake()` when the first arrives after a take."""
        sub = EventBatch(self, wake, limit, frozenset(str(t) for t in types) if types is not None else None,
                         frozenset(str(t) for t in skip))
        return self._add(sub)

    def _add(self, sub: Any) -> Any:
        self._subscriptions = [*self._subscriptions, sub]  # replaced, never changed: emit() iterates it
        self._wants.clear()
        self._routes.clear()
        return sub

    def stream(self, *, types: Iterable[str] | None = None,
               filter: EventFilter | None = None) -> EventStream:
        """Iterate events as they arrive, until the consumer stops iterating (or `aclose()`s).

        Subscribes at once, not at the first `await`: nothing published between opening the
        stream and iterating it (a run started right after) is lost.
        """
        return EventStream(self, types, filter)

    def __aiter__(self) -> AsyncIterator[RuntimeEvent]:
        return self.stream()


def _filtered(sub: Subscription, event: RuntimeEvent) -> None:
    """A subscriber with a filter: its callback for the events the filter accepts."""
    if sub.predicate(event):
        sub.callback(event)


class EventStream:
    """An async iterator over a bus's events, subscribed from its creation."""

    def __init__(self, bus: RuntimeEventBus, types: Iterable[str] | None, filter: EventFilter | None):
        self._queue: asyncio.Queue[RuntimeEvent] = asyncio.Queue()
        self._sub: Subscription | None = bus.subscribe(self._queue.put_nowait, types=types, filter=filter)

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> RuntimeEvent:
        if self._sub is None and self._queue.empty():
            raise StopAsyncIteration
        return await self._queue.get()

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        if self._sub is not None:
            self._sub.close()
            self._sub = None

    def __del__(self) -> None:  # a consumer that broke out of `async for` without closing
        self.close()


__all__ = ["INTERRUPTED", "NODE_RETURNED", "NODE_STATUS", "STATE_CHANGED", "TICK_COMPLETED", "TICK_PAUSED",
           "TICK_STARTED", "TICK_TELEMETRY", "tick_completed_payload", "EventBatch", "EventFilter", "EventStream", "EventType",
           "RuntimeEvent", "RuntimeEventBus", "Subscription"]
