"""`ToolExecutor`: runs the tool calls of a ReAct round and appends what they observed.

For each call in `actions`, in order, a pre-flight decides its fate:

- arguments that are not a JSON object, an unknown tool, arguments that fail the tool's
  schema, or a guard DENY: an error observation (and `tool.call.failed`), nothing runs;
- a guard PENDING: an approval is requested and the node stays RUNNING (the run is
  suspended) until a human approves (the call runs, with the arguments the approval carries)
  or denies (an error observation). The requests the round waits for are the node's resume
  data: a checkpoint carries them, and a run restored from it (in this process or another)
  waits for, or goes on with, those very requests; it never asks again;
- ALLOW: the call runs.

Execution mode: `auto` (default) runs the calls of a round in parallel (seed 003), except a
call of a tool that is not `parallel_safe`: that one runs alone, after the calls before it
have finished and before the ones after it start. `serial` runs one after another;
`parallel` runs all at once. A tool that raises becomes an error observation and the loop
goes on; so does one whose tool, schema, guard or result breaks anything on the way (every
call is answered: an endpoint rejects a request with a call left unanswered). Observations are appended as `tool` messages in call order, whatever finished
first, and the effect tags of the tools that ran are merged into `tool_effects`.

Images a tool returned (an MCP screenshot) reach the model as image parts of a user message
after the round's tool messages, one per call that returned some: a chat-completions tool
message carries text only.

With the observations it writes `done` and `final_answer` (seed 000's state contract lists it
as a writer of both): a round of tool calls is not the end, unless a `return_direct` tool
answered, whose result is then the final answer and ends the loop without another model call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, Literal

from py_trees.common import Status

from ..engine.behaviour import AsyncBehaviour
from ..guard import ApprovalManager, ApprovalRequest, ApprovalStatus, Decision, GuardEnforcer, GuardRequest
from ..messages import Message, ToolCall
from ..state import InteractionKeys, StateChange, StateKeys
from ..tools import Tool, ToolError, ToolProvider, ToolSet
from ..tools.base import error_line
from ..tools.observation import split_images
from .calls import ToolRunner, run_tool, tool_failed
from .keyed import KeyedPorts
from .toolbox import ToolBox

ExecutionMode = Literal["auto", "serial", "parallel"]
_APPROVING_RESPONSES = (True, "approve", "approved")


class ToolExecutor(KeyedPorts, AsyncBehaviour):
    input_ports = ("actions", "rounds", "usage", "tool_effects")
    output_ports = ("messages", "tool_effects", "done", "final_answer")

    def __init__(self, name: str | None = None, *, tools: ToolBox | ToolSet | Iterable[Tool] | None = None,
                 tool_providers: Iterable[ToolProvider] | None = None,
                 tool_provider_context: Any = None, tool_runner: ToolRunner | None = None,
                 constraints: Any = None, execution_mode: ExecutionMode = "auto", keys: StateKeys | None = None,
                 namespace: str | None = None):
        super().__init__(name=name, namespace=namespace)
        if execution_mode not in ("auto", "serial", "parallel"):
            raise ValueError(f"ToolExecutor {self.name!r}: execution_mode must be auto, serial or parallel, "
                             f"not {execution_mode!r}")
        self.toolbox = ToolBox.of(tools, tool_providers, tool_provider_context)
        self.tool_runner = tool_runner
        self.execution_mode = execution_mode
        self.keys = keys or StateKeys()
        self._enforcer = GuardEnforcer.from_constraints(constraints) if constraints is not None else None
        self._asked: list[str] = []  # the approvals this round waits for (or was given): its resume data
        self._told: ApprovalManager | None = None  # the manager whose decisions this node follows

    @property
    def enforcer(self) -> GuardEnforcer:
        """The node's constraints, else the run's (`RunContext.constraints`); kept so counts persist."""
        if self._enforcer is None:
            self._enforcer = GuardEnforcer.from_constraints(self.ctx.constraints if self.ctx is not None else None)
        return self._enforcer

    async def update_async(self) -> Status:
        actions: list[ToolCall] = self.read_key("actions", [])
        if not actions:
            return Status.SUCCESS
        toolset = await self.toolbox.resolve()
        observations: dict[int, str] = {}
        ready: list[tuple[int, Tool]] = []
        waiting: list[tuple[int, str]] = []
        for index, call in enumerate(actions):
            try:
                tool, pending_reason = self._preflight(call, toolset)
            except Exception as exc:  # whatever its tool, schema or guard raised, the call is answered
                observations[index] = self._refuse(call, exc)
                continue
            if pending_reason is None:
                ready.append((index, tool))
            else:
                waiting.append((index, pending_reason))
        if waiting:
            decided = await self._await_approvals([(actions[i], reason) for i, reason in waiting])
            for (index, _), approval in zip(waiting, decided, strict=True):
                call = actions[index]
                try:
                    if approval.status is not ApprovalStatus.APPROVED:
                        why = f": {approval.decision_reason}" if approval.decision_reason else ""
                        raise ToolError(f"tool '{call.name}' was not approved{why}")
                    if approval.arguments != call.arguments:  # approved with corrected arguments
                        call = actions[index] = call.model_copy(update={"arguments": dict(approval.arguments)})
                    ready.append((index, self._preflight(call, toolset, approved=True)[0]))
                except Exception as exc:
                    observations[index] = self._refuse(call, exc)
        ready.sort(key=lambda item: item[0])
        answered, failed = await self._execute(ready, actions)
        observations.update(answered)
        self._write_tool_effects(tool for _, tool in ready)
        key, messages = self.appended("messages", _observed(actions, observations))
        direct = [split_images(answered[index])[0] for index, tool in ready
                  if tool.return_direct and index not in failed]
        self.write_state({key: messages, self.key_for("done"): bool(direct),
                          self.key_for("final_answer"): "\n\n".join(direct)})
        return Status.SUCCESS

    # -- pre-flight ----------------------------------------------------------------------
    def _preflight(self, call: ToolCall, toolset: ToolSet, approved: bool = False) -> tuple[Tool, str | None]:
        """(tool, None) when the call may run (it is counted), (tool, reason) when it needs approval.

        Raises `ToolError` naming the tool when the call must not run.
        """
        if call.parse_error:
            raise ToolError(f"tool '{call.name}': {call.parse_error}")
        tool = toolset.get(call.name)
        tool.validate(call.arguments)
        usage = self.read_key("usage", {})
        verdict = self.enforcer.check(GuardRequest.from_call(
            call, usage_tokens=usage.get("total_tokens", 0), node=self.path, approved=approved,
            effect_tags=tool.effect_tags, tool_effects=frozenset(self.read_key("tool_effects", ()))))
        if verdict.decision is Decision.DENY:
            raise ToolError(f"tool '{call.name}' was denied: {verdict.reason or verdict.policy}")
        if verdict.decision is Decision.PENDING:
            return tool, verdict.reason or f"tool '{call.name}' requires approval"
        self.enforcer.record_call(tool.name)
        return tool, None

    def _refuse(self, call: ToolCall, error: Exception) -> str:
        """The error observation of a call (and `tool.call.failed`), naming its tool: a model
        request with a call left unanswered is one a real endpoint rejects."""
        if not isinstance(error, ToolError):
            error = ToolError(f"tool '{call.name}' failed: {error_line(error)}")
        tool_failed(self, call.name, call.id, str(error))
        return f"Error: {error}"

    # -- approvals -----------------------------------------------------------------------
    def _approval_manager(self) -> ApprovalManager:
        ctx = self.ctx
        if ctx is None:
            raise RuntimeError(f"node {self.path!r} needs a RunContext to ask for approvals")
        if ctx.approval_manager is None:
            ctx.approval_manager = ApprovalManager(self.event_bus)
        if self._told is not ctx.approval_manager:  # for the node's life: a decision may come before
            self._told = ctx.approval_manager  # the round that asked runs again (after a restore)
            self._told.on_change(self._decided)
        return ctx.approval_manager

    def _decided(self, item: ApprovalRequest) -> None:
        """A request this node asked was answered: the run no longer waits for it (the runner wakes)."""
        if item.resolved and item.node == self.path and item.id in self.interaction.pending():
            self.interaction.resolve(item.id, str(item.status))

    def dump_resume_state(self) -> dict[str, Any]:
        manager = self._told
        return {"approvals": manager.dump(self._asked)} if self._asked and manager is not None else {}

    def restore_resume_state(self, data: dict[str, Any]) -> None:
        carried = data.get("approvals", ())
        self._asked = self._approval_manager().adopt(carried) if carried else []

    def terminate(self, new_status: Status) -> None:
        super().terminate(new_status)
        self._asked = []  # the round is over (or abandoned): a later one asks afresh

    async def _await_approvals(self, calls: list[tuple[ToolCall, str]]) -> list[ApprovalRequest]:
        """Ask (or find the request asked before a restore or a stop), suspend the run, and wait.

        The interaction entry is resolved the moment the approval is, so the runner wakes
        and no longer counts the run as suspended; answering through `runner.resume(id,
        True | "approved" | anything else = deny)` settles the approval the same way. A
        request already answered (after a restore) does not suspend the run again.
        """
        manager = self._approval_manager()
        requests = [self._find_or_request(manager, call, reason) for call, reason in calls]
        self._asked = [request.id for request in requests]
        ids = set(self._asked)

        def on_state(change: StateChange) -> None:
            if change.namespace is None and InteractionKeys.RESPONSES in change.changes:
                self._answer_from_responses(manager, ids)

        self._answer_from_responses(manager, ids)  # given through runner.resume() while nobody listened
        unsubscribe = self._require_state().subscribe(on_state)
        try:
            waiting = [request for request in requests if not manager.get(request.id).resolved]
            for request in waiting:
                self.interaction.request("approval", {
                    "approval_id": request.id, "tool": request.tool, "arguments": request.arguments,
                    "call_id": request.call_id, "reason": request.reason}, request_id=request.id)
            if waiting:
                self.wake()  # the runner ticks, sees the run suspended and returns
            decided = list(await asyncio.gather(*(manager.wait(request.id) for request in requests)))
        finally:
            unsubscribe()
        for request in decided:
            self._decided(request)
        return decided

    def _answer_from_responses(self, manager: ApprovalManager, ids: set[str]) -> None:
        responses = self._require_state().get(InteractionKeys.RESPONSES) or {}
        for request_id in ids & responses.keys():
            response = responses[request_id]
            if not manager.get(request_id).resolved:
                if response in _APPROVING_RESPONSES:
                    manager.approve(request_id)
                else:
                    manager.deny(request_id, response if isinstance(response, str) else None)

    def _find_or_request(self, manager: ApprovalManager, call: ToolCall, reason: str) -> ApprovalRequest:
        """The request this call was asked under (carried by a restored checkpoint, answered or not;
        or still pending after a stop), else a new one."""
        for approval_id in self._asked:
            item = manager.get(approval_id)
            if item.call_id == call.id and item.tool == call.name:
                return item
        existing = next((item for item in manager.pending() if item.call_id == call.id and item.node == self.path
                         and item.tool == call.name and item.arguments == call.arguments), None)
        return existing or manager.request(call.name, dict(call.arguments), call_id=call.id, node=self.path,
                                           reason=reason)

    # -- execution -----------------------------------------------------------------------
    def _batches(self, ready: list[tuple[int, Tool]]) -> list[list[tuple[int, Tool]]]:
        """The calls in the groups that run together, in call order."""
        if self.execution_mode != "auto":
            return [ready] if self.execution_mode == "parallel" else [[item] for item in ready]
        batches: list[list[tuple[int, Tool]]] = []
        for item in ready:
            if item[1].parallel_safe and batches and batches[-1][-1][1].parallel_safe:
                batches[-1].append(item)
            else:
                batches.append([item])  # a tool that must run alone, or the first call after one
        return batches

    async def _execute(self, ready: list[tuple[int, Tool]],
                       actions: list[ToolCall]) -> tuple[dict[int, str], set[int]]:
        """The observation of each call that ran, by its index, and the indexes of those that failed."""
        round = self.read_key("rounds", 0)
        failed: set[int] = set()

        async def one(index: int, tool: Tool) -> str:
            call = actions[index]
            try:
                return await run_tool(self, tool, call.id, call.arguments, round=round, index=index,
                                      runner=self.tool_runner)
            except ToolError as exc:
                failed.add(index)
                return f"Error: {exc}"
            except Exception as exc:  # the machinery around the tool (its sandbox, the recorder)
                failed.add(index)
                return self._refuse(call, exc)

        results: dict[int, str] = {}
        for batch in self._batches(ready):
            if len(batch) == 1:  # alone: awaited in this task, no task of its own
                results[batch[0][0]] = await one(*batch[0])
                continue
            answers = await asyncio.gather(*(one(index, tool) for index, tool in batch))
            results.update((index, answer) for (index, _), answer in zip(batch, answers, strict=True))
        return results, failed

    def _write_tool_effects(self, tools: Iterable[Tool]) -> None:
        tags = set().union(*(tool.effect_tags for tool in tools))
        if tags:
            key = self.key_for("tool_effects")
            self.write_state({key: sorted(tags.union(self.read_state(key) or ()))}, signal=False)


def _observed(actions: list[ToolCall], observations: dict[int, str]) -> list[Message]:
    """The round's tool messages in call order, then a user message with the images of each call
    that returned some (they may not come between tool messages)."""
    replies: list[Message] = []
    shown: list[Message] = []
    for index, call in enumerate(actions):
        text, images = split_images(observations[index])
        if images:
            some = f"{len(images)} images" if len(images) > 1 else "an image"
            text = f"{text}\n[{some}: in the message after the tool results]".lstrip("\n")
            shown.append(Message(role="user", content=f"What tool '{call.name}' returned (call {call.id}):",
                                 images=tuple(images)))
        replies.append(Message(role="tool", content=text, tool_call_id=call.id, name=call.name))
    return replies + shown


__all__ = ["ExecutionMode", "ToolExecutor"]
