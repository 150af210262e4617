"""Every quick benchmark still runs and prints its table beside its baseline.

A benchmark imports helpers from its neighbours (`bench/runner_overhead.py`'s trees and raw
py_trees loop): a change to one broke two others unseen, since nothing ran them. Here each
runs at its smallest size in a process of its own; the figures are not looked at (speed is
measured in bench/, never asserted in a test), only that the run ends well and prints the
rows a reader compares. The slow ones (runner_overhead, debug_server) are left to `./dev bench`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

QUICK = {
    "studio_scale.py": (["--sizes", "100", "--steps", "2"], ["raw us/nt", "runner us/nt", "1st step ms"]),
    "stream_accumulation.py": (["--deltas", "200", "--size", "1000"], ["baseline: provider into a list"]),
    "checkpoint_growth.py": (["--rounds", "4", "--writers", "1", "--writer-rounds", "2"],
                             ["ratio to final state (goal <= 3x)", "save per tick, mean"]),
    "first_save.py": (["--nodes", "1000", "--runs", "1"], ["1st step", "raw 1st tick"]),
    "check_speed.py": (["--rounds", "3", "--repeats", "1", "--latency", "0"], ["check/live", "10,000 nodes"]),
    "tick_record.py": (["--sizes", "1000", "--repeats", "1", "--ticks", "1"], ["x raw", "the returns stored"]),
    "studio_latency.py": (["--headless", "--steps", "2", "--bursts", "1", "--starts", "1", "--views", "1"],
                          ["step n -> screen", "goal"]),
}


@pytest.mark.parametrize("bench", sorted(QUICK))
def test_a_quick_benchmark_runs_and_prints_its_table(bench):
    args, rows = QUICK[bench]
    result = subprocess.run([sys.executable, str(ROOT / "bench" / bench), *args], capture_output=True,
                            text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert all(row in result.stdout for row in rows), result.stdout
