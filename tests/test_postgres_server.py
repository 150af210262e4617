"""The tests' throw-away PostgreSQL server: one left running by a killed test run is stopped and deleted
by the next one started, so killed runs do not pile servers up on a shared machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import postgres_server
import pytest

pytestmark = pytest.mark.skipif(postgres_server.why_not() is not None, reason=str(postgres_server.why_not()))

STARTER = """
import sys, time
sys.path.insert(0, {tests!r})
from postgres_server import PostgresServer
server = PostgresServer().start()
print(server.root, flush=True)
time.sleep(600)
"""


def _postmaster(root: Path) -> int:
    return int((root / "data" / "postmaster.pid").read_text().split()[0])


def test_a_server_left_by_a_killed_run_is_reaped_by_the_next():
    starter = subprocess.Popen([sys.executable, "-c", STARTER.format(tests=str(Path(__file__).parent))],
                               stdout=subprocess.PIPE, text=True)
    try:
        root = Path(starter.stdout.readline().strip())
        postmaster = _postmaster(root)
    finally:
        starter.kill()  # as a test run killed: its server stays up
        starter.wait()
    assert root.exists() and postgres_server._alive(postmaster)
    server = postgres_server.PostgresServer().start()
    try:
        assert not root.exists()
        assert not postgres_server._alive(postmaster) or _zombie(postmaster)
        assert (server.root / postgres_server.OWNER).read_text() == str(os.getpid())  # its own stays
    finally:
        server.stop()


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return False


def test_a_live_runs_server_is_left_alone():
    first = postgres_server.PostgresServer().start()
    try:
        second = postgres_server.PostgresServer().start()
        second.stop()
        assert first.root.exists()
        os.kill(_postmaster(first.root), 0)  # (raises if it was stopped)
    finally:
        first.stop()


