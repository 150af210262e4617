"""`create_plan_execute_node`: plan first, then carry out each step as its own ReAct task.

    LoopUntilSuccess  <name>                   an iteration: (re)plan, one step, or the answer
    └── Sequence      <name>.round             memory=True
        ├── Selector  <name>.next              the branch whose phase is current
        │   ├── Sequence <name>.finish
        │   │   ├── StateCondition <name>.phase==answer
        │   │   └── AnswerNode     <name>.answer      final answer from the step results → done
        │   ├── Sequence <name>.planning
        │   │   ├── StateCondition <name>.phase==plan
        │   │   └── PlannerNode    <name>.planner     the steps, parsed from the reply → plan
        │   └── Sequence <name>.execute
        │       ├── StateCondition <name>.phase==execute
        │       └── StepRunner     <name>.step        the current step, as the executor's task
        │           └── create_react_node <name>.executor   in namespace <name>.executor
        └── StateCondition <name>.done         done → SUCCESS; otherwise the next iteration

`phase` moves plan → execute (a plan was read) → answer (after the last step). A step
fails when its ReAct loop fails or it replies "STEP FAILED: why"; then, and when a plan
cannot be read, the phase goes back to plan and the planner re-plans the remaining work
with the reason. At most `max_replans` re-plans: one more need is a FAILURE of the node
that had it, whose `last_error` says why, and the loop aborts. So it does when the token
budget (`config.max_budget_tokens`, covering planner, every step and the answer) is spent.

Each step is a fresh ReAct run in its own namespace: its `messages` start with the task,
its tokens join the plan's `usage` when the step ends. The executor's `rounds` go on
across steps, so every model call of a run has its own (node, round) for recording and
replay, and `tool_choice` applies to the first executor round of the run. The answer
node is the loop's `answer_node`, so `Agent` reads the final answer, usage and config
from the plan's namespace.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from py_trees.common import Status
from pydantic import Field

from ..config import ReActConfig
from ..context import ContextBuilderProtocol
from ..engine.behaviour import Decorator
from ..messages import Message, human
from ..model import ModelResponseError, Usage
from ..state import Ephemeral, InteractionKeys, StateKeys
from ..tools import Tool, ToolProvider
from .calls import ToolRunner
from .composites import LoopUntilSuccess, Selector
from .composites import Sequence as SequenceNode
from .condition import StateCondition
from .evaluation import find_json
from .keyed import KeyedPorts
from .llm import AgentLLMNode, SimpleLLMNode
from .presets import ReActState, create_react_node
from .toolbox import ToolBox

Phase = Literal["plan", "execute", "answer"]
STEP_FAILED = "STEP FAILED"

PLANNING_REQUEST = (
    "Plan how to fulfil the request above: a short list of steps, each a task that a helper with "
    "these tools can carry out on its own.\nTools:\n{tools}\n\n{done}{problem}"
    'Reply with a JSON list of the steps only, e.g. ["first step", "second step"], at most {max_steps} steps.'
)
STEP_TASK = (
    "Request: {request}\n\nPlan:\n{plan}\n\n{done}Your task is step {number} of {count}: {step}\n"
    f'Do only this step and reply with its result. If it cannot be done, reply "{STEP_FAILED}: <why>".'
)
ANSWER_REQUEST = (
    "The plan has been carried out. Step results:\n{results}\n\n"
    "Using them, give the final answer to the request above."
)

_LISTED = re.compile(r"^\s*(?:step\s*)?(?:\d+[.):]|[-*•])\s+(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


class PlanError(ModelResponseError):
    """The planner's reply held no usable plan, and no re-plan was left."""


class StepFailedError(RuntimeError):
    """A step failed and no re-plan was left."""


class PlanExecuteState(ReActState):
    """The ReAct contract plus the plan's progress, all run-scoped.

    `step_results` holds `{"step", "result", "ok"}` for every step carried out, failed
    ones included (their `result` is the reason); `replan_reason` is what the next
    planning call must address.
    """

    plan: Annotated[list[str], Ephemeral(scope="run")] = Field(default_factory=list)
    current_step: Annotated[int, Ephemeral(scope="run")] = 0
    step_results: Annotated[list[dict[str, Any]], Ephemeral(scope="run")] = Field(default_factory=list)
    replans: Annotated[int, Ephemeral(scope="run")] = 0
    replan_reason: Annotated[str | None, Ephemeral(scope="run")] = None
    phase: Annotated[Phase, Ephemeral(scope="run")] = "plan"


def _step_text(item: Any) -> str | None:
    if isinstance(item, dict):
        item = item.get("step") or item.get("task") or item.get("description")
    return item.strip() if isinstance(item, str) and item.strip() else None


def parse_plan(text: str, max_steps: int) -> list[str]:
    """The steps of a plan reply: a JSON list (of strings, or of objects with a "step"),
    `{"steps": [...]}`, or numbered / bulleted lines. `ValueError` says what is wrong."""
    data = find_json(text)
    if isinstance(data, dict):
        data = data.get("steps", data.get("plan"))
    steps = [_step_text(item) for item in data] if isinstance(data, list) and data else []
    if not steps or None in steps:
        steps = _LISTED.findall(text)
    if not steps:
        raise ValueError('it has no steps (expected a JSON list such as ["step one", "step two"], or numbered lines)')
    if len(steps) > max_steps:
        raise ValueError(f"it has {len(steps)} steps, more than max_steps={max_steps}")
    return steps


def _numbered(lines: Sequence[str]) -> str:
    return "\n".join(f"{number}. {line}" for number, line in enumerate(lines, start=1))


def _results(results: Sequence[Mapping[str, Any]]) -> str:
    return _numbered([f"{r['step']} → {r['result']}" + ("" if r.get("ok") else " (failed)") for r in results])


def _last_request(messages: Sequence[Message]) -> str:
    return next((m.content or "" for m in reversed(messages) if m.role == "user"), "")


class PlannerNode(SimpleLLMNode):
    """Asks for a plan (or, after a failure, a plan of the remaining work) and parses it.

    A reply with no readable plan costs a re-plan (the reason goes into the next request);
    with none left it raises `PlanError`. Counts as a round of its namespace, so the
    answer node adds its tokens to the same `usage`.
    """

    input_ports = ("messages", "rounds", "usage", "step_results", "replans", "replan_reason")
    output_ports = ("messages", "rounds", "usage", "plan", "current_step", "phase", "replans", "replan_reason")

    def __init__(self, name: str, *, toolbox: ToolBox, max_steps: int, max_replans: int, model_client: Any = None,
                 config: ReActConfig | None = None, context_builder: ContextBuilderProtocol | None = None,
                 namespace: str | None = None):
        super().__init__(name, model_client=model_client, config=config, context_builder=context_builder,
                         namespace=namespace)
        self.toolbox = toolbox
        self.max_steps = max_steps
        self.max_replans = max_replans

    async def update_async(self) -> Status:
        rounds = self.read_key("rounds", 0)
        results = self.read_port("step_results") or []
        reason = self.read_port("replan_reason")
        toolset = await self.toolbox.resolve()
        request = human(PLANNING_REQUEST.format(
            tools=toolset.describe() or "(none)", max_steps=self.max_steps,
            done=f"Steps carried out so far:\n{_results(results)}\n\n" if results else "",
            problem=f"The previous plan could not go on: {reason}\nPlan only the work that remains.\n\n"
            if reason else ""))
        response = await self.reply([*self.build_context(), request], self.model_config(), round=rounds)
        text = response.message.content or ""
        try:
            steps = parse_plan(text, self.max_steps)
        except ValueError as exc:
            replans = self.read_port("replans") or 0
            problem = f"the plan could not be read: {exc}"
            if replans >= self.max_replans:
                self._persist(response, self._usage(), rounds=rounds + 1)
                raise PlanError(f"{self.path}: {problem}, and no re-plan is left "
                                f"(max_replans={self.max_replans}): {text!r:.120}") from None
            self._persist(response, self._usage(), rounds=rounds + 1, replans=replans + 1, replan_reason=problem)
            return Status.SUCCESS
        self._persist(response, self._usage(), rounds=rounds + 1, plan=steps, current_step=0, phase="execute",
                      replan_reason=None)
        self.emit("plan.created", {"steps": steps, "replan": bool(reason)})
        return Status.SUCCESS


class AnswerNode(AgentLLMNode):
    """The final answer from the step results: an agent round without tools (writes `done`)."""

    input_ports = (*AgentLLMNode.input_ports, "step_results")
    prefer_react = False

    def build_context(self, toolset: Any = None) -> list[Message]:
        results = _results(self.read_port("step_results") or [])
        return [*super().build_context(toolset), human(ANSWER_REQUEST.format(results=results))]


class StepRunner(KeyedPorts, Decorator):
    """Runs the current step as a fresh task of its child (a ReAct loop in its own namespace),
    then records the outcome: the next step, the answer phase, or a re-plan.

    SUCCESS once the outcome is recorded, a failed step's too (it asks for a re-plan);
    FAILURE, with `StepFailedError`, only when a step failed and no re-plan is left.
    """

    input_ports = ("messages", "plan", "current_step", "step_results", "replans", "usage")
    output_ports = ("step_results", "current_step", "phase", "replans", "replan_reason", "usage")

    def __init__(self, name: str, executor: LoopUntilSuccess, *, executor_namespace: str,
                 keys: StateKeys, max_replans: int, namespace: str | None = None):
        super().__init__(name, executor, namespace)
        self.executor_namespace = executor_namespace
        self.keys = keys
        self.max_replans = max_replans

    def _step(self) -> tuple[list[str], int]:
        plan, index = self.read_port("plan") or [], self.read_port("current_step") or 0
        if index >= len(plan):
            raise RuntimeError(f"{self.path}: no step {index + 1} in a plan of {len(plan)} steps")
        return plan, index

    def initialise(self) -> None:
        plan, index = self._step()
        results = self.read_port("step_results") or []
        task = STEP_TASK.format(request=_last_request(self.read_key("messages", [])), plan=_numbered(plan),
                                done=f"Results so far:\n{_results(results)}\n\n" if results else "",
                                number=index + 1, count=len(plan), step=plan[index])
        state, ns, keys = self._require_state(), self.executor_namespace, self.keys
        rounds = state.get(keys.rounds, ns) or 0
        state.clear(ns)
        state.update({keys.messages: [human(task)], keys.rounds: rounds}, ns, signal=False)
        self.emit("plan.step.started", {"index": index, "step": plan[index]})

    def update(self) -> Status:
        outcome = self.decorated.status
        if outcome not in (Status.SUCCESS, Status.FAILURE):
            return Status.RUNNING
        plan, index = self._step()
        answer = (self._require_state().get(self.keys.final_answer, self.executor_namespace) or "").strip()
        failure = self._failure(outcome, answer)
        record = {"step": plan[index], "result": failure or answer, "ok": failure is None}
        results = [*(self.read_port("step_results") or []), record]
        self.emit("plan.step.completed", {"index": index, **record})
        if failure is None:
            last = index + 1 == len(plan)
            self.write_ports({"step_results": results, "current_step": index + 1,
                              "phase": "answer" if last else "execute"})
            return Status.SUCCESS
        reason = f"step {index + 1} ({plan[index]!r}) failed: {failure}"
        replans = self.read_port("replans") or 0
        if replans >= self.max_replans:
            self.write_ports({"step_results": results})
            raise StepFailedError(f"{reason}, and no re-plan is left (max_replans={self.max_replans})")
        self.write_ports({"step_results": results, "phase": "plan", "replans": replans + 1, "replan_reason": reason})
        return Status.SUCCESS

    def _failure(self, outcome: Status, answer: str) -> str | None:
        """Why the step failed, or None when it gave a result."""
        state = self._require_state()
        if outcome == Status.SUCCESS and state.get(self.keys.done, self.executor_namespace):
            if answer.upper().startswith(STEP_FAILED):
                return answer[len(STEP_FAILED):].lstrip(" :-—") or "the executor gave up"
            return None
        error = next((node.last_error.error for node in self.decorated.iterate()
                      if node.status == Status.FAILURE and getattr(node, "last_error", None)), None)
        stop = state.get(InteractionKeys.TERMINATION, self.executor_namespace) or {}
        return error or f"the executor stopped without an answer ({stop.get('reason', 'no reason given')})"

    def terminate(self, new_status: Status) -> None:
        """However the step ends, its tokens join the plan's usage (idempotent: it may run twice)."""
        state, ns = self.state_manager, self.executor_namespace
        spent = state.get(self.keys.usage, ns) if state is not None else None
        if not spent:
            return
        state.update({self.keys.usage: {}}, ns, signal=False)
        total = Usage.model_validate(self.read_key("usage", {})) + Usage.model_validate(spent)
        self.write_state({self.key_for("usage"): total.to_dict()}, signal=False)


def create_plan_execute_node(
    name: str = "PlanExecute",
    namespace: str | None = None,
    model_client: Any = None,
    tools: Sequence[Tool] | None = None,
    tool_providers: Sequence[ToolProvider] | None = None,
    tool_provider_context: Any = None,
    tool_runner: ToolRunner | None = None,
    constraints: Any = None,
    context_builder: ContextBuilderProtocol | None = None,
    config: ReActConfig | None = None,
    max_steps: int = 8,
    max_replans: int = 2,
) -> LoopUntilSuccess:
    """Build the plan-execute subtree (arguments as `create_react_node`'s, plus the bounds).

    `config` serves planner, executor and answer alike: its `max_iterations` bounds each
    step's ReAct loop, its `max_budget_tokens` the whole run. The outer loop's own cap,
    `(1 + max_replans) * (1 + max_steps) + 1` iterations, is a safety net the re-plan
    bound normally makes unreachable.
    """
    if max_steps < 1 or max_replans < 0:
        raise ValueError(f"plan-execute {name!r}: max_steps must be >= 1 and max_replans >= 0, "
                         f"not {max_steps} and {max_replans}")
    config = config or ReActConfig()
    keys = config.keys
    executor_namespace = f"{namespace}.{name}.executor" if namespace else f"{name}.executor"
    executor = create_react_node(f"{name}.executor", executor_namespace, model_client, tools, tool_providers,
                                 tool_provider_context, tool_runner, constraints, context_builder, config)
    toolbox = next(node.toolbox for node in executor.iterate() if isinstance(node, AgentLLMNode))
    answer = AnswerNode(f"{name}.answer", model_client=model_client, config=config,
                        context_builder=context_builder, namespace=namespace)
    planner = PlannerNode(f"{name}.planner", toolbox=toolbox, max_steps=max_steps, max_replans=max_replans,
                          model_client=model_client, config=config, context_builder=context_builder,
                          namespace=namespace)
    step = StepRunner(f"{name}.step", executor, executor_namespace=executor_namespace, keys=keys,
                      max_replans=max_replans, namespace=namespace)

    def branch(label: str, phase: Phase, node: Any) -> SequenceNode:
        accepted = ("plan", None) if phase == "plan" else (phase,)  # a schema without `phase` starts planning
        condition = StateCondition(f"{name}.phase=={phase}", key="phase", op="in", value=accepted,
                                   namespace=namespace)
        return SequenceNode(f"{name}.{label}", memory=True, children=[condition, node])

    choose = Selector(f"{name}.next", memory=False, children=[
        branch("finish", "answer", answer), branch("planning", "plan", planner), branch("execute", "execute", step)])
    done = StateCondition(f"{name}.done", key=keys.done, op="truthy", namespace=namespace)
    body = SequenceNode(f"{name}.round", memory=True, children=[choose, done])

    def abort() -> bool | str:
        """Stop when a node failed for good (its `last_error` says why), or on a spent budget."""
        if Status.FAILURE in (planner.status, step.status, answer.status):
            return True
        budget = config.max_budget_tokens
        if budget is None or loop.read_state(keys.done):
            return False  # an answer already given is never thrown away
        spent = [loop.read_state(keys.usage), loop.state_manager.get(keys.usage, executor_namespace)]
        exhausted = sum((usage or {}).get("total_tokens", 0) for usage in spent) >= budget
        return "budget_exhausted" if exhausted else False

    loop = LoopUntilSuccess(name, body, max_iterations=(1 + max_replans) * (1 + max_steps) + 1,
                                       abort_condition=abort, namespace=namespace)
    loop.answer_node = answer
    return loop


__all__ = [
    "STEP_FAILED",
    "AnswerNode",
    "PlanError",
    "PlanExecuteState",
    "PlannerNode",
    "StepFailedError",
    "StepRunner",
    "create_plan_execute_node",
    "parse_plan",
]
