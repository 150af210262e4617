"""The studio's input thread on a real pseudo-terminal: keys reach the app, and the thread ends when the
terminal is gone (a closed tmux or ssh session), so the studio can exit instead of spinning forever."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import tty

import pytest
from textual.app import App
from textual.drivers._writer_thread import WriterThread
from textual.events import Key

pytest.importorskip("termios")

from studio.terminal_driver import StudioDriver  # noqa: E402

BOUND = 30  # s: a bound on a hang, not a measure of speed


async def test_keys_are_read_until_the_terminal_hangs_up_and_then_the_input_thread_ends():
    controller, terminal = os.openpty()
    tty.setraw(terminal)  # as the studio sets its terminal: each key read as it is typed
    driver = StudioDriver(App())
    driver.fileno = terminal
    keys: list[str] = []
    got_key = threading.Event()

    def process_message(message) -> None:
        if isinstance(message, Key):
            keys.append(message.key)
            got_key.set()

    driver.process_message = process_message
    thread = threading.Thread(target=driver.run_input_thread, daemon=True)
    thread.start()
    try:
        os.write(controller, b"n")
        assert await asyncio.to_thread(got_key.wait, BOUND) and keys == ["n"]
    finally:
        os.close(controller)  # the terminal is gone: reads give EIO
    await asyncio.to_thread(thread.join, BOUND)
    assert not thread.is_alive()  # before the fix it read the dead terminal in a loop, forever
    os.close(terminal)


async def test_the_exit_does_not_wait_on_a_terminal_that_hung_up(monkeypatch):
    """A closed tmux or ssh session: the output thread keeps draining its queue (thirty writes) to the
    end, so the app's last writes and its stop return instead of waiting for a thread that died."""
    controller, terminal = os.openpty()
    tty.setraw(terminal)
    monkeypatch.setattr(sys, "__stderr__", os.fdopen(os.dup(terminal), "w"))
    driver = StudioDriver(App())
    driver._writer_thread = WriterThread(driver._file)  # as start_application_mode starts it
    driver._writer_thread.start()
    driver.write("the first frame")
    os.close(controller)  # hung up: every write to the terminal fails (EIO)

    def exit_writes() -> None:
        for line in range(100):  # frames drawn before the hangup is noticed, and the exit's own
            driver.write(f"line {line}\n")
        driver.close()  # puts the end and joins the output thread

    writing = threading.Thread(target=exit_writes, daemon=True)
    writing.start()
    await asyncio.to_thread(writing.join, BOUND)
    assert not writing.is_alive()  # before the fix: blocked on the thirty-first write, forever
    assert not driver._writer_thread.is_alive()
    os.close(terminal)


async def test_sigcont_resumes_the_terminal_only_after_sigtstp_suspended_it(monkeypatch):
    """The kernel sends SIGCONT with SIGHUP when a terminal hangs up: starting application mode again
    then (a second output thread, on the dead terminal) is what hung the exit. Ctrl+Z then `fg` still
    suspends and resumes."""
    driver = StudioDriver(App())
    calls: list[str] = []
    monkeypatch.setattr(driver, "suspend_application_mode", lambda: calls.append("suspend"))
    monkeypatch.setattr(driver, "resume_application_mode", lambda: calls.append("resume"))
    monkeypatch.setattr(os, "kill", lambda pid, signum: calls.append(signal.Signals(signum).name))
    driver._sigcont_application()  # a hangup's (or a stray `kill -CONT`)
    assert calls == []
    driver._sigtstp_application()  # ctrl+z: suspended, then stopped
    driver._sigcont_application()  # `fg`
    assert calls == ["suspend", "SIGSTOP", "resume"]
