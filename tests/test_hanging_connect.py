"""Every wait is interruptible (#32): a PostgreSQL address that accepts the connection and never answers
holds a synchronous connect for its whole timeout (10 s by default, 600 s here), and with it the thread
whose signal handlers would act. SIGINT and SIGTERM during that connect end each command at once, with
one line naming the store (no password) and exit status 128 + N. The connect is detected by the
listener's accept; the 600 s timeout makes an ignored signal a hang, which the test's bound catches."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hanging_server import HangingServer

ROOT = Path(__file__).resolve().parents[1]
BOUND = 60.0  # seconds the process gets to end after the signal (the connect's own timeout is 600)

COMMANDS = {
    "run": ["studio.cli", "run", "text_pipeline", "--db"],
    "studio": ["studio.cli", "open", "text_pipeline", "--db"],
    "replay": ["studio.cli", "replay"],
    "resume": ["studio.cli", "resume", "--approve", "all"],
    "serve": ["studio.cli", "serve", "text_pipeline", "--at", "127.0.0.1:0", "--db"],
    "check": ["studio.cli", "check"],
    "list": ["runtime.memory.checkpoint", "list"],
}


@pytest.fixture
def hanging():
    server = HangingServer()
    yield server
    server.close()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_signal_ends_a_connect_that_hangs_in_one_line(hanging, tmp_path, command, signum):
    url = hanging.url()
    process = subprocess.Popen([sys.executable, "-m", *COMMANDS[command], url], cwd=tmp_path, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)})
    try:
        deadline = time.monotonic() + BOUND
        while not hanging.accepted.wait(0.05):  # connecting now: the listener took its connection
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        process.send_signal(signum)
        out, err = process.communicate(timeout=BOUND)
    finally:
        process.kill()
    assert process.returncode == 128 + signum, err
    name = signal.Signals(signum).name
    assert err.splitlines() == [err.strip()] and err.rstrip().endswith(
        f"postgresql://someone@127.0.0.1:{hanging.port}/db: connecting, stopped by {name}"), err
    assert "pw-never-shown" not in out + err

