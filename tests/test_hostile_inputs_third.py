"""A third, independent set of hostile inputs (issue #32): each test names the input and what must hold."""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from otlp_receiver import OTLPReceiver
from py_trees.behaviours import Success
from py_trees.composites import Sequence
from rich.cells import cell_len
from rich.console import Console
from test_cli import ROOT, cli
from test_hostile_inputs import SURROGATE_TREE
from test_otel_traces import cli as otel_cli
from textual.app import App
from textual.content import Content
from textual.widgets import DataTable
from tui_fixtures import SIZE, steady_terminal  # noqa: F401

from runtime import Agent
from runtime.debug.breakpoints import BreakpointError
from runtime.memory.checkpoint import open_store
from runtime.memory.checkpoint.whatif_marks import CallRef
from studio.app import StudioApp
from studio.loader import LoadedTree
from studio.screens.breakpoints import BreakpointsScreen
from studio.screens.tool_call import tool_call_view
from studio.session import DebugSession
from studio.whatifs import ToolCall
from studio.widgets.timeline import Timeline
from studio.widgets.tree_pane import TreePane, label_width

HOSTILE = "\x1b]0;owned\x07\x1b[2J\x00\x9b31m"


def drawn(app: App) -> str:
    return "\n".join("".join(segment.text for segment in strip)
                     for strip in app.screen._compositor.render_full_update().strips)


class _TimelineOnly(App):
    def compose(self):
        yield Timeline()


async def test_a_branch_and_a_summary_holding_control_codes_are_drawn_as_pictures_in_the_timeline():
    """A timeline row whose branch and summary (a fork's name, a store's rows) hold ESC, BEL, NUL and
    a C1 CSI: the timeline draws its lines from segments, which no library strips, so it sends none
    of them to the terminal and shows each as its picture, as the other panes do."""
    app = _TimelineOnly()
    async with app.run_test(size=(100, 6)) as pilot:
        app.query_one(Timeline).sync([{"id": 1, "tick": 0, "status": "SUCCESS", "branch": "b" + HOSTILE,
                                       "summary": "s" + HOSTILE}])
        await pilot.pause()
        screen = drawn(app)
    assert not any(code in screen for code in ("\x1b", "\x07", "\x00", "\x9b"))
    assert "b␛]0;owned␇␛[2J␀\ufffd31m" in screen and "s␛]0;owned␇␛[2J␀\ufffd31m" in screen


async def test_a_tab_or_newline_in_a_timeline_row_stays_on_its_line():
    """A segment holding a tab or a newline moves the terminal's cursor off its line: drawn as pictures."""
    app = _TimelineOnly()
    async with app.run_test(size=(100, 6)) as pilot:
        app.query_one(Timeline).sync([{"id": 1, "tick": 0, "status": "SUCCESS", "branch": "a\tb", "summary": "c\nd"}])
        await pilot.pause()
        screen = drawn(app)
    assert "a␉b" in screen and "c␊d" in screen and "\t" not in screen


async def test_names_and_conditions_holding_brackets_are_shown_whole_never_read_as_markup(tmp_path):
    """A node named `Q[x=:1]` (a breakpoint set on it with b, its note, the node pane and the breakpoints list) and a
    condition `messages[len(messages) - 1] != 0`: Textual reads a label's, a note's or a table cell's text as markup,
    so the note raised MarkupError and ended the studio, and the list showed the condition as
    `messages != 0`. Each is shown as written and the studio goes on."""
    name = "Q[x=:1]"
    root = Sequence("Root", memory=True, children=[Success(name)])
    session = DebugSession(LoadedTree(Agent(root), tmp_path / "tree.py", "build", {}),
                           store=open_store(tmp_path / "runs.db"))
    session.add_condition_breakpoint("len(messages) > 1 and messages[len(messages) - 1] != 0")
    app = StudioApp(session)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        assert app.main.query_one(TreePane).jump(f"Root/{name}")
        await pilot.press("b")
        await pilot.pause(0.2)
        screen = drawn(app)
        assert f"breakpoint: before Root/{name}" in screen
        assert re.search(rf"path +Root/{re.escape(name)} ", screen)  # the node pane
        await pilot.press("B")
        await pilot.pause(0.2)
        assert isinstance(app.screen, BreakpointsScreen)
        table = app.screen.query_one(DataTable)
        cells = [str(cell) for row in range(table.row_count) for cell in table.get_row_at(row)]
        assert "len(messages) > 1 and messages[len(messages) - 1] != 0" in cells and f"Root/{name}" in cells
        await pilot.press("escape", "question_mark")  # the help's filter example names a node
        await pilot.pause(0.2)
        assert name in drawn(app)
        await pilot.press("escape", "slash")
        await pilot.pause()
        for key in f"node:{name}":
            await pilot.press(key)
        await pilot.press("enter")
        await pilot.pause(0.2)
        subtitle = app.main.query_one("#events").border_subtitle  # (as markup: what the border draws)
        assert Content.from_markup(str(subtitle)).plain == f"filter: node:{name}"
    assert app.return_code in (None, 0)


def test_a_tool_calls_node_and_arguments_are_shown_whole_never_read_as_markup():
    """A tool call's arguments hold what the model wrote (`sed -e 's/[/]x//'` ended the studio with
    MarkupError; `items[b] + 1` showed as `items + 1`), and its node a user's name."""
    call = ToolCall(CallRef("r", "main", "tool", "Root/Q[b]x", 0), 1, "shell",
                    {"command": "sed -e 's/[/]x//'", "expression": "items[b] + 1"}, "ok", None)
    console = Console(width=200, record=True)
    console.print(tool_call_view(call))
    shown = console.export_text()
    assert "Root/Q[b]x" in shown and "sed -e 's/[/]x//'" in shown and "items[b] + 1" in shown


def test_a_store_refusing_a_served_runs_checkpoint_is_the_runs_failure_not_the_addresses(tmp_path):
    """`serve` on a tree whose node writes a lone surrogate into state: the store refuses the tick's
    checkpoint (a StoreError, an OSError) while the run is served. That is the run's failure, said as
    `run` says it (exit 1), never `--at …: cannot listen there` (exit 2) blaming a good address."""
    tree = tmp_path / "writes.py"
    tree.write_text(SURROGATE_TREE.replace("KEY", "'answer'").replace("VALUE", '"bad \\ud800 text"'))
    result = cli("serve", str(tree), "--at", "127.0.0.1:0", "--wait", "0", "--db", str(tmp_path / "s.db"))
    assert result.returncode == 1, result.stderr
    assert "cannot listen" not in result.stderr and "Traceback" not in result.stderr
    assert ("jianmu-studio: the run stopped: StoreError: checkpoint of tick 2 not written: state key 'answer'"
            in result.stderr)


def test_arguments_the_parser_refuses_are_quoted_without_control_codes_or_passwords():
    """`run tree.py ESC]0;owned BEL postgresql://bob:hunter2@db/x`: argparse quotes the arguments it
    did not expect as given, so the terminal obeyed the escape and the password was shown. The line
    shows each control code as its escape and the password as `***`; the exit status is 2."""
    result = cli("run", "tree.py", "\x1b]0;owned\x07", "postgresql://bob:hunter2@db/x")
    assert result.returncode == 2
    assert result.stderr == ("jianmu-studio: unrecognized arguments: \\x1b]0;owned\\x07 postgresql://bob:***@db/x "
                             "(see --help)\n")


class _Redirecting(BaseHTTPRequestHandler):
    """Answers every POST with a 307 to `location` (a collector moved, or http sent on to https)."""

    location = ""

    def do_POST(self):  # noqa: N802 (the handler's name)
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(307)
        self.send_header("Location", self.location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_an_otlp_endpoint_answering_a_redirect_is_a_trace_not_sent(tmp_path):
    """`export --otlp` to an endpoint that answers 307 to a working collector: the exporter never
    follows a redirect yet counted any 3xx as delivered, so the command said the trace was sent
    (exit 0) while nothing arrived anywhere. It says the trace was not accepted (exit 1)."""
    recorded = otel_cli(tmp_path, "run", "text_pipeline", "--db", "runs.db", "--json")
    run_id = json.loads(recorded.stdout.splitlines()[-1])["summary"]["run_id"]
    with OTLPReceiver() as receiver:
        _Redirecting.location = receiver.endpoint + "/v1/traces"
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Redirecting)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            result = otel_cli(tmp_path, "export", "runs.db", "--run", run_id, "--otlp",
                              OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{server.server_port}")
        finally:
            server.shutdown()
    assert receiver.spans == []
    assert result.returncode == 1, result.stderr
    assert result.stderr == (f"jianmu-studio: the trace of run {run_id} was not accepted by "
                             f"http://127.0.0.1:{server.server_port}\n")


@pytest.mark.parametrize("token", ["%C3%A9", "%ff%fe", "s3cr%C3%A9t"])
def test_a_web_page_asking_with_a_token_that_is_not_ascii_is_refused_as_a_wrong_token(tmp_path, token):
    """`web --at 0.0.0.0:0` (a token needed) asked for `/?token=é` (or bytes that are no UTF-8): the
    token was compared as text, which `hmac.compare_digest` refuses beyond ASCII, so the page got a
    500 Internal Server Error. It is a wrong token: 403, and the right one still opens the page."""
    from test_web_studio import WebStudio  # (skips without the [web] extra)

    server = WebStudio(tmp_path, "text_pipeline", "--db", str(tmp_path / "web.db"), "--at", "0.0.0.0:0",
                       env={"JIANMU_DEBUG_TOKEN": "s3cret"})
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{server.port}/?token={token}", timeout=30)
        assert refused.value.code == 403
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/?token=s3cret", timeout=30) as page:
            assert page.status == 200
    finally:
        server.close()


@pytest.mark.parametrize("loop", ["UPDATE checkpoints SET parent_id = (SELECT max(id) FROM checkpoints) WHERE parent_id IS NULL",
                                  "UPDATE checkpoints SET parent_id = id WHERE tick = 2"])
def test_a_store_whose_parents_go_round_in_a_loop_is_said_damaged_and_the_studio_still_opens_it(tmp_path, loop):
    """A store (or a run file received) whose checkpoints' parents loop: the first's parent is the
    last, or one is its own. `diff` walked the parents forever, its list growing without end, and
    the studio froze drawing the timeline. `diff` says the store is damaged (exit 2, one line);
    the studio opens the run, its lineage ending where the loop closes."""
    store, good = tmp_path / "runs.db", tmp_path / "good.db"
    for recorded in (store, good):
        assert cli("run", "text_pipeline", "--db", str(recorded)).returncode == 0
    with contextlib.closing(sqlite3.connect(store)) as conn:
        conn.execute(loop)
        conn.commit()
        run_id = conn.execute("SELECT run_id FROM checkpoints").fetchone()[0]
    result = cli("diff", str(store), str(good))
    assert result.returncode == 2
    assert result.stderr.startswith(f"jianmu-studio: {store}: ") and "the store is damaged" in result.stderr
    assert result.stderr.count("\n") == 1
    if "max(id)" in loop:  # (a checkpoint its own parent is a damaged delta chain too: not opened)
        session = DebugSession.open_recorded(store, run_id)
        framed = threading.Thread(target=lambda: session.frame, daemon=True)
        framed.start()
        framed.join(60)
        assert not framed.is_alive(), "the studio's frame never came: its lineage walked the loop"
        session.store.close()


@pytest.mark.parametrize("name", ["sqlite:///{tmp}/runs.db", "file:{tmp}/runs.db", "file:runs.db",
                                  "mysql://bob:hunter2@db/runs"])
def test_a_store_named_by_a_url_of_another_kind_is_refused_not_made_a_folder(tmp_path, name):
    """`--db sqlite:///tmp/runs.db` (SQLAlchemy's form), `file:` or `mysql://`: such a name was taken
    as a relative path, the run recorded into a folder `sqlite:` made where the command ran (exit 0)
    and never where the user will look. It is refused in one line (no password), exit 2, nothing made."""
    name = name.format(tmp=tmp_path)
    result = cli("run", "text_pipeline", "--db", name, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (f"jianmu-studio: {name.replace('hunter2', '***')}: not a store address this version "
                             "opens: give FILE.db (a path, no scheme) or postgresql://…\n")
    assert list(tmp_path.iterdir()) == []


def test_an_address_holding_a_password_is_quoted_without_it_in_any_error_line():
    """`attach ws://bob:hunter2@127.0.0.1:1`: the address is refused (not host:port), and the line
    that said so quoted it whole, password and all. The CLI's error lines show no URL's password."""
    result = cli("attach", "ws://bob:hunter2@127.0.0.1:1")
    assert result.returncode == 2
    assert "hunter2" not in result.stderr and "ws://bob:***@127.0.0.1:1" in result.stderr


def test_a_breakpoints_file_holding_thousands_of_breakpoints_is_bounded_in_one_warning(tmp_path):
    """A breakpoints file (kept beside the store, so a received one too) holding 3,000 conditions:
    each added one re-synced all the others and each is evaluated at every change of state, so
    20,000 held `run` 96 s before its first tick and 200,000 for hours. The first 1,000 are loaded,
    the rest skipped in one warning line; one more added (the studio, a client) is refused naming why."""
    tree, store = str(ROOT / "sample_trees" / "text_pipeline.py"), tmp_path / "runs.db"
    kept = DebugSession.load(tree, db=store).breakpoints_file
    kept.parent.mkdir(exist_ok=True)
    kept.write_text(json.dumps([{"kind": "condition", "condition": f"words > {n}"} for n in range(3_000)]))
    session = DebugSession.load(tree, db=store)
    assert session.breakpoint_warnings == [f"{kept.name}: 2,000 breakpoints past the first 1,000 (the most a run "
                                           "takes) skipped"]
    assert len(session.breakpoints) == 1_000
    with pytest.raises(BreakpointError, match="1,000 breakpoints already"):
        session.add_condition_breakpoint("words > -1")


async def test_a_names_tab_newline_or_escape_stays_on_its_tree_line_and_is_measured_as_drawn(tmp_path):
    """A node named with a tab, a newline or an ESC: its tree line shows each as a picture (a tab or a
    newline in a segment moved the cursor off the line), and the line's width is counted as drawn."""
    names = ["a\tb", "c\nd", "e\x1bf"]
    root = Sequence("Root", memory=True, children=[Success(name) for name in names])
    session = DebugSession(LoadedTree(Agent(root), tmp_path / "tree.py", "build", {}),
                           store=open_store(tmp_path / "runs.db"))
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        tree = app.main.query_one(TreePane)
        for name, drawn_as in zip(names, ["a␉b", "c␊d", "e␛f"], strict=True):
            label = tree.label_of(f"Root/{name}")
            assert drawn_as in label.plain and not any(code in label.plain for code in "\t\n\x1b")
            assert label_width(session.node_view(f"Root/{name}")) == cell_len(label.plain)
