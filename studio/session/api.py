"""`SessionAPI`: what the TUI asks of a session, local (`DebugSession`) or attached (`RemoteSession`).

The TUI is written against this and never asks which one it has: both sessions answer
every member, the timeline of checkpoints included (an attached session reads the served
run's store through the debug server), and both hand it the same things (`TimelineRow`,
the debugger's `Stop` and `RunState`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from py_trees.common import Status

from runtime.debug.breakpoints import Breakpoint
from runtime.engine.runner import TickReport

EVENT_BUFFER = 50_000  # recent events a session keeps for the events pane


async def answered(member: Callable[..., Any], *args: Any) -> Any:
    """What a session's `member(*args)` answers: an attached session's members that ask the served run
    (its store, its debugger) answer with an awaitable, awaited here."""
    answer = member(*args)
    return await answer if inspect.isawaitable(answer) else answer


@dataclass(frozen=True)
class TimelineRow:
    """One checkpoint on the timeline."""

    id: int
    tick: int
    status: str
    branch: str
    parent_id: int | None
    summary: str


class SessionAPI(Protocol):
    loaded: Any  # `.path`: what the title bar names
    events: Any  # the recent RuntimeEvents, oldest first
    breakpoints: list[Breakpoint]
    last_report: TickReport | None
    last_stop: Any
    message: str
    run_state: Any
    viewing: Any  # the past checkpoint shown (a timeline row), or None: the head
    staged: dict[tuple[str, str], Any]  # edits made while viewing the past, applied by a fork from there
    recorded_run: str | None

    def add_listener(self, listener: Callable[[str, Any], None]) -> Callable[[], None]: ...

    @property
    def tick(self) -> int: ...

    @property
    def root_status(self) -> Status: ...

    @property
    def run_id(self) -> str | None: ...

    @property
    def tokens(self) -> int: ...

    @property
    def failure(self) -> Any: ...  # why the live run failed (`runtime.agent.Failure`), or None

    @property
    def frame(self) -> Any: ...  # `.key`, `.tick`, `.root_status`, `.tokens`, `.branch` of what is shown; `.returns`,
    # `.held_returns`, `.pending`: the record of its tick (a held one's so far, and the nodes not reached yet)

    @property
    def breakpoints_kept(self) -> str: ...  # where the breakpoints live, as the breakpoints screen says

    @property
    def tree_shape(self) -> Any: ...  # changes when the tree pane must be rebuilt, not for another frame of it

    def node_status(self, path: str) -> Status: ...  # in the frame shown
    def node_statuses(self) -> dict[str, Status]: ...  # every node's, in the frame shown
    def waiting_on(self) -> list[str]: ...
    def running_nodes(self) -> list[str]: ...
    def node_views(self) -> Any: ...  # a `studio.node_views.NodeColumns`: the frame's nodes as columns
    def rebound_paths(self) -> set[str]: ...  # bindings unlike the tree file's, in the frame shown
    def node_view(self, path: str) -> Any: ...
    def node_detail(self, path: str) -> Any: ...
    def state_snapshot(self) -> dict[str, dict[str, Any]]: ...
    def marks(self) -> dict[str, Any]: ...
    def frame_events(self) -> list[Any]: ...
    def refusal(self) -> str | None: ...
    def model_calls(self, node: str | None = None) -> list[Any]: ...
    def model_call(self, call: Any) -> Any: ...  # the call with its recorded I/O, or an awaitable of it
    def tool_call(self, event: Any) -> Any: ...  # a tool call's event's recorded call (`studio.whatifs.ToolCall`),
    # None, or an awaitable of either
    def compare_targets(self) -> Any: ...  # `runtime.debug.compare.Target`s, or an awaitable of them
    def compare(self, target: Any) -> Any: ...  # a `runtime.debug.compare.Comparison`, or an awaitable of it
    def what_if(self, call: Any, answer: Any) -> Any: ...  # the fork's branch, or an awaitable of it
    async def resend(self, call: Any, **edits: Any) -> Any: ...  # the re-send's what-if mark

    async def step(self) -> TickReport | None: ...
    async def step_into(self) -> TickReport | None: ...
    async def continue_(self, max_ticks: int | None = None) -> Any: ...
    def pause(self) -> None: ...
    async def restart(self) -> None: ...

    def branches(self) -> list[str]: ...
    def checkpoints(self) -> list[Any]: ...
    def select_checkpoint(self, checkpoint_id: int) -> None: ...
    def select_live(self) -> None: ...
    async def replay_from(self, checkpoint_id: int) -> str: ...
    async def fork_from(self, checkpoint_id: int) -> str: ...

    def toggle_node_breakpoint(self, path: str, on: str = "before") -> bool: ...
    def add_node_breakpoint(self, path: str, on: str = "before") -> Breakpoint: ...
    def set_breakpoint(self, bp: Breakpoint, *, enabled: bool | None = None, on: str | None = None) -> None: ...
    def add_event_breakpoint(self, event_type: str) -> Breakpoint: ...
    def add_condition_breakpoint(self, expression: str) -> Breakpoint: ...
    def remove_breakpoint(self, bp: Breakpoint) -> None: ...

    def edit_state(self, namespace: str | None, key: str, value: Any) -> None: ...
    def validate_binding(self, path: str, direction: str, port: str, key: str) -> str: ...
    def edit_binding(self, path: str, direction: str, port: str, key: str) -> None: ...
    def bindings(self) -> dict[str, dict[str, dict[str, str]]]: ...
    def save_bindings(self) -> Any: ...

    def pending_approvals(self) -> list[Any]: ...
    def approve(self, approval_id: str, arguments: dict[str, Any] | None = None) -> None: ...
    def check_arguments(self, request: Any, arguments: Any) -> None: ...  # EditError naming the argument at fault
    def deny(self, approval_id: str, reason: str) -> None: ...


__all__ = ["EVENT_BUFFER", "SessionAPI", "TimelineRow"]
