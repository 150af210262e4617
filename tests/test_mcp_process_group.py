"""An MCP server over stdio runs in a process group of its own, and closing its provider stops the whole
group (#30.2): a server that exits when its input closes leaves no helper process of its own running
(npx runs a server under two more processes)."""

from __future__ import annotations

from pathlib import Path

import mcp_hold_tree
import pytest
from stopping_fixtures import BOUND, TREE, all_gone, server_processes, start, use_place, wait_for


@pytest.fixture
def place(tmp_path, monkeypatch) -> Path:
    return use_place(tmp_path, monkeypatch)


def test_a_run_that_ends_stops_its_server_with_the_helper_it_started(place, monkeypatch):
    """The server exits when its input closes and leaves its helper behind: the group kill takes it."""
    monkeypatch.setenv(mcp_hold_tree.CALL, "pid")
    process = start("run", TREE, "--db", str(place / "runs.db"))
    out, err = process.communicate(timeout=BOUND)
    assert process.returncode == 0, err
    wait_for(lambda: all_gone(server_processes(place)), "the MCP server and its helper gone")
