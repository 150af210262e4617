"""Hostile inputs beyond #32's list, one test per cause: each is one line naming what is at fault, the
right exit status, nothing recorded lost, no hang and no traceback without --debug."""

from __future__ import annotations

import asyncio
import base64
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from debug_fixtures import TOKEN, agent_process
from mcp.types import CallToolResult, ImageContent, TextContent
from mcp_test_server import PIXEL
from pydantic import BaseModel
from test_cli import ROOT, cli
from websockets.asyncio.client import connect

from runtime import Agent, ModelClient, ReActState, ScriptedProvider, create_react_node, human, tool
from runtime.config import ConfigError, get_config
from runtime.debug import PROTOCOL_VERSION
from runtime.node import Log, Sequence
from runtime.tools.mcp_results import observation
from runtime.tools.observation import split_images
from studio.session.persist import tree_file

BOUND = 60.0  # seconds any wait below gets before the test gives up

released = threading.Event()  # ends the thread a tool given up on still holds


@tool(timeout=0.2, blocking=True)
def holds_its_thread(x: int) -> int:
    """A plain synchronous function that does not return (until the test ends)."""
    released.wait(BOUND)
    return x


async def test_a_synchronous_tool_that_never_returns_is_answered_by_its_timeout():
    """It runs off the event loop: the loop goes on, and the timeout answers for it."""
    root = create_react_node(name="R", model_client=ModelClient(ScriptedProvider(
        [{"tool_calls": [{"name": "holds_its_thread", "arguments": {"x": 1}}]}, "done"])), tools=[holds_its_thread])
    try:
        result = await asyncio.wait_for(Agent(root, state_schema=ReActState).run({"messages": [human("go")]}), BOUND)
    finally:
        released.set()
    assert result.final_answer == "done"
    assert [m.content for m in result.state.messages if m.role == "tool"] == [
        "Error: tool 'holds_its_thread' gave no answer within 0.2s"]


HELD_IN_TOOL = """\
import pathlib, time
from runtime import Agent, ModelClient, ReActState, ScriptedProvider, create_react_node, human, tool

@tool(blocking=True)
def spins(x: int) -> int:
    \"\"\"Never returns, and never sleeps long enough for anything else to run.\"\"\"
    pathlib.Path("holding").touch()
    while True:
        time.sleep(0.001)

def build():
    root = create_react_node(name="R", model_client=ModelClient(ScriptedProvider(
        [{"tool_calls": [{"name": "spins", "arguments": {"x": 1}}]}, "done"])), tools=[spins])
    return Agent(root, state_schema=ReActState)

INPUT = {"messages": [human("go")]}
"""


def test_ctrl_c_stops_a_run_held_in_a_synchronous_tool_and_its_thread_does_not_hold_the_exit(tmp_path):
    tree = tmp_path / "spins.py"
    tree.write_text(HELD_IN_TOOL)
    process = subprocess.Popen([sys.executable, "-m", "studio.cli", "run", str(tree), "--db", str(tmp_path / "s.db")],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    try:
        deadline = time.monotonic() + BOUND
        while not (tmp_path / "holding").exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.poll() is None, process.communicate()
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=BOUND)
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert "Traceback" not in err


SURROGATE_WRITERS = '''
from pydantic import BaseModel
from runtime import Agent
from runtime.node import Parallel, Sequence, node
from py_trees.common import ParallelPolicy


class Notes(BaseModel):
    notes: list[str] = []


@node(name="Early")
def early(state: dict) -> dict:
    return {"notes": ["fine"]}


@node(name="Good")
def good(state: dict) -> dict:
    return {"notes": state["notes"] + ["good"]}


@node(name="Bad")
def bad(state: dict) -> dict:
    return {"notes": state["notes"] + ["bad \\udc80"]}


def build():
    both = Parallel("Both", policy=ParallelPolicy.SuccessOnAll(), children=[good(), bad()])
    return Agent(Sequence("Root", memory=True, children=[early(), both]), state_schema=Notes)
'''


def test_a_lone_surrogate_in_state_names_the_nodes_that_wrote_the_key_in_that_tick(tmp_path):
    """`Early` wrote the key in an earlier tick (saved): only the tick's writers are named."""
    tree = tmp_path / "writers.py"
    tree.write_text(SURROGATE_WRITERS)
    result = cli("run", str(tree), "--db", str(tmp_path / "s.db"))
    assert result.returncode == 1, result.stderr
    first = result.stderr.splitlines()[0]
    assert "state key 'notes' written by nodes 'Root/Both/Good', 'Root/Both/Bad' holds a text that is not " \
           "valid Unicode" in first or "state key 'notes' written by nodes 'Root/Both/Bad', 'Root/Both/Good' " \
           "holds" in first, first
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(("content", "expected"), [
    (None, "not a file (named by $JIANMU_CONFIG)"),  # a folder
    (b"\xff\xfe\x00models: {}", "not UTF-8 text (byte 0)"),
    (b"a: " + b"[" * 100_000 + b"]" * 100_000, "nested too deeply to be a config file"),
])
def test_a_config_file_that_cannot_be_read_is_a_config_error_naming_it(no_config_file, monkeypatch, content, expected):
    config = no_config_file / "settings.yaml"
    if content is None:
        config.mkdir()
    else:
        config.write_bytes(content)
    monkeypatch.setenv("JIANMU_CONFIG", str(config))
    with pytest.raises(ConfigError) as raised:
        get_config()
    assert str(raised.value) == f"{config}: {expected}"


@pytest.mark.parametrize("setting", ["llm:\n  timeout: .inf\n", "llm:\n  temperature: .nan\n",
                                     "writers:\n  heartbeat: .nan\n"])
def test_a_setting_that_is_no_finite_number_is_refused(no_config_file, setting):
    """.inf would be no bound on a model call, .nan no JSON in its request."""
    (no_config_file / "jianmu.yaml").write_text(setting)
    with pytest.raises(ConfigError, match="jianmu.yaml: invalid setting .*: Input should be a finite number"):
        get_config()


def test_an_async_build_is_one_line_without_a_never_awaited_warning(tmp_path):
    tree = tmp_path / "tree.py"
    tree.write_text("async def build():\n    return None\n")
    result = cli("run", str(tree), "--db", str(tmp_path / "s.db"))
    assert result.returncode == 2
    assert result.stderr == (f"jianmu-studio: {tree}: build() is async (returned a coroutine): it must be a plain "
                             "function returning a runtime.Agent\n")


def _saved_breakpoints(store: Path, tree: Path, text: str) -> Path:
    class Store:
        location = str(store)

    path = tree_file(Store(), tree, "build", "breakpoints")
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("saved", "warning"), [
    ('{"kind": "node", "node": "Calculator"}', "{path}: not a list of breakpoints (dict); breakpoints not loaded"),
    ('[{"kind": "condition", "condition": "final_answer == \\"\\ud800\\""}]',
     "{name}: not a breakpoint here (condition 'final_answer == \"\\ud800\"': syntax error at column 18: a "
     "character that is not valid Unicode (a lone surrogate)); skipped"),
])
def test_a_breakpoints_file_that_cannot_be_used_is_a_warning_and_the_run_goes_on(tmp_path, saved, warning):
    tree, store = ROOT / "sample_trees/react_calculator.py", tmp_path / "s.db"
    path = _saved_breakpoints(store, tree, saved)
    result = cli("run", str(tree), "--db", str(store))
    assert result.returncode == 0, result.stderr
    assert result.stderr == f"jianmu-studio: {warning.format(path=path, name=path.name)}\n"


def test_an_image_an_endpoint_cannot_take_is_dropped_from_a_servers_answer_with_a_note():
    """Sent on, it would make the endpoint refuse every later model call of the run, naming no tool."""
    pixel = base64.b64encode(PIXEL).decode()
    result = CallToolResult(content=[
        TextContent(type="text", text="chart:"),
        ImageContent(type="image", data="!!not base64", mimeType="image/png"),
        ImageContent(type="image", data=pixel, mimeType="text/html"),
        ImageContent(type="image", data=pixel, mimeType="image/png")])
    text, images = split_images(observation(result, server="s", tool="t", max_chars=None))
    assert text == ("chart:\n[an image dropped: its image/png data is not base64]\n"
                    "[an image dropped: its type 'text/html' is no image type]")
    assert [(image.mime_type, image.data) for image in images] == [("image/png", pixel)]


NOT_WHOLE = [  # (request, the start of its answer)
    ({"type": "checkpoint", "checkpoint": True}, "checkpoint True: a checkpoint id is a whole number"),
    ({"type": "checkpoint", "checkpoint": 1.5}, "checkpoint 1.5: a checkpoint id is a whole number"),
    ({"type": "checkpoint", "checkpoint": 2**70}, "checkpoint 1180591620717411303424: a checkpoint id is a whole number"),
    ({"type": "model_io", "run_id": "r", "node": "n", "round": 1e308}, "model_io: round and index are whole numbers"),
    ({"type": "model_io", "run_id": "r", "node": "n", "round": 0, "index": "2"},
     "model_io: round and index are whole numbers"),
]


async def test_a_number_in_a_request_that_is_no_whole_number_is_a_bad_request(tmp_path):
    """Coerced, `true` read checkpoint 1 and 1.5 checkpoint 1; past 64 bits the store raised an internal error."""
    async with agent_process(wait=30, db=tmp_path / "runs.db") as target, connect(f"ws://{target.address}") as ws:
        await ws.send(json.dumps({"type": "hello", "protocol": PROTOCOL_VERSION, "token": TOKEN}))
        assert json.loads(await ws.recv())["type"] == "welcome"
        for number, (sent, _) in enumerate(NOT_WHOLE):
            await ws.send(json.dumps({**sent, "id": number}))
        answers: dict = {}
        while len(answers) < len(NOT_WHOLE):
            message = json.loads(await asyncio.wait_for(ws.recv(), BOUND))
            if message["type"] in ("ok", "error") and message.get("re") is not None:
                answers[message["re"]] = message
    for number, (_, answer) in enumerate(NOT_WHOLE):
        assert answers[number]["code"] == "bad_request" and answers[number]["message"].startswith(answer), answers[number]
    assert "Traceback" not in "".join(target.stderr)


async def test_hostile_numbers_and_paths_in_requests_are_answered_in_one_line_without_a_traceback(tmp_path):
    """A number past Python's 4,300 digits is `bad_json`; a node path of 900,000 characters is not sent back whole."""
    async with agent_process(wait=30, db=tmp_path / "runs.db") as target, connect(f"ws://{target.address}") as ws:
        await ws.send(json.dumps({"type": "hello", "protocol": PROTOCOL_VERSION, "token": TOKEN}))
        assert json.loads(await ws.recv())["type"] == "welcome"
        await ws.send('{"type": "ping", "id": 1, "x": ' + "9" * 5000 + "}")
        await ws.send(json.dumps({"type": "break", "kind": "node", "node": "x" * 900_000, "id": 2}))
        await ws.send(json.dumps({"type": "model_io", "run_id": "r", "node": "n", "round": 1e308, "id": 3}))
        await ws.send(json.dumps({"type": "ping", "id": 4}))
        answers: dict = {}
        while 4 not in answers:
            message = json.loads(await asyncio.wait_for(ws.recv(), BOUND))
            if message["type"] in ("ok", "error"):
                answers[message.get("re")] = message
    assert answers[None]["code"] == "bad_json" and "4300 digits" in answers[None]["message"]
    assert answers[2]["code"] == "bad_request" and len(answers[2]["message"]) < 120
    assert answers[3]["code"] == "bad_request"
    assert "Traceback" not in "".join(target.stderr)


def test_a_postgresql_store_another_session_holds_locked_is_given_up_after_the_lock_timeout(postgres_url, monkeypatch):
    """PostgreSQL waits for a lock forever by default: every command would hang."""
    import psycopg

    from runtime.memory.checkpoint import StoreError, open_store, postgres_store

    open_store(postgres_url).close()  # the store's tables exist
    monkeypatch.setattr(postgres_store, "LOCK_TIMEOUT", 1)
    outcome: list[BaseException] = []

    def opening() -> None:
        try:
            open_store(postgres_url).close()
        except BaseException as exc:
            outcome.append(exc)

    with psycopg.connect(postgres_url) as holder:
        holder.execute("LOCK TABLE jianmu.meta, jianmu.checkpoints IN ACCESS EXCLUSIVE MODE")
        worker = threading.Thread(target=opening, daemon=True)
        worker.start()
        worker.join(BOUND)
    assert not worker.is_alive(), "open_store still waits for the lock"
    [error] = outcome
    assert isinstance(error, StoreError) and str(error).endswith(": canceling statement due to lock timeout")
    assert "s3cret" not in str(error)


@pytest.mark.parametrize(("variable", "value", "expected"), [
    ("JIANMU_DEBUG_HEARTBEAT", "nan", "more than 0 and finite"),
    ("JIANMU_DEBUG_HEARTBEAT", "inf", "more than 0 and finite"),  # a client gone silent never dropped
    ("JIANMU_DEBUG_HEARTBEAT", "0", "more than 0 and finite"),
    ("JIANMU_DEBUG_WAIT", "-1", "0 or more"),
    ("JIANMU_DEBUG_HOLD_END", "nan", "0 or more"),
])
async def test_a_debug_variable_that_is_no_usable_number_of_seconds_is_refused_naming_it(monkeypatch, variable,
                                                                                       value, expected):
    monkeypatch.setenv(variable, value)
    root = create_react_node(name="R", model_client=ModelClient(ScriptedProvider(["done"])), tools=[])
    with pytest.raises(ValueError) as raised:
        await Agent(root, state_schema=ReActState).run({"messages": [human("go")]}, debug="127.0.0.1:0")
    assert str(raised.value) == f"${variable}={value!r}: expected a number of seconds {expected}"


class Text(BaseModel):
    x: str = ""


async def test_a_lone_surrogate_in_the_runs_input_stops_the_run_instead_of_recording_it_without_its_start(tmp_path):
    """The input is saved by the run's first checkpoint, outside any tick: that save failing was swallowed,
    and the run went on recording deltas of a checkpoint never written (its input lost, a SUCCESS listed)."""
    from runtime.memory.checkpoint import StoreError, open_store

    store = open_store(tmp_path / "s.db")
    agent = Agent(Sequence("Root", memory=True, children=[Log("Says", "hi")]), state_schema=Text)
    agent.runner = agent.make_runner(checkpointer=store)
    with pytest.raises(StoreError) as raised:
        await agent.run({"x": "a\ud800b"})
    assert str(raised.value) == ("checkpoint of tick 0 not written: state key 'x' holds a text that is not valid "
                                 "Unicode (a lone surrogate): a store cannot keep it")
    assert store.runs() == []  # nothing that reads as a whole run
    store.close()


def test_a_lone_surrogate_in_a_tree_files_input_is_refused_before_the_run(tmp_path):
    tree = tmp_path / "tree.py"
    tree.write_text("from pydantic import BaseModel\nfrom runtime import Agent\nfrom runtime.node import Log\n"
                    "class Text(BaseModel):\n    x: str = ''\n"
                    "def build():\n    return Agent(Log('Says', 'hi'), state_schema=Text)\n"
                    "INPUT = {'x': 'a\\ud800b'}\n")
    result = cli("run", str(tree), "--db", str(tmp_path / "s.db"))
    assert result.returncode == 2
    assert result.stderr == f"jianmu-studio: {tree}: INPUT key 'x' holds a text that is not valid Unicode (a lone surrogate)\n"


def test_a_thread_a_node_leaves_running_does_not_keep_run_from_exiting(tmp_path):
    """Python waits for every non-daemon thread at exit: the run was done and recorded, the command never ended."""
    tree = tmp_path / "tree.py"
    tree.write_text("import threading\nfrom pydantic import BaseModel\nfrom runtime import Agent\n"
                    "from runtime.node import node\n"
                    "class Text(BaseModel):\n    x: str = ''\n"
                    "@node(name='Starts')\ndef starts(state):\n"
                    "    threading.Thread(target=threading.Event().wait, name='poller').start()\n    return {'x': 'on'}\n"
                    "def build():\n    return Agent(starts(), state_schema=Text)\n")
    result = cli("run", str(tree), "--db", str(tmp_path / "s.db"))  # (given up on after 120 s)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].startswith("SUCCESS after")


def test_a_breakpoint_entry_that_is_no_object_is_skipped_naming_what_it_is(tmp_path):
    tree, store = ROOT / "sample_trees/react_calculator.py", tmp_path / "s.db"
    path = _saved_breakpoints(store, tree, '[7, {"kind": "event", "event": "tool.call.failed"}]')
    result = cli("run", str(tree), "--db", str(store))
    assert result.returncode == 0, result.stderr
    assert result.stderr == (f"jianmu-studio: {path.name}: not a breakpoint here (a breakpoint is an object with "
                             f"a 'kind', not int 7); skipped\n")


def test_a_tree_target_with_nothing_after_its_colon_says_a_function_is_missing():
    result = cli("run", "sample_trees/react_calculator.py:")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("jianmu-studio: sample_trees/react_calculator.py: no function named after ':' "
                             "(FILE.py:FUNCTION builds the tree with FUNCTION; FILE.py alone with build)\n")


def test_a_folder_given_to_import_is_said_to_be_a_folder(tmp_path):
    result = cli("import", str(tmp_path), "--into", str(tmp_path / "s.db"))
    assert (result.returncode, result.stderr) == (2, f"jianmu-studio: {tmp_path}: a folder, not a run file\n")


def test_work_a_tree_queued_in_an_executor_is_finished_before_the_process_ends(tmp_path):
    """The exit is Python's own while the threads end within the grace: an executor's queued work is done."""
    tree, done = tmp_path / "tree.py", tmp_path / "uploaded.txt"
    tree.write_text("import concurrent.futures, pathlib, time\nfrom pydantic import BaseModel\nfrom runtime import Agent\n"
                    "from runtime.node import node\n"
                    "class Text(BaseModel):\n    x: str = ''\n"
                    "POOL = concurrent.futures.ThreadPoolExecutor(1)\n"
                    "def upload():\n    time.sleep(0.3)\n"
                    f"    pathlib.Path({str(done)!r}).write_text('done')\n"
                    "@node(name='Queues')\ndef queues(state):\n    POOL.submit(upload)\n    return {'x': 'on'}\n"
                    "def build():\n    return Agent(queues(), state_schema=Text)\n")
    result = cli("run", str(tree), "--db", str(tmp_path / "s.db"))
    assert result.returncode == 0, result.stderr
    assert done.read_text() == "done"
