"""Shared helpers for the TUI tests: sessions on sample and test trees, and a settle step.

Imported by the `test_tui_*` modules (fixtures named here become fixtures there).
`session_on(kind, tree, tmp_path)` gives the same tree as a local session ("local") or
as a remote one ("remote": the tree runs in its own process with the debug server on a
free loopback port, recording into a store, and the session attaches to it), so one
scenario runs against both; `BOTH` parametrises a test over the two.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path

import pytest
from debug_fixtures import TOKEN, WAIT, agent_process
from textual.widgets import Input

from runtime import Agent, CalculatorTool, ModelClient, ScriptedProvider, create_react_node, human
from studio.app import StudioApp
from studio.loader import LoadedTree
from studio.session import DebugSession, RunState
from studio.session.attached import RemoteSession

ROOT = Path(__file__).resolve().parent.parent
TEXT_PIPELINE = ROOT / "sample_trees" / "text_pipeline.py"
REACT_CALCULATOR = ROOT / "sample_trees" / "react_calculator.py"
APPROVAL_TREE = ROOT / "tests" / "approval_tree.py"
SIZE = (140, 45)
CALC = {"tool_calls": [{"name": "calculator", "arguments": {"expression": "25 * 4 + 10"}}]}
BOTH = pytest.mark.parametrize("kind", ["local", "remote"])


@pytest.fixture(autouse=True)
def steady_terminal(monkeypatch):
    """No blinking cursor (stable snapshots) and no live model endpoint (scripted samples)."""
    monkeypatch.setattr(Input.cursor_blink, "_default", False)
    for name in ("JIANMU_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def pipeline_session(tmp_path: Path | None = None) -> DebugSession:
    """The text pipeline; with `tmp_path`, its bindings file is written there, not in sample_trees/."""
    session = DebugSession.load(str(TEXT_PIPELINE))
    if tmp_path is not None:
        session.loaded.path = tmp_path / "text_pipeline.py"
    return session


def approval_session(tmp_path: Path, answer: str = "110") -> DebugSession:
    """A ReAct calculator whose calculator needs a human's approval."""
    root = create_react_node(name="Calculator", model_client=ModelClient(ScriptedProvider([CALC, answer])),
                             tools=[CalculatorTool()], constraints={"require_confirmation": ["calculator"]})
    loaded = LoadedTree(Agent(root), tmp_path / "approval.py", "build",
                        {"messages": [human("What is 25 * 4 + 10?")]})
    return DebugSession(loaded)


@contextlib.asynccontextmanager
async def session_on(kind: str, tree: Path, tmp_path: Path):
    """A session on the tree file: local, or remote (attached to it running in its own process, held at its
    start as a local session begins); the process and the connection are closed at the end."""
    if kind == "local":
        yield DebugSession.load(str(tree), db=tmp_path / "runs.db")
        return
    async with agent_process(str(tree), db=tmp_path / "served.db") as target:
        session = await RemoteSession.connect(target.address, TOKEN)
        try:
            await until(lambda: session.run_state == RunState.READY)
            yield session
        finally:
            await session.close()


@contextlib.asynccontextmanager
async def studio_on(kind: str, tree: Path, tmp_path: Path):
    """The studio on `session_on(kind, tree, tmp_path)`, started headless: (session, app, pilot)."""
    async with session_on(kind, tree, tmp_path) as session:
        app = StudioApp(session)
        async with app.run_test(size=SIZE) as pilot:
            yield session, app, pilot


async def until(condition: Callable[[], bool]) -> None:
    """Wait (bounded) until `condition()` holds: a remote session shows what the server answered when it comes."""
    async def holds() -> None:
        while not condition():
            await asyncio.sleep(0.01)
    await asyncio.wait_for(holds(), WAIT)


async def settle(app: StudioApp, pilot) -> None:
    """Let running intents finish (a remote session's requests answered) and the panes catch up."""
    await app.workers.wait_for_complete()
    drained = getattr(app.session, "drained", None)
    if drained is not None:
        await asyncio.wait_for(drained(), WAIT)
    await pilot.pause()
    app.main.drain()
    await pilot.pause()
