import asyncio
import copy
import sqlite3
import threading
import time
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from runtime.tools import (
    CalculatorTool,
    CalculatorToolProvider,
    StaticToolProvider,
    Tool,
    ToolArgumentsError,
    ToolError,
    ToolNotFoundError,
    ToolProvider,
    ToolSet,
    tool,
)


@tool
def add(a: int, b: int = 2) -> int:
    """Add two integers.

    This second paragraph is not part of the description.
    """
    return a + b


@tool(name="search", description="Search the web.", parallel_safe=True, effect_tags=["network"])
async def web_search(query: str, limit: int = 5, tags: list[str] | None = None) -> list[str]:
    await asyncio.sleep(0)
    return [query] * min(limit, 2)


class Weather(Tool):
    """Current weather for a city."""

    name = "weather"
    effect_tags = frozenset({"network"})

    class Args(BaseModel):
        city: str
        unit: Literal["C", "F"] = "C"

    async def run(self, city: str, unit: str) -> dict:
        return {"city": city, "temp": 21, "unit": unit}


class Echo(Tool):
    name = "echo"
    description = "Echo the text back."

    def run(self, text: Annotated[str, Field(description="what to echo")]) -> str:
        return text


def named(name: str, result: str = "") -> Tool:
    return Tool(lambda: result or name, name=name, description=f"the {name} tool")


# -- @tool ------------------------------------------------------------------------------

def test_decorated_function_is_a_tool_and_still_callable():
    assert isinstance(add, Tool)
    assert add.name == "add"
    assert add.description == "Add two integers."
    assert add(1, 2) == 3
    assert add.parallel_safe is True  # seed 003: the calls of a round run in parallel unless a tool says not
    assert add.effect_tags == frozenset()


def test_a_tool_runs_alone_when_it_says_so_or_declares_side_effects():
    @tool(parallel_safe=False)
    def alone() -> str:
        """Must not overlap anything."""
        return ""

    @tool(effect_tags=["payment"])
    def pay() -> str:
        """Moves money."""
        return ""

    @tool(effect_tags=["network"], parallel_safe=True)
    def fetch() -> str:
        """Reads the web."""
        return ""

    assert (alone.parallel_safe, pay.parallel_safe, fetch.parallel_safe) == (False, False, True)


def test_schema_has_json_types_and_required_fields():
    schema = add.schema()
    assert schema["type"] == "function"
    function = schema["function"]
    assert function["name"] == "add"
    assert function["description"] == "Add two integers."
    params = function["parameters"]
    assert params["type"] == "object"
    assert params["properties"]["a"]["type"] == "integer"
    assert params["properties"]["b"]["default"] == 2
    assert params["required"] == ["a"]


def test_decorator_options_and_async_schema():
    assert web_search.name == "search"
    assert web_search.description == "Search the web."
    assert web_search.parallel_safe is True
    assert web_search.effect_tags == frozenset({"network"})
    props = web_search.schema()["function"]["parameters"]["properties"]
    assert props["query"]["type"] == "string"
    assert props["tags"]["anyOf"][0] == {"type": "array", "items": {"type": "string"}}


def test_describe_is_one_line_with_types_and_defaults():
    assert add.describe() == "add(a: integer, b: integer = 2): Add two integers."
    assert web_search.describe() == (
        "search(query: string, limit: integer = 5, tags: array[string] | null = null): Search the web.")


async def test_call_sync_and_async_functions():
    assert await add.call({"a": 1}) == 3
    assert await add.call({"a": "4", "b": 1}) == 5  # lax JSON coercion, as pydantic does
    assert await web_search.call({"query": "q"}) == ["q", "q"]


async def test_a_synchronous_tool_runs_on_the_loops_thread_unless_it_says_it_blocks():
    blocking = Tool(lambda: threading.current_thread() is threading.main_thread(), name="where",
                    blocking=True)
    inline = Tool(lambda: threading.current_thread() is threading.main_thread(), name="where")
    assert await blocking.call({}) is False
    assert await inline.call({}) is True


def _bumping(**options) -> tuple[Tool, dict[str, int]]:
    """A tool that reads, lets other threads run, then writes its count back: calls that overlap lose
    updates."""
    state = {"count": 0, "inside": 0, "most": 0}

    @tool(blocking=True, **options)
    def bump() -> int:
        """Count a call."""
        state["inside"] += 1
        state["most"] = max(state["most"], state["inside"])
        seen = state["count"]
        time.sleep(0.001)  # (another thread's turn, if one may run)
        state["count"] = seen + 1
        state["inside"] -= 1
        return seen

    return bump, state


async def test_the_calls_of_a_synchronous_tool_take_turns_in_their_threads():
    bump, state = _bumping()
    seen = await asyncio.gather(*(bump.call({}) for _ in range(20)))
    assert sorted(seen) == list(range(20)) and state["count"] == 20 and state["most"] == 1


async def test_a_copy_of_a_synchronous_tool_takes_turns_with_it():
    bump, state = _bumping()
    twin = copy.deepcopy(bump)  # the same function: one turn between them
    await asyncio.gather(*(tool.call({}) for tool in [bump, twin] * 10))
    assert state["count"] == 20 and state["most"] == 1


async def test_a_parallel_safe_synchronous_tool_overlaps_its_own_calls():
    both_inside = threading.Barrier(2, timeout=30)  # passes only when two calls run at once

    @tool(parallel_safe=True, blocking=True)
    def meet() -> int:
        """Wait for the other call."""
        return both_inside.wait()

    assert sorted(await asyncio.gather(meet.call({}), meet.call({}))) == [0, 1]


async def test_a_call_given_up_on_while_waiting_for_its_turn_never_runs():
    entered, release, ran = threading.Event(), threading.Event(), []

    @tool(blocking=True)
    def holds(n: int) -> int:
        """Hold the tool's turn until released."""
        ran.append(n)
        entered.set()
        release.wait()
        return n

    first = asyncio.ensure_future(holds.call({"n": 1}))
    await asyncio.to_thread(entered.wait)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(holds.call({"n": 2}), 0.1)  # (waits for the turn whatever the clock)
    release.set()
    assert await first == 1
    for thread in threading.enumerate():
        if thread.name == "tool holds":
            thread.join(30)
    assert ran == [1]
    assert await holds.call({"n": 3}) == 3 and ran == [1, 3]


_made_here = sqlite3.connect(":memory:", check_same_thread=True)


@pytest.mark.parametrize("uses", [
    lambda: str(asyncio.get_running_loop()),
    lambda: asyncio.get_event_loop().create_future() and "a future",
    lambda: str(_made_here.execute("select 1").fetchone()),
], ids=["running-loop", "future", "sqlite3-of-another-thread"])
async def test_a_synchronous_tool_that_needs_the_loop_thread_is_told_what_to_change(uses):
    in_thread = Tool(uses, name="needs_loop", blocking=True)
    with pytest.raises(ToolError, match=r"^tool 'needs_loop' failed: \w+: .*declare it blocking=False to "
                                        r"run it on the event loop's thread, or make it async\)$"):
        await in_thread.call({})
    assert await Tool(uses, name="needs_loop", blocking=False).call({})


async def test_other_failures_of_a_synchronous_tool_are_its_own():
    @tool(blocking=True)
    def fails() -> str:
        """Fail as the tool does."""
        raise RuntimeError("the upstream is down")

    with pytest.raises(RuntimeError, match="the upstream is down"):
        await fails.call({})


@pytest.mark.parametrize(("arguments", "field"), [
    ({}, "a"),
    ({"a": "one"}, "a"),
    ({"a": 1, "c": 3}, "c"),
])
def test_validation_error_names_tool_and_field(arguments, field):
    with pytest.raises(ToolArgumentsError) as info:
        add.validate(arguments)
    message = str(info.value)
    assert message.startswith(f"tool 'add': invalid argument '{field}'")
    assert "\n" not in message
    assert (info.value.tool, info.value.field) == ("add", field)


async def test_call_rejects_non_object_arguments():
    with pytest.raises(ToolArgumentsError, match="tool 'add': arguments must be an object, got list"):
        await add.call([1, 2])


def test_invalid_tool_name_is_refused():
    with pytest.raises(ValueError, match="tool name 'two words'"):
        Tool(lambda: None, name="two words")


# -- subclass-style tools -----------------------------------------------------------------

async def test_subclass_with_args_model():
    weather = Weather()
    assert weather.description == "Current weather for a city."
    assert weather.effect_tags == frozenset({"network"})
    assert weather.describe() == 'weather(city: string, unit: "C" | "F" = "C"): Current weather for a city.'
    assert await weather.call({"city": "Oslo"}) == {"city": "Oslo", "temp": 21, "unit": "C"}
    with pytest.raises(ToolArgumentsError, match="tool 'weather': invalid argument 'unit'"):
        weather.validate({"city": "Oslo", "unit": "K"})


async def test_subclass_without_args_model_uses_run_signature():
    echo = Echo()
    props = echo.schema()["function"]["parameters"]["properties"]
    assert props["text"] == {"description": "what to echo", "title": "Text", "type": "string"}
    assert await echo.call({"text": "hi"}) == "hi"


# -- format_result ----------------------------------------------------------------------

@pytest.mark.parametrize(("value", "text"), [
    ("plain", "plain"),
    (110, "110"),
    ({"a": [1, "ü"]}, '{"a":[1,"ü"]}'),
    ([Weather.Args(city="Oslo")], '[{"city":"Oslo","unit":"C"}]'),
    (None, "null"),
])
def test_format_result(value, text):
    assert Tool.format_result(value) == text


# -- providers and tool sets ------------------------------------------------------------

class RecordingProvider(ToolProvider):
    def __init__(self, *tools: Tool, fail: bool = False):
        self.tools = list(tools)
        self.fail = fail
        self.log: list[str] = []

    async def initialize(self):
        self.log.append("initialize")

    async def get_tools(self, **kwargs):
        self.log.append(f"get_tools {kwargs}")
        if self.fail:
            raise RuntimeError("server unreachable")
        return self.tools

    async def close(self):
        self.log.append("close")


async def test_from_providers_initializes_in_order_and_passes_context():
    first, second = RecordingProvider(named("a")), RecordingProvider(named("b"))
    toolset = await ToolSet.from_providers(first, second, user="ada")
    assert toolset.names() == ["a", "b"]
    assert first.log == ["initialize", "get_tools {'user': 'ada'}"]
    await toolset.close()
    assert first.log[-1] == second.log[-1] == "close"


async def test_from_providers_accepts_an_iterable_or_none():
    assert (await ToolSet.from_providers([StaticToolProvider([named("a")])])).names() == ["a"]
    assert len(await ToolSet.from_providers(None)) == 0
    assert (await ToolSet.from_providers(CalculatorToolProvider())).names() == ["calculator"]


async def test_two_providers_offering_one_name_is_an_error_naming_both_and_static_tools_win():
    """Issue 30.6: never a silent replacement between providers; a static tool still wins (seed 000)."""
    early = RecordingProvider(named("x", "early"), named("y", "early"))
    late = RecordingProvider(named("x", "late"))
    with pytest.raises(ToolError) as clash:
        await ToolSet.from_providers(early, late)
    assert str(clash.value) == ("tool 'x' is offered by both RecordingProvider (provider 1) and RecordingProvider "
                                "(provider 2); give one a prefix (MCPToolProvider(..., prefix=...))")
    assert early.log[-1] == late.log[-1] == "close"  # both were started: both are closed
    toolset = (await ToolSet.from_providers(StaticToolProvider([named("y", "provided")]))).with_tools(
        [named("y", "static")])
    assert toolset.get("y")() == "static"


async def test_failing_provider_is_named_and_started_ones_are_closed():
    good, bad = RecordingProvider(named("a")), RecordingProvider(fail=True)
    with pytest.raises(ToolError, match="tool provider RecordingProvider failed: server unreachable"):
        await ToolSet.from_providers(good, bad)
    assert good.log[-1] == bad.log[-1] == "close"


def test_get_unknown_tool_lists_known_names():
    toolset = ToolSet([add, CalculatorTool()])
    assert "add" in toolset and "nope" not in toolset
    with pytest.raises(ToolNotFoundError, match=r"unknown tool 'nope' \(known tools: add, calculator\)"):
        toolset.get("nope")


def test_describe_and_schemas_follow_tool_order():
    toolset = ToolSet([add, web_search])
    assert toolset.describe().splitlines() == [add.describe(), web_search.describe()]
    assert [s["function"]["name"] for s in toolset.schemas()] == ["add", "search"]
    assert [t.name for t in toolset] == ["add", "search"]
    assert len(toolset) == 2


async def test_toolset_merge_later_wins_and_keeps_every_provider():
    first, second = RecordingProvider(named("x", "first")), RecordingProvider(named("y", "second"))
    merged = ToolSet.merge(await ToolSet.from_providers(first), await ToolSet.from_providers(second),
                           [named("x", "static")], None)
    assert merged.names() == ["x", "y"] and merged.get("x")() == "static" and merged.get("y")() == "second"
    await merged.close()
    assert first.log[-1] == second.log[-1] == "close"
