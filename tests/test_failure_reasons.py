"""Why a run failed, everywhere: the status line, the node pane, the CLI's stderr and its --json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tui_fixtures import BOTH, SIZE, settle, steady_terminal, studio_on, until  # noqa: F401

from runtime.memory.checkpoint import SQLiteCheckpointStore
from studio.app import StudioApp
from studio.session import DebugSession, RunState
from studio.widgets.node_detail import NodeDetailPane
from studio.widgets.tree_pane import TreePane

ROOT = Path(__file__).resolve().parents[1]
BUDGET_ABORT = str(ROOT / "sample_trees/budget_abort.py")
FLAKY_TOOLS = str(ROOT / "sample_trees/flaky_tools.py")
RAISES = """\
from pydantic import BaseModel
from py_trees.common import Status
from runtime import Agent
from runtime.node import Node, Sequence


class S(BaseModel):
    x: int = 0


class Fetch(Node):
    def update(self):
        raise ConnectionRefusedError("inventory API refused the connection\\nsecond line")


def build():
    return Agent(Sequence("Root", memory=True, children=[Fetch("Fetch")]), state_schema=S)
"""


@pytest.fixture
def raising_tree(tmp_path) -> str:
    path = tmp_path / "raises_in_update.py"
    path.write_text(RAISES)
    return str(path)


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "studio.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, env={**os.environ, **(env or {})})


def status_text(app: StudioApp) -> str:
    return str(app.main.query_one("#status").render())


def detail_text(app: StudioApp) -> str:
    from test_tui_app import plain

    return plain(app.main.query_one(NodeDetailPane).query_one("#node-detail-body"))


async def run_to_end(app: StudioApp, pilot) -> None:
    await settle(app, pilot)
    await pilot.press("c")
    await settle(app, pilot)
    for _ in range(50):
        if app.session.runner.finished:
            break
        await pilot.pause(0.05)
        await settle(app, pilot)


# -- the session's one story ---------------------------------------------------------
async def test_budget_abort_is_budget_exhausted_with_the_loop_named(tmp_path):
    session = DebugSession.load(BUDGET_ABORT, db=tmp_path / "runs.db")
    await session.continue_()
    failure = session.failure
    assert failure.reason == "budget_exhausted"
    assert failure.node == "Squares"
    assert failure.first_line == "token budget spent: 1350 >= 1000 tokens"
    assert session.agent.result_from(session.runner).termination_reason == "budget_exhausted"
    assert session.state_snapshot()[""]["interaction.termination"]["reason"] == "budget_exhausted"  # state: the same


async def test_a_raising_node_is_named_with_the_first_line_of_its_error(tmp_path, raising_tree):
    session = DebugSession.load(raising_tree, db=tmp_path / "runs.db")
    await session.continue_()
    assert session.failure.line == "Root/Fetch: ConnectionRefusedError: inventory API refused the connection"
    assert session.failure.headline.startswith("failed at Root/Fetch: ConnectionRefusedError")


async def test_a_successful_run_has_no_failure(tmp_path):
    session = DebugSession.load(FLAKY_TOOLS, db=tmp_path / "runs.db")
    await session.continue_()
    assert session.root_status.value == "SUCCESS" and session.failure is None


# -- the studio, on a local session and attached to the run in another process -----------
async def until_finished(app: StudioApp, pilot) -> None:
    await settle(app, pilot)
    await pilot.press("c")
    await until(lambda: app.session.run_state == RunState.FINISHED)
    await settle(app, pilot)


@BOTH
async def test_status_line_names_the_budget_abort(kind, tmp_path):
    async with studio_on(kind, Path(BUDGET_ABORT), tmp_path) as (session, app, pilot):
        await pilot.resize_terminal(80, 24)
        await until_finished(app, pilot)
        line = status_text(app)
        assert "✘ budget_exhausted at Squares: token budget spent: 1350 >= 1000 tokens" in line
        assert line.index("budget_exhausted") < 40  # near the start: a narrow screen keeps it
        app.main.query_one(TreePane).jump("Squares")
        await settle(app, pilot)
        lines = [line for line in detail_text(app).splitlines() if line.strip()]
        assert lines[0].startswith("✘ last error")  # the loop that aborted says why, at the top
        assert " ".join(lines[1:3]).startswith("budget_exhausted at Squares: token")


@BOTH
async def test_status_line_and_node_pane_show_a_raising_node(kind, tmp_path, raising_tree):
    async with studio_on(kind, Path(raising_tree), tmp_path) as (session, app, pilot):
        await until_finished(app, pilot)
        assert "✘ failed at Root/Fetch: ConnectionRefusedError: inventory API refused the connection" in \
            status_text(app)
        assert session.failure.line == "Root/Fetch: ConnectionRefusedError: inventory API refused the connection"
        app.main.query_one(TreePane).jump("Root/Fetch")
        await settle(app, pilot)
        text = detail_text(app)
        lines = [line for line in text.splitlines() if line.strip()]
        assert lines[0].startswith("✘ last error")  # at the top, before class and path
        assert lines[1].startswith("ConnectionRefusedError: inventory API refused the connection")
        assert text.index("last error") < text.index("class") < text.index("traceback of the last error")


async def test_tool_executor_shows_which_call_failed_and_why(tmp_path):
    app = StudioApp(DebugSession.load(FLAKY_TOOLS, db=tmp_path / "runs.db"))
    async with app.run_test(size=SIZE) as pilot:
        await run_to_end(app, pilot)
        app.main.query_one(TreePane).jump("Stock/Stock.loop/Stock.tools")
        await settle(app, pilot)
        text = detail_text(app)
        assert "✘ tool calls that failed (2)" in text
        assert 'stock_level({"sku": "A-100"})' in text
        assert "ConnectionError: stock service reset the connection" in text
        assert "tool 'stock_level'" in text.split("ConnectionError")[1]  # the malformed call, second


# -- headless ------------------------------------------------------------------------
def test_run_prints_the_error_line_on_stderr_and_json_has_error(raising_tree):
    text = cli("run", raising_tree)
    assert text.returncode == 1
    assert text.stderr.strip() == ("jianmu-studio: failed at Root/Fetch: ConnectionRefusedError: "
                                   "inventory API refused the connection")
    as_json = cli("run", raising_tree, "--json")
    summary = json.loads(as_json.stdout.splitlines()[-1])["summary"]
    assert summary["error"] == "Root/Fetch: ConnectionRefusedError: inventory API refused the connection"


def test_budget_abort_headless_has_one_name():
    result = cli("run", BUDGET_ABORT, "--json")
    assert result.returncode == 1
    summary = json.loads(result.stdout.splitlines()[-1])["summary"]
    assert summary["termination_reason"] == "budget_exhausted"
    assert summary["error"] == "Squares: token budget spent: 1350 >= 1000 tokens"
    assert "jianmu-studio: budget_exhausted at Squares: token budget spent" in result.stderr


def test_a_successful_run_has_a_null_error_and_nothing_on_stderr():
    result = cli("run", FLAKY_TOOLS, "--json")
    assert result.returncode == 0
    assert json.loads(result.stdout.splitlines()[-1])["summary"]["error"] is None
    assert result.stderr == ""


class Unauthorized(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's naming)
        body = json.dumps({"error": {"message": "Incorrect API key provided"}}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_401_from_the_model_endpoint_is_the_error_line():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Unauthorized)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        env = {"JIANMU_BASE_URL": f"http://127.0.0.1:{server.server_port}/v1", "JIANMU_API_KEY": "wrong",
               "JIANMU_MODEL": "gpt-test"}
        result = cli("run", str(ROOT / "sample_trees/react_calculator.py"), "--json", env=env)
    finally:
        server.shutdown()
        server.server_close()
    assert result.returncode == 1
    summary = json.loads(result.stdout.splitlines()[-1])["summary"]
    assert "HTTP 401" in summary["error"] and summary["error"].startswith("Calculator/Calculator.loop/Calculator.llm")
    error_line = result.stderr.strip().splitlines()[-1]
    assert error_line.startswith("jianmu-studio: failed at Calculator/Calculator.loop/Calculator.llm: ")
    assert "HTTP 401" in error_line


def test_a_missing_model_name_is_the_error_line():
    env = {name: value for name, value in os.environ.items() if name not in ("JIANMU_MODEL", "OPENAI_MODEL")}
    env["JIANMU_BASE_URL"] = "http://127.0.0.1:9/v1"  # never reached: the name is missing first
    result = subprocess.run([sys.executable, "-m", "studio.cli", "run", str(ROOT / "sample_trees/react_calculator.py"),
                             "--json"], capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)
    assert result.returncode == 1
    summary = json.loads(result.stdout.splitlines()[-1])["summary"]
    assert summary["error"].startswith("Calculator/Calculator.loop/Calculator.llm: ModelConfigurationError: no model")
    assert "JIANMU_MODEL" in summary["error"]
    assert result.stderr.strip().splitlines()[-1] == f"jianmu-studio: failed at {summary['error']}"


def test_debug_works_after_the_subcommand(raising_tree, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def build():\n    raise RuntimeError('boom')\n")
    after = cli("run", str(bad), "--debug")
    assert after.returncode == 2 and "Traceback" in after.stderr and "RuntimeError: boom" in after.stderr
    before = cli("--debug", "run", str(bad))
    assert "Traceback" in before.stderr
    assert "Traceback" not in cli("run", str(bad)).stderr


def test_run_bindings_applies_the_studios_saved_file_headless(tmp_path):
    pipeline = str(ROOT / "sample_trees/text_pipeline.py")
    session = DebugSession.load(pipeline, db=tmp_path / "runs.db")
    session.edit_binding("TextPipeline/Normalize", "in", "source_text", "summary")
    saved = session.save_bindings()  # what "apply and save" writes, beside the store
    result = cli("run", pipeline, "--db", str(tmp_path / "runs.db"), "--bindings", str(saved), "--json")
    assert result.returncode == 0, result.stderr
    run_id = json.loads(result.stdout.splitlines()[-1])["summary"]["run_id"]
    store = SQLiteCheckpointStore(tmp_path / "runs.db", create=False)
    last = store.get(store.list(run_id)[-1].id)
    assert last.state[""]["normalized_text"] == ""  # Normalize read `summary` (empty), not `text`
    bad = tmp_path / "bad.bindings.json"
    bad.write_text(json.dumps({"TextPipeline/Normalize": {"inputs": {"source_text": "nope"}}}))
    refused = cli("run", pipeline, "--bindings", str(bad))
    assert refused.returncode == 2 and refused.stdout == "" and refused.stderr.count("\n") == 1
    assert refused.stderr.startswith("jianmu-studio: bad.bindings.json: TextPipeline/Normalize source_text: "
                                     "no state field 'nope'")
    missing = cli("run", pipeline, "--bindings", str(tmp_path / "none.json"))
    assert missing.returncode == 2 and "none.json: no such bindings file" in missing.stderr
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    refused = cli("run", pipeline, "--bindings", str(listed))  # refused, so not said to be ignored
    assert refused.returncode == 2 and refused.stderr == f"jianmu-studio: {listed}: not an object of node paths (list)\n"


async def test_failed_tool_calls_are_those_of_the_frame(tmp_path):
    """The past shows the calls failed by then; a fork shows its own, not main's as well."""
    tools = "Stock/Stock.loop/Stock.tools"
    session = DebugSession.load(FLAKY_TOOLS, db=tmp_path / "runs.db")
    while (await session.continue_()).kind != "finished":
        pass
    assert len(session.node_detail(tools).failed_calls) == 2
    rows = session.checkpoints()
    for row in rows:
        session.select_checkpoint(row.id)
        assert all(failed.tick <= row.tick for failed in session.node_detail(tools).failed_calls)
    session.select_checkpoint(rows[0].id)
    assert session.node_detail(tools).failed_calls == []
    await session.fork_from(rows[0].id)
    while (await session.continue_()).kind != "finished":
        pass
    assert len(session.node_detail(tools).failed_calls) == 2  # the fork's own two


async def test_enter_on_the_node_pane_shows_its_values_and_failed_calls_whole(tmp_path):
    from studio.screens.value import ValueScreen

    app = StudioApp(DebugSession.load(FLAKY_TOOLS, db=tmp_path / "runs.db"))
    async with app.run_test(size=SIZE) as pilot:
        await run_to_end(app, pilot)
        app.main.query_one(TreePane).jump("Stock/Stock.loop/Stock.llm")
        await settle(app, pilot)
        app.main.query_one(NodeDetailPane).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ValueScreen)
        messages = app.screen.value["inputs"]["messages"]
        assert messages["key"] == "messages" and len(messages["value"]) == len(
            app.session.state_snapshot()[""]["messages"])  # the whole list, not the pane's preview
        await pilot.press("escape")
        app.main.query_one(TreePane).jump("Stock/Stock.loop/Stock.tools")
        await settle(app, pilot)
        app.main.query_one(NodeDetailPane).focus()
        await pilot.press("enter")
        await pilot.pause()
        failed = app.screen.value["tool calls that failed"]
        assert [f["tool"] for f in failed] == ["stock_level", "stock_level"]
        assert failed[0]["arguments"] == {"sku": "A-100"} and "stock service reset" in failed[0]["error"]


async def test_on_a_narrow_screen_the_status_line_takes_a_second_row_for_the_error(tmp_path):
    app = StudioApp(DebugSession.load(BUDGET_ABORT, db=tmp_path / "runs.db"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert app.main.query_one("#status").size.height == 1  # nothing failed yet: one row
        await run_to_end(app, pilot)
        status = app.main.query_one("#status")
        assert status.size.height == 2
        rows = [status.render_line(y).text for y in range(2)]
        assert " ".join(rows).split(" │ ")[1] == "✘ budget_exhausted at Squares: token budget spent: 1350 >= 1000 tokens"
        await pilot.resize_terminal(200, 50)
        await settle(app, pilot)
        assert app.main.query_one("#status").size.height == 1  # it fits on one row there
