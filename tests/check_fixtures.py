"""Trees and recordings for the tests of `check`, `diff` and run files.

`TREE` is a small pipeline: a `tidy` node that cleans the topic, then a ReAct agent whose
scripted model appends a note to a file (a tool with a side effect: `appended.log` beside
the tree file) and uses the calculator. `variant` writes it with one thing changed.
`record` runs a tree file the way the studio and `jianmu-studio run` do (a session),
answering approvals, and returns the run's id. `offline` (import it into a test module to
use it) keeps a model endpoint in the environment from making a sample go live.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

TREE = '''
from pathlib import Path

from runtime import Agent, CalculatorTool, ModelClient, ReActConfig, ReActState, ScriptedProvider, human, tool
from runtime import create_react_node
from runtime.node import Sequence, node

LOG = Path(__file__).with_name("appended.log")


class State(ReActState):
    topic: str = ""


@tool
def append_note(text: str) -> str:
    """Append a note to the log file."""
    with LOG.open("a") as f:
        f.write(text + "\\n")
    return f"noted: {text}"


@node(name="tidy")
def tidy(state):
    return {"topic": state["topic"].strip().lower()}


SCRIPT = [
    {"tool_calls": [{"name": "append_note", "arguments": {"text": "bees"}}]},
    {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6 * 7"}}]},
    "Noted, and 6 * 7 = 42.",
]
INPUT = {"topic": "  Bees ", "messages": [human("Note the topic, then compute 6 * 7.")]}


def build():
    client = ModelClient.resolve(ScriptedProvider(SCRIPT), env_override=True)
    agent = create_react_node(name="Agent", model_client=client, tools=[append_note, CalculatorTool()],
                              config=ReActConfig())
    return Agent(Sequence("Pipeline", memory=True, children=[tidy(), agent]), state_schema=State)
'''

LLM = "Pipeline/Agent/Agent.loop/Agent.llm"
TOOLS = "Pipeline/Agent/Agent.loop/Agent.tools"

CHANGES = {
    "prompt": ("config=ReActConfig()", 'config=ReActConfig(system_prompt="Be terse.")'),
    "tool list": ("tools=[append_note, CalculatorTool()]", "tools=[append_note]"),
    "node": ("strip().lower()", "strip().upper()"),
    "node fails": ('return {"topic": state["topic"].strip().lower()}', "return False"),
    "tool arguments": ('"expression": "6 * 7"', '"expression": "7 * 6"'),
}


def write_tree(folder: Path, name: str = "tree.py", change: str | None = None) -> Path:
    text = TREE
    if change is not None:
        old, new = CHANGES[change]
        assert old in text
        text = text.replace(old, new)
    path = folder / name
    path.write_text(text)
    return path


async def record(tree: Path | str, db: Path | str) -> str:
    """Run a tree file to its end as the studio does, recording into `db`; approve every call asked."""
    from studio.session import DebugSession

    session = DebugSession.load(str(tree), db=str(db))
    try:
        stop = await session.continue_()
        while stop.kind == "suspended":
            for request in session.pending_approvals():
                session.approve(request.id)
            stop = await session.continue_()
        assert stop.kind == "finished", stop
        return session.run_id
    finally:
        await session.agent.close()
        session.store.close()


async def record_with_fork(tree: Path | str, db: Path | str, topic: str = "wasps") -> str:
    """Record a run, then fork it from its input with `topic` edited and run the fork to its end."""
    from studio.session import DebugSession

    run_id = await record(tree, db)
    session = DebugSession.open_recorded(str(db), run_id)
    try:
        first = session.checkpoints()[0].id
        session.select_checkpoint(first)
        session.edit_state(None, "topic", topic)
        await session.fork_from(first)
        stop = await session.continue_()
        assert stop.kind == "finished", stop
        return run_id
    finally:
        await session.agent.close()
        session.store.close()


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    for name in ("JIANMU_BASE_URL", "OPENAI_BASE_URL", "JIANMU_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "studio.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


def export(db: Path, run_id: str, out: Path) -> None:
    """Write run `run_id` of the store `db` into the run file `out`."""
    from runtime.memory.checkpoint import open_store
    from runtime.memory.checkpoint.runfile import export_run_file

    store = open_store(db, create=False)
    try:
        export_run_file(store, run_id, out)
    finally:
        store.close()
