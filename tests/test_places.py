"""Where things live (issue #31 point 6): the default store at a stable path in the user's data
directory, its schema upgraded in place, and breakpoints and saved bindings beside it there, not in
a cache; what an earlier version kept in the cache directory (a store per schema version,
`runs-v<N>.db`, and its settings) is moved there once, so its runs still list."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from conftest import rows
from test_store_schema import _as_schema
from writer_process import start_writer

from runtime.memory.checkpoint import SCHEMA_VERSION, open_store
from studio.places import default_db_path, default_store, old_cache_dir
from studio.session import DebugSession
from studio.session.persist import settings_dir

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = str(ROOT / "sample_trees/text_pipeline.py")
NODE = "TextPipeline/Normalize"


async def _recorded(db: Path, runs: int, breakpoint: bool = False) -> list[str]:
    """Runs of the text pipeline recorded into `db` as an earlier version's studio would (and a
    breakpoint it kept beside that store)."""
    made = []
    for _ in range(runs):
        session = DebugSession.load(PIPELINE, db=db)
        if breakpoint and not made:  # (kept: the next session loads it)
            session.toggle_node_breakpoint(NODE)
        await session.continue_()
        made.append(session.run_id)
        session.store.close()
    return made


def _listed(db: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "runtime.memory.checkpoint", "list", str(db)], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_an_older_versions_default_store_moves_to_the_data_directory_once_upgraded_with_every_run(tmp_path):
    old_dir = old_cache_dir()
    assert old_dir == tmp_path / "cache/jianmu-studio" and default_db_path() == tmp_path / "data/jianmu-studio/runs.db"
    older = await _recorded(old_dir / "runs-v3.db", 1)
    _as_schema(str(old_dir / "runs-v3.db"), 3)
    runs = await _recorded(old_dir / "runs-v4.db", 2, breakpoint=True)
    _as_schema(str(old_dir / "runs-v4.db"), 4)
    assert (old_dir / "runs-v4.studio").is_dir()

    session = DebugSession.load(PIPELINE)  # the default store: the newest older one, moved here and upgraded
    try:
        assert session.store.location == str(default_db_path())
        assert rows(session.store, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
        assert [run.run_id for run in session.store.runs()] == [*runs, session.run_id]
        assert [(bp.node, bp.enabled) for bp in session.breakpoints] == [(NODE, True)]  # its settings came along
        assert session.breakpoints_file.parent == default_db_path().with_suffix(".studio")
    finally:
        session.store.close()
    assert not (old_dir / "runs-v4.db").exists() and not (old_dir / "runs-v4.studio").exists()
    assert all(run_id in _listed(default_db_path()) for run_id in [*runs, session.run_id])
    assert older[0] in _listed(old_dir / "runs-v3.db")  # an older one still: left where it is

    again = await _recorded(old_dir / "runs-v4.db", 1)  # an earlier version run again later
    assert default_store() == default_db_path() and (old_dir / "runs-v4.db").exists()  # moved once, not again
    assert again[0] not in _listed(default_db_path())


async def test_an_older_store_another_process_has_open_is_used_where_it_is_then_moved(tmp_path):
    old = old_cache_dir() / f"runs-v{SCHEMA_VERSION}.db"
    old.parent.mkdir(parents=True)
    writer, run_id = start_writer(str(old))  # an earlier version's studio, still recording
    try:
        assert default_store() == old and old.exists() and not default_db_path().exists()
    finally:
        writer.kill()  # gone without closing: what it wrote is in the store's write-ahead log still
        writer.wait()
    assert Path(f"{old}-wal").stat().st_size > 0
    assert default_store() == default_db_path() and not old.exists() and not Path(f"{old}-wal").exists()
    store = open_store(default_db_path())
    try:
        (run,) = store.runs()
        assert run.run_id == run_id and run.checkpoints == 2  # nothing of the log was lost on the way
    finally:
        store.close()


def test_a_postgres_stores_settings_move_from_the_cache_to_the_data_directory_once(tmp_path):
    store = SimpleNamespace(location="postgresql://jianmu@db.example/runs")
    folder = settings_dir(store)
    assert folder.parent == tmp_path / "data/jianmu-studio" and folder.name.startswith("store-")
    old = old_cache_dir() / folder.name
    old.mkdir(parents=True)
    (old / "agent-1234.breakpoints.json").write_text("[]\n")
    assert settings_dir(store) == folder
    assert (folder / "agent-1234.breakpoints.json").read_text() == "[]\n" and not old.exists()
    old.mkdir()
    assert settings_dir(store) == folder and old.exists()  # once: a later one in the cache stays there


def test_settings_kept_in_the_cache_whose_store_is_gone_are_moved_beside_the_default_store(tmp_path):
    old = old_cache_dir() / f"runs-v{SCHEMA_VERSION}.studio"
    old.mkdir(parents=True)
    (old / "agent-1234.bindings.json").write_text("{}\n")
    assert default_store() == default_db_path()
    assert (default_db_path().with_suffix(".studio") / "agent-1234.bindings.json").read_text() == "{}\n"


def test_help_names_the_model_variables_and_where_things_really_live(tmp_path):
    def help_of(*argv: str) -> str:
        done = subprocess.run([sys.executable, "-m", "studio.cli", *argv, "--help"], capture_output=True, text=True,
                              cwd=ROOT, timeout=60, env={**os.environ, "COLUMNS": "200"})
        assert done.returncode == 0, done.stderr
        return done.stdout

    text = help_of()
    assert all(name in text for name in ("JIANMU_BASE_URL", "JIANMU_API_KEY", "JIANMU_MODEL", "OPENAI_BASE_URL",
                                         "JIANMU_DB", "JIANMU_CONFIG"))
    assert f"  {tmp_path / 'data/jianmu-studio/runs.db'}\n" in text and "in runs.studio/" in text
    assert f"  {tmp_path / 'config/jianmu-studio/jianmu.yaml'}\n" in text
    assert f"else {tmp_path / 'data/jianmu-studio/runs.db'})" in help_of("open")
