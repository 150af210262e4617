"""LangGraph on the benches' own workloads, measured in the same run as the project.

Installed by the bench extra (`.venv/bin/pip install -e '.[bench]'`); without it the benches say
so and print no peer column. The workload is the project's: a scripted model asking for one
`lookup` tool call per round with the same texts, then answering "done"; LangGraph runs it
through `create_react_agent` with a fake chat model that returns the same messages.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import sqlite3
import time
import warnings
from collections.abc import Callable
from pathlib import Path


# Imported only when measured: LangGraph's imports would swell the other benches' memory figures.
def _installed(*distributions: str) -> bool:
    try:
        return all(importlib.metadata.version(name) for name in distributions)
    except importlib.metadata.PackageNotFoundError:
        return False


AVAILABLE = _installed("langgraph", "langgraph-checkpoint-sqlite")

MISSING = "LangGraph not installed (`.venv/bin/pip install -e '.[bench]'`): no peer column"


def _agent(script: list[dict], observe: Callable[[int], str], checkpointer=None):
    """`create_react_agent` over a fake model that answers `script` in order (the project's
    scripted-model answers: content and tool calls) and a `lookup(round)` tool giving `observe`."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import StructuredTool
    from langgraph.prebuilt import create_react_agent

    class Scripted(BaseChatModel):
        position: int = 0

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools, **kwargs):
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
            step = script[self.position]
            self.position += 1
            calls = [{"name": c["name"], "args": c["arguments"], "id": f"call_{self.position}"}
                     for c in step.get("tool_calls", [])]
            return ChatResult(generations=[ChatGeneration(message=AIMessage(step["content"], tool_calls=calls))])

        async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
            delay = script[self.position].get("delay")
            if delay:  # an endpoint's latency, awaited as the project's scripted model awaits it
                await asyncio.sleep(delay)
            return self._generate(messages)  # (by default LangChain would run it in a thread)

    async def alookup(round: int) -> str:
        return observe(round)

    lookup = StructuredTool.from_function(lambda round: observe(round), coroutine=alookup, name="lookup",
                                          description="Return the observation for a round.")

    with warnings.catch_warnings():  # create_react_agent is deprecated in favour of langchain's
        warnings.simplefilter("ignore")
        return create_react_agent(Scripted(), [lookup], checkpointer=checkpointer)


def _config(thread: str, checkpoint_id: str | None = None) -> dict:
    configurable = {"thread_id": thread}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable, "recursion_limit": 10**6}


def react_seconds(script: list[dict], observe: Callable[[int], str], task: str) -> float:
    """Wall time of one run of the workload with no checkpointer."""
    agent = _agent(script, observe)
    started = time.perf_counter()
    agent.invoke({"messages": [("user", task)]}, _config("bench"))
    return time.perf_counter() - started


def record(path: Path, script: list[dict], observe: Callable[[int], str], task: str) -> list[str]:
    """Run the workload with LangGraph's SQLite checkpointer into `path`; the checkpoint ids,
    oldest first."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        agent = _agent(script, observe, saver)
        agent.invoke({"messages": [("user", task)]}, _config("bench"))
        ids = [t.config["configurable"]["checkpoint_id"] for t in saver.list(_config("bench"))]
    finally:
        conn.close()
    return ids[::-1]


def cold_restore_ms(path: Path, script: list[dict], observe: Callable[[int], str], checkpoint_id: str) -> float:
    """The state at one checkpoint read (messages deserialised) by a freshly compiled graph on a
    freshly opened connection, as a process starting on a stored run would; the clock covers
    the read only, as the project's cold restore does."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        agent = _agent(script, observe, SqliteSaver(conn))
        started = time.perf_counter()
        agent.get_state(_config("bench", checkpoint_id))
        return (time.perf_counter() - started) * 1000
    finally:
        conn.close()
