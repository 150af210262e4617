"""Stopping is clean (#30.2): SIGTERM, SIGHUP and SIGINT stop `run` and `serve` mid-call, as systemd,
Docker, `timeout`, a closed terminal or Ctrl-C stop them. The exit status names the signal (128 + N) with
no traceback, the run's last checkpoint says INTERRUPTED (and `list` says so), and the MCP server it
started is gone with its whole process group (its helper process too). A cancelled `Agent.run` is
recorded as interrupted as well. Every wait below is for a condition, with a generous bound."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import mcp_hold_tree
import pytest
from stopping_fixtures import (
    BOUND,
    ROOT,
    TREE,
    all_gone,
    interrupted_run,
    server_processes,
    start,
    stopped_mid_call,
    use_place,
    wait_for,
)

from runtime.memory.checkpoint import open_store


@pytest.fixture
def place(tmp_path, monkeypatch) -> Path:
    return use_place(tmp_path, monkeypatch)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_stops_run_mid_call_recorded_as_interrupted_with_its_server_group_gone(place, signum):
    db = str(place / "runs.db")
    out, err, pids = stopped_mid_call(start("run", TREE, "--db", db), place, signum)
    assert "Traceback" not in err and err.strip() == "", err
    assert out.splitlines()[-1].startswith("tick    2  RUNNING")  # no summary: it did not finish
    wait_for(lambda: all_gone(pids), "the MCP server and its helper gone")
    status, source, listed, ended = interrupted_run(db)
    assert (status, source, ended) == ("INTERRUPTED", "interrupt", "failed")
    assert " INTERRUPTED " in listed


def test_the_exit_status_names_the_signal(place):
    process = start("run", TREE, "--db", str(place / "runs.db"))
    stopped_mid_call(process, place, signal.SIGTERM)
    assert process.returncode == 143
    for signum, status in ((signal.SIGHUP, 129), (signal.SIGINT, 130)):
        (place / "holding").unlink()
        process = start("run", TREE, "--db", str(place / "runs.db"))
        stopped_mid_call(process, place, signum)
        assert process.returncode == status


def test_serve_stopped_by_sigterm_mid_call(place):
    db = str(place / "served.db")
    process = start("serve", TREE, "--db", db, "--at", "127.0.0.1:0", "--wait", "0")
    out, err, pids = stopped_mid_call(process, place, signal.SIGTERM)
    assert process.returncode == 143 and "Traceback" not in err, err
    wait_for(lambda: all_gone(pids), "the MCP server and its helper gone")
    assert interrupted_run(db)[:2] == ("INTERRUPTED", "interrupt")


async def test_a_cancelled_agent_run_is_recorded_as_interrupted(place):
    store = open_store(place / "runs.db")
    agent = mcp_hold_tree.build()
    agent.runner = agent.make_runner(checkpointer=store)
    task = asyncio.create_task(agent.run(mcp_hold_tree.INPUT))
    async with asyncio.timeout(BOUND):
        while not (place / "holding").exists():
            await asyncio.sleep(0.05)
    pids = server_processes(place)
    task.cancel("SIGTERM")  # what a host's handler does with the signal it got
    with pytest.raises(asyncio.CancelledError):
        await task
    last = store.get(store.latest(agent.runner.run_id).id)
    assert (last.status, last.source) == ("INTERRUPTED", "interrupt")
    assert last.statuses["Holder/Holder.loop/Holder.tools"] == "RUNNING"  # where it stood: mid-call
    failed = [event for _, event in store.events(agent.runner.run_id) if event.type == "run.failed"]
    assert [event.payload["error"] for event in failed] == ["interrupted by SIGTERM"]
    assert all_gone(pids)  # closed before the cancellation went on
    store.close()


HELD_TREE = """\
import pathlib, time
pathlib.Path("held").touch()  # the loader is in this file now
while {in_import}:
    time.sleep(0.01)

def build():
    pathlib.Path("held").touch()
    while True:
        time.sleep(0.01)
"""


@pytest.mark.parametrize("where", ["import", "build"])
@pytest.mark.parametrize(("command", "signum"), [("run", signal.SIGINT), ("open", signal.SIGINT),
                                                 ("serve", signal.SIGTERM), ("check", signal.SIGINT)])
def test_a_signal_ends_a_tree_that_loops_in_its_import_or_build(tmp_path, where, command, signum):
    """The tree's code holds the thread (the loop's handlers cannot run): the first signal ends the command."""
    tree, db = tmp_path / "held.py", str(tmp_path / "runs.db")
    tree.write_text(HELD_TREE.format(in_import=where == "import"))
    args = [command, str(tree), "--db", db]
    if command == "check":  # a recorded run, checked against the tree that holds
        recorded = subprocess.run([sys.executable, "-m", "studio.cli", "run", str(ROOT / "sample_trees/text_pipeline.py"),
                                   "--db", db], capture_output=True, text=True, timeout=BOUND)
        assert recorded.returncode == 0, recorded.stderr
        args = [command, db, "--tree", str(tree)]
    process = subprocess.Popen([sys.executable, "-m", "studio.cli", *args], cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        wait_for(lambda: (tmp_path / "held").exists() or process.poll() is not None, "the tree's code running")
        assert process.poll() is None, process.communicate()
        process.send_signal(signum)
        out, err = process.communicate(timeout=BOUND)
    finally:
        process.kill()
    assert process.returncode == 128 + signum, err
    assert err == "", err  # not "build() raised KeyboardInterrupt" (a bad tree, exit 2), no traceback
