"""A signal stops the user's synchronous code that holds the event loop's thread and never returns (#32): a
plain (not `blocking`) tool, a node's own `update()`, a synchronous `@node` function, an async node or tool
that loops between two awaits, a node's `terminate()` that loops as the stopped run stops its tree. `run` and `serve` end as a signal ends them at any
await: exit 128 + N with nothing said, the run's last checkpoint INTERRUPTED, and the code stopped is no
failure of that tool or node. Every wait is for a condition (the file the code writes before it loops),
with a generous bound."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading

import pytest
import user_code_hold_tree
from stopping_fixtures import BOUND, ROOT, interrupted_run, no_node_failed, wait_for

from runtime import signals
from runtime.signals import SIGNALS, run_user_code, user_code_stops, user_steps
from studio.stopping import on_signals

TREE = str(ROOT / "tests" / "user_code_hold_tree.py")


def stopped_holding(tmp_path, hold: str, signum: int, *args: str) -> tuple[subprocess.Popen, str, str]:
    """Start the command, wait until the tree's code holds the thread, send `signum`, wait for the end."""
    env = {**os.environ, user_code_hold_tree.HOLD: hold, user_code_hold_tree.FLAG: str(tmp_path / "holding"),
           "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "studio.cli", *args], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (tmp_path / "holding").exists() or process.poll() is not None, "the tree's code looping")
        assert process.poll() is None, process.communicate()
        process.send_signal(signum)
        out, err = process.communicate(timeout=BOUND)
    finally:
        process.kill()
    return process, out, err


@pytest.mark.parametrize("hold", ["tool", "node", "function", "async-node", "async-tool", "terminate"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_run_while_the_trees_sync_code_holds_the_loop(tmp_path, hold, signum):
    db = str(tmp_path / "runs.db")
    process, out, err = stopped_holding(tmp_path, hold, signum, "run", TREE, "--db", db)
    assert process.returncode == 128 + signum, err
    assert err == "", err  # as a signal at an await: nothing said, no traceback
    status, source, listed, ended = interrupted_run(db)
    assert (status, source, ended) == ("INTERRUPTED", "interrupt", "failed")
    assert no_node_failed(db) == [f"interrupted by {signal.Signals(signum).name}"]


def test_serve_stopped_by_sigterm_while_a_sync_tool_holds_the_loop(tmp_path):
    db = str(tmp_path / "served.db")
    process, out, err = stopped_holding(tmp_path, "tool", signal.SIGTERM,
                                        "serve", TREE, "--db", db, "--at", "127.0.0.1:0", "--wait", "0")
    assert process.returncode == 143 and "Traceback" not in err, err
    assert interrupted_run(db)[:2] == ("INTERRUPTED", "interrupt")


async def test_the_loops_handler_ends_what_the_signal_stopped_and_no_handler_is_left():
    """In the process: the code stops at once, the loop's handler then cancels its caller as at an await. A
    call installs no handler, and the command's is gone with its loop's (asyncio puts back the defaults)."""
    task = asyncio.current_task()
    heard: list[int] = []

    def spin() -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        while True:
            pass

    with on_signals(lambda signum: (heard.append(signum), task.cancel(signal.Signals(signum).name))):
        handlers = [signal.getsignal(signum) for signum in SIGNALS]
        assert await run_user_code(lambda x: x + 1, 1) == 2
        with pytest.raises(asyncio.CancelledError, match="SIGTERM"):
            await run_user_code(spin)
        task.uncancel()
        assert [signal.getsignal(signum) for signum in SIGNALS] == handlers
    assert heard == [signal.SIGTERM]
    assert [signal.getsignal(signum) for signum in SIGNALS] == [signal.default_int_handler, signal.SIG_DFL,
                                                                signal.SIG_DFL]


async def test_code_that_gives_the_thread_back_within_its_grace_is_not_cut(monkeypatch):
    """A signal while the user's code holds the thread for less than its grace (a large tree's long tick)
    lets it finish: the run stops at the next await, its last checkpoint a whole tick's."""
    monkeypatch.setattr(signals, "GRACE", 3600.0)
    task = asyncio.current_task()

    def finite() -> str:
        os.kill(os.getpid(), signal.SIGTERM)  # (its handler runs before the next line)
        return "whole"

    with on_signals(lambda signum: task.cancel(signal.Signals(signum).name)):
        assert await run_user_code(finite) == "whole"
        with pytest.raises(asyncio.CancelledError, match="SIGTERM"):
            await asyncio.sleep(BOUND)
        task.uncancel()


def test_outside_the_main_thread_nothing_changes():
    def in_thread() -> None:
        with user_code_stops():
            assert asyncio.run(run_user_code(lambda: "done")) == "done"
        seen.append(signal.getsignal(signal.SIGINT))

    seen: list = []
    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join(BOUND)
    assert seen == [signal.getsignal(signal.SIGINT)]


async def test_a_coroutine_run_step_by_step_gets_what_an_await_gives_it():
    """`user_steps` passes results, exceptions and a cancellation through as `await` does."""
    coroutine = asyncio.sleep(0)
    assert user_steps(coroutine) is coroutine  # outside a command's loop: itself, at no cost
    await coroutine
    with user_code_stops():
        coroutine = asyncio.sleep(0)
        steps = user_steps(coroutine)
        assert steps is not coroutine
        await steps
        await _awaits_as_await()


async def _awaits_as_await() -> None:
    loop = asyncio.get_running_loop()

    async def user(awaited: asyncio.Future) -> str:
        try:
            return f"got {await awaited}"
        except ValueError as exc:
            return f"caught {exc}"

    answered, failed = loop.create_future(), loop.create_future()
    loop.call_soon(answered.set_result, 1)
    loop.call_soon(failed.set_exception, ValueError("x"))
    assert [await user_steps(user(answered)), await user_steps(user(failed))] == ["got 1", "caught x"]
    async def sleeping() -> None:
        await user_steps(asyncio.sleep(BOUND))

    task = asyncio.create_task(sleeping())
    await asyncio.sleep(0)
    task.cancel("why")
    with pytest.raises(asyncio.CancelledError, match="why"):
        await task


CUT = """
import asyncio, os, signal, sys
sys.path.insert(0, {root!r})
from runtime import signals
from runtime.signals import run_user_code
from studio.stopping import on_signals
signals.GRACE = {grace}

def spin():
    {signal_in_code}
    while True:
        pass

async def main():
    task = asyncio.current_task()
    with on_signals(lambda signum: task.cancel()):
        {before}
        try:
            await run_user_code(spin)
        except asyncio.CancelledError:
            print("ended", flush=True)

asyncio.run(main())
"""


def _cut(**parts: str) -> subprocess.CompletedProcess:
    code = CUT.format(root=str(ROOT), **parts)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=BOUND)


def test_code_cut_while_its_run_is_being_cancelled_ends_the_run_at_once():
    """A second Ctrl-C cutting a clean-up that runs after the run's cancellation was delivered (an async
    tool's `except CancelledError:` that holds on): no cancellation comes again, so the cut code must not
    wait for one (the command hung for good, SIGTERM and all)."""
    done = _cut(grace="0.0", signal_in_code="os.kill(os.getpid(), signal.SIGTERM)", before="""os.kill(os.getpid(), signal.SIGTERM)  # the first signal: the loop's handler cancels the run
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            pass  # (delivered: the run's clean-up goes on, then holds the thread)""")
    assert done.stdout == "ended\n", done.stderr


def test_a_signal_between_two_pieces_of_user_code_cuts_the_next_one_that_holds_on():
    """A signal while the runtime's own code runs (a checkpoint written, an after-tick hook), and then a tick
    that never returns before the loop had the thread: the signal is sent again until the loop takes it,
    so that tick is cut (it was lost, and the command hung)."""
    done = _cut(grace="0.2", signal_in_code="pass", before="os.kill(os.getpid(), signal.SIGTERM)  # (the flag down)")
    assert done.stdout == "ended\n", done.stderr
