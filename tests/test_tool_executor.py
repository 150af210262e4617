"""ToolExecutor (modes, guard, approvals, failures) and ToolNode."""

from __future__ import annotations

import asyncio
import time

import pytest
from py_trees.common import Status

from runtime import CalculatorTool, ReactiveRunner, ReActState, RunContext, RuntimeEventBus, ToolCall, tool
from runtime.guard import ApprovalManager
from runtime.node import ToolExecutor, ToolNode
from runtime.state import InteractionKeys


def call(name: str, call_id: str, **arguments) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


def make_runner(executor, context=None):
    bus = RuntimeEventBus()
    return ReactiveRunner(executor, ReActState, context or RunContext(approval_manager=ApprovalManager(bus)),
                          event_bus=bus)


async def execute(executor, actions, context=None):
    runner = make_runner(executor, context)
    status = await runner.run(input_data={"actions": actions})
    return status, runner


def observations(runner) -> list[tuple[str, str]]:
    return [(m.tool_call_id, m.content) for m in runner.state_manager.model.messages if m.role == "tool"]


def failures(runner) -> list[str]:
    return [e.payload["error"] for e in runner.event_bus.history if e.type == "tool.call.failed"]


class Overlap:
    """How many probe tools ran at once, at most: parallel means they overlapped, whatever the clock says."""

    def __init__(self) -> None:
        self.running = 0
        self.most = 0


def probe_tool(name: str, overlap: Overlap, parallel_safe: bool = True):
    @tool(name=name, parallel_safe=parallel_safe)
    async def probe(x: int) -> str:
        """Yield to the loop a few times, then echo."""
        overlap.running += 1
        overlap.most = max(overlap.most, overlap.running)
        for _ in range(5):
            await asyncio.sleep(0)
        overlap.running -= 1
        return f"{name}:{x}"

    return probe


async def test_parallel_safe_tools_run_together_and_report_in_call_order():
    overlap = Overlap()
    executor = ToolExecutor(tools=[probe_tool("slow", overlap), probe_tool("quick", overlap)])
    status, runner = await execute(executor, [call("slow", "a", x=1), call("quick", "b", x=2)])
    assert status == Status.SUCCESS
    assert overlap.most == 2
    assert observations(runner) == [("a", "slow:1"), ("b", "quick:2")]


async def test_a_tool_that_is_not_parallel_safe_runs_alone():
    overlap = Overlap()
    executor = ToolExecutor(tools=[probe_tool("slow", overlap), probe_tool("unsafe", overlap, parallel_safe=False)])
    await execute(executor, [call("slow", "a", x=1), call("unsafe", "b", x=2)])
    assert overlap.most == 1


async def test_by_default_the_calls_of_a_round_run_in_parallel_and_one_that_must_run_alone_does():
    """Seed 003: parallel by default; a tool that is not parallel-safe waits for the calls before it
    and holds the ones after it, so the rest still overlap on either side."""
    starts: list[str] = []
    overlap = Overlap()

    def probe(name: str, parallel_safe: bool | None = None):
        @tool(name=name, parallel_safe=parallel_safe)
        async def run() -> str:
            """Records when it ran with whom."""
            starts.append(f"{name}+{overlap.running}")
            overlap.running += 1
            overlap.most = max(overlap.most, overlap.running)
            for _ in range(5):
                await asyncio.sleep(0)
            overlap.running -= 1
            return name

        return run

    tools = [probe("a"), probe("b"), probe("pay", parallel_safe=False), probe("c"), probe("d")]
    status, runner = await execute(ToolExecutor(tools=tools), [call(t.name, t.name) for t in tools])
    assert status == Status.SUCCESS and overlap.most == 2
    assert starts == ["a+0", "b+1", "pay+0", "c+0", "d+1"]  # pay started with nothing running, alone
    assert observations(runner) == [(name, name) for name in ("a", "b", "pay", "c", "d")]


@pytest.mark.parametrize(("mode", "parallel"), [("serial", False), ("parallel", True)])
async def test_explicit_execution_mode(mode, parallel):
    overlap = Overlap()
    executor = ToolExecutor(tools=[probe_tool("a", overlap, parallel_safe=False), probe_tool("b", overlap)],
                            execution_mode=mode)
    await execute(executor, [call("a", "1", x=1), call("b", "2", x=2)])
    assert (overlap.most == 2) is parallel


def test_unknown_execution_mode_is_refused():
    with pytest.raises(ValueError, match="execution_mode"):
        ToolExecutor(execution_mode="sometimes")


async def test_no_actions_is_a_quiet_success():
    status, runner = await execute(ToolExecutor(tools=[CalculatorTool()]), [])
    assert status == Status.SUCCESS and runner.state_manager.model.messages == []


async def test_a_raising_tool_becomes_an_error_observation_and_the_round_goes_on():
    @tool
    def boom() -> str:
        """Always fails."""
        raise ValueError("kaput")

    status, runner = await execute(ToolExecutor(tools=[boom, CalculatorTool()]),
                                   [call("boom", "a"), call("calculator", "b", expression="1/0"),
                                    call("calculator", "c", expression="2*3")])
    assert status == Status.SUCCESS
    assert observations(runner) == [
        ("a", "Error: tool 'boom' failed: ValueError: kaput"),
        ("b", "Error: calculator: division by zero"),
        ("c", "6")]
    assert failures(runner) == ["tool 'boom' failed: ValueError: kaput", "calculator: division by zero"]


async def test_a_round_of_calls_to_one_synchronous_tool_loses_no_update():
    """Its calls run in threads, one at a time (as they did on the event loop's thread): a tool that
    counts its calls, read-modify-write, counts them all."""
    calls = {"count": 0}

    @tool(blocking=True)
    def stock_level(sku: str) -> int:
        """Count a call."""
        seen = calls["count"]
        time.sleep(0.001)  # (another thread's turn, if one may run)
        calls["count"] = seen + 1
        return seen

    status, runner = await execute(ToolExecutor(tools=[stock_level]),
                                   [call("stock_level", str(i), sku="A-100") for i in range(10)])
    assert status == Status.SUCCESS and calls["count"] == 10
    assert sorted(int(text) for _, text in observations(runner)) == list(range(10))


async def test_a_synchronous_tool_that_needs_the_event_loop_is_answered_with_what_to_change():
    @tool(blocking=True)
    def schedules() -> str:
        """Needs the running loop."""
        return str(asyncio.get_running_loop())

    status, runner = await execute(ToolExecutor(tools=[schedules]), [call("schedules", "a")])
    assert status == Status.SUCCESS
    assert observations(runner) == [("a", "Error: tool 'schedules' failed: RuntimeError: no running event loop "
                                          "(a blocking=True tool runs in a thread of its own: declare it "
                                          "blocking=False to run it on the event loop's thread, or make it async)")]


async def test_malformed_arguments_become_error_observations():
    actions = [ToolCall.from_raw("a", "calculator", "{not json"),
               call("calculator", "b", expression=5, extra=1),
               call("search", "c", q="x")]
    status, runner = await execute(ToolExecutor(tools=[CalculatorTool()]), actions)
    assert status == Status.SUCCESS
    got = dict(observations(runner))
    assert got["a"].startswith("Error: tool 'calculator': arguments are not valid JSON")
    assert got["b"].startswith("Error: tool 'calculator': invalid argument")
    assert got["c"].startswith("Error: unknown tool 'search'")
    assert len(failures(runner)) == 3
    assert not any(e.type == "tool.call.started" for e in runner.event_bus.history)


async def test_guard_deny_becomes_an_error_observation():
    executor = ToolExecutor(tools=[CalculatorTool()], constraints={"deny": ["calculator"]})
    _, runner = await execute(executor, [call("calculator", "a", expression="1+1")])
    assert observations(runner) == [("a", "Error: tool 'calculator' was denied: tool 'calculator' is denied")]
    assert failures(runner) == ["tool 'calculator' was denied: tool 'calculator' is denied"]


async def test_guard_counts_only_calls_that_run():
    executor = ToolExecutor(tools=[CalculatorTool()], constraints={"max_tool_calls": 1})
    _, runner = await execute(executor, [call("calculator", "a", expression="1+1"),
                                         call("calculator", "b", expression="2+2")])
    got = dict(observations(runner))
    assert got["a"] == "2" and "budget" in got["b"]


async def test_constraints_may_come_from_the_run_context():
    context = RunContext(constraints={"deny": ["calculator"]})
    _, runner = await execute(ToolExecutor(tools=[CalculatorTool()]), [call("calculator", "a", expression="1")],
                              context)
    assert "denied" in observations(runner)[0][1]


async def test_effect_tags_are_merged_into_tool_effects():
    @tool(effect_tags=["network", "write"])
    def post(text: str) -> str:
        """Post a message."""
        return "posted"

    runner = make_runner(ToolExecutor(tools=[post]))
    runner.state_manager.update({"tool_effects": ["read"]})
    await runner.run(input_data={"actions": [call("post", "a", text="hi")]})
    assert runner.state_manager.model.tool_effects == ["network", "read", "write"]


async def test_tool_runner_overrides_how_a_tool_runs():
    seen = []

    async def sandbox(tool, arguments):
        seen.append((tool.name, dict(arguments)))
        return {"sandboxed": True}

    _, runner = await execute(ToolExecutor(tools=[CalculatorTool()], tool_runner=sandbox),
                              [call("calculator", "a", expression="1+1")])
    assert seen == [("calculator", {"expression": "1+1"})]
    assert observations(runner) == [("a", '{"sandboxed":true}')]


# -- approvals ---------------------------------------------------------------------------

def confirming_executor():
    return ToolExecutor(tools=[CalculatorTool()], constraints={"require_confirmation": ["calculator"]})


async def test_pending_approval_suspends_the_run_then_approve_resumes_it():
    status, runner = await execute(confirming_executor(), [call("calculator", "a", expression="6*7")])
    assert status == Status.RUNNING and runner.suspended
    assert any(e.type == "run.suspended" for e in runner.event_bus.history)
    manager = runner.context.approval_manager
    [approval] = manager.pending()
    assert (approval.tool, approval.call_id, approval.arguments) == ("calculator", "a", {"expression": "6*7"})
    assert runner.interaction.pending()[approval.id]["kind"] == "approval"

    manager.approve(approval.id)
    assert not runner.suspended  # settled at once: a run() right away does not suspend again
    assert await runner.run() == Status.SUCCESS
    assert observations(runner) == [("a", "42")]
    assert runner.state_manager.get(InteractionKeys.PENDING) == {}


async def test_pending_approval_denied_becomes_an_error_observation():
    _, runner = await execute(confirming_executor(), [call("calculator", "a", expression="6*7")])
    manager = runner.context.approval_manager
    manager.deny(manager.pending()[0].id, "not today")
    assert await runner.run() == Status.SUCCESS
    assert observations(runner) == [("a", "Error: tool 'calculator' was not approved: not today")]


async def test_approval_through_runner_resume():
    _, runner = await execute(confirming_executor(), [call("calculator", "a", expression="6*7")])
    [request_id] = runner.interaction.pending()
    runner.resume(request_id, "approved")
    assert await runner.run() == Status.SUCCESS
    assert observations(runner) == [("a", "42")]
    assert runner.context.approval_manager.get(request_id).status == "approved"


async def test_allowed_calls_wait_for_the_pending_ones_and_keep_call_order():
    executor = ToolExecutor(tools=[CalculatorTool(), probe_tool("echo", Overlap())],
                            constraints={"require_confirmation": ["calculator"]})
    _, runner = await execute(executor, [call("calculator", "a", expression="1+1"), call("echo", "b", x=3)])
    assert runner.suspended
    manager = runner.context.approval_manager
    manager.approve(manager.pending()[0].id)
    await runner.run()
    assert observations(runner) == [("a", "2"), ("b", "echo:3")]


async def test_a_restarted_executor_finds_its_pending_approval_again():
    executor = confirming_executor()
    _, runner = await execute(executor, [call("calculator", "a", expression="6*7")])
    manager = runner.context.approval_manager
    [approval] = manager.pending()
    runner.stop()  # as a restore does: the task is cancelled, the approval stays pending
    executor.initialise()
    await asyncio.sleep(0.01)
    assert [a.id for a in manager.pending()] == [approval.id]
    manager.approve(approval.id)
    assert await executor.async_task == Status.SUCCESS


async def test_a_fresh_run_never_takes_an_abandoned_runs_request_for_other_arguments():
    _, runner = await execute(confirming_executor(), [call("calculator", "a", expression="6*7")])
    manager = runner.context.approval_manager
    [stale] = manager.pending()
    runner.stop()  # left suspended; a fresh run's model reuses the call id (a scripted one does)
    assert await runner.run(input_data={"actions": [call("calculator", "a", expression="1+1")]}) == Status.RUNNING
    [asked] = [r for r in manager.pending() if r.id != stale.id]
    assert asked.arguments == {"expression": "1+1"} and list(runner.interaction.pending()) == [asked.id]
    manager.approve(asked.id)
    await runner.run()
    assert observations(runner) == [("a", "2")]  # not 42: the stale request's arguments never ran


# -- ToolNode ------------------------------------------------------------------------------

async def test_tool_node_reads_input_ports_and_writes_output():
    node = ToolNode(CalculatorTool()).bind(inputs={"expression": "formula"}, outputs={"output": "total"})
    runner = ReactiveRunner(node, ReActState)
    assert await runner.run(input_data={"formula": "25 * 4 + 10"}) == Status.SUCCESS
    assert runner.state_manager.get("total") == "110"
    assert node.input_ports == ("input", "expression")


@pytest.mark.parametrize("value", ["25 * 4 + 10", {"expression": "25 * 4 + 10"}])
async def test_tool_node_input_key_and_output_key(value):
    """Seed 001's port table: ToolNode reads `input_key`, writes `output_key`."""
    node = ToolNode(CalculatorTool(), input_key="formula", output_key="total")
    runner = ReactiveRunner(node, ReActState)
    assert await runner.run(input_data={"formula": value}) == Status.SUCCESS
    assert runner.state_manager.get("total") == "110"


async def test_tool_node_input_key_of_the_wrong_shape_names_the_key():
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    runner = ReactiveRunner(ToolNode(add, input_key="pair"), ReActState)
    assert await runner.run(input_data={"pair": [1, 2]}) == Status.FAILURE
    assert runner.root.last_error.error == ("ToolArgumentsError: tool 'add': state key 'pair' must hold an object "
                                            "of arguments (a, b), not list")


class Sandbox:
    """What a host puts in `RunContext.sandbox`: every tool call goes through `run`."""

    def __init__(self):
        self.calls = []

    async def run(self, tool, arguments):
        self.calls.append((tool.name, dict(arguments)))
        return "from the sandbox"


async def test_run_context_sandbox_runs_the_tools_of_executor_and_tool_node():
    sandbox = Sandbox()
    context = RunContext(approval_manager=ApprovalManager(), sandbox=sandbox)
    _, runner = await execute(ToolExecutor(tools=[CalculatorTool()]), [call("calculator", "a", expression="1+1")],
                              context)
    assert observations(runner) == [("a", "from the sandbox")]
    node_runner = ReactiveRunner(ToolNode(CalculatorTool(), input_key="formula"), ReActState,
                                 RunContext(sandbox=sandbox))
    assert await node_runner.run(input_data={"formula": "2+2"}) == Status.SUCCESS
    assert node_runner.state_manager.get("output") == "from the sandbox"
    assert sandbox.calls == [("calculator", {"expression": "1+1"}), ("calculator", {"expression": "2+2"})]


async def test_a_sandbox_that_cannot_run_tools_fails_in_one_line():
    runner = ReactiveRunner(ToolNode(CalculatorTool(), input_key="formula"), ReActState, RunContext(sandbox=42))
    assert await runner.run(input_data={"formula": "2+2"}) == Status.FAILURE
    assert "RunContext.sandbox must be a ToolRunner or have a run(tool, arguments) method, not a int" in (
        runner.root.last_error.error)


async def test_tool_node_failure_names_the_tool_and_execute_false_skips():
    runner = ReactiveRunner(ToolNode(CalculatorTool()), ReActState)
    assert await runner.run(input_data={"expression": "1/0"}) == Status.FAILURE
    assert runner.root.last_error.error == "ToolError: calculator: division by zero"
    skipped = ReactiveRunner(ToolNode(CalculatorTool(), execute=False), ReActState)
    assert await skipped.run(input_data={"expression": "1+1"}) == Status.SUCCESS
    assert skipped.state_manager.get("output") is None


async def test_a_round_of_tool_calls_writes_done_false_and_no_final_answer():
    """Seed 000's state contract: the executor writes `done` and `final_answer` too."""
    runner = make_runner(ToolExecutor(tools=[CalculatorTool()]))
    status = await runner.run(input_data={"actions": [call("calculator", "a", expression="1+1")],
                                          "done": True, "final_answer": "stale"})  # as if something had said so
    state = runner.state_manager.model
    assert (status, state.done, state.final_answer) == (Status.SUCCESS, False, "")


async def test_a_return_direct_tool_answers_and_ends_the_react_loop():
    from runtime import Agent, ModelClient, ScriptedProvider, create_react_node, human

    @tool(return_direct=True)
    def lookup_order(order: str) -> str:
        """The order's status, given to the user as it is."""
        return f"order {order}: shipped"

    scripted = ScriptedProvider([{"tool_calls": [{"name": "lookup_order", "arguments": {"order": "A-100"}}]}])
    root = create_react_node(model_client=ModelClient(scripted), tools=[lookup_order, CalculatorTool()])
    result = await Agent(root).run({"messages": [human("Where is A-100?")]})
    assert (result.ok, result.final_answer, result.state.done) == (True, "order A-100: shipped", True)
    assert len(scripted.requests) == 1  # no model call after the direct answer


async def test_a_return_direct_tool_that_fails_is_no_answer():
    @tool(return_direct=True)
    def lookup_order(order: str) -> str:
        """Fails."""
        raise ValueError("no such order")

    status, runner = await execute(ToolExecutor(tools=[lookup_order]), [call("lookup_order", "a", order="X")])
    state = runner.state_manager.model
    assert (state.done, state.final_answer) == (False, "")


async def test_images_a_tool_returned_are_recorded_and_replayed(tmp_path):
    """An image travels inside the observation, so a replay from the record shows the model the same image."""
    from runtime import Agent, ModelClient, ScriptedProvider, create_react_node, human
    from runtime.memory.checkpoint import IOReplayer, open_store
    from runtime.messages import ImagePart
    from runtime.tools.observation import with_images

    pixel = ImagePart(mime_type="image/png", data="iVBORw0KGgo=")

    def agent(screen, script):
        look = tool(screen, name="screenshot", description="The screen.")
        return Agent(create_react_node(model_client=ModelClient(ScriptedProvider(script)), tools=[look]))

    def never() -> str:
        raise AssertionError("a replay must not run the tool")

    script = [{"tool_calls": [{"name": "screenshot", "arguments": {}}]}, "A pixel."]
    store = open_store(tmp_path / "runs.db")
    recorded = agent(lambda: with_images("The screen:", [pixel]), script)
    runner = recorded.make_runner(checkpointer=store)
    await runner.run(input_data={"messages": [human("Look.")]})
    shown = runner.state_manager.model.messages[-2]
    assert (shown.role, shown.images) == ("user", (pixel,))

    again = agent(never, [])  # nothing left to say: the answers come from the record
    again.context.io_recorder = IOReplayer(store, runner.run_id)
    replay = again.make_runner(checkpointer=store)
    await replay.run(input_data={"messages": [human("Look.")]})
    assert replay.state_manager.model.messages == runner.state_manager.model.messages
    store.close()
