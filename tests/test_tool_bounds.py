"""Every tool call is bounded as an MCP server's is (#32): a plain tool that never returns is answered,
after its `timeout`, with an observation naming it, and one that returns a huge text is cut at its
`max_output_chars` with a marker naming it; the model reads that and the run goes on. A blocking tool a
timeout gave up on never holds the process's exit. (The bounds are small here so nothing waits long;
the defaults are 60 s and 100,000 characters.)"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading

import pytest
from test_cli import ROOT

from runtime import Agent, ModelClient, ReActState, ScriptedProvider, create_react_node, human, tool
from runtime.tools import Tool

released = threading.Event()  # lets a blocking tool given up on end with the test


@tool(timeout=0.2)
async def hangs(x: int) -> int:
    """Never answers."""
    await asyncio.Event().wait()


@tool(blocking=True, timeout=0.2)
def blocks(x: int) -> int:
    """Holds its thread until the test ends."""
    released.wait()
    return x


@tool(max_output_chars=1000)
def floods(x: int) -> str:
    """Answers with more text than the model should read."""
    return "y" * 5000


@tool
async def raises_its_own_timeout(x: int) -> int:
    """A TimeoutError of the tool's own (a socket's, say), at once."""
    raise TimeoutError("the upstream timed out")


async def _observations(*tools: Tool) -> list[str]:
    calls = [{"name": t.name, "arguments": {"x": i}} for i, t in enumerate(tools)]
    root = create_react_node(name="R", model_client=ModelClient(ScriptedProvider([{"tool_calls": calls}, "done"])),
                             tools=list(tools))
    result = await asyncio.wait_for(Agent(root, state_schema=ReActState).run({"messages": [human("go")]}), 60)
    assert result.final_answer == "done"  # the run went on to the model's answer
    return [m.content for m in result.state.messages if m.role == "tool"]


async def test_a_tool_that_never_answers_is_answered_with_its_timeout_and_the_run_goes_on():
    try:
        assert await _observations(hangs, blocks, raises_its_own_timeout) == [
            "Error: tool 'hangs' gave no answer within 0.2s",
            "Error: tool 'blocks' gave no answer within 0.2s",
            "Error: tool 'raises_its_own_timeout' failed: TimeoutError: the upstream timed out"]
    finally:
        released.set()


async def test_a_huge_answer_is_cut_with_a_marker_naming_the_tool():
    assert await _observations(floods) == [
        "y" * 1000 + "\n[... 4,000 of 5,000 characters dropped: tool 'floods' answered more than "
                     "max_output_chars=1,000]"]


def test_a_blocking_tool_given_up_on_does_not_hold_the_process_exit(tmp_path):
    script = tmp_path / "held.py"
    script.write_text(
        "import asyncio, threading\n"
        "from runtime import Agent, ModelClient, ReActState, ScriptedProvider, create_react_node, human, tool\n"
        "@tool(blocking=True, timeout=0.2)\n"
        "def holds(x: int) -> int:\n"
        "    threading.Event().wait()\n"
        "root = create_react_node(name='R', model_client=ModelClient(ScriptedProvider(\n"
        "    [{'tool_calls': [{'name': 'holds', 'arguments': {'x': 1}}]}, 'done'])), tools=[holds])\n"
        "print(asyncio.run(Agent(root, state_schema=ReActState).run({'messages': [human('go')]})).final_answer)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0 and done.stdout == "done\n", done.stderr


@pytest.mark.parametrize(("bounds", "expected"), [
    ({"timeout": 0}, "tool 'f': timeout must be > 0 seconds or None, not 0"),
    ({"timeout": float("nan")}, "tool 'f': timeout must be > 0 seconds or None, not nan"),
    ({"max_output_chars": 0}, "tool 'f': max_output_chars must be >= 1 or None, not 0"),
])
def test_a_bound_that_bounds_nothing_is_refused_naming_the_tool(bounds, expected):
    with pytest.raises(ValueError, match=expected):
        tool(lambda x: x, name="f", **bounds)

