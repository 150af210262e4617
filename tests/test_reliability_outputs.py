"""Issue #13 point 1: an output file (a trace, an export) never destroys the store or a source file.

Every case runs the real CLI in a subprocess, then checks that what was there is still whole.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli import ROOT, cli

TREE = str(ROOT / "sample_trees/text_pipeline.py")


def runs_in(db: Path) -> list[str]:
    listing = subprocess.run([sys.executable, "-m", "runtime.memory.checkpoint", "list", str(db)],
                             capture_output=True, text=True, timeout=60)
    assert listing.returncode == 0, listing.stderr
    return [line.split()[0] for line in listing.stdout.splitlines()]


def one_line_refusal(result: subprocess.CompletedProcess, *expected: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    for text in expected:
        assert text in result.stderr


@pytest.fixture
def store(tmp_path) -> Path:
    db = tmp_path / "S.db"
    assert cli("run", TREE, "--db", str(db)).returncode == 0
    return db


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm"])
def test_a_trace_onto_the_store_is_refused_before_the_run_starts(store, suffix):
    before = runs_in(store)
    result = cli("run", TREE, "--db", str(store), "--trace", f"{store}{suffix}")
    one_line_refusal(result, "is the checkpoint store")
    assert result.stdout == ""  # nothing ran
    assert runs_in(store) == before


def test_a_trace_through_a_link_to_the_store_is_refused(store, tmp_path):
    link = tmp_path / "trace.jsonl"
    link.symlink_to(store)
    one_line_refusal(cli("run", TREE, "--db", str(store), "--trace", str(link)), "is the checkpoint store")
    assert len(runs_in(store)) == 1


def test_a_trace_onto_another_sqlite_file_or_a_source_file_is_refused(store, tmp_path):
    other = tmp_path / "other.db"
    assert cli("run", TREE, "--db", str(other)).returncode == 0
    one_line_refusal(cli("run", TREE, "--db", str(store), "--trace", str(other), "--force"), "SQLite database")
    assert len(runs_in(other)) == 1
    tree = tmp_path / "mytree.py"
    tree.write_text("def build(): ...\n")
    one_line_refusal(cli("run", TREE, "--db", str(store), "--trace", str(tree), "--force"), "source file")
    assert tree.read_text() == "def build(): ...\n"


def test_an_existing_trace_is_replaced_only_with_force(store, tmp_path):
    trace = tmp_path / "run.jsonl"
    trace.write_text("an earlier trace\n")
    one_line_refusal(cli("run", TREE, "--db", str(store), "--trace", str(trace)), "already exists", "--force")
    assert trace.read_text() == "an earlier trace\n"
    assert cli("run", TREE, "--db", str(store), "--trace", str(trace), "--force").returncode == 0
    assert trace.read_text().startswith('{"schema_version":1')
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".run.jsonl")] == []  # no leftovers


def test_a_trace_into_a_missing_or_read_only_folder_is_refused_before_the_run(store, tmp_path):
    before = runs_in(store)
    one_line_refusal(cli("run", TREE, "--db", str(store), "--trace", str(tmp_path / "no/such/t.jsonl")),
                     "no such directory")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        result = cli("run", TREE, "--db", str(store), "--trace", str(locked / "t.jsonl"))
        if result.returncode != 0:  # root may write anywhere: then the trace is simply written
            one_line_refusal(result, "not writable")
    finally:
        locked.chmod(0o700)
    assert len(runs_in(store)) == len(before) + (0 if result.returncode else 1)


def test_export_onto_the_store_is_refused_and_the_store_keeps_its_runs(store, tmp_path):
    (run_id,) = runs_in(store)
    for output in (store, Path(f"{store}-wal")):
        result = subprocess.run([sys.executable, "-m", "runtime.memory.checkpoint", "export", str(store),
                                 "--run", run_id, "-o", str(output)], capture_output=True, text=True, timeout=60)
        one_line_refusal(result, "is the checkpoint store")
    assert runs_in(store) == [run_id]
    out = tmp_path / "out.jsonl"
    export = [sys.executable, "-m", "runtime.memory.checkpoint", "export", str(store), "--run", run_id, "-o", str(out)]
    assert subprocess.run(export, capture_output=True, timeout=60).returncode == 0
    one_line_refusal(subprocess.run(export, capture_output=True, text=True, timeout=60), "already exists")
    assert subprocess.run([*export, "--force"], capture_output=True, timeout=60).returncode == 0


def test_a_trace_or_export_onto_a_pipe_is_refused_without_waiting_for_a_reader(store, tmp_path):
    """Checking a pipe's first bytes (is it SQLite?) would block forever; renaming over /dev/null
    (as root) would replace the device: neither is a regular file, neither is written."""
    pipe = tmp_path / "trace.pipe"
    os.mkfifo(pipe)
    one_line_refusal(cli("run", TREE, "--db", str(store), "--trace", str(pipe), "--force"), "not a regular file")
    (run_id,) = runs_in(store)
    result = subprocess.run([sys.executable, "-m", "runtime.memory.checkpoint", "export", str(store),
                             "--run", run_id, "-o", str(pipe), "--force"], capture_output=True, text=True, timeout=60)
    one_line_refusal(result, "not a regular file")
    assert pipe.is_fifo() and runs_in(store) == [run_id]


def test_a_trace_that_cannot_be_written_after_the_run_is_one_line_and_exit_1(store, tmp_path):
    """The folder checked before the run is gone when the trace is written (a full disk fails the same
    write): the run is recorded, the trace is not, and both are said."""
    from test_reliability_saves import WRITER, wait_for

    tree, folder, go = tmp_path / "writer.py", tmp_path / "traces", tmp_path / "go"
    tree.write_text(WRITER)
    folder.mkdir()
    child = subprocess.Popen([sys.executable, "-m", "studio.cli", "run", str(tree), "--db", str(store),
                              "--trace", str(folder / "t.jsonl")], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env={**os.environ, "GO": str(go)})
    wait_for(Path(f"{go}.waiting"), child)
    folder.rmdir()
    go.touch()
    out, err = child.communicate(timeout=120)
    assert child.returncode == 1 and "Traceback" not in err, out + err
    assert err.strip() == (f"jianmu-studio: trace not written to {folder / 't.jsonl'}: No such file or directory "
                           f"(the run's events are in {store}: python -m runtime.memory.checkpoint export)")
    assert "SUCCESS after 2 ticks" in out and len(runs_in(store)) == 2
