"""Runs in subprocesses stopped mid-call (`mcp_hold_tree.py`) or while the tree's own code loops: what the stopping tests share."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import mcp_hold_tree

from runtime.memory.checkpoint import open_store
from runtime.memory.checkpoint.liveness import process_alive

ROOT = Path(__file__).resolve().parents[1]
TREE = str(Path(mcp_hold_tree.__file__))
BOUND = 60.0  # seconds any condition below gets before the test gives up on it


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + BOUND
    while not condition():
        assert time.monotonic() < deadline, f"not within {BOUND:g} s: {what}"
        time.sleep(0.05)


def use_place(tmp_path: Path, monkeypatch) -> Path:
    """`tmp_path` as where the MCP server writes its pids and `hold` its flag; the subprocesses inherit it."""
    monkeypatch.setenv(mcp_hold_tree.PLACE, str(tmp_path))
    return tmp_path


def server_processes(place: Path) -> list[int]:
    """The MCP server's pid and its helper's (written by the server as it starts)."""
    return [int(pid) for pid in (place / "pids").read_text().split()]


def all_gone(pids: list[int]) -> bool:
    return not any(process_alive(pid, "") for pid in pids)  # (a zombie left to init has died)


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "studio.cli", *args], cwd=ROOT, env=os.environ.copy(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stopped_mid_call(process: subprocess.Popen, place: Path, signum: int) -> tuple[str, str, list[int]]:
    """Wait until the run is inside `hold`, send `signum`, and wait for the process to end."""
    wait_for(lambda: (place / "holding").exists() or process.poll() is not None, "the run calling `hold`")
    assert process.poll() is None, process.communicate()
    pids = server_processes(place)
    process.send_signal(signum)
    out, err = process.communicate(timeout=BOUND)
    return out, err, pids


def interrupted_run(db: str) -> tuple[str, str, str, str | None]:
    """The store's only run: its last checkpoint's status and source, its recorded end, and `list`'s line."""
    store = open_store(db, create=False)
    try:
        [run] = store.runs()
        last = store.latest(run.run_id)
        listed = subprocess.run([sys.executable, "-m", "runtime.memory.checkpoint", "list", db], cwd=ROOT,
                                capture_output=True, text=True, timeout=BOUND).stdout
        return last.status, last.source, listed, run.ended
    finally:
        store.close()


def no_node_failed(db: str) -> list[str]:
    """The run's `node.error` events (none: the code a signal stopped did not fail) and why it ended."""
    store = open_store(db, create=False)
    try:
        [run] = store.runs()
        events = [event for _, event in store.events(run.run_id)]
        assert not [event for event in events if event.type == "node.error"]
        return [event.payload.get("error") for event in events if event.type == "run.failed"]
    finally:
        store.close()
