"""A tree whose synchronous code never returns, on the event loop's thread: a plain (not `blocking`) tool the
model calls, or with $JIANMU_TEST_HOLD=node a node whose own `update()` loops (=function: a synchronous `@node`
function; =async-node, =async-tool: a coroutine that loops between two awaits; =terminate: a RUNNING node whose
`terminate()` loops when the run is stopped). Each writes the file $JIANMU_TEST_HOLD_FLAG before it loops (the
last one once it runs)."""

import asyncio
import os
from pathlib import Path

from py_trees.common import Status

from runtime import Agent, ModelClient, ReActState, ScriptedProvider, create_react_node, human, tool
from runtime.engine.behaviour import AsyncBehaviour, Behaviour
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


@tool(name="spin")
async def spin_async() -> str:
    """Never returns."""
    await asyncio.sleep(0)
    _holding()


class Spins(Behaviour):
    def update(self) -> Status:
        _holding()


class SpinsAsync(AsyncBehaviour):
    async def update_async(self) -> Status:
        await asyncio.sleep(0)
        _holding()


class SpinsWhenStopped(Behaviour):
    def update(self) -> Status:
        Path(os.environ[FLAG]).touch()
        return Status.RUNNING

    def terminate(self, new_status: Status) -> None:
        while new_status == Status.INVALID:
            pass


@node(name="SpinsInAFunction")
def spins_in_a_function(state):
    _holding()


def build() -> Agent:
    hold = os.environ.get(HOLD, "tool")
    nodes = {"node": Spins, "async-node": SpinsAsync, "function": lambda name: spins_in_a_function(),
             "terminate": SpinsWhenStopped}
    if hold in nodes:
        return Agent(nodes[hold]("Spins"), state_schema=ReActState)
    model = ModelClient(ScriptedProvider([{"tool_calls": [{"name": "spin", "arguments": {}}]}, "Done."]))
    tools = [spin_async if hold == "async-tool" else spin]
    return Agent(create_react_node(name="Spinner", model_client=model, tools=tools), state_schema=ReActState)
