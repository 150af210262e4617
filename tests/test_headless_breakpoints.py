"""A headless `run` and the breakpoints the studio saved for its tree: it holds where the studio would,
and says so in one line; a breakpoints file it cannot read is said too (the run goes on without)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from studio.session import DebugSession

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = str(ROOT / "sample_trees/text_pipeline.py")


def run(db: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "studio.cli", "run", PIPELINE, "--db", str(db)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def saved_breakpoint(db: Path) -> Path:
    session = DebugSession.load(PIPELINE, db=str(db))
    assert session.toggle_node_breakpoint("TextPipeline/Count")
    session.store.close()
    return session.breakpoints_file


def test_a_run_held_at_a_saved_breakpoint_says_so(tmp_path):
    db = tmp_path / "runs.db"
    kept = saved_breakpoint(db)
    result = run(db)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"jianmu-studio: stopped at a breakpoint saved by the studio (breakpoint: before TextPipeline/Count, kept in "
        f"{kept}): remove it in the studio to run through"]


def test_a_broken_breakpoints_file_is_said_and_the_run_goes_on(tmp_path):
    db = tmp_path / "runs.db"
    kept = saved_breakpoint(db)
    kept.write_text('[{"kind": "node", "node": "TextPipeline/Count"')
    result = run(db)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [f"jianmu-studio: {kept}: not valid JSON (Expecting ',' delimiter, line 1); "
                                          "breakpoints not loaded"]
    kept.write_text('[{"kind": "node", "node": "TextPipeline/Gone"}]')
    result = run(db)
    assert result.returncode == 0, result.stderr
    assert len(result.stderr.splitlines()) == 1 and "not a breakpoint here" in result.stderr
