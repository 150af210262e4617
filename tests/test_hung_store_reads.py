"""Every wait is bounded (#32): a PostgreSQL server that accepted the connection and then answers nothing
(`HangingProxy`: the statements after the handshake go unanswered, the socket stays open, as a stopped
server's does) holds no read or write of a store longer than `postgres.answer_timeout`. Each one fails with
a `StoreError` naming the store (no password) and what it was doing, and the store works again once the
server answers: its dropped connection is made again. A command on such a store says so in one line.

No timing is asserted: each call must return at all (`GUARD` seconds is a hang, the bound is 0.5 s)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest
from hanging_server import HangingProxy
from postgres_server import PASSWORD
from test_checkpoint_store import Chat, chat_tree

from runtime.config import reset_config_cache
from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import IORecorder, IOReplayer, StoreError, open_store
from runtime.memory.checkpoint.model import TreePaths
from runtime.memory.checkpoint.waiting import resume_point

ROOT = Path(__file__).resolve().parents[1]
GUARD = 60.0
BOUND = 0.5  # postgres.answer_timeout in the tests' jianmu.yaml


@pytest.fixture
def proxy(postgres_server, no_config_file):
    (no_config_file / "jianmu.yaml").write_text(f"postgres:\n  answer_timeout: {BOUND}\n")
    reset_config_cache()
    made = HangingProxy(postgres_server.port)
    yield made
    made.hanging.clear()
    made.close()


def _recorded(url: str, *, asynchronous: bool = False):
    """A store holding a recorded run (checkpoints and a tool call), its runner, and the run's last checkpoint."""
    store = open_store(url, asynchronous=asynchronous)
    runner = ReactiveRunner(chat_tree(5), Chat, checkpointer=store)
    asyncio.run(runner.run())

    async def answer() -> str:
        return "42"

    asyncio.run(IORecorder(store, run_id=runner.run_id).tool_call("tools", 0, 0, "calc", {"x": 1}, answer))
    return store, runner, store.latest(runner.run_id)


def _returned(call, proxy: HangingProxy) -> BaseException | None:
    """What `call()` raised (None: it returned), in a thread; one that hangs fails the test, once the
    proxy's connections are closed to end its wait (it holds the store's lock, which the test's end takes)."""
    raised: list[BaseException | None] = [None]

    def target() -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 (what it raised is what the test looks at)
            raised[0] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(GUARD)
    if thread.is_alive():
        proxy.close()
        thread.join(GUARD)
        pytest.fail("a call still waited for a server that never answers")
    return raised[0]


def _never() -> str:
    raise AssertionError("a replay must not call the tool")


OPERATIONS = {
    "restore": lambda store, runner, last: runner.restore(last.id),
    "fork": lambda store, runner, last: runner.fork(last.id),
    "resume_point": lambda store, runner, last: resume_point(store, last.run_id),
    "replay read": lambda store, runner, last: asyncio.run(
        IOReplayer(store, last.run_id).tool_call("tools", 0, 0, "calc", {"x": 1}, _never)),
    "save_tree": lambda store, runner, last: store.save_tree(TreePaths.of(["a", "a/b"])),
}
DOING = {"restore": "reading checkpoints", "fork": "reading checkpoints", "resume_point": "reading meta",
         "replay read": "reading io", "save_tree": "writing the store"}


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_a_server_that_stops_answering_fails_each_call_in_one_named_line_and_is_used_again(
        proxy, postgres_url, operation, asynchronous):
    url = proxy.url(postgres_url)
    store, runner, last = _recorded(url, asynchronous=asynchronous)
    try:
        proxy.hanging.set()
        raised = _returned(lambda: OPERATIONS[operation](store, runner, last), proxy)
        assert isinstance(raised, StoreError), raised
        assert str(raised) == f"postgresql://jianmu@127.0.0.1:{proxy.port}/{url.split('/')[-1].split('?')[0]}: " \
                              f"the PostgreSQL server did not answer within {BOUND:g} s ({DOING[operation]})"
        proxy.hanging.clear()
        again = _returned(lambda: OPERATIONS[operation](store, runner, last), proxy)  # connected again
        assert not isinstance(again, StoreError), again  # (a run that ended has no resume point: an answer)
        assert store.get(last.id).tick == last.tick
    finally:
        proxy.hanging.clear()
        store.close()


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_closing_a_store_whose_server_stopped_answering_returns(proxy, postgres_url, asynchronous):
    """Closing says the writer closed, which a hung server never hears: the close returns all the same."""
    url = proxy.url(postgres_url)
    store, runner, last = _recorded(url, asynchronous=asynchronous)
    proxy.hanging.set()
    assert _returned(store.close if not asynchronous else lambda: asyncio.run(store.aclose()), proxy) is None
    proxy.hanging.clear()
    again = open_store(url)
    assert again.get(last.id).tick == last.tick
    again.close()


@pytest.mark.parametrize("command", [["replay"], ["resume", "--approve", "all"]])
def test_a_command_on_a_store_that_never_answers_says_so_in_one_line(proxy, postgres_url, command):
    url = proxy.url(postgres_url)
    store, runner, last = _recorded(url)
    store.close()
    proxy.hanging.set()
    process = subprocess.run([sys.executable, "-m", "studio.cli", *command, url, "--run", last.run_id],
                             cwd=os.getcwd(), text=True, capture_output=True, timeout=GUARD,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert process.returncode not in (0, None), process
    assert "Traceback" not in process.stderr and PASSWORD not in process.stdout + process.stderr
    (line,) = process.stderr.splitlines()
    assert re.fullmatch(rf"jianmu-studio: postgresql://jianmu@127\.0\.0\.1:{proxy.port}/\w+: the PostgreSQL "
                        rf"server did not answer within {BOUND:g} s \(reading \w+\)", line), line


SIGNALLED = {  # a command, and the connection of it that meets the hang: what it then waits for
    "run opening": (["run", "text_pipeline", "--db", "URL"], 1),  # the store's check, over the async connection
    "run running": (["run", "text_pipeline", "--db", "URL"], 2),
    "resume reading": (["resume", "URL", "--approve", "all", "--run"], 2),  # where the run goes on from (sync)
}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("waiting", list(SIGNALLED))
def test_a_signal_ends_a_command_waiting_for_an_answer_without_asking_the_server_to_cancel(
        proxy, postgres_url, tmp_path, waiting, signum):
    """A signal while a command waits for an answer (the bound far off) ends it with 128 + N. The statement
    is dropped with its connection, not cancelled on the server: a server that does not answer holds a
    cancel request too, and psycopg would wait for it up to ten seconds (saying so in its log records)."""
    (tmp_path / "jianmu.yaml").write_text("postgres:\n  answer_timeout: 600\n")
    command, proxy.hang_at = SIGNALLED[waiting]
    if command[0] == "resume":
        store, _, last = _recorded(postgres_url)  # (not through the proxy: its connections are the command's)
        store.close()
        command = [*command, last.run_id]
    url = proxy.url(postgres_url)
    process = subprocess.Popen([sys.executable, "-m", "studio.cli", *(url if arg == "URL" else arg for arg in command),
                                "--debug"], cwd=tmp_path, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proxy.held.wait(GUARD), process.communicate()
        process.send_signal(signum)
        out, err = process.communicate(timeout=GUARD)
    finally:
        process.kill()
    assert process.returncode == 128 + signum, err
    assert "cancel" not in err and PASSWORD not in out + err


def test_psycopgs_log_records_never_reach_stderr_by_themselves():
    """A program that configures no logging hears nothing from psycopg (the CLI shows its records with --debug)."""
    said = subprocess.run([sys.executable, "-c", "import logging, runtime.memory.checkpoint.postgres_store; "
                           "logging.getLogger('psycopg').warning('query cancellation interrupted')"],
                          text=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert said.returncode == 0 and said.stderr == "", said.stderr


def test_a_follower_whose_listening_connection_was_lost_listens_again(postgres_url):
    """`wait_for_change` on a connection the server dropped says so once; the next wait connects again
    (it kept the dead connection: every later wait failed, and a studio following the run heard nothing)."""
    store = open_store(postgres_url)
    try:
        assert store.wait_for_change(0.01)  # (listening now)
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()")
        with pytest.raises(StoreError, match="lost the connection"):
            store.wait_for_change(5)
        assert store.wait_for_change(0.01)  # connected and listening again
        assert store.wait_for_change(0.01) is False
    finally:
        store.close()
