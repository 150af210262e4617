"""Jianmu nodes: py_trees behaviours with ports, namespaces and injected runtime services.

- `JianmuNodeMixin`: port bindings (`bind`, `read_port`, `write_port`…), namespaced state
  access, and the injected context, state manager and wake-up callback.
- `Behaviour`: a synchronous node (`update()`).
- `AsyncBehaviour`: bridges py_trees' synchronous tick to an `asyncio.Task` running
  `update_async()`; the task wakes the runner when it finishes, so nothing polls.
- `Decorator`: a py_trees decorator with the same mixin.

An exception in `initialise()`, `update()` or `update_async()` makes that node FAILURE and
publishes `node.error` with the traceback; the run goes on (pitfall 3).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import py_trees
from py_trees.common import Status

from ..signals import user_steps
from ..state import StateManager, normalize_namespace
from ..urls import masked_url
from .deps import InjectPayload, RunContext, receives_injections
from .events import EventType
from .loop_share import take_turn
from .user_code import FAILURES, PASSED_ON, UserExit, described, failure

log = logging.getLogger(__name__)

_STATUSES = tuple(Status)  # `in` a tuple tests identity first; Enum hashing is a Python call
_PY_TREES_STOP = py_trees.behaviour.Behaviour.stop
_PY_TREES_TICK = py_trees.behaviour.Behaviour.tick

# (id(node), activation) of the async activation whose code is running, so that a
# cancelled task's late writes can be told apart from the live one's (pitfall 6).
_ACTIVATION: contextvars.ContextVar[tuple[int, int] | None] = contextvars.ContextVar("jianmu_activation", default=None)


@dataclass(frozen=True)
class NodeError:
    """The last failure of a node, kept for the debugger's node detail."""

    tick: int
    error: str
    traceback: str


def report_node_error(node: py_trees.behaviour.Behaviour, path: str, exc: BaseException, bus: Any) -> Status:
    """Record `exc` on the node, publish `node.error`, and return FAILURE."""
    text = masked_url("".join(traceback.format_exception(exc)))  # recorded and shown: no URL's password
    error = masked_url(described(exc))
    node.last_error = NodeError(bus.tick if bus is not None else 0, error, text)
    log.debug("node %s failed: %s", path, error)
    if bus is not None:
        bus.publish(EventType.NODE_ERROR, {"error": error, "traceback": text}, node=path)
    return Status.FAILURE


LeafFailed = Callable[[py_trees.behaviour.Behaviour, Exception], Status | None]
TICKING: contextvars.ContextVar[LeafFailed | None] = contextvars.ContextVar("jianmu_ticking", default=None)
"""What reports a plain py_trees leaf's failure in the tick under way: the ticking runner's (None for
a node it does not index), set by the runner around its traversal."""


def _failed_in_tick(node: py_trees.behaviour.Behaviour, exc: Exception) -> Status:
    """A plain leaf's failure, reported by the runner ticking it; in no runner's tick, or in one that
    does not index the node (a tree of the user's own ticked inside a node), raised as py_trees' tick
    would raise it."""
    fail = TICKING.get()
    status = None if fail is None else fail(node, exc)
    if status is None:
        raise exc.__cause__ if isinstance(exc, UserExit) else exc
    return status


def tick_leaf(node: py_trees.behaviour.Behaviour,
              fail: LeafFailed = _failed_in_tick) -> Iterator[py_trees.behaviour.Behaviour]:
    """py_trees' leaf tick, an exception turned into `fail(node, exc)` (FAILURE), without its debug
    logging. `fail` takes the node so that one function serves every leaf of a tree; by default the
    ticking runner's (`TICKING`: a plain leaf's class's tick, `guarded_leaf_tick`)."""
    try:
        if node.status != Status.RUNNING:
            node.initialise()
        new_status = node.update()
        if new_status not in _STATUSES:
            raise TypeError(f"update() returned {new_status!r}, not a py_trees Status")
    except PASSED_ON:
        raise
    except FAILURES as exc:  # sys.exit() in a node is its failure (runtime.engine.user_code)
        new_status = fail(node, failure(exc))
    if new_status != Status.RUNNING:
        _stop_leaf(node, new_status)
    node.status = new_status
    yield node


def guarded_leaf_tick(node: py_trees.behaviour.Behaviour) -> Iterator[py_trees.behaviour.Behaviour]:
    """The tick of a plain leaf's class once a runner guarded it (`guard_leaf_class`): in a runner's
    tick, the Jianmu leaf tick; in none, py_trees' own, unchanged (its debug lines, an invalid status
    made INVALID, an exception raised), so code ticking py_trees trees without a runner sees py_trees."""
    return tick_leaf(node) if TICKING.get() is not None else _PY_TREES_TICK(node)


def guard_leaf_class(cls: type) -> None:
    """Give `cls`, a class of plain py_trees leaves (py_trees' own tick), `guarded_leaf_tick`: one
    function on the class, nothing on each leaf (a partial a leaf was ~200 bytes, 18 MB of a
    100,000-node tree) and the leaf's class unchanged (`type(leaf) is Success` holds)."""
    if cls.tick is _PY_TREES_TICK:
        type.__setattr__(cls, "tick", guarded_leaf_tick)


def _stop_leaf(node: py_trees.behaviour.Behaviour, new_status: Status) -> None:
    """`node.stop(new_status)`, without py_trees' debug line when the stop is py_trees' own: the
    line is formatted whether or not anything logs it (two Enum formats), which cost more than
    the rest of a leaf's tick (~2 ms of a tick of 1,000 leaves). Its `iterator` (a generator
    made at each stop) is left as it was: py_trees never reads it."""
    stop = node.stop
    if getattr(stop, "__func__", None) is not _PY_TREES_STOP:  # its class's, or one put on the node
        stop(new_status)
        return
    node.terminate(new_status)
    node.status = new_status


def binding_key(port: str, key: str | None) -> str:
    """`"state.x"` == `"x"`; empty or None falls back to the port name."""
    if key is None:
        return port
    key = str(key).strip()
    if key.startswith("state."):
        key = key[len("state."):]
    return key or port


@receives_injections
class JianmuNodeMixin:
    """Ports, namespaces and runtime services shared by every Jianmu node.

    Subclasses may declare `input_ports` / `output_ports` so that tools (the studio's
    binding editor) can list a node's ports before anything is bound.
    """

    input_ports: ClassVar[tuple[str, ...]] = ()
    output_ports: ClassVar[tuple[str, ...]] = ()

    name: str
    last_error: NodeError | None

    def _init_jianmu_fields(self, namespace: str | None = None) -> None:
        self.namespace: str | None = normalize_namespace(namespace)
        self.ctx: RunContext | None = None
        self.state_manager: StateManager | None = None
        self._wake_up = None
        self._input_bindings: dict[str, str] = {}
        self._output_bindings: dict[str, str] = {}
        self._explicit_model_client = None
        self._interaction = None
        self._recovery = None
        self._activation = 0
        self.path: str = self.name
        self.last_error = None

    # -- injection -----------------------------------------------------------------
    def inject(self, payload: InjectPayload) -> None:
        if payload.state_manager is not self.state_manager:
            self._interaction = None
            self._recovery = None
        self.ctx = payload.context
        self.state_manager = payload.state_manager
        self._wake_up = payload.wake_up

    def wake(self) -> None:
        """Ask the runner for another tick."""
        if self._wake_up is not None:
            self._wake_up()

    @property
    def event_bus(self):
        return self.ctx.runtime_event_bus if self.ctx is not None else None

    def emit(self, event_type: str, payload: Mapping[str, Any] | None = None) -> None:
        """Publish a telemetry event from this node (no-op when nobody listens)."""
        bus = self.event_bus
        if bus is not None and bus.wants(event_type):
            bus.publish(event_type, dict(payload or {}), node=self.path)

    # -- bindings ------------------------------------------------------------------
    def bind(self, inputs: Mapping[str, str | None] | None = None,
             outputs: Mapping[str, str | None] | None = None) -> Self:
        """Map logical ports to state keys; chainable."""
        for port, key in (inputs or {}).items():
            self._input_bindings[port] = binding_key(port, key)
        for port, key in (outputs or {}).items():
            self._output_bindings[port] = binding_key(port, key)
        return self

    @property
    def input_bindings(self) -> dict[str, str]:
        return dict(self._input_bindings)

    @property
    def output_bindings(self) -> dict[str, str]:
        return dict(self._output_bindings)

    def resolve_input_port(self, port: str, state_key: str | None = None) -> str:
        return binding_key(port, self._input_bindings.get(port) or state_key)

    def resolve_output_port(self, port: str, state_key: str | None = None) -> str:
        return binding_key(port, self._output_bindings.get(port) or state_key)

    # -- state ---------------------------------------------------------------------
    def _require_state(self) -> StateManager:
        if self.state_manager is None:
            raise RuntimeError(f"node {self.path!r} has no state manager: run it with a ReactiveRunner")
        return self.state_manager

    def read_state(self, key: str, default: Any = None) -> Any:
        return self._require_state().get(key, self.namespace, default)

    def write_state(self, values: Mapping[str, Any], signal: bool = True) -> None:
        """One state update in this node's namespace; writes from a stale activation are dropped."""
        tag = _ACTIVATION.get()
        if tag is not None and tag[0] == id(self) and tag[1] != self._activation:
            log.debug("dropping write of %s from a stale activation of %s", list(values), self.path)
            return
        self._require_state().update(values, self.namespace, signal, writer=self.path)

    def read_port(self, port: str, default: Any = None, state_key: str | None = None) -> Any:
        return self.read_state(self.resolve_input_port(port, state_key), default)

    def write_port(self, port: str, value: Any, signal: bool = True, state_key: str | None = None) -> None:
        self.write_state({self.resolve_output_port(port, state_key): value}, signal)

    def write_ports(self, values: Mapping[str, Any], signal: bool = True,
                    state_keys: Mapping[str, str] | None = None) -> None:
        """Write several ports as ONE state update (one change record, one wake)."""
        keys = state_keys or {}
        self.write_state({self.resolve_output_port(p, keys.get(p)): v for p, v in values.items()}, signal)

    def append_port_messages(self, port: str, messages: Iterable[Any], state_key: str | None = None,
                             signal: bool = True) -> None:
        """Append to a message-list port: through the field's reducer if it has one."""
        key = self.resolve_output_port(port, state_key)
        messages = list(messages)
        spec = self._require_state().field(key)
        if spec is not None and spec.reducer is not None:
            self.write_state({key: messages}, signal)
        else:
            self.write_state({key: list(self.read_state(key) or []) + messages}, signal)

    # -- services ------------------------------------------------------------------
    @property
    def model_client(self):
        if self._explicit_model_client is not None:
            return self._explicit_model_client
        return self.ctx.model_client if self.ctx is not None else None

    @model_client.setter
    def model_client(self, client) -> None:
        self._explicit_model_client = client

    @property
    def interaction(self):
        if self._interaction is None:
            from .interaction import InteractionController

            self._interaction = InteractionController(self._require_state(), self)
        return self._interaction

    @property
    def recovery(self):
        if self._recovery is None:
            from .recovery import CheckpointRecoveryFacade

            self._recovery = CheckpointRecoveryFacade(self._require_state(), self)
        return self._recovery

    def _fail(self, exc: BaseException) -> Status:
        return report_node_error(self, self.path, exc, self.event_bus)


class Behaviour(py_trees.behaviour.Behaviour, JianmuNodeMixin):
    """A synchronous Jianmu node: implement `update() -> Status`."""

    def __init__(self, name: str | None = None, namespace: str | None = None):
        super().__init__(name=name or type(self).__name__)
        self._init_jianmu_fields(namespace)

    def tick(self) -> Iterator[py_trees.behaviour.Behaviour]:
        return tick_leaf(self, type(self)._fail)


class AsyncBehaviour(Behaviour):
    """An asynchronous Jianmu node: implement `async update_async() -> Status`.

    `initialise` starts `update_async()` as a task whose completion wakes the runner;
    `update` reports RUNNING until the task is done, then its Status; a task that finished
    with RUNNING is started again on the next tick; `terminate` cancels the task.
    """

    _finished: Status | None = None  # set by `resume_finished` (on the instance) until the next start

    def __init__(self, name: str | None = None, namespace: str | None = None):
        super().__init__(name=name, namespace=namespace)
        self.async_task: asyncio.Task | None = None

    async def update_async(self) -> Status:
        raise NotImplementedError(f"{type(self).__name__} must implement update_async()")

    def initialise(self) -> None:
        self._cancel_task()
        loop = asyncio.get_running_loop()
        self._activation += 1
        finished = self._finished
        if finished is not None:
            del self._finished
            work = _finished_with(finished)
        else:
            work = self._run_update_async(self._activation)
        task = loop.create_task(work, name=f"jianmu:{self.path}")
        task.add_done_callback(self._on_task_done)
        self.async_task = task

    async def _run_update_async(self, activation: int) -> Status:
        _ACTIVATION.set((id(self), activation))
        if (turn := take_turn(self.ctx)) is not None:  # its work is the run's too
            await turn
        try:
            return await user_steps(self.update_async())  # its code between awaits: a signal stops it
        except (SystemExit, KeyboardInterrupt) as exc:  # out of the task, either would stop the event loop
            raise failure(exc) from exc

    def finished_work(self) -> Status | None:
        """What its work returned if it finished after the node's last tick (the node RUNNING until its
        next tick reports it), else None. A picture of a runner taken between two of its ticks (a
        swarm agent's, taken when its host saves a checkpoint) keeps it, and `resume_finished` gives
        it back: a restore reports the work's end rather than doing the work again."""
        task = self.async_task
        if self.status != Status.RUNNING or task is None or not task.done() or task.cancelled() \
                or task.exception() is not None:
            return None
        result = task.result()
        return result if result in (Status.SUCCESS, Status.FAILURE) else None

    def resume_finished(self, status: Status) -> None:
        """Its work had finished with `status` (`finished_work`) when the picture being restored was
        taken: the next start reports that at once, without running `update_async()` again."""
        self._finished = status

    def _on_task_done(self, task: asyncio.Task) -> None:
        if task is self.async_task:
            self.wake()

    def tick(self) -> Iterator[py_trees.behaviour.Behaviour]:
        if self.status == Status.RUNNING and self._ran_on():
            self.initialise()
        yield from super().tick()

    def _ran_on(self) -> bool:
        """The task finished with RUNNING: the next tick starts `update_async()` again."""
        task = self.async_task
        return (task is not None and task.done() and not task.cancelled() and task.exception() is None
                and task.result() == Status.RUNNING)

    def starts_work(self) -> bool:
        """Whether ticking it now starts `update_async()`, rather than only asking after the work in
        flight (or collecting its result): what a stop before this node waits for."""
        return self.status != Status.RUNNING or self._ran_on()

    def update(self) -> Status:
        task = self.async_task
        if task is None:
            return Status.FAILURE
        if not task.done():
            return Status.RUNNING
        if task.cancelled():
            return Status.INVALID
        exc = task.exception()
        if exc is not None:
            return self._fail(exc)
        result = task.result()
        if result not in _STATUSES:
            return self._fail(TypeError(f"update_async() returned {result!r}, not a py_trees Status"))
        return result

    def terminate(self, new_status: Status) -> None:
        self._cancel_task()

    def _cancel_task(self) -> None:
        """Idempotent (terminate may run twice, pitfall 5); late writes of the old task are dropped."""
        task, self.async_task = self.async_task, None
        self._activation += 1
        if task is not None and not task.done():
            task.cancel()


async def _finished_with(status: Status) -> Status:
    return status


class Decorator(py_trees.decorators.Decorator, JianmuNodeMixin):
    """A py_trees decorator that is also a Jianmu node (ports, namespace, services)."""

    def __init__(self, name: str, child: py_trees.behaviour.Behaviour, namespace: str | None = None):
        super().__init__(name=name, child=child)
        self._init_jianmu_fields(namespace)

    def tick(self) -> Iterator[py_trees.behaviour.Behaviour]:
        if self.status != Status.RUNNING and not self._initialised():
            yield self
            return
        yield from self.decorated.tick()
        try:
            new_status = self.update()
            if new_status not in _STATUSES:
                raise TypeError(f"update() returned {new_status!r}, not a py_trees Status")
        except PASSED_ON:
            raise
        except FAILURES as exc:
            new_status = self._fail(failure(exc))
        if new_status != Status.RUNNING:
            self.stop(new_status)
        self.status = new_status
        yield self

    def _initialised(self) -> bool:
        """`initialise()`; False when it raised (the node is then FAILURE, with the error)."""
        try:
            self.initialise()
        except PASSED_ON:
            raise
        except FAILURES as exc:
            self._fail(failure(exc))
            self.stop(Status.FAILURE)
            return False
        return True


__all__ = ["TICKING", "AsyncBehaviour", "Behaviour", "Decorator", "JianmuNodeMixin", "LeafFailed", "NodeError", "binding_key",
           "guard_leaf_class", "guarded_leaf_tick", "report_node_error", "tick_leaf"]
