"""The headless CLI, through a real subprocess: output, exit codes, and every bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "studio.cli", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def test_run_prints_one_line_per_tick_and_a_summary():
    result = cli("run", str(ROOT / "sample_trees/text_pipeline.py"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    ticks = [line for line in lines if line.startswith("tick")]
    assert ticks[0].split()[:3] == ["tick", "1", "RUNNING"]
    assert "Normalize:INVALID→RUNNING" in ticks[0]
    assert ticks[-1].split()[2] == "SUCCESS"
    assert lines[-1].startswith(f"SUCCESS after {len(ticks)} ticks")


def test_run_json_gives_machine_readable_ticks_and_summary():
    result = cli("run", str(ROOT / "sample_trees/text_pipeline.py"), "--json")
    assert result.returncode == 0, result.stderr
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    assert objects[0]["tick"] == 1 and objects[0]["changed"]["TextPipeline"] == ["INVALID", "RUNNING"]
    summary = objects[-1]["summary"]
    assert summary["status"] == "SUCCESS" and summary["ticks"] == len(objects) - 1 and summary["run_id"]


def test_max_ticks_stops_an_unfinished_run_with_exit_1():
    result = cli("run", str(ROOT / "sample_trees/text_pipeline.py"), "--max-ticks", "2")
    assert result.returncode == 1
    assert [line.split()[1] for line in result.stdout.splitlines() if line.startswith("tick")] == ["1", "2"]
    assert "RUNNING after 2 ticks" in result.stdout


def test_a_failed_run_exits_1(tmp_path):
    tree = tmp_path / "fails.py"
    tree.write_text(
        "from pydantic import BaseModel\nimport py_trees\nfrom runtime import Agent\n"
        "class S(BaseModel):\n    x: int = 0\n"
        "def build():\n    return Agent(py_trees.behaviours.Failure('nope'), state_schema=S)\n")
    result = cli("run", str(tree))
    assert result.returncode == 1
    assert "FAILURE after 1 ticks" in result.stdout


BAD_TREES = {
    "syntax.py": ("def build(:\n", "syntax.py:1: syntax error"),
    "nobuild.py": ("x = 1\n", "no function build()"),
    "wrongtype.py": ("def build():\n    return 42\n", "build() returned int, expected a runtime.Agent"),
    "raises.py": ("def build():\n    raise RuntimeError('boom')\n", "build() raised RuntimeError: boom"),
    "badimport.py": ("import no_such_module_here\n", "import failed: ModuleNotFoundError"),
}


@pytest.mark.parametrize("name", BAD_TREES)
def test_bad_tree_files_give_one_line_and_exit_2(tmp_path, name):
    source, expected = BAD_TREES[name]
    (tmp_path / name).write_text(source)
    result = cli("run", str(tmp_path / name))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert expected in result.stderr and name in result.stderr
    assert "Traceback" not in result.stderr


def test_debug_shows_the_traceback(tmp_path):
    (tmp_path / "raises.py").write_text("def build():\n    raise RuntimeError('boom')\n")
    result = cli("--debug", "run", str(tmp_path / "raises.py"))
    assert result.returncode == 2
    assert "Traceback" in result.stderr and "RuntimeError: boom" in result.stderr


def test_missing_file_and_missing_function():
    missing = cli("run", "sample_trees/nope.py")
    assert missing.returncode == 2 and "sample_trees/nope.py: no such file" in missing.stderr
    no_function = cli("run", "sample_trees/text_pipeline.py:nothing_here")
    assert no_function.returncode == 2 and "no function nothing_here()" in no_function.stderr


def test_path_colon_function_selects_the_builder(tmp_path):
    tree = tmp_path / "two.py"
    tree.write_text(
        "from pydantic import BaseModel\nimport py_trees\nfrom runtime import Agent\n"
        "class S(BaseModel):\n    x: int = 0\n"
        "def build():\n    return Agent(py_trees.behaviours.Failure('f'), state_schema=S)\n"
        "def other():\n    return Agent(py_trees.behaviours.Success('s'), state_schema=S)\n")
    assert cli("run", f"{tree}:other").returncode == 0
    assert cli("run", str(tree)).returncode == 1


def test_run_records_into_a_store_and_writes_a_trace(tmp_path):
    db, trace = tmp_path / "runs.db", tmp_path / "run.jsonl"
    result = cli("run", str(ROOT / "sample_trees/react_calculator.py"), "--db", str(db), "--trace", str(trace))
    assert result.returncode == 0, result.stderr
    assert "final answer: 25 * 4 + 10 = 110" in result.stdout
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert lines and all(line["schema_version"] == 1 for line in lines)
    assert {"tool.call.completed", "model.call.completed", "run.completed"} <= {line["type"] for line in lines}
    listing = subprocess.run([sys.executable, "-m", "runtime.memory.checkpoint", "list", str(db)],
                             capture_output=True, text=True, timeout=60)
    assert "6 checkpoints" in listing.stdout and "SUCCESS" in listing.stdout


def test_a_corrupt_store_is_one_line_and_left_untouched(tmp_path):
    db = tmp_path / "notes.db"
    db.write_text("my notes, not a database\n")
    result = cli("run", str(ROOT / "sample_trees/text_pipeline.py"), "--db", str(db))
    assert result.returncode == 2
    assert result.stderr.strip() == f"jianmu-studio: {db}: not a checkpoint store (not an SQLite database)"
    assert db.read_text() == "my notes, not a database\n"


def test_replay_bad_inputs_are_one_line(tmp_path):
    missing = cli("replay", str(tmp_path / "none.db"))
    assert missing.returncode == 2 and missing.stderr.strip().endswith("none.db: no such file")
    db = tmp_path / "runs.db"
    assert cli("run", str(ROOT / "sample_trees/text_pipeline.py"), "--db", str(db)).returncode == 0
    unknown = cli("replay", str(db), "--run", "nope")
    assert unknown.returncode == 2 and "no run 'nope'" in unknown.stderr and "Traceback" not in unknown.stderr
