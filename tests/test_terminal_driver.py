"""The studio's input thread on a real pseudo-terminal: keys reach the app, and the thread ends when the
terminal is gone (a closed tmux or ssh session), so the studio can exit instead of spinning forever."""

from __future__ import annotations

import asyncio
import os
import threading
import tty

import pytest
from textual.app import App
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
