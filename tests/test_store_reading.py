"""Reading a store never writes: a file shown to `list`, `replay` or `diff` is left as it was."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.memory.checkpoint import StoreError, open_store

ROOT = Path(__file__).resolve().parents[1]


def test_opening_an_empty_file_for_reading_refuses_it_and_writes_nothing(tmp_path):
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    with pytest.raises(StoreError, match=r"empty\.db: an empty file, not a checkpoint store"):
        open_store(empty, create=False)
    assert empty.read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]  # no -wal, no -shm either


@pytest.mark.parametrize("command", [
    [sys.executable, "-m", "runtime.memory.checkpoint", "list"],
    [sys.executable, "-m", "studio.cli", "replay"],
    [sys.executable, "-m", "studio.cli", "diff"],
    [sys.executable, "-m", "studio.cli", "check"],
])
def test_readers_given_an_empty_file_say_so_in_one_line(tmp_path, command):
    empty = tmp_path / "runs.db"
    empty.write_bytes(b"")
    result = subprocess.run([*command, str(empty)], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                            env={"PYTHONPATH": str(ROOT), "HOME": str(tmp_path)})
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1 and "an empty file, not a checkpoint store" in result.stderr
    assert empty.read_bytes() == b""


def test_recording_into_an_empty_file_makes_it_a_store(tmp_path):
    empty = tmp_path / "runs.db"
    empty.write_bytes(b"")
    store = open_store(empty)
    assert store.runs() == []
    store.close()


DAMAGED_FACTS = ["{bad", "[1, 2]", "null", '{"writer": [1], "host": {"a": 1}, "started": "x", "pid": true}']


@pytest.mark.parametrize("facts", DAMAGED_FACTS)
def test_one_runs_damaged_facts_stay_in_that_row(tmp_path, facts):
    """A damaged `run:<id>` row made every run of the store unlisted (and every later save of that run
    fail): now it reads as nothing known about that one run."""
    db = tmp_path / "runs.db"
    for _ in range(2):
        result = subprocess.run([sys.executable, "-m", "studio.cli", "run", str(ROOT / "sample_trees/text_pipeline.py"),
                                 "--db", str(db)], capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert result.returncode == 0, result.stderr
    store = open_store(db)
    first, second = (run.run_id for run in store.runs())
    store.set_meta(f"run:{first}", facts)
    runs = {run.run_id: run for run in store.runs()}
    assert runs[first].host is None and runs[first].ended is None and runs[first].checkpoints > 0
    assert runs[second].ended == "completed" and runs[second].host
    listed = subprocess.run([sys.executable, "-m", "runtime.memory.checkpoint", "list", str(db)], capture_output=True,
                            text=True, cwd=ROOT, timeout=60)
    assert listed.returncode == 0 and first in listed.stdout and second in listed.stdout
    store.close()


@pytest.mark.parametrize(("kept", "why"), [
    ("{bad", "does not read"), ("[1]", "does not read"), ('{"name": "x.py"}', "does not read"),
    ('{"name": "../../escaped.py", "function": "build", "sha256": "%s"}', "name '../../escaped.py'"),
    ('{"name": "/tmp/escaped.py", "function": "build", "sha256": "%s"}', "name '/tmp/escaped.py'"),
    ('{"name": "tree.py", "function": "os.system", "sha256": "%s"}', "function 'os.system'"),
])
def test_a_damaged_kept_tree_is_one_line_and_never_written_outside_its_folder(tmp_path, kept, why):
    """The kept tree's name becomes the file written to load it: a store naming `../../escaped.py` wrote
    the kept text wherever it pointed (and a damaged record was a traceback)."""
    from runtime.check.recording import tree_for_run
    from runtime.memory.checkpoint.tree_source import FILE_KEY, TEXT_KEY, text_hash

    db = tmp_path / "runs.db"
    result = subprocess.run([sys.executable, "-m", "studio.cli", "run", str(ROOT / "sample_trees/text_pipeline.py"),
                             "--db", str(db)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    store = open_store(db)
    [run] = store.runs()
    text = f"import pathlib\npathlib.Path({str(tmp_path / 'ran')!r}).touch()\n"
    store.set_meta(TEXT_KEY + text_hash(text), text)
    store.set_meta(FILE_KEY + run.run_id, kept.replace("%s", text_hash(text)))
    store.set_meta(f"tree:{run.run_id}", str(tmp_path / "gone.py:build"))  # the file is gone: the kept text it is
    with pytest.raises(StoreError, match=rf"the tree file kept for run {run.run_id} is damaged \(.*{re.escape(why)}"):
        tree_for_run(store, run.run_id)
    store.close()
    assert not Path("/tmp/escaped.py").exists() and not (tmp_path / "ran").exists()
