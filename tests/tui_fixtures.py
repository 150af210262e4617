"""Shared helpers for the TUI tests: sessions on sample and test trees, and a settle step.

Imported by the `test_tui_*` modules (fixtures named here become fixtures there).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input

from runtime import Agent, CalculatorTool, ModelClient, ScriptedProvider, create_react_node, human
from studio.app import StudioApp
from studio.loader import LoadedTree
from studio.session import DebugSession

ROOT = Path(__file__).resolve().parent.parent
TEXT_PIPELINE = ROOT / "sample_trees" / "text_pipeline.py"
REACT_CALCULATOR = ROOT / "sample_trees" / "react_calculator.py"
SIZE = (140, 45)
CALC = {"tool_calls": [{"name": "calculator", "arguments": {"expression": "25 * 4 + 10"}}]}


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


async def settle(app: StudioApp, pilot) -> None:
    """Let running intents finish and the panes catch up with the session."""
    await app.workers.wait_for_complete()
    await pilot.pause()
    app.main.drain()
    await pilot.pause()
