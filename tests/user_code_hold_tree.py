"""A tree whose synchronous code never returns, on the event loop's thread: a plain (not `blocking`) tool the
model calls, or with $JIANMU_TEST_HOLD=node a node whose own `update()` loops (=function: a synchronous `@node`
function). Each writes the file $JIANMU_TEST_HOLD_FLAG before it loops."""

import os
from pathlib import Path

from py_trees.common import Status

from runtime import Agent, ModelClient, ReActState, ScriptedProvider, create_react_node, human, tool
from runtime.engine.behaviour import Behaviour
from runtime.node import node

HOLD = "JIANMU_TEST_HOLD"
FLAG = "JIANMU_TEST_HOLD_FLAG"
INPUT = {"messages": [human("Spin.")]}


def _holding() -> None:
    Path(os.environ[FLAG]).touch()
    while True:
        pass


@tool
def spin() -> str:
    """Never returns."""
    _holding()


class Spins(Behaviour):
    def update(self) -> Status:
        _holding()


@node(name="SpinsInAFunction")
def spins_in_a_function(state):
    _holding()


def build() -> Agent:
    if os.environ.get(HOLD) == "node":
        return Agent(Spins("Spins"), state_schema=ReActState)
    if os.environ.get(HOLD) == "function":
        return Agent(spins_in_a_function(), state_schema=ReActState)
    model = ModelClient(ScriptedProvider([{"tool_calls": [{"name": "spin", "arguments": {}}]}, "Done."]))
    return Agent(create_react_node(name="Spinner", model_client=model, tools=[spin]), state_schema=ReActState)
