"""`Agent`: a tree, its state schema and its run context, runnable in one call.

    agent = Agent(create_react_node(model_client=client, tools=[CalculatorTool()]), state_schema=ReActState)
    result = await agent.run(input_data={"messages": [human("What is 25 * 4 + 10?")]})

`run()` = `make_runner()` once, `runner.run()`, then `finalize()`: when a ReAct loop ran
out of iterations with `on_max_iterations="final_answer"`, one extra model call without
tools gives a best-effort answer marked `truncated`. A debugger drives the runner itself
(`make_runner`, step, ...) and calls `finalize(runner)` or `result_from(runner)` at the end.
Tool providers (an MCP server, say) are closed when the run finishes, however it is driven
(the runner's finish hook), and by `close()`; a later run opens them again.

A run recorded into a checkpoint store (`make_runner(checkpointer=store)`) that suspends for
an approval can be answered and continued by any process that builds the same tree, any time
later: `await agent.resume(store, run_id, approve=["send_email"])` (docs/resume.md).

The tree's agents are found by `find_agents` (each `LoopUntilSuccess` with an
`answer_node`, outermost first): `input_data` is written into the first agent's namespace
(`runner.input_namespace`), the result read from the last one's (or `result=`), and each
loop's termination from its own namespace, so a namespaced ReAct loop behaves like a
global one.

`termination_reason` is one of: `"completed"` (the tree succeeded), `"max_iterations"`,
`"budget_exhausted"` (the loop's token budget was spent), `"error"` (a model call or
another node failed; `error` says which and why), `"suspended"` (waiting for an
approval; `pending` lists what), `"max_ticks"` (stopped by `max_ticks`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, ClassVar, Literal

import py_trees
from py_trees.common import Status
from pydantic import BaseModel

from .config import ReActConfig
from .engine.deps import RunContext
from .engine.events import INTERRUPTED, EventType, RuntimeEventBus
from .engine.runner import ReactiveRunner
from .engine.shape import TreeIndex, check_shape
from .guard import Answers, ApprovalError, ApprovalManager, ApprovalRequest
from .messages import Message
from .model import Usage
from .node.composites import LoopUntilSuccess
from .node.llm import AgentLLMNode
from .node.presets import ReActState
from .node.toolbox import ToolBox
from .state import InteractionKeys
from .state.manager import state_schema_of

ResultType = Literal["answer", "error", "pending"]
RunFunction = Callable[..., Awaitable[Status]]
Serving = Callable[..., AbstractAsyncContextManager[RunFunction]]


@asynccontextmanager
async def unserved(runner: ReactiveRunner, debug: str | int | None = None, *, agent: Any = None
                   ) -> AsyncIterator[RunFunction]:
    """A run served to nobody: `runner.run` itself (what `Agent.serving` is until `runtime.debug` sets it)."""
    if debug is not None:
        raise ValueError(f"debug={debug!r}: no debug server is loaded (import runtime.debug)")
    yield runner.run


@dataclass
class AgentResult:
    """What a run produced. `result_type` is "pending" while the run is suspended or unfinished."""

    status: Status
    result_type: ResultType
    termination_reason: str
    final_answer: str | None
    state: BaseModel
    usage: Usage
    run_id: str | None
    observations: list[str] = field(default_factory=list)
    truncated: bool = False
    error: str | None = None
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.result_type == "answer"


@dataclass(frozen=True)
class Failure:
    """Why a run failed, in one line: where (`node`), why (`error`, maybe several lines) and its
    termination `reason` as `AgentResult` names it (`error`, `max_iterations`, `budget_exhausted`).

    The studio's status line and node pane, the headless CLI and a debugger attached over the
    protocol (sent with `finished`) all read this one story of a failed run."""

    node: str | None
    error: str
    reason: str

    @property
    def first_line(self) -> str:
        text = self.error.strip()
        return text.splitlines()[0] if text else self.reason

    @property
    def line(self) -> str:
        """`node: first line of the error` (what a user reads first)."""
        return f"{self.node}: {self.first_line}" if self.node else self.first_line

    @property
    def headline(self) -> str:
        """`budget_exhausted at Squares: token budget spent…` (the status line and the CLI's stderr)."""
        reason = "failed" if self.reason in ("error", "completed") else self.reason
        where = f" at {self.node}" if self.node else ""
        return f"{reason}{where}: {self.first_line}"


@dataclass(frozen=True)
class AgentLoop:
    """One agent of a tree: its loop (what fails, and where termination is written) and the
    node whose outputs are its result (`LoopUntilSuccess.answer_node`)."""

    loop: py_trees.behaviour.Behaviour
    answer: AgentLLMNode

    @property
    def namespace(self) -> str | None:
        return self.answer.namespace


def find_agents(root: py_trees.behaviour.Behaviour, classes: Iterable[type] | None = None) -> list[AgentLoop]:
    """The outermost agents of a tree, in tree order (a plan-execute's inner executor is part
    of its plan, not an agent of its own).

    An agent is a `LoopUntilSuccess` holding an `AgentLLMNode` (its `answer_node`, else the
    first such node in it); an `AgentLLMNode` outside any loop is an agent by itself. `classes`: the
    tree's node classes, when known: a tree with none of those is not walked (a large tree of plain nodes).
    """
    if classes is not None and not any(issubclass(cls, (LoopUntilSuccess, AgentLLMNode)) for cls in classes):
        return []
    agents: list[AgentLoop] = []

    def visit(node: py_trees.behaviour.Behaviour) -> None:
        if isinstance(node, LoopUntilSuccess):
            answer = node.answer_node or next((n for n in node.iterate() if isinstance(n, AgentLLMNode)), None)
            if isinstance(answer, AgentLLMNode):
                agents.append(AgentLoop(node, answer))
                return
        if isinstance(node, AgentLLMNode):
            agents.append(AgentLoop(node, node))
            return
        for child in node.children:
            visit(child)

    visit(root)
    return agents


class Agent:
    """Runs a tree as one agent. The input goes to the namespace of the tree's first agent
    (the one that reads the request); the result is read from `result` (default: the last
    agent, the one that answers), or from the agent that failed when the run failed.

    `max_iterations_hard_limit` is the host's cap on every loop of the tree, whoever built it
    (seed 003): each loop stops at the smaller of its own `max_iterations` and this
    (`RunContext.max_iterations_hard_limit`, default `limits.max_iterations_hard_limit`)."""

    serving: ClassVar[Serving] = staticmethod(unserved)
    """How `run(debug=...)` serves a run to a debugger: `runtime.debug` sets its server here when it is
    imported (as `import runtime` does); this file sits below it and never imports it."""

    def __init__(self, root: py_trees.behaviour.Behaviour, state_schema: type[BaseModel] | BaseModel = ReActState,
                 context: RunContext | None = None, *, result: py_trees.behaviour.Behaviour | None = None,
                 max_iterations_hard_limit: int | None = None):
        self._index = check_shape(root)  # the first runner's (`make_runner`): the tree is walked once
        state_schema_of(state_schema)
        self.root = root
        self.state_schema = state_schema
        self.context = context or RunContext()
        if max_iterations_hard_limit is not None:
            if max_iterations_hard_limit < 1:
                raise ValueError(f"Agent: max_iterations_hard_limit must be >= 1, not {max_iterations_hard_limit}")
            self.context.max_iterations_hard_limit = max_iterations_hard_limit
        self.runner: ReactiveRunner | None = None
        self.agents = find_agents(root, None if self._index is None else set(self._index.kinds))
        if result is not None:
            found = find_agents(result)
            if not found or not any(node is result for node in root.iterate()):
                raise ValueError(f"Agent: result node {result.name!r} is not in the tree or holds no AgentLLMNode")
            self._result: AgentLoop | None = found[-1]
        else:
            self._result = self.agents[-1] if self.agents else None

    @property
    def config(self) -> ReActConfig:
        """The result agent's config (defaults when the tree has no agent)."""
        return self._result.answer.config if self._result is not None else ReActConfig()

    @property
    def input_namespace(self) -> str | None:
        return self.agents[0].namespace if self.agents else None

    def make_runner(self, event_bus: RuntimeEventBus | None = None, checkpointer: Any = None) -> ReactiveRunner:
        """A runner over this agent's root, state and context (an approval manager is added if missing)."""
        runner = ReactiveRunner(self.root, self.state_schema, self.context, event_bus=event_bus,
                                checkpointer=checkpointer, index=self._unchanged_index())
        runner.input_namespace = self.input_namespace
        if self.context.approval_manager is None:
            self.context.approval_manager = ApprovalManager(runner.event_bus)
        if self._toolboxes(runner.nodes.values()):
            runner.add_finish_hook(self._close_when_finished)
        return runner

    def check_names(self) -> None:
        """The tree checked again, as `Agent()` checks it, when user code has renamed a node since: its run
        names it as it is named now (its path, in what the studio shows and the store records), and a name no
        path can hold (a `/`) is refused now, in one line naming the node (`TreeShapeError`). A tree file's
        loader asks right after `build()`; `make_runner` asks in any case."""
        if self._index is not None and self._index.renamed():
            self._index = check_shape(self.root)

    def _unchanged_index(self) -> TreeIndex | None:
        """The index `check_shape` made in `__init__`, once, while the tree holds as many children as then
        (one a node but the root) and their names (`check_names`): a child added or taken away since, the
        runner walks the tree again."""
        self.check_names()
        index, self._index = self._index, None
        if index is None or sum(map(len, map(attrgetter("children"), index.nodes))) != len(index.nodes) - 1:
            return None
        return index

    async def run(self, input_data: Mapping[str, Any] | None = None, *, max_ticks: int | None = None,
                  debug: str | int | None = None) -> AgentResult:
        """Run (or, when suspended, resume) to the end, `max_ticks`, or the next suspension.

        `debug="127.0.0.1:7777"` (or $JIANMU_DEBUG) serves the run to a debugger (`runtime.debug`).
        Cancelled (a host's signal handler, a timeout) or interrupted (Ctrl-C), the run is recorded
        as interrupted (`interrupt`), its work in flight is cancelled and its tool providers closed
        (MCP servers stopped with their process groups) before the cancellation goes on. It waits at most
        `runner.settle_within` seconds for its last checkpoints to be written, and closes its providers even when
        cancelled again meanwhile.
        """
        if self.runner is None:
            self.runner = self.make_runner()
        try:
            async with self.serving(self.runner, debug, agent=self) as run:
                await run(max_ticks, input_data=input_data)
        except BaseException as exc:
            try:
                if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):  # stopped from outside: say so
                    interrupt(self.runner, stopped_by(exc))
                    self.runner.stop()  # the work in flight too (a tool call), before its providers close
                    with contextlib.suppress(TimeoutError):  # (a hung store: its writes go on, the run ends)
                        await asyncio.wait_for(settled(self.runner), self.runner.settle_within)
            finally:  # (cancelled again while it waits: the providers close all the same)
                await self.close()
            raise
        return await self.finalize(self.runner)

    async def resume(self, store: Any, run_id: str, *, approve: str | Iterable[str] = (),
                     deny: str | Iterable[str] | Mapping[str, str] = (), max_ticks: int | None = None) -> AgentResult:
        """Go on with run `run_id` of checkpoint store `store` where it waits for an approval, whichever
        process suspended it and however long ago: its last checkpoint is restored, the waiting calls
        are answered, and the run goes on here (recording into `store`) to its end, `max_ticks` or
        its next suspension. An approved call runs once, here; a denied one never runs.

        `approve` and `deny` name tools, approval ids or "all" (`runtime.guard.Answers`); `deny` may
        map each name to the reason the model reads. A call no rule covers keeps waiting. The agent
        must be built as the run's was (the same tree file). Before anything is answered, a run that
        a live process still writes (or took over just now) raises `CheckpointError`; one that waits
        for no approval, or an answer that fits no waiting call, `ApprovalError`.

        `store` may also be its name (`runs.db`, `postgresql://…`): it is opened for this call and closed
        when it returns, a PostgreSQL store as the asyncio one (`open_store_async`), whose connect and
        saves never hold this event loop. Finding the run's last checkpoint, restoring it and taking the
        run over do hold it: they are short reads and a write on the store's synchronous connection (which
        the first of them opens, a PostgreSQL store's within its connect timeout).
        """
        if isinstance(store, str | os.PathLike):
            from .memory.checkpoint.naming import close_store_async, open_store_async

            opened = await open_store_async(store, create=False)
            try:
                return await self.resume(opened, run_id, approve=approve, deny=deny, max_ticks=max_ticks)
            finally:
                await close_store_async(opened)
        from .memory.checkpoint.waiting import resume_point  # only a run that resumes reads a store

        answers = Answers.of(approve, deny)
        point = resume_point(store, run_id)
        if self.runner is None or getattr(self.runner.checkpoints, "store", None) is not store:
            self.runner = self.make_runner(checkpointer=store)
        self.runner.restore(point.checkpoint.id)
        waiting = self._waiting(self.runner)
        if not waiting:
            raise ApprovalError(f"run {run_id} waits for no approval at its last checkpoint "
                                f"(tick {point.checkpoint.tick})")
        if unmatched := answers.unmatched(waiting):
            calls = ", ".join(f"{request.tool} ({request.id})" for request in waiting)
            raise ApprovalError(f"run {run_id} has no call of {', '.join(unmatched)} waiting (it waits for {calls})")
        point.take(store)  # answered here, and run here only
        manager = self.context.approval_manager
        for request in waiting:
            decision = answers.answer(request)
            if decision is not None:
                approved, reason = decision
                if approved:
                    manager.approve(request.id)
                else:
                    manager.deny(request.id, reason)
        return await self.run(max_ticks=max_ticks)

    def _waiting(self, runner: ReactiveRunner) -> list[ApprovalRequest]:
        """The approvals `runner`'s run is suspended on."""
        manager, suspended_on = self.context.approval_manager, runner.interaction.pending()
        return [request for request in manager.pending() if request.id in suspended_on] if manager is not None else []

    async def finalize(self, runner: ReactiveRunner) -> AgentResult:
        """The result, after the `on_max_iterations="final_answer"` call when it is due."""
        agent = self._answering(runner)
        if (agent is not None and agent.answer.config.on_max_iterations == "final_answer"
                and self._termination(runner, agent).get("reason") == "max_iterations"
                and not self._read(runner, agent, "final_answer")):
            try:
                await agent.answer.conclude()
            finally:
                await self.close()  # conclude() lists the tools again, which reopens their providers
        return self.result_from(runner)

    async def close(self) -> None:
        """Close the tool providers of the tree (stop MCP servers, ...); a later run reopens them."""
        for box in self._toolboxes():
            await box.close()

    async def _close_when_finished(self, runner: ReactiveRunner, status: Any) -> None:
        await self.close()

    def _toolboxes(self, nodes: Iterable[py_trees.behaviour.Behaviour] | None = None) -> list[ToolBox]:
        """The tree's tool boxes, each once (a ReAct loop's LLM node and executor share one); `nodes`: the
        tree's as a runner indexed them (a list, not py_trees' recursive walk: ~3x faster at 100,000 nodes)."""
        boxes = {id(box): box for node in (self.root.iterate() if nodes is None else nodes)
                 if isinstance(box := getattr(node, "toolbox", None), ToolBox)}
        return list(boxes.values())

    def result_from(self, runner: ReactiveRunner) -> AgentResult:
        """Read the result of a finished (or suspended) run off the runner's state and tree."""
        status = runner.status
        agent = self._answering(runner)
        answer = self._read(runner, agent, "final_answer") or None
        result = AgentResult(status=status, result_type="answer", termination_reason="completed",
                             final_answer=answer, state=runner.state_manager.model.model_copy(deep=True),
                             usage=Usage.model_validate(self._read(runner, agent, "usage") or {}),
                             run_id=runner.run_id)
        if status == Status.SUCCESS:
            return result
        if status == Status.RUNNING:
            result.result_type = "pending"
            result.termination_reason = "suspended" if runner.suspended else "max_ticks"
            result.pending = runner.interaction.pending()
            return result
        result.result_type = "error"
        reason = self._termination(runner, agent).get("reason")
        config = agent.answer.config if agent is not None else ReActConfig()
        if reason == "max_iterations":
            result.termination_reason = reason
            mode = config.on_max_iterations
            if mode == "return_observations":
                result.observations = self._observations(runner, agent)
            elif mode == "final_answer" and answer:
                result.result_type, result.truncated = "answer", True
            return result
        result.final_answer = None
        failed = self.failed_node(runner)
        if reason == "budget_exhausted":
            result.termination_reason = reason
            result.error = f"token budget spent: {result.usage.total_tokens} >= {config.max_budget_tokens} tokens"
        else:
            result.termination_reason = "error"
            result.error = f"{failed[0]}: {failed[1]}" if failed else f"the tree failed ({reason or 'no reason given'})"
        return result

    # -- reading the run ------------------------------------------------------------------
    def _answering(self, runner: ReactiveRunner) -> AgentLoop | None:
        """The agent the result comes from: the one that failed, if the run failed, else `result`."""
        if runner.status == Status.FAILURE:
            failed = next((agent for agent in self.agents if agent.loop.status == Status.FAILURE), None)
            if failed is not None:
                return failed
        return self._result

    @staticmethod
    def _read(runner: ReactiveRunner, agent: AgentLoop | None, field_name: str) -> Any:
        keys = agent.answer.config.keys if agent is not None else ReActConfig().keys
        return runner.state_manager.get(getattr(keys, field_name), agent.namespace if agent is not None else None)

    @staticmethod
    def _termination(runner: ReactiveRunner, agent: AgentLoop | None) -> dict[str, Any]:
        """What the agent's loop wrote when it stopped early, in its own namespace ({} if nothing).

        Only a loop that failed in this run has one: what a loop the run never reached holds
        is an earlier run's (it is cleared when the loop starts again)."""
        if runner.status != Status.FAILURE or agent is None or agent.loop.status != Status.FAILURE:
            return {}
        loop = agent.loop
        return runner.state_manager.get(InteractionKeys.TERMINATION, getattr(loop, "namespace", None)) or {}

    def termination(self, runner: ReactiveRunner) -> dict[str, Any]:
        """What the loop of the agent that stopped the run wrote when it stopped early ({} if nothing)."""
        return self._termination(runner, self._answering(runner))

    def failed_node(self, runner: ReactiveRunner) -> tuple[str, str] | None:
        """(path, error) of a node that failed with an error in this run, deepest first."""
        for path, node in reversed(runner.nodes.items()):
            error = getattr(node, "last_error", None)
            if node.status == Status.FAILURE and error is not None:
                return path, error.error
        return None

    def failure(self, runner: ReactiveRunner) -> Failure | None:
        """Why a finished run failed (the failing node, its error, the termination reason); None
        unless the root failed."""
        if runner.status != Status.FAILURE:
            return None
        result = self.result_from(runner)
        failed = self.failed_node(runner)
        if failed is not None:
            return Failure(failed[0], failed[1], result.termination_reason)
        termination = self.termination(runner)
        node = termination.get("node") or self._deepest_failure(runner)
        if result.error:
            error = result.error
        elif termination.get("reason") == "max_iterations":
            error = f"max_iterations: {termination.get('iterations')} of {termination.get('max_iterations')} used"
        else:
            error = f"{node or 'the tree'} returned FAILURE"
        return Failure(node, error, result.termination_reason)

    @staticmethod
    def _deepest_failure(runner: ReactiveRunner) -> str | None:
        """The deepest node that returned FAILURE without raising (a condition, a plain py_trees node)."""
        return next((path for path, node in reversed(runner.nodes.items()) if node.status == Status.FAILURE), None)

    def _observations(self, runner: ReactiveRunner, agent: AgentLoop | None) -> list[str]:
        """The tool results of this turn: tool messages after the last user message."""
        messages: list[Message] = self._read(runner, agent, "messages") or []
        start = max((i for i, message in enumerate(messages) if message.role == "user"), default=-1)
        return [message.content or "" for message in messages[start + 1:] if message.role == "tool"]


def interrupt(runner: ReactiveRunner, why: str) -> None:
    """Say that `runner`'s run was stopped from outside (a signal, a cancelled task): a `run.failed` with
    status INTERRUPTED, which its checkpoint store records as the run's last checkpoint, so the run reads
    as interrupted, never as still running. A run that ended, or that waits for an approval (another
    process may resume it, `Agent.resume`), is left as it is."""
    if runner.run_id is not None and not runner.finished and not runner.suspended:
        runner.event_bus.publish(EventType.RUN_FAILED, {"status": INTERRUPTED, "error": why, "ticks": runner.tick_count})


async def settled(runner: ReactiveRunner) -> None:
    """Wait for the writes `runner`'s checkpoint store has in flight (an asyncio store writes an interrupted
    run's last checkpoint so, `interrupt`): a run stopped from outside is recorded before its command goes
    on. A write that fails is not raised here: what stopped the run says why it stopped."""
    settle = getattr(runner.checkpoints, "settle", None)
    settling = settle() if settle is not None else None
    if settling is not None:
        from .memory.checkpoint.store import StoreError  # (loaded: the runner records into a store)

        with contextlib.suppress(StoreError):
            await settling


def stopped_by(exc: BaseException) -> str:
    """Why a run was interrupted: `interrupted by SIGTERM` (a cancellation's message names the signal)."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted by SIGINT"
    named = exc.args[0] if exc.args and isinstance(exc.args[0], str) else None
    return f"interrupted by {named}" if named else "interrupted (cancelled)"


__all__ = ["Agent", "AgentLoop", "AgentResult", "Failure", "ResultType", "find_agents", "interrupt", "settled",
           "stopped_by"]
