"""Issue #13 points 2 and 8: a checkpoint that cannot be written stops the run (non-zero, with the
reason) and the store records how it ended; concurrent large commits wait for each other; a tick
with 100k state writes stays bounded in memory.

Every run is the real CLI in a subprocess; the lock is held by another process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from test_cli import ROOT

from runtime.memory.checkpoint import SQLiteCheckpointStore
from studio.session import DebugSession

WRITER = '''
import os
import resource
import signal
from pathlib import Path

from py_trees.common import Status
from pydantic import BaseModel

from runtime import Agent
from runtime.node import Node


class S(BaseModel):
    counter: int = 0
    note: str = ""


class Writer(Node):
    """Tick 1 writes `counter` $WRITES times (or publishes $EVENTS events); tick 2 waits for $GO,
    or fills the disk under the store $FULL (no file may grow any more) and writes a long note."""

    def update(self):
        if self.state_manager.get("counter") == 0:
            for i in range(int(os.environ.get("WRITES", "1"))):
                self.write_state({"counter": i + 1})
            for i in range(int(os.environ.get("EVENTS", "0"))):
                self.emit("custom.step", {"i": i})
            return Status.RUNNING
        if "GO" in os.environ:
            Path(os.environ["GO"] + ".waiting").touch()
            while not Path(os.environ["GO"]).exists():
                pass
        if "FULL" in os.environ:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails, as on a full disk
            files = [Path(os.environ["FULL"] + suffix) for suffix in ("", "-wal")]
            resource.setrlimit(resource.RLIMIT_FSIZE, (max(f.stat().st_size for f in files if f.exists()),
                                                       resource.RLIM_INFINITY))
            self.write_state({"note": "x" * 2_000_000})
        return Status.SUCCESS


def build():
    return Agent(Writer(name="Writer"), state_schema=S)
'''

IN_FLIGHT = '''
import os
import resource
import signal
from pathlib import Path

from py_trees.common import ParallelPolicy, Status

from runtime import Agent, ModelClient, ReActState, ScriptedProvider
from runtime.node import Node, Parallel, SimpleLLMNode


class Filler(Node):
    """Fills the disk under the store $FULL (no file may grow any more) while Ask is in flight."""

    def update(self):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        files = [Path(os.environ["FULL"] + suffix) for suffix in ("", "-wal")]
        resource.setrlimit(resource.RLIMIT_FSIZE, (max(f.stat().st_size for f in files if f.exists()),
                                                   resource.RLIM_INFINITY))
        self.write_state({"streaming_output": "x" * 2_000_000})
        return Status.SUCCESS


def build():
    ask = SimpleLLMNode("Ask", model_client=ModelClient(ScriptedProvider(["an answer"])))
    return Agent(Parallel("Both", policy=ParallelPolicy.SuccessOnAll(), children=[Filler(name="Fill"), ask]),
                 state_schema=ReActState)

INPUT = {"messages": []}
'''

CLI = ("import sys\nimport runtime.memory.checkpoint.sqlite_store as s\ns.LOCK_TIMEOUT = float(sys.argv.pop(1))\n"
       "from studio.cli import main\nsys.exit(main(sys.argv[1:]))\n")


def start_run(tree: Path, db: Path, lock_timeout: float = 15.0, **env: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CLI, str(lock_timeout), "run", str(tree), "--db", str(db)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **env})


def wait_for(path: Path, child: subprocess.Popen) -> None:
    while not path.exists():
        assert child.poll() is None, child.communicate()
        time.sleep(0.05)


def test_a_checkpoint_that_cannot_be_written_stops_the_run_and_the_store_records_the_end(tmp_path):
    tree, db, go = tmp_path / "writer.py", tmp_path / "S.db", tmp_path / "go"
    tree.write_text(WRITER)
    child = start_run(tree, db, lock_timeout=1.0, GO=str(go))
    wait_for(Path(f"{go}.waiting"), child)  # tick 2 is under way: its checkpoint comes next
    holder = subprocess.Popen([sys.executable, "-c", (
        f"import sqlite3, sys\nconn = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
        "conn.execute('BEGIN EXCLUSIVE')\nprint('locked', flush=True)\nsys.stdin.read()\n")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "locked\n"
    go.touch()
    stopped = child.stderr.readline()  # printed as soon as the save failed, while the lock is still held
    holder.communicate("")  # the other process's commit ends
    out, rest = child.communicate(timeout=120)
    assert child.returncode == 1, out + stopped + rest
    assert stopped.startswith("jianmu-studio: the run stopped: StoreError: checkpoint of tick 2 not written: ")
    assert "locked by another process" in stopped and "Traceback" not in rest
    assert rest.strip() == f"jianmu-studio: its end is recorded in {db} (status ERROR)"
    assert out.splitlines()[-1].startswith("ERROR after 2 ticks"), out  # what the store says, not INVALID
    store = SQLiteCheckpointStore(db, create=False)
    (run,) = store.runs()
    assert run.last_status == "ERROR"
    infos = store.list(run.run_id)
    assert [(info.tick, info.status) for info in infos] == [(0, "INVALID"), (1, "RUNNING"), (2, "ERROR")]  # tick 0: the input
    assert store.get(infos[-1].id).state[""]["counter"] == 1  # the state after tick 2, whole
    events = store.events(run.run_id)
    assert events[-1][1].type == "run.failed" and "checkpoint of tick 2" in events[-1][1].payload["error"]
    store.close()
    replayed = DebugSession.open_recorded(db, run.run_id)  # `replay` shows the recorded end (a ValueError before)
    assert replayed.frame.tick == 2 and replayed.frame.root_status.value == "FAILURE"
    replayed.store.close()


def test_a_full_disk_stops_the_run_in_lines_and_leaves_earlier_runs_whole(tmp_path):
    tree, db = tmp_path / "writer.py", tmp_path / "S.db"
    tree.write_text(WRITER)
    earlier = start_run(tree, db)
    assert earlier.wait(timeout=120) == 0
    child = start_run(tree, db, FULL=str(db))
    out, err = child.communicate(timeout=120)
    assert child.returncode == 1 and "Traceback" not in err, out + err
    stopped, end = err.splitlines()
    assert stopped.startswith("jianmu-studio: the run stopped: StoreError: checkpoint of tick 2 not written: ")
    assert end.startswith(("jianmu-studio: its end is recorded in", "jianmu-studio: its end could not be recorded"))
    store = SQLiteCheckpointStore(db, create=False)
    first, second = store.runs()
    assert first.last_status == "SUCCESS" and store.get(store.list(first.run_id)[-1].id).state[""]["counter"] == 1
    assert [info.tick for info in store.list(second.run_id)][:2] == [0, 1]  # what was saved before stays
    store.close()


def test_work_in_flight_when_a_save_fails_is_stopped_not_left_to_fail_unseen(tmp_path):
    """The model call of a node still running would record itself into the full store after the run
    stopped, and end in a `Task exception was never retrieved` traceback."""
    tree, db = tmp_path / "in_flight.py", tmp_path / "S.db"
    tree.write_text(IN_FLIGHT)
    child = start_run(tree, db, FULL=str(db))
    out, err = child.communicate(timeout=120)
    assert child.returncode == 1, out + err
    assert "Traceback" not in err and "never retrieved" not in err and len(err.splitlines()) == 2, err
    assert err.startswith("jianmu-studio: the run stopped: StoreError: checkpoint of tick 1 not written: ")


def test_three_concurrent_runs_committing_a_400k_event_tick_all_end_recorded_or_non_zero(tmp_path):
    tree, db = tmp_path / "writer.py", tmp_path / "S.db"
    tree.write_text(WRITER)
    children = [start_run(tree, db, EVENTS="400000") for _ in range(3)]
    results = [(child, *child.communicate(timeout=600)) for child in children]
    store = SQLiteCheckpointStore(db, create=False)
    recorded = {run.run_id: run for run in store.runs()}
    for child, _, err in results:
        if child.returncode != 0:  # then it says why, and no traceback
            assert "Traceback" not in err and err.startswith("jianmu-studio: the run stopped: "), err
    succeeded = [child for child, _, _ in results if child.returncode == 0]
    complete = [run for run in recorded.values() if run.last_status == "SUCCESS"]
    assert len(complete) == len(succeeded)
    for run in complete:
        custom = [e for _, e in store.events(run.run_id) if e.type == "custom.step"]
        assert len(custom) == 400_000 and custom[-1].payload == {"i": 399_999}
    store.close()


def peak_memory_kb(tree: Path, db: Path, writes: int) -> int:
    child = start_run(tree, db, WRITES=str(writes))
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    out, err = child.communicate()
    assert child.returncode == 0, err
    return usage.ru_maxrss


def test_a_tick_with_100k_state_writes_stays_bounded_in_memory(tmp_path):
    tree = tmp_path / "writer.py"
    tree.write_text(WRITER)
    at_100k = peak_memory_kb(tree, tmp_path / "a.db", 100_000)
    at_200k = peak_memory_kb(tree, tmp_path / "b.db", 200_000)
    assert at_200k - at_100k < 20_000, (at_100k, at_200k)  # 100k more writes: under 20 MB more (was ~180 MB)
    store = SQLiteCheckpointStore(tmp_path / "b.db", create=False)
    (run,) = store.runs()
    changed = [e for _, e in store.events(run.run_id) if e.type == "state.changed"]
    assert len(changed) == 200_000  # every write's event is recorded
    store.close()
