"""The debug server's controls, served in this process: step, pause, breakpoints, edits, approvals."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
from pathlib import Path

import pytest
from py_trees.common import Status
from pydantic import BaseModel

from runtime import Agent
from runtime.debug import DebugClient, DebugError, DebugServer
from runtime.engine.behaviour import Behaviour
from runtime.memory.checkpoint import InMemoryCheckpointStore

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "t0ken"


def sample(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "sample_trees" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build(), getattr(module, "INPUT", None)


class Count(BaseModel):
    count: int = -10**9


class CountToZero(Behaviour):
    """One state write (and wake) per tick until the count reaches 0: a run too long to end by itself here."""

    def update(self) -> Status:
        count = self.read_state("count") + 1
        self.write_state({"count": count})
        return Status.SUCCESS if count >= 0 else Status.RUNNING


@contextlib.asynccontextmanager
async def served(agent: Agent, input_data=None, heartbeat: float = 30.0, store=None, hold_end: float | None = None):
    """An agent's run served on a free port (recording into `store`, if given; with `hold_end`, a client
    that asks finds it held at its end for that many seconds); yields (runner, client, run task) with the
    run held at its start."""
    runner = agent.make_runner(checkpointer=store)
    server = DebugServer(runner, "127.0.0.1:0", token=TOKEN, heartbeat=heartbeat, wait=30, hold_end=hold_end or 0)
    await server.listen()

    async def run() -> Status:
        await server.wait_for_client()
        try:
            return await server.run(input_data=input_data)
        finally:
            await server.close()

    task = asyncio.create_task(run())
    client = await DebugClient.connect(f"127.0.0.1:{server.port}", TOKEN, hold_end=hold_end is not None)
    try:
        await until(client, "paused")
        yield runner, client, task
    finally:
        await client.close()
        await asyncio.wait([task], timeout=30)


async def until(client: DebugClient, message_type: str, **fields) -> dict:
    while (message := await asyncio.wait_for(client.next_message(), 30)) is not None:
        if message["type"] == message_type and fields.items() <= message.items():
            return message
    raise AssertionError(f"closed before a {message_type!r} message")


async def test_step_runs_one_tick_and_holds_after_it():
    agent, data = sample("react_calculator")
    async with served(agent, data) as (runner, client, task):
        await client.request("step")
        assert (await until(client, "paused"))["tick"] == 1
        assert runner.tick_count == 1
        await client.request("step")
        assert (await until(client, "paused"))["tick"] == 2
        await client.request("continue")
        assert await task == Status.SUCCESS


async def test_finished_says_why_the_run_failed_as_the_runtime_explains_it():
    """A bare runner is served (no Agent given): its tree is read as an Agent's to say why it failed;
    a client attaching to the run held at its end finds the same reason in the picture."""
    agent, data = sample("budget_abort")
    async with served(agent, data, hold_end=30) as (runner, client, task):
        await client.request("continue")
        finished = await until(client, "finished")
        assert finished["status"] == "FAILURE"
        assert finished["failure"] == {"node": "Squares", "reason": "budget_exhausted",
                                       "error": "token budget spent: 1350 >= 1000 tokens"}
        assert agent.failure(runner).headline == "budget_exhausted at Squares: token budget spent: 1350 >= 1000 tokens"
        await until(client, "paused")
        assert (await client.request("resync"))["picture"]["failure"] == finished["failure"]
        await client.request("continue")
        assert await task == Status.FAILURE


async def test_after_event_and_condition_breakpoints_each_stop_the_run():
    agent, data = sample("react_calculator")
    async with served(agent, data) as (runner, client, task):
        tools = "Calculator/Calculator.loop/Calculator.tools"
        await client.request("break", kind="event", event="tool.call.completed")
        await client.request("break", kind="condition", condition="len(messages) >= 4")
        after = (await client.request("break", kind="node", node=tools, when="after"))["breakpoint"]
        await client.request("continue")
        assert (await until(client, "paused"))["message"] == f"breakpoint: after {tools} changes status"
        await client.request("unbreak", breakpoint=after["id"])
        await client.request("continue")
        assert (await until(client, "paused"))["message"] == "breakpoint: event tool.call.completed"
        await client.request("continue")
        assert (await until(client, "paused"))["message"] == "breakpoint: when len(messages) >= 4"
        await client.request("continue")
        assert await task == Status.SUCCESS


async def test_breakpoints_have_the_one_form_count_their_hits_and_are_disabled_without_being_lost():
    agent, data = sample("react_calculator")
    async with served(agent, data) as (runner, client, task):
        tools = "Calculator/Calculator.loop/Calculator.tools"
        placed = (await client.request("break", kind="node", node=tools))["breakpoint"]  # before, by default
        assert placed == {"id": placed["id"], "kind": "node", "node": tools, "when": "before", "enabled": True,
                          "hits": 0}
        with pytest.raises(DebugError, match="bad_request") as refused:
            await client.request("break", kind="condition", condition="nope > 1")
        assert refused.value.message == "condition 'nope > 1': no state key 'nope'"
        await client.request("continue")
        paused = await until(client, "paused")
        assert (paused["breakpoint"], paused["hits"], paused["node"]) == (placed["id"], 1, tools)
        off = (await client.request("set_breakpoint", breakpoint=placed["id"], enabled=False))["breakpoint"]
        assert off["enabled"] is False and off["hits"] == 1
        assert runner.stop_before == frozenset()  # kept, but no longer a stop
        update = await until(client, "update")
        assert update["breakpoints"] == [off]
        await client.request("continue")
        assert await task == Status.SUCCESS


async def test_pause_holds_a_busy_run_and_edits_need_it_held():
    agent = Agent(CountToZero("counter"), state_schema=Count)
    async with served(agent) as (runner, client, task):
        await client.request("continue")
        await until(client, "resumed")
        with pytest.raises(DebugError, match="not_paused"):
            await client.request("edit_state", key="count", value=0)
        with pytest.raises(DebugError, match="not_paused"):
            await client.request("step")
        await client.request("pause")
        paused = await until(client, "paused")
        assert paused["kind"] == "paused" and runner.tick_count == paused["tick"] > 0
        await client.request("edit_state", key="count", value=-100)
        with pytest.raises(DebugError, match="bad_request"):  # the schema says int
            await client.request("edit_state", key="count", value="many")
        await client.request("break", kind="condition", condition="count == -90")
        await client.request("continue")
        assert (await until(client, "paused"))["message"] == "breakpoint: when count == -90"
        assert runner.state_manager.get("count") == -90
        await client.close()  # going away releases the run, breakpoints and all
        assert await asyncio.wait_for(task, 30) == Status.SUCCESS
        assert runner.stop_before == frozenset() and runner.state_manager.get("count") == 0


async def test_an_approval_answered_by_the_debugger_holds_the_run_until_it_continues():
    agent, data = sample("approval_guard")
    async with served(agent, data) as (runner, client, task):
        published = []
        runner.event_bus.subscribe(lambda event: published.append((event.type, event.tick)))
        await client.request("continue")
        while not (update := await until(client, "update")).get("approvals"):
            pass
        request = update["approvals"][0]
        assert request["tool"] == "send_email"
        assert request["parameters"]["required"] == ["to", "subject", "body"]  # to check corrections against
        assert runner.suspended  # the run waits for the answer instead of returning
        tick = runner.tick_count
        corrected = {**request["arguments"], "to": "dev@example.com"}
        for arguments, refusal in (({"to": "dev@example.com"}, "tool 'send_email': invalid argument 'subject': "),
                                   (["dev@example.com"], "tool 'send_email': arguments must be a JSON object")):
            with pytest.raises(DebugError) as refused:
                await client.request("approve", approval=request["id"], arguments=arguments)
            assert refused.value.code == "bad_request" and refused.value.message.startswith(refusal)
        assert runner.suspended  # a refused correction decided nothing
        await client.request("approve", approval=request["id"], arguments=corrected)
        held = await until(client, "paused", kind="paused")  # answered: held, as a local session is after an approval
        assert held["message"] == "approval resolved: continue or step" and runner.tick_count == tick
        asked = next(at for kind, at in published if kind == "approval.requested")
        suspended = [at for kind, at in published if kind == "run.suspended"]
        assert tick == asked and suspended == [asked]  # it waited where it asked: no tick that found it still waiting
        await client.request("continue")
        assert (await until(client, "finished"))["status"] == "SUCCESS"
        assert await task == Status.SUCCESS
    assert "notified" in agent.result_from(runner).final_answer
    assert runner.state_manager.get("messages")[2].content.startswith("email to dev@example.com queued")


async def test_a_binding_edit_rebinds_the_port_and_is_recorded():
    agent, data = sample("react_calculator")
    async with served(agent, data) as (runner, client, task):
        llm = "Calculator/Calculator.loop/Calculator.llm"
        port = "final_answer"  # str | None, as `task` is
        reply = await client.request("edit_binding", node=llm, direction="out", port=port, key="state.task")
        assert ["out", port, "task"] in reply["node"]["ports"]
        assert runner.nodes[llm].resolve_output_port(port) == "task"
        with pytest.raises(DebugError, match="no node"):
            await client.request("edit_binding", node="nope", direction="in", port=port, key="x")
        update = await until(client, "update")
        assert update["events"]["type"] == ["binding.changed"]
        await client.request("edit_binding", node=llm, direction="out", port=port, key=port)
        await client.request("continue")
        assert await task == Status.SUCCESS


async def test_resync_sends_the_whole_picture_again():
    agent, data = sample("react_calculator")
    async with served(agent, data) as (runner, client, task):
        await client.request("step")
        await until(client, "paused")
        picture = (await client.request("resync"))["picture"]
        assert picture["tick"] == 1 and picture["paused"]["kind"] == "step"
        assert {node["path"] for node in picture["tree"]} == set(runner.nodes)
        assert picture["state"][""]["messages"][0]["content"] == "What is 25 * 4 + 10?"
        await client.request("continue")
        assert await task == Status.SUCCESS


async def test_edits_are_checked_as_strictly_as_a_local_sessions_with_one_line_errors():
    agent, data = sample("react_calculator")
    async with served(agent, data) as (runner, client, task):
        llm = "Calculator/Calculator.loop/Calculator.llm"
        port = runner.nodes[llm].input_ports[0]
        refusals = [
            (("edit_binding", {"node": llm, "direction": "in", "port": port, "key": "scratch"}),
             "no state field 'scratch' in ReActState (fields: task, messages"),
            (("edit_binding", {"node": llm, "direction": "in", "port": "nope", "key": "messages"}),
             f"{llm} has no input port 'nope' (ports: "),
            (("edit_binding", {"node": llm, "direction": "sideways", "port": port, "key": "messages"}),
             "direction must be 'in' or 'out', not 'sideways'"),
            (("edit_binding", {"node": llm, "direction": "in", "port": port, "key": 7}),
             "a state key is text, not int"),
            (("edit_binding", {"node": llm, "direction": "in", "port": "messages", "key": "actions"}),
             "port 'messages' carries list[Message]; state key 'actions' is list[ToolCall]"),
            (("edit_state", {"key": "scratch", "value": 1}), "no state key 'scratch' (fields of ReActState: "),
            (("edit_state", {"namespace": "ghost", "key": "rounds", "value": 1}), "no namespace 'ghost' (namespaces: "),
            (("edit_state", {"key": "rounds", "value": "many"}), "state key 'rounds': Input should be a valid integer"),
        ]
        for (request, fields), message in refusals:
            with pytest.raises(DebugError) as refused:
                await client.request(request, **fields)
            assert refused.value.code == "bad_request" and refused.value.message.startswith(message)
            assert "\n" not in refused.value.message
        assert runner.nodes[llm].resolve_input_port(port) == port and runner.state_manager.get("rounds") == 0
        namespace = runner.nodes[llm].namespace
        await client.request("edit_binding", node=llm, direction="out", port="final_answer",
                             key=f"{namespace}.final_answer" if namespace else "final_answer")  # a known namespace
        await client.request("edit_binding", node=llm, direction="out", port="final_answer", key="final_answer")
        await client.request("continue")
        assert await task == Status.SUCCESS


async def test_the_timeline_requests_read_the_store_and_fork_a_held_run():
    agent, data = sample("text_pipeline")
    async with served(agent, data, store=InMemoryCheckpointStore()) as (runner, client, task):
        picture = client.welcome  # before the run started: its checkpoints come with the updates
        assert picture["recording"] and picture["branch"] == "main" and picture["checkpoints"] == []
        for _ in range(2):
            await client.request("step")
            await until(client, "paused")
        rows = (await client.request("resync"))["picture"]["checkpoints"]  # every row, whatever was read
        assert [row["summary"] for row in rows] == ["input", "2 nodes", "4 nodes; normalized_text"]
        assert [(row["tick"], row["branch"], row["parent_id"]) for row in rows] == [
            (0, "main", None), (1, "main", rows[0]["id"]), (2, "main", rows[1]["id"])]
        first = await client.request("checkpoint", checkpoint=rows[0]["id"])
        assert first["state"][""]["normalized_text"] == "" and first["marks"] == []
        assert set(first["statuses"].values()) == {"INVALID"}
        assert ["in", "source_text", "text"] in first["ports"]["TextPipeline/Normalize"]
        refusals = [
            ("checkpoint", {"checkpoint": 999}, "checkpoint 999: "),
            ("checkpoint", {"checkpoint": "first"}, "checkpoint 'first': "),
            ("fork", {"checkpoint": rows[0]["id"], "state": {"nope": 1}}, "fork: no state key 'nope'"),
            ("fork", {"checkpoint": rows[0]["id"], "bindings": {"TextPipeline/Normalize": {"inputs": {"x": "text"}}}},
             "fork: TextPipeline/Normalize has no input port 'x'"),
            ("fork", {"checkpoint": rows[0]["id"], "state": {"text": 3}}, "state key 'text'"),
            ("fork", {"checkpoint": rows[0]["id"], "state": ["text"]}, "fork: 'state' maps qualified keys"),
            ("model_io", {"run_id": runner.run_id, "node": "x", "round": "last"}, "model_io: round and index"),
        ]
        for request, fields, message in refusals:
            with pytest.raises(DebugError) as refused:
                await client.request(request, **fields)
            assert refused.value.code == "bad_request" and refused.value.message.startswith(message), request
        assert runner.checkpoints.branch == "main" and runner.tick_count == 2  # a refused fork changed nothing
        forked = await client.request("fork", checkpoint=rows[0]["id"], state={"text": "Forked   TEXT"})
        assert forked["branch"] == "fork-1" and forked["message"] == f"forked fork-1 from checkpoint {rows[0]['id']} with 1 edit"
        assert forked["picture"]["tick"] == 0 and forked["picture"]["state"][""]["text"] == "Forked   TEXT"
        assert {row["branch"] for row in forked["picture"]["checkpoints"]} == {"main", "fork-1"}
        await client.request("continue")
        assert await task == Status.SUCCESS
    assert runner.state_manager.get("normalized_text") == "forked text"


async def test_a_finished_run_waits_for_a_client_that_asked_to_replay_it_then_returns():
    agent, data = sample("text_pipeline")
    async with served(agent, data, store=InMemoryCheckpointStore(), hold_end=30) as (runner, client, task):
        await client.request("continue")
        await until(client, "finished")
        held = await until(client, "paused")
        assert held["kind"] == "finished" and held["message"].startswith("finished: SUCCESS")
        assert not task.done()  # held for the client: its timeline is still there to read, replay and fork
        with pytest.raises(DebugError, match="the run has finished"):
            await client.request("step")
        rows = (await client.request("resync"))["picture"]["checkpoints"]
        finished = await client.request("checkpoint", checkpoint=rows[-1]["id"])
        assert finished["state"][""]["normalized_text"] == "the quick brown fox jumps over the lazy dog, the end"
        replay = await client.request("replay", checkpoint=rows[0]["id"])
        assert replay["branch"] == "replay-1" and not replay["picture"]["finished"]
        await client.request("continue")
        await until(client, "finished")
        assert (await until(client, "paused"))["kind"] == "finished"  # the replay's end is held again
        await client.request("continue")  # lets the run return to its caller
        assert await asyncio.wait_for(task, 30) == Status.SUCCESS
    assert runner.checkpoints.branch == "replay-1"


@pytest.mark.parametrize("how", ["detaches", "times out"])
async def test_a_finished_run_held_for_a_client_returns_when_it_leaves_or_after_hold_end(how):
    agent, data = sample("text_pipeline")
    async with served(agent, data, hold_end=30 if how == "detaches" else 0.2) as (runner, client, task):
        await client.request("continue")
        assert (await until(client, "paused"))["kind"] == "finished"
        if how == "detaches":
            await client.close()
        else:
            assert (await until(client, "bye"))["status"] == "SUCCESS"  # told, then the run returns
        assert await asyncio.wait_for(task, 30) == Status.SUCCESS


async def test_timeline_requests_need_a_store_and_a_held_run():
    agent, data = sample("text_pipeline")
    async with served(agent, data) as (runner, client, task):
        assert not client.welcome["recording"] and client.welcome["checkpoints"] == []
        with pytest.raises(DebugError, match="records no checkpoints"):
            await client.request("checkpoint", checkpoint=1)
        with pytest.raises(DebugError, match="records no checkpoints"):
            await client.request("model_io", run_id=runner.run_id, node="TextPipeline/Normalize", round=0)
        await client.request("continue")
        assert await task == Status.SUCCESS
    agent = Agent(CountToZero("counter"), state_schema=Count)
    async with served(agent) as (runner, client, task):
        await client.request("continue")
        await until(client, "resumed")
        for request in ("replay", "fork"):
            with pytest.raises(DebugError, match="not_paused"):
                await client.request(request, checkpoint=1)
        with pytest.raises(DebugError, match="not_paused"):
            await client.request("step_into")
        await client.request("pause")
        await until(client, "paused")
        await client.request("edit_state", key="count", value=-5)  # a short way to the end
        await client.close()
        assert await asyncio.wait_for(task, 30) == Status.SUCCESS


async def test_every_checkpoint_row_reaches_a_client_in_updates_of_at_most_fifty():
    agent = Agent(CountToZero("counter"), state_schema=Count)
    store = InMemoryCheckpointStore()
    async with served(agent, store=store) as (runner, client, task):
        await client.request("edit_state", key="count", value=-130)
        await client.request("break", kind="condition", condition="count == -1")
        rows, held = (await client.request("resync"))["picture"]["checkpoints"], False  # from here on
        await client.request("continue")
        while not held or len(rows) < len(store.list(runner.run_id)):
            message = await asyncio.wait_for(client.next_message(), 30)
            held = held or message["type"] == "paused"
            assert len(message.get("checkpoints", [])) <= 50
            rows += message.get("checkpoints", [])
        assert runner.tick_count == 129 and [row["tick"] for row in rows][-1] == 129
        assert [row["id"] for row in rows] == sorted({row["id"] for row in rows})  # each once, in order
        rows = (await client.request("resync"))["picture"]["checkpoints"]  # a picture holds the first 50 ...
        assert len(rows) == 50
        while len(rows) < len(store.list(runner.run_id)):  # ... and the others follow while the run is held
            rows += (await until(client, "update")).get("checkpoints", [])
        assert [row["tick"] for row in rows] == list(range(130))
        await client.request("continue")
        assert await task == Status.SUCCESS
