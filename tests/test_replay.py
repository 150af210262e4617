"""Recorded model/tool I/O: replays are deterministic and offline; differing requests are reported."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from runtime.memory.checkpoint import (
    IORecorder,
    IOReplayer,
    ReplayDivergence,
    ReplayedModelError,
)
from runtime.messages import ai, human
from runtime.model import ModelClient, ModelConfig, ModelResponse, ModelTimeoutError, ScriptedProvider
from runtime.tools import ToolArgumentsError, ToolError

SAMPLE = Path(__file__).resolve().parents[1] / "sample_trees" / "react_calculator.py"


def _response(text: str) -> ModelResponse:
    return ModelResponse(message=ai(text), model="m")


def _never():
    raise AssertionError("a replay must not call the model or the tool")


async def test_replay_serves_recorded_answers_without_calling_anything(store):
    recorder = IORecorder(store, run_id="r1")
    history = [human("hi")]

    async def answer():
        return _response("hello")

    async def tool():
        return "42"

    assert (await recorder.model_call("agent/llm", 0, 0, history, ModelConfig(), answer)).message.content == "hello"
    assert await recorder.tool_call("agent/tools", 0, 0, "calc", {"x": 1}, tool) == "42"
    history = [*history, ai("hello"), human("again")]  # the next round stores only what was appended

    async def again():
        return _response("bye")

    await recorder.model_call("agent/llm", 1, 0, history, ModelConfig(), again)

    replay = IOReplayer(store, "r1")
    got = await replay.model_call("agent/llm", 1, 0, history, ModelConfig(), _never)
    assert got == _response("bye")
    assert await replay.tool_call("agent/tools", 0, 0, "calc", {"x": 1}, _never) == "42"


async def test_a_differing_request_names_node_and_first_differing_message(store):
    recorder = IORecorder(store, run_id="r1")

    async def answer():
        return _response("ok")

    await recorder.model_call("agent/llm", 0, 0, [human("What is 2+2?")], ModelConfig(), answer)
    replay = IOReplayer(store, "r1")
    with pytest.raises(ReplayDivergence) as caught:
        await replay.model_call("agent/llm", 0, 0, [human("What is 3+3?")], ModelConfig(), _never)
    message = str(caught.value)
    assert "'agent/llm'" in message and "round 0" in message and "message 0" in message
    assert "What is 2+2?" in message and "What is 3+3?" in message
    with pytest.raises(ReplayDivergence, match="no recorded model call for node 'agent/llm' round 5"):
        await replay.model_call("agent/llm", 5, 0, [human("x")], ModelConfig(), _never)
    with pytest.raises(ReplayDivergence, match=r"recorded calc\(\{'x': 1\}\) vs actual calc\(\{'x': 2\}\)"):
        await recorder.tool_call("t", 0, 0, "calc", {"x": 1}, _tool("1"))
        await replay.tool_call("t", 0, 0, "calc", {"x": 2}, _never)


def _tool(result: str):
    async def call():
        return result
    return call


async def test_going_live_calls_for_real_and_records_under_the_current_run(store):

    async def answer():
        return _response("recorded")

    await IORecorder(store, run_id="r1").model_call("n", 0, 0, [human("a")], ModelConfig(), answer)
    live = IORecorder(store, run_id="r1", branch="fork-1")
    replay = IOReplayer(store, "r1", strict=False, live_fallback=live)

    async def real():
        return _response("live")

    got = await replay.model_call("n", 0, 0, [human("b")], ModelConfig(), real)
    assert got.message.content == "live" and "message 0" in replay.divergences[0]
    assert store.get_io("r1", "model", "n", 0, 0, branch="fork-1").response["message"]["content"] == "live"
    assert store.get_io("r1", "model", "n", 0, 0, branch="main").response["message"]["content"] == "recorded"


async def test_recorded_failures_are_raised_again(store):
    recorder = IORecorder(store, run_id="r1")

    async def timeout():
        raise ModelTimeoutError("model timed out after 3s")

    async def broken_tool():
        raise ToolError("tool 'calc' failed: ZeroDivisionError: division by zero")

    async def bad_arguments():
        raise ToolArgumentsError("bad x", tool="calc")

    with pytest.raises(ModelTimeoutError):
        await recorder.model_call("n", 0, 0, [human("a")], ModelConfig(), timeout)
    with pytest.raises(ToolError):
        await recorder.tool_call("t", 0, 0, "calc", {}, broken_tool)
    with pytest.raises(ToolError):
        await recorder.tool_call("t", 0, 1, "calc", {}, bad_arguments)
    replay = IOReplayer(store, "r1")
    with pytest.raises(ModelTimeoutError, match="timed out after 3s"):
        await replay.model_call("n", 0, 0, [human("a")], ModelConfig(), _never)
    with pytest.raises(ToolError, match="division by zero") as caught:
        await replay.tool_call("t", 0, 0, "calc", {}, _never)
    assert type(caught.value) is ToolError
    with pytest.raises(ToolError, match="bad x"):  # not rebuildable from a message: the stand-in, a ToolError
        await replay.tool_call("t", 0, 1, "calc", {}, _never)
    assert issubclass(ReplayedModelError, Exception)


def _load_sample():
    spec = importlib.util.spec_from_file_location("react_calculator_sample", SAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _offline_agent(sample, store, source_run_id, strict=True):
    """The sample with its scripted model replaced by one that has nothing to say."""
    agent = sample.build()
    agent.context.io_recorder = IOReplayer(store, source_run_id, strict=strict)
    for node in agent.root.iterate():
        if getattr(node, "model_client", None) is not None:
            node.model_client = ModelClient.resolve(ScriptedProvider([]))
    return agent, agent.make_runner(checkpointer=store)


async def test_react_calculator_replays_from_every_checkpoint_offline(store):
    sample = _load_sample()
    agent = sample.build()
    runner = agent.make_runner(checkpointer=store)
    await runner.run(input_data=sample.INPUT)
    answer = runner.state_manager.get("final_answer")
    assert answer and "110" in answer
    checkpoints = [c for c in store.list(runner.run_id) if c.status == "RUNNING"]
    assert len(checkpoints) >= 3
    for checkpoint in checkpoints:
        _, again = _offline_agent(sample, store, runner.run_id)
        again.restore(checkpoint.id)
        await again.run()
        assert again.state_manager.get("final_answer") == answer, f"replay from checkpoint {checkpoint.id}"

    # a fork that edits the question sends the model a request it never answered
    _, forked = _offline_agent(sample, store, runner.run_id)
    first = checkpoints[0]
    question = store.get(first.id).state[""]["messages"][0]
    assert "25 * 4 + 10" in question["content"]
    forked.fork(first.id, state_updates={"messages": [human("What is 7 * 6?")]})
    with pytest.raises(ReplayDivergence) as caught:
        await forked.run()
    assert "Calculator.llm" in str(caught.value) and "recorded user 'What is 25 * 4 + 10?'" in str(caught.value)
    assert "7 * 6" in str(caught.value)
    store.close()
