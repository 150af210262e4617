"""Reading a store never writes: a file shown to `list`, `replay` or `diff` is left as it was."""

from __future__ import annotations

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
