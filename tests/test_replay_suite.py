"""`runtime.testing.assert_replays`: a folder of run files becomes a pytest suite (run here in a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys

from check_fixtures import ROOT, export, offline, record, write_tree  # noqa: F401 (offline: an autouse fixture)

SUITE = '''
from pathlib import Path

import pytest

from runtime.testing import assert_replays

HERE = Path(__file__).parent
RUNS = sorted((HERE / "runs").glob("*.jianmu"))


@pytest.mark.parametrize("recording", RUNS, ids=lambda path: path.stem)
def test_replays(recording):
    assert_replays(recording, tree=HERE / "agent.py")


async def test_replays_from_an_async_test():
    assert_replays(RUNS[0], tree=HERE / "agent.py")
'''


async def test_a_folder_of_run_files_is_a_test_suite(tmp_path):
    suite = tmp_path / "suite"
    (suite / "runs").mkdir(parents=True)
    recorded = tmp_path / "recorded"
    recorded.mkdir()
    db = recorded / "runs.db"
    good = await record(write_tree(recorded), db)
    bad = await record(write_tree(recorded, "other.py", "node"), db)  # recorded with tidy upper-casing
    export(db, good, suite / "runs" / "bees.jianmu")
    export(db, bad, suite / "runs" / "shouting.jianmu")
    write_tree(suite, "agent.py")
    (suite / "test_runs.py").write_text(SUITE)
    (suite / "pytest.ini").write_text("[pytest]\nasyncio_mode = auto\n")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(suite)],
                            capture_output=True, text=True, cwd=suite, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert "1 failed, 2 passed" in result.stdout, result.stdout + result.stderr
    assert "FAILED test_runs.py::test_replays[shouting]" in result.stdout
    assert (f"ReplayMismatch: run {bad}: tick 2, node Pipeline/tidy: state key 'topic' differs: "
            "recorded 'BEES', now 'bees'") in result.stdout
    assert "+ topic now      'bees'" in result.stdout
