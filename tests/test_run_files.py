"""Run files: one run in one file (a store of its own), checked, opened and imported anywhere."""

from __future__ import annotations

import subprocess
import sys

import pytest
from check_fixtures import cli, export, offline, record, record_with_fork, write_tree  # noqa: F401

from runtime.check import check_run
from runtime.check.recording import tree_for_run
from runtime.memory.checkpoint import open_store
from runtime.memory.checkpoint.runfile import export_run_file, import_run_file, is_run_file


def _same_run(a, b, run_id: str) -> None:
    """Every checkpoint, event and recorded call of the run reads the same from both stores."""
    fields = ("tick", "time", "status", "source", "branch", "statuses", "resume", "state", "bindings", "wake",
              "event_position", "returns")
    old, new = [a.get(i.id) for i in a.list(run_id)], [b.get(i.id) for i in b.list(run_id)]
    assert [[getattr(cp, f) for f in fields] for cp in old] == [[getattr(cp, f) for f in fields] for cp in new]
    assert [old.index(next(c for c in old if c.id == cp.parent_id)) if cp.parent_id else None for cp in old] == \
        [new.index(next(c for c in new if c.id == cp.parent_id)) if cp.parent_id else None for cp in new]
    assert a.events(run_id) == b.events(run_id)

    def calls(store):
        out = []
        for call in store.io_records(run_id):
            request = dict(call.request)
            if "messages" in request:
                request["messages"] = store.read_list(*request["messages"][1:])
            out.append((call.branch, call.kind, call.node, call.round, call.index, request, call.response, call.error))
        return out

    assert calls(a) == calls(b) and calls(a)
    assert a.branches(run_id) == b.branches(run_id)
    assert [r for r in a.runs() if r.run_id == run_id] == [r for r in b.runs() if r.run_id == run_id]


async def test_a_run_file_holds_the_whole_run_and_every_store_command_reads_it(tmp_path):
    db = tmp_path / "runs.db"
    run_id = await record_with_fork(write_tree(tmp_path), db)
    out = tmp_path / "bees.jianmu"
    result = cli("export", str(db), "--run", run_id, "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"run {run_id} (22 checkpoints; branches main, fork-1) written to {out}\n"
    assert is_run_file(out) and not is_run_file(db)
    source, copy = open_store(db, create=False), open_store(out, create=False)
    try:
        _same_run(source, copy, run_id)
    finally:
        source.close()
        copy.close()
    listed = subprocess.run([sys.executable, "-m", "runtime.memory.checkpoint", "list", str(out)],
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and listed.stdout.startswith(f"{run_id}     22 checkpoints  SUCCESS")
    shown = subprocess.run([sys.executable, "-m", "runtime.memory.checkpoint", "show", str(out), "1"],
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and '"source": "input"' in shown.stdout
    checked = cli("check", str(out), "--branch", "fork-1")
    assert checked.returncode == 0, checked.stdout + checked.stderr


async def test_a_run_file_is_checked_after_its_store_is_deleted_and_its_tree_moved(tmp_path):
    db = tmp_path / "runs.db"
    tree = write_tree(tmp_path)
    run_id = await record(tree, db)
    out = tmp_path / "run.jianmu"
    export(db, run_id, out)
    for path in tmp_path.glob("runs.db*"):
        path.unlink()
    tree.rename(tmp_path / "moved.py")
    result = cli("check", str(out))
    assert result.returncode == 0, result.stderr
    note, line = result.stdout.splitlines()
    assert note.startswith(f"note: {tree} is gone; checking with the tree text kept with the run (tree.py, sha256 ")
    assert line == f"run {run_id}: ok, 10 ticks match the recording (tree.py (as recorded))"
    changed = cli("check", str(out), "--tree", str(write_tree(tmp_path, "fixed.py", "node")))
    assert changed.returncode == 1
    assert changed.stdout.splitlines()[0].startswith(f"note: the tree given {tmp_path / 'fixed.py'} differs from "
                                                     "the tree the run was recorded with (sha256 ")
    assert "node Pipeline/tidy: state key 'topic' differs" in changed.stdout


async def test_the_studio_replays_a_run_file_whose_tree_has_moved(tmp_path):
    from studio.session import DebugSession, RunState

    db = tmp_path / "runs.db"
    tree = write_tree(tmp_path)
    run_id = await record(tree, db)
    out = tmp_path / "run.jianmu"
    export(db, run_id, out)
    tree.unlink()
    session = DebugSession.open_recorded(str(out))
    try:
        assert session.recorded_run == run_id and session.run_state == RunState.RECORDED
        assert session.loaded.path.name == "tree.py" and session.viewing.tick == 10
        assert session.node_status("Pipeline/tidy").value == "SUCCESS"
    finally:
        session.store.close()


async def test_secrets_never_travel_in_a_run_file(tmp_path, monkeypatch):
    key = "sk-test-0123456789abcdefSECRET"
    tree = tmp_path / "leaky.py"
    tree.write_text(write_tree(tmp_path).read_text().replace(
        'return f"noted: {text}"', 'import os\n    return f"noted: {text} with " + os.environ["JIANMU_API_KEY"]'))
    monkeypatch.setenv("JIANMU_API_KEY", key)
    db = tmp_path / "runs.db"
    run_id = await record(tree, db)
    assert key.encode() in b"".join(p.read_bytes() for p in tmp_path.glob("runs.db*"))  # a tool echoed it
    out = tmp_path / "run.jianmu"
    export(db, run_id, out)
    data = out.read_bytes()
    assert key.encode() not in data and key[:12].encode() not in data
    copy = open_store(out, create=False)
    try:
        observations = [m["content"] for m in copy.get(copy.latest(run_id).id).state[""]["messages"]
                        if m["role"] == "tool"]
        assert observations[0] == "noted: bees with ***"
    finally:
        copy.close()


async def test_import_puts_a_run_file_into_a_store_of_either_kind(tmp_path, store_name):
    db = tmp_path / "runs.db"
    run_id = await record(write_tree(tmp_path), db)
    out = tmp_path / "run.jianmu"
    store = open_store(db, create=False)
    export_run_file(store, run_id, out)
    target = open_store(store_name)
    try:
        assert import_run_file(out, target) == [run_id]
        _same_run(store, target, run_id)
        choice = tree_for_run(target, run_id)
        assert (await check_run(target, run_id, choice.build)).ok
        with pytest.raises(OSError, match=f"already holds run {run_id}"):
            import_run_file(out, target)
    finally:
        target.close()
        store.close()


async def test_bad_input_to_export_and_import_is_one_line(tmp_path):
    db = tmp_path / "runs.db"
    run_id = await record(write_tree(tmp_path), db)
    out = tmp_path / "run.jianmu"
    cases = [
        (["export", str(db), "--run", "nope", "-o", str(out)], f"{db}: no run 'nope'"),
        (["export", str(db), "--run", run_id, "-o", str(db)], f"{db}: is the checkpoint store ({db}); choose another "
                                                                "output file"),
        (["export", str(db), "--run", run_id, "-o", str(tmp_path / "tree.py")], f"{tmp_path / 'tree.py'}: refusing "
                                                                                  "to write output over a source file (.py)"),
        (["import", str(db), "--into", str(tmp_path / "other.db")], f"{db}: not a run file (export one with "
                                                                     "`jianmu-studio export STORE --run ID -o FILE.jianmu`)"),
        (["import", str(tmp_path / "gone.jianmu")], f"{tmp_path / 'gone.jianmu'}: no such run file"),
    ]
    for args, expected in cases:
        result = cli(*args)
        assert (result.returncode, result.stderr) == (2, f"jianmu-studio: {expected}\n"), args
    assert cli("export", str(db), "--run", run_id, "-o", str(out)).returncode == 0
    again = cli("export", str(db), "--run", run_id, "-o", str(out))
    assert (again.returncode, again.stderr) == (2, f"jianmu-studio: {out}: already exists (pass --force to overwrite it)\n")
    assert cli("export", str(db), "--run", run_id, "-o", str(out), "--force").returncode == 0
    assert not list(tmp_path.glob(".run.jianmu.*"))  # nothing half-written left beside it
