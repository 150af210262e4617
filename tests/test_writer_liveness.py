"""Writers' liveness (issue #28 point 5): a run records who writes it (host, process, its start
identity, a heartbeat), and a run whose writer is gone is listed as abandoned with when it was last
seen, not RUNNING for ever; a live writer's run is running, a cleanly suspended one suspended. Each
store kind passes the same tests, with writer processes the test starts and kills."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import rows, tamper
from writer_process import run_id_of, start_writer, studio_run, suspended_run

from runtime.config import ConfigError, get_config, reset_config_cache
from runtime.engine.events import RuntimeEvent
from runtime.memory.checkpoint import RunSummary, Writer, open_store
from runtime.memory.checkpoint.liveness import (
    ABANDONED,
    RUNNING,
    SUSPENDED,
    Liveness,
    run_liveness,
    this_process,
    when,
)
from studio.session import DebugSession

ROOT = Path(__file__).resolve().parents[1]
CALCULATOR = str(ROOT / "sample_trees/react_calculator.py")
PIPELINE = str(ROOT / "sample_trees/text_pipeline.py")
APPROVAL = str(ROOT / "sample_trees/approval_guard.py")


def listed(store_name: str) -> dict[str, str]:
    """`python -m runtime.memory.checkpoint list`: run id -> its line."""
    done = subprocess.run([sys.executable, "-m", "runtime.memory.checkpoint", "list", store_name],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    return {line.split()[0]: line for line in done.stdout.splitlines()}


def states(store_name: str) -> dict[str, tuple[RunSummary, Liveness]]:
    store = open_store(store_name)
    try:
        return {run.run_id: (run, run_liveness(run)) for run in store.runs()}
    finally:
        store.close()


def test_a_killed_writer_is_abandoned_a_live_one_running_a_suspended_one_suspended(store_name):
    killed, killed_run = start_writer(store_name)
    live, live_run = start_writer(store_name)
    try:
        waiting = suspended_run(store_name)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        found = states(store_name)
        run, liveness = found[killed_run]
        assert run.writer is not None and (run.writer.pid, run.writer.host) == (killed.pid, this_process().host)
        assert liveness == Liveness(ABANDONED, run.writer.seen) and run.first_time <= liveness.last_seen
        assert found[live_run][1] == Liveness(RUNNING)
        assert found[waiting][1] == Liveness(SUSPENDED)
        assert found[waiting][0].writer is None  # it ended: whether its writer lives says nothing more

        lines = listed(store_name)
        assert f"abandoned, last seen {when(run.writer.seen)}" in lines[killed_run]
        assert " RUNNING " in lines[live_run] and "abandoned" not in lines[live_run]
        assert "suspended: waiting for approval" in lines[waiting]
    finally:
        for proc in (killed, live):
            proc.kill()
            proc.wait()
    assert states(store_name)[live_run][1].state == ABANDONED  # and once it is killed too, it is abandoned


def test_a_writer_that_exits_leaving_its_run_unfinished_leaves_it_abandoned(store_name):
    """A clean exit mid-run (`--max-ticks`) closes the writer: on any host the run is abandoned at once."""
    done = studio_run(CALCULATOR, "--db", store_name, "--max-ticks", "1")
    assert done.returncode == 1, done.stderr  # stopped unfinished
    run, liveness = states(store_name)[run_id_of(done)]
    assert run.writer is not None and run.writer.closed is not None
    assert liveness == Liveness(ABANDONED, run.writer.closed)
    elsewhere = Writer(**{**vars(run.writer), "host": "elsewhere", "machine": "another boot"})
    assert run_liveness(RunSummary(**{**vars(run), "writer": elsewhere}), now=run.writer.closed + 1).state == ABANDONED


def test_a_writer_says_it_is_alive_while_it_saves_nothing(store_name, tmp_path):
    config = tmp_path / "fast.yaml"
    config.write_text("writers:\n  heartbeat: 0.05\n  abandoned_after: 30\n")
    proc, run_id = start_writer(store_name, {"JIANMU_CONFIG": str(config)})
    try:
        store = open_store(store_name)
        try:
            first = store.runs(run_id)[0].writer
            for _ in range(400):  # a bounded wait for the next heartbeat (its interval is no bound asserted)
                if store.runs(run_id)[0].writer.seen > first.seen:
                    break
                time.sleep(0.05)
            beaten = store.runs(run_id)[0]
            assert beaten.writer.seen > first.seen and beaten.checkpoints == 2  # no checkpoint: a heartbeat
            assert run_liveness(beaten) == Liveness(RUNNING)
        finally:
            store.close()
    finally:
        proc.kill()
        proc.wait()


def _summary(writer: Writer | None, **changes) -> RunSummary:
    return RunSummary(**{**vars(RunSummary("r", ["main"], 2, 100.0, 110.0, "RUNNING", host="elsewhere", pid=1)),
                         "writer": writer, **changes})


def _writer(**changes) -> Writer:
    me = this_process()
    return Writer(**{**vars(Writer("w", me.host, me.machine, me.pid, me.start, 100.0, 200.0)), **changes})


def test_a_writer_elsewhere_is_gone_once_unheard_for_abandoned_after(tmp_path, monkeypatch):
    far = _writer(host="elsewhere", machine="another boot", pid=1, process="1")
    assert run_liveness(_summary(far), now=259) == Liveness(RUNNING)  # heard 59 s ago: the default allows 60
    assert run_liveness(_summary(far), now=261) == Liveness(ABANDONED, 200.0)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jianmu.yaml").write_text("writers:\n  heartbeat: 5\n  abandoned_after: 20\n")
    reset_config_cache()
    try:
        assert run_liveness(_summary(far), now=221) == Liveness(ABANDONED, 200.0)
        assert run_liveness(_summary(far), now=219) == Liveness(RUNNING)
        (tmp_path / "jianmu.yaml").write_text("writers:\n  heartbeat: 30\n  abandoned_after: 20\n")
        with pytest.raises(ConfigError, match=r"jianmu.yaml: invalid setting writers: .*abandoned_after \(20\) must "
                                              r"be longer than heartbeat \(30\)"):
            get_config()
    finally:
        reset_config_cache()


def test_a_pid_of_this_machine_reused_by_another_process_is_no_writer():
    me = _writer()
    assert run_liveness(_summary(me), now=201) == Liveness(RUNNING)  # this very process
    if not me.process:
        pytest.skip("no process start times here (/proc): a reused pid is told by the heartbeat alone")
    reused = _writer(process=str(int(me.process) + 1))
    assert run_liveness(_summary(reused), now=201) == Liveness(ABANDONED, 200.0)
    dead = _writer(pid=_pid_of_no_process())
    assert run_liveness(_summary(dead), now=201) == Liveness(ABANDONED, 200.0)
    assert run_liveness(_summary(_writer(closed=150.0)), now=201) == Liveness(ABANDONED, 150.0)
    assert run_liveness(_summary(dead, ended="suspended")) == Liveness(SUSPENDED)
    assert run_liveness(_summary(dead, ended="completed")) == Liveness("completed")


def _pid_of_no_process() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


async def test_an_older_store_gains_the_writers_table_and_its_unended_runs_age(store_name):
    """A store written before writers were: opened for writing it gains their table; a run it recorded
    with no end is abandoned once its process is gone or it has been quiet for `abandoned_after`."""
    done = studio_run(CALCULATOR, "--db", store_name, "--max-ticks", "1")
    run_id = run_id_of(done)
    store = open_store(store_name)
    try:
        facts = json.loads(rows(store, "SELECT value FROM meta WHERE key = ?", (f"run:{run_id}",))[0][0])
        del facts["writer"]
        tamper(store, "UPDATE meta SET value = ? WHERE key = ?", (json.dumps(facts), f"run:{run_id}"))
        tamper(store, "DROP TABLE writers")
    finally:
        store.close()
    store = open_store(store_name)
    try:
        assert rows(store, "SELECT count(*) FROM writers") == [(0,)]
        (run,) = store.runs()
        assert run.writer is None and run.host == this_process().host and run.pid is not None
        assert run_liveness(run) == Liveness(ABANDONED, run.last_time)  # its process (this machine's) is gone
        alive = RunSummary(**{**vars(run), "pid": os.getpid()})
        assert run_liveness(alive, now=run.last_time + 59) == Liveness(RUNNING)
        assert run_liveness(alive, now=run.last_time + 61) == Liveness(ABANDONED, run.last_time)
    finally:
        store.close()


async def test_a_run_a_studio_restarts_away_from_is_abandoned_while_the_studio_goes_on(store_name):
    session = DebugSession.load(PIPELINE, db=store_name)
    try:
        await session.step()
        first = session.run_id
        await session.restart()
        await session.step()
        found = states(store_name)
        assert found[first][1] == Liveness(ABANDONED, found[first][0].released)
        assert found[session.run_id][1] == Liveness(RUNNING)
        await session.continue_()
        assert states(store_name)[session.run_id][1] == Liveness("completed")
        other = open_store(store_name)  # another writer adds to the first run (a replay of it, say): it claims it
        try:
            other.add_events([("main", RuntimeEvent(1, "state.edited", time.time(), run_id=first))])
            run, liveness = states(store_name)[first]
            assert liveness == Liveness(RUNNING) and run.released is None and run.writer.id == other._writer_id
        finally:
            other.close()
    finally:
        session.store.close()


async def test_a_suspended_run_whose_approval_is_answered_in_a_studio_is_running_again(store_name):
    """The studio steps on after an approval without a run.started: the answer ends the suspension."""
    session = DebugSession.load(APPROVAL, db=store_name)
    try:
        assert (await session.continue_()).kind == "suspended"
        assert states(store_name)[session.run_id][1] == Liveness(SUSPENDED)
        session.approve(session.pending_approvals()[0].id)
        await session.step()
        assert states(store_name)[session.run_id][1] == Liveness(RUNNING)
        assert (await session.continue_()).kind == "finished"
        assert states(store_name)[session.run_id][1] == Liveness("completed")
    finally:
        session.store.close()
