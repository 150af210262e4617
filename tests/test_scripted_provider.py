import math

import pytest

from runtime.messages import ToolCall, ai, human, system
from runtime.model import (
    ModelConfig,
    ModelTimeoutError,
    ScriptedProvider,
    ScriptedResponse,
    ScriptExhaustedError,
    Usage,
)


async def test_replies_in_order_and_records_each_request():
    provider = ScriptedProvider(["first", {"content": "second"}, ScriptedResponse(content="third")])
    config = ModelConfig(model="m", tools=[{"type": "function", "function": {"name": "calc"}}])
    history = [system("be brief"), human("hi")]

    replies = [(await provider.complete(history, config)).message.content for _ in range(3)]

    assert replies == ["first", "second", "third"]
    assert provider.remaining == 0
    assert len(provider.requests) == 3
    assert provider.requests[0].messages == history
    assert provider.requests[0].config == config
    assert provider.requests[0].config is not config  # a copy, not the caller's object


async def test_request_record_is_a_snapshot():
    provider = ScriptedProvider(["ok"])
    history = [human("hi")]
    config = ModelConfig(extra_params={"seed": 1}, tools=[{"type": "function", "function": {"name": "calc"}}],
                         tool_choice={"type": "function", "function": {"name": "calc"}})

    await provider.complete(history, config)
    history.append(human("later"))
    config.extra_params["seed"] = 2
    config.tools[0]["function"]["name"] = config.tool_choice["function"]["name"] = "changed"

    assert provider.requests[0].messages == [human("hi")]
    assert provider.requests[0].config.extra_params == {"seed": 1}
    assert provider.requests[0].config.tools[0]["function"]["name"] == "calc"
    assert provider.requests[0].config.tool_choice["function"]["name"] == "calc"


async def test_tool_calls_get_deterministic_ids_and_keep_parse_errors():
    provider = ScriptedProvider(
        [
            {
                "tool_calls": [
                    {"name": "add", "arguments": {"a": 1}},
                    {"name": "mul", "arguments": '{"a": 2}'},
                ]
            },
            {
                "tool_calls": [
                    {"name": "add", "arguments": "{not json", "id": "mine"},
                    ToolCall(id="t", name="sub", arguments={"b": 3}),
                ]
            },
            {"tool_calls": [{"name": "div"}]},
        ]
    )

    first = await provider.complete([human("q")], ModelConfig())
    second = await provider.complete([human("q")], ModelConfig())
    third = await provider.complete([human("q")], ModelConfig())

    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("call_1", "add", {"a": 1}),
        ("call_2", "mul", {"a": 2}),
    ]
    assert first.finish_reason == "tool_calls"
    assert second.tool_calls[0].id == "mine"
    assert second.tool_calls[0].arguments == {}
    assert "not valid JSON" in second.tool_calls[0].parse_error
    assert second.tool_calls[1] == ToolCall(id="t", name="sub", arguments={"b": 3})
    assert third.tool_calls[0].id == "call_5"  # the script's fifth tool call


async def test_usage_is_estimated_at_four_characters_per_token():
    provider = ScriptedProvider(
        [
            {"content": "12345", "tool_calls": [{"name": "f", "arguments": {"x": 1}}]},
            "",
        ]
    )
    call = ToolCall(id="c", name="f", arguments={"k": "v"})  # '{"k": "v"}' is 10 characters
    history = [system("abc"), human("defgh"), ai(None, [call])]  # 3 + 5 + 10 = 18 characters

    response = await provider.complete(history, ModelConfig())
    empty = await provider.complete([human("")], ModelConfig())

    # reply: "12345" (5) + '{"x": 1}' (8) = 13 characters
    assert response.usage == Usage(
        prompt_tokens=math.ceil(18 / 4), completion_tokens=math.ceil(13 / 4), total_tokens=5 + 4
    )
    assert empty.usage == Usage(prompt_tokens=1, completion_tokens=1, total_tokens=2)


async def test_scripted_usage_wins_over_the_estimate():
    provider = ScriptedProvider(
        [{"content": "x", "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}]
    )
    response = await provider.complete([human("q")], ModelConfig(model="gpt-x"))
    assert response.usage.total_tokens == 10
    assert response.model == "gpt-x"
    assert response.finish_reason == "stop"


async def test_exhaustion_names_the_request_and_the_script_length():
    provider = ScriptedProvider(["only"])
    await provider.complete([human("q")], ModelConfig())

    with pytest.raises(ScriptExhaustedError) as info:
        await provider.complete([human("q")], ModelConfig())

    assert str(info.value) == "scripted model has no response left for request #2 (script had 1)"


async def test_streaming_splits_content_into_deltas():
    provider = ScriptedProvider(["The answer is 42.", "quiet"])
    deltas: list[str] = []

    response = await provider.complete([human("q")], ModelConfig(stream=True), deltas.append)
    await provider.complete([human("q")], ModelConfig(stream=False), deltas.append)

    assert deltas == ["The ", "answer ", "is ", "42."]
    assert response.message.content == "The answer is 42."


async def test_delay_longer_than_timeout_is_a_timeout():
    provider = ScriptedProvider([{"content": "late", "delay": 5}, {"content": "on time", "delay": 0.01}])

    with pytest.raises(ModelTimeoutError):
        await provider.complete([human("q")], ModelConfig(timeout=0.01))
    response = await provider.complete([human("q")], ModelConfig(timeout=1))

    assert response.message.content == "on time"


def test_unknown_response_keys_are_rejected():
    with pytest.raises(ValueError, match="tool_call"):
        ScriptedProvider([{"tool_call": []}])


def test_tool_call_without_a_name_is_rejected():
    with pytest.raises(ValueError, match="scripted response #2: a tool call needs a 'name'"):
        ScriptedProvider(["ok", {"tool_calls": [{"arguments": {}}]}])


async def test_the_script_position_is_saved_and_restored_with_every_checkpoint(tmp_path):
    """A restored run gets the answers that came next at that checkpoint, not the ones after them."""
    import importlib.util
    from pathlib import Path

    from runtime.memory.checkpoint import SQLiteCheckpointStore

    path = Path(__file__).resolve().parents[1] / "sample_trees/react_calculator.py"
    spec = importlib.util.spec_from_file_location("calculator_sample", path)
    sample = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sample)
    agent = sample.build()
    provider = next(node.model_client.provider for node in agent.root.iterate()
                    if getattr(node, "model_client", None) is not None)
    store = SQLiteCheckpointStore(tmp_path / "runs.db")
    runner = agent.make_runner(checkpointer=store)
    positions = {}
    runner.add_tick_hook(after=lambda runner, report: positions.setdefault(runner.checkpoints.head, provider.position))
    await runner.run(input_data=sample.INPUT)
    assert provider.remaining == 0 and sorted(set(positions.values())) == [0, 1, 2]

    for checkpoint_id, position in positions.items():
        runner.restore(checkpoint_id)
        assert provider.position == position, f"checkpoint {checkpoint_id}"
    first_answer = min(i for i, p in positions.items() if p == 1)
    runner.restore(first_answer)
    await runner.run()  # live from there: the script's second answer, no ScriptExhaustedError
    assert runner.state_manager.get("final_answer") == "25 * 4 + 10 = 110"
    store.close()
