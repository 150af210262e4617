"""Hostile input on the command line, at `attach` and `serve` and from a protocol peer (#32): every one
is one line naming what is at fault, the right exit status, no traceback, and no wait without a bound."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading

import pytest
from debug_fixtures import TOKEN, agent_process
from test_cli import ROOT, cli
from test_reliability_inputs import TREE, one_line
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve

from runtime.debug import PROTOCOL_VERSION, DebugClient, DebugError

LONG_NAME = "a" * 5000


@pytest.mark.parametrize("kind", ["pipe", "folder", "socket"])
def test_a_tree_file_that_is_no_regular_file_is_refused_without_reading_it(tmp_path, kind):
    tree = tmp_path / "tree.py"
    if kind == "pipe":  # opening it would wait for a writer forever
        os.mkfifo(tree)
    elif kind == "folder":
        tree.mkdir()
    else:
        import socket

        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(tree))
    one_line(cli("run", str(tree), "--db", str(tmp_path / "s.db")), f"{tree}: ", "a tree file is a Python module")


@pytest.mark.parametrize("command", ["run", "serve", "open"])
@pytest.mark.parametrize("name", [LONG_NAME, f"/tmp/{LONG_NAME}.py", f"{'x/' * 3000}t.py"])
def test_a_tree_path_the_system_refuses_is_one_line(tmp_path, command, name):
    one_line(cli(command, name, "--db", str(tmp_path / "s.db")), name[:40])


# -- attach: a peer that is no debug server ----------------------------------------------------------

async def attach_cli(address: str, *args: str) -> tuple[int, str]:
    """`jianmu-studio attach` in a subprocess while this loop serves the peer: (exit status, stderr)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "studio.cli", "attach", address, "--token", "t", *args, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, stderr = await asyncio.wait_for(process.communicate(), 60)
    return process.returncode, stderr.decode()


@contextlib.asynccontextmanager
async def peer(first: str | None = None, *, close: int | None = None):
    """A WebSocket server at a free loopback port that reads the hello, then sends `first` (if any),
    closes with code `close` (if any), or else says nothing more while answering pings."""
    async def handler(ws: ServerConnection) -> None:
        await ws.recv()
        if first is not None:
            await ws.send(first)
        if close is not None:
            await ws.close(close, "it broke")
        await ws.wait_closed()  # (until the client or the server ends it: the server's exit waits for this)

    async with serve(handler, "127.0.0.1", 0) as server:
        yield f"127.0.0.1:{server.sockets[0].getsockname()[1]}"


@contextlib.asynccontextmanager
async def http_server(answer: bytes):
    """A TCP server at a free loopback port that answers any request with `answer` and closes."""
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(answer)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    async with server:
        yield f"127.0.0.1:{server.sockets[0].getsockname()[1]}"


@pytest.mark.parametrize(("answer", "expected"), [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi", "not a debug server (the WebSocket handshake failed"),
    (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "not a debug server (the WebSocket handshake failed"),
])
async def test_attach_to_a_server_that_is_no_websocket_server_is_one_line(answer, expected):
    async with http_server(answer) as address:
        status, stderr = await attach_cli(address)
    assert status == 2 and stderr.count("\n") == 1 and "Traceback" not in stderr, stderr
    assert stderr.startswith(f"jianmu-studio: {address}: {expected}"), stderr


@pytest.mark.parametrize(("first", "close", "expected"), [
    ("[1, 2]", None, "the server sent a JSON list, not a protocol message"),
    ('"welcome"', None, "the server sent a JSON str, not a protocol message"),
    ("<html>hello</html>", None, "the server sent something not JSON (Expecting value"),
    ('{"type": 5}', None, "not a protocol message"),
    (None, 1011, "the debug server closed the connection (code 1011: 'it broke')"),
    ('{"type": "error", "code": ["x"]}', None, "refused"),
])
async def test_attach_to_a_peer_that_breaks_the_protocol_is_one_line_naming_it(first, close, expected):
    async with peer(first, close=close) as address:
        status, stderr = await attach_cli(address)
    assert status == 2 and stderr.count("\n") == 1 and "Traceback" not in stderr, stderr
    assert stderr.startswith(f"jianmu-studio: {address}: ") and expected in stderr, stderr


async def test_a_peer_that_answers_pings_but_never_welcomes_is_given_up_after_the_heartbeat():
    async with peer() as address:
        with pytest.raises(DebugError, match="no welcome within 0.5s"):
            await asyncio.wait_for(DebugClient.connect(address, "t", heartbeat=0.5), 30)


async def test_a_server_that_sends_garbage_after_the_welcome_fails_what_waits_and_ends_the_messages():
    async def handler(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send(json.dumps({"type": "welcome"}))
        await ws.recv()  # the request
        await ws.send(json.dumps({"type": "update", "re": [1]}))  # an unhashable `re` is a message, not an answer
        await ws.send("not json")
        await ws.wait_closed()  # (until the client or the server ends it: the server's exit waits for this)

    async with serve(handler, "127.0.0.1", 0) as server:
        client = await DebugClient.connect(f"127.0.0.1:{server.sockets[0].getsockname()[1]}", "t")
        with pytest.raises(DebugError, match="not JSON"):
            await asyncio.wait_for(client.request("ping"), 30)
        assert (await client.next_message())["type"] == "update"
        assert await asyncio.wait_for(client.next_message(), 30) is None
        await client.close()


async def test_a_lone_surrogate_as_the_token_is_refused_as_a_wrong_token():
    async with agent_process(wait=0.5) as target:
        host, port = target.address.split(":")
        async with connect(f"ws://{host}:{port}") as ws:
            await ws.send(json.dumps({"type": "hello", "protocol": PROTOCOL_VERSION, "token": "\ud800"}))
            reply = json.loads(await ws.recv())
        assert reply["code"] == "auth"
        assert (await target.result())["status"] == "SUCCESS"
    log = "".join(target.stderr)
    assert "refused: wrong token" in log and "Traceback" not in log


async def test_every_request_is_answered_even_one_refused_before_it_is_read_and_the_session_goes_on():
    """A request of an unknown type or missing a field is answered with its id (a client waits for that
    id); JSON nested too deeply to parse is `bad_json`, not an internal error with a traceback."""
    async with agent_process(wait=30) as target:
        host, port = target.address.split(":")
        async with connect(f"ws://{host}:{port}") as ws:
            await ws.send(json.dumps({"type": "hello", "protocol": PROTOCOL_VERSION, "token": TOKEN}))
            assert json.loads(await ws.recv())["type"] == "welcome"
            await ws.send(json.dumps({"type": "frobnicate", "id": 1}))
            await ws.send(json.dumps({"type": "edit_state", "id": 2}))
            await ws.send('{"type": "ping", "id": 3, "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
            await ws.send(json.dumps({"type": "ping", "id": 4}))
            answers: dict = {}
            while 4 not in answers:
                message = json.loads(await asyncio.wait_for(ws.recv(), 30))
                if message["type"] in ("ok", "error"):
                    answers[message.get("re")] = message
        assert (answers[1]["code"], answers[2]["code"]) == ("unknown_type", "bad_message")
        assert answers[None] == {"type": "error", "code": "bad_json", "message": "JSON nested too deeply to read"}
        assert answers[4]["type"] == "ok"
    assert "Traceback" not in "".join(target.stderr)


# -- PostgreSQL: an address that accepts and never answers ----------------------------------------------

def test_a_postgresql_address_that_accepts_and_never_answers_is_given_up_after_the_connect_timeout(monkeypatch):
    from runtime.memory.checkpoint import StoreError, open_store, postgres_store

    monkeypatch.setattr(postgres_store, "CONNECT_TIMEOUT", 1)
    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    silent = socket.create_server(("127.0.0.1", 0))  # the kernel accepts; nobody ever says a word
    url = f"postgresql://me:s3cret@127.0.0.1:{silent.getsockname()[1]}/db"
    outcome: list[BaseException] = []

    def opening() -> None:
        try:
            open_store(url)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=opening, daemon=True)
    worker.start()
    worker.join(30)
    silent.close()
    assert outcome, "still connecting after 30s"
    assert isinstance(outcome[0], StoreError) and "cannot connect" in str(outcome[0])
    assert "s3cret" not in str(outcome[0])


# -- the output's reader goes away -------------------------------------------------------------------

ENDLESS = """\
import asyncio
from py_trees.common import Status
from runtime import Agent, ReActState
from runtime.engine.behaviour import AsyncBehaviour


class Endless(AsyncBehaviour):
    async def update_async(self):
        await asyncio.sleep(0.001)
        return Status.RUNNING  # started again on the next tick: a tick line each time, forever


def build():
    return Agent(Endless("Endless"), state_schema=ReActState)
"""


@pytest.mark.parametrize("flags", [(), ("--json",)])
def test_run_whose_reader_goes_away_stops_quietly_as_sigpipe_and_is_recorded_interrupted(tmp_path, flags):
    (tmp_path / "endless.py").write_text(ENDLESS)
    store = tmp_path / "s.db"
    process = subprocess.Popen([sys.executable, "-m", "studio.cli", "run", str(tmp_path / "endless.py"),
                                "--db", str(store), *flags], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert "tick" in process.stdout.readline().decode()  # `| head -1`
    process.stdout.close()
    try:
        assert process.wait(60) == 128 + signal.SIGPIPE
    finally:
        process.kill()
    assert process.stderr.read() == b""
    listing = subprocess.run([sys.executable, "-m", "runtime.memory.checkpoint", "list", str(store)],
                             capture_output=True, text=True, cwd=ROOT, timeout=60).stdout
    assert "INTERRUPTED" in listing and "ERROR" not in listing, listing


@pytest.mark.parametrize("welcome", [{"type": "welcome"}, {"type": "welcome", "tree": 5, "state": []}])
async def test_attach_to_a_peer_whose_welcome_is_no_jianmu_welcome_is_one_line(welcome):
    async with peer(json.dumps(welcome)) as address:
        status, stderr = await attach_cli(address)
    assert status == 2 and stderr.count("\n") == 1 and "Traceback" not in stderr, stderr
    assert stderr.startswith(f"jianmu-studio: {address}: a welcome this studio cannot read ("), stderr


@pytest.mark.parametrize(("args", "expected"), [
    (("attach", "[::1"), "debug address '[::1': "),
    (("attach", f"{'h' * 300}:80"), "debug address 'hhhh"),
    (("serve", TREE, "--at", "127.0.0.1:0", "--wait", "nan"), "--wait: a number of seconds is 0 or more, not nan"),
    (("serve", TREE, "--at", "127.0.0.1:0", "--wait", "-5"), "--wait: a number of seconds is 0 or more, not -5"),
])
def test_bad_addresses_and_waits_are_one_line_naming_them(tmp_path, args, expected):
    one_line(cli(*args, "--db", str(tmp_path / "s.db")) if args[0] == "serve" else cli(*args), expected)


def test_a_bindings_file_that_is_a_pipe_is_refused_without_reading_it(tmp_path):
    os.mkfifo(tmp_path / "b.json")
    one_line(cli("run", TREE, "--bindings", str(tmp_path / "b.json"), "--db", str(tmp_path / "s.db")),
             "b.json: not a regular file")


async def test_a_lone_surrogate_written_into_the_state_reaches_the_client_and_the_session_goes_on():
    async with agent_process("sample_trees/text_pipeline.py") as target:
        host, port = target.address.split(":")
        async with connect(f"ws://{host}:{port}") as ws:
            await ws.send(json.dumps({"type": "hello", "protocol": PROTOCOL_VERSION, "token": TOKEN}))
            assert json.loads(await ws.recv())["type"] == "welcome"
            await ws.send(json.dumps({"type": "edit_state", "id": 5, "namespace": "", "key": "text", "value": "a\ud800"}))
            seen = []
            while not any(m["type"] == "ok" for m in seen):
                seen.append(json.loads(await asyncio.wait_for(ws.recv(), 30)))
            assert ["", "text", "a\ud800"] in [change for m in seen if m["type"] == "update" for change in m["state"]]
            await ws.send(json.dumps({"type": "continue", "id": 6}))
            while json.loads(await asyncio.wait_for(ws.recv(), 30)).get("re") != 6:
                pass
        assert (await target.result())["status"] == "SUCCESS"
    assert "Traceback" not in "".join(target.stderr)


LONG_PATH = f"/tmp/{'b' * 5000}"


@pytest.mark.parametrize("args", [
    ("run", TREE, "--trace", LONG_PATH),
    ("run", TREE, "--bindings", LONG_PATH),
    ("replay", f"{LONG_PATH}.db"),
    ("resume", f"{LONG_PATH}.db", "--approve", "all"),
    ("check", LONG_PATH),
])
def test_a_path_the_system_refuses_in_any_argument_is_one_line_naming_it(tmp_path, args):
    one_line(cli(*args, *(("--db", str(tmp_path / "s.db")) if args[0] == "run" else ())), f"{LONG_PATH[:60]}")


async def test_attach_with_a_token_that_is_not_utf8_is_refused_as_a_wrong_token():
    async with agent_process(wait=30) as target:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "studio.cli", "attach", target.address, "--token", b"\xff\xfe", cwd=ROOT,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        _, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 2
    assert stderr.decode() == f"jianmu-studio: {target.address}: wrong or missing token\n"


async def test_a_peer_that_accepts_and_never_answers_the_handshake_is_given_up_after_the_heartbeat():
    silent = socket.create_server(("127.0.0.1", 0))  # the kernel accepts; nobody answers the upgrade
    try:
        with pytest.raises(DebugError, match="no WebSocket handshake within 0.5s"):
            await asyncio.wait_for(DebugClient.connect(f"127.0.0.1:{silent.getsockname()[1]}", "t", heartbeat=0.5), 30)
    finally:
        silent.close()


@pytest.mark.parametrize("args", [("replay",), ("resume", "--approve", "all"), ("check",), ("export", "-o", "x.jianmu"),
                                  ("diff",)])
def test_an_empty_run_id_is_refused_not_read_as_no_run_given(tmp_path, args):
    """`--run "$RUN"` with RUN unset must not pick a run (resume would answer the only one waiting)."""
    store = str(tmp_path / "s.db")
    one_line(cli(args[0], store, "--run", "", *args[1:]), "argument --run: an empty run id ('')")


@pytest.mark.parametrize("where", ["import", "build"])
def test_a_tree_raising_a_baseexception_of_its_own_is_one_line(tmp_path, where):
    """Not only sys.exit and KeyboardInterrupt: any BaseException a tree's code raises is its failure."""
    tree = tmp_path / "odd.py"
    raising = "class Odd(BaseException):\n    pass\n\n"
    tree.write_text(raising + ("raise Odd('at import')\n" if where == "import" else "def build():\n    raise Odd('in build')\n"))
    one_line(cli("run", str(tree), "--db", str(tmp_path / "s.db")), f"{tree}: ", "Odd: ")


SURROGATE_TREE = '''
from pydantic import BaseModel
from runtime import Agent
from runtime.node import Sequence, node


class Notes(BaseModel):
    answer: str = ""
    notes: list[str] = []


@node(name="Writes")
def writes(state: dict) -> dict:
    return {KEY: VALUE}


@node(name="After")
def after(state: dict) -> dict:
    return {}


def build():
    return Agent(Sequence("Root", memory=True, children=[writes(), after()]), state_schema=Notes)
'''


@pytest.mark.parametrize(("key", "value"), [
    ("answer", '"bad \\ud800 text"'),  # a text from a decoded hostile input
    ("notes", '["fine"] * 40 + ["bad \\udfff"]'),  # in a long list, stored in chunks apart
])
def test_a_lone_surrogate_written_into_state_stops_the_run_naming_its_key_and_the_end_is_recorded(
        tmp_path, key, value):
    tree = tmp_path / "writes.py"
    tree.write_text(SURROGATE_TREE.replace("KEY", repr(key)).replace("VALUE", value))
    result = cli("run", str(tree), "--db", str(tmp_path / "s.db"))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == (f"jianmu-studio: the run stopped: StoreError: checkpoint of tick 2 not written: state key "
                        f"'{key}' written by node 'Root/Writes' holds a text that is not valid Unicode (a lone surrogate): a store cannot keep it")
    assert lines[1:] == [f"jianmu-studio: its end is recorded in {tmp_path / 's.db'} (status ERROR)"]
    assert "Traceback" not in result.stderr
