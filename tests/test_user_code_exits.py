"""`sys.exit()` or a KeyboardInterrupt raised by a node or a tool is that node's or tool's failure, named,
never the end of the process hosting the run (#32): not the studio, not `run`, not a service."""

from __future__ import annotations

import sys

import py_trees
import pytest
from py_trees.common import Status
from test_cli import cli

from runtime import Agent, ModelClient, ReActState, ScriptedProvider, create_react_node, human, tool
from runtime.engine.behaviour import AsyncBehaviour, Behaviour
from runtime.node import LoopUntilSuccess, node


class Exits(Behaviour):
    def update(self) -> Status:
        sys.exit(3)


class Boom(BaseException):
    """A BaseException of the tree's own: not an Exception, no exit, no interrupt."""


class Booms(Behaviour):
    def update(self) -> Status:
        raise Boom("up")


class ExitsLater(AsyncBehaviour):
    async def update_async(self) -> Status:
        raise KeyboardInterrupt


@node(name="ExitsInAFunction")
async def exits_in_a_function(state):
    sys.exit("bye")


@pytest.mark.parametrize(("leaf", "reason"), [
    (Exits("Exits"), "SystemExit (sys.exit(3))"),
    (ExitsLater("ExitsLater"), "KeyboardInterrupt"),
    (exits_in_a_function(), "SystemExit (sys.exit('bye'))"),
    (Booms("Booms"), "Boom: up"),
])
async def test_a_node_that_exits_or_interrupts_fails_with_that_reason_and_the_run_ends_normally(leaf, reason):
    root = py_trees.composites.Selector("Root", memory=True, children=[leaf, py_trees.behaviours.Success("After")])
    result = await Agent(root, state_schema=ReActState).run({})
    assert result.status == Status.SUCCESS  # the selector went on to its next child
    assert leaf.status == Status.FAILURE and leaf.last_error.error == reason


@tool
def interrupts(x: int) -> int:
    """Raises KeyboardInterrupt."""
    raise KeyboardInterrupt


@tool
def booms(x: int) -> int:
    """Raises a BaseException of its own."""
    raise Boom("tool")


@tool(blocking=True)
def exits(x: int) -> int:
    """Calls sys.exit, in a worker thread."""
    sys.exit(5)


async def test_a_tool_that_exits_or_interrupts_is_answered_with_its_failure_and_the_run_goes_on():
    script = [{"tool_calls": [{"name": "interrupts", "arguments": {"x": 1}}, {"name": "exits", "arguments": {"x": 2}},
                              {"name": "booms", "arguments": {"x": 3}}]},
              "done"]
    root = create_react_node(name="R", model_client=ModelClient(ScriptedProvider(script)),
                             tools=[interrupts, exits, booms])
    result = await Agent(root, state_schema=ReActState).run({"messages": [human("go")]})
    assert result.final_answer == "done"
    observations = [m.content for m in result.state.messages if m.role == "tool"]
    assert observations == ["Error: tool 'interrupts' failed: KeyboardInterrupt",
                            "Error: tool 'exits' failed: SystemExit (sys.exit(5))",
                            "Error: tool 'booms' failed: Boom: tool"]


def test_a_cli_run_whose_node_exits_reports_the_nodes_failure_not_its_exit_status(tmp_path):
    tree = tmp_path / "exits.py"
    tree.write_text("import sys\nimport py_trees\nfrom runtime import Agent, ReActState\n"
                    "from runtime.engine.behaviour import Behaviour\n"
                    "class Exits(Behaviour):\n    def update(self):\n        sys.exit(0)\n"
                    "def build():\n    return Agent(Exits('Exits'), state_schema=ReActState)\n")
    result = cli("run", str(tree), "--db", str(tmp_path / "s.db"))
    assert result.returncode == 1, result.stderr
    assert result.stderr == "jianmu-studio: failed at Exits: SystemExit (sys.exit(0))\n"


async def test_a_loop_whose_abort_condition_exits_is_aborted_with_that_reason():
    def condition() -> bool:
        sys.exit(7)

    loop = LoopUntilSuccess("Loop", py_trees.behaviours.Failure("Fails"), max_iterations=3, abort_condition=condition)
    result = await Agent(loop, state_schema=ReActState).run({})
    assert result.status == Status.FAILURE
    assert loop.last_error.error == "SystemExit (sys.exit(7))"
