"""Traces as JSON Lines, and the `python -m runtime.memory.checkpoint` command line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from test_checkpoint_store import Chat, chat_tree

from runtime.engine.events import RuntimeEventBus
from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import (
    FIELDS_OF_A_TRACE_LINE,
    TRACE_SCHEMA_VERSION,
    SQLiteCheckpointStore,
    TraceError,
    export_run,
    read_trace,
)
from runtime.memory.checkpoint.__main__ import main


@pytest.fixture
def recorded(tmp_path):
    import asyncio

    path = tmp_path / "run.db"

    async def go():
        store = SQLiteCheckpointStore(path)
        runner = ReactiveRunner(chat_tree(3), Chat, checkpointer=store)
        seen = []
        runner.event_bus.subscribe(seen.append)
        await runner.run()
        store.close()
        return runner.run_id, seen

    run_id, seen = asyncio.run(go())
    return path, run_id, seen


def test_a_run_exports_as_json_lines_and_imports_back(recorded, tmp_path):
    path, run_id, seen = recorded
    store = SQLiteCheckpointStore(path)
    out = tmp_path / "trace.jsonl"
    with out.open("w") as f:
        assert export_run(store, run_id, f) == len(seen)
    store.close()
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(tuple(line) == FIELDS_OF_A_TRACE_LINE for line in lines)
    assert {line["schema_version"] for line in lines} == {TRACE_SCHEMA_VERSION}
    back = read_trace(out)
    assert [event for _, event in back] == seen  # every event, exactly as published
    bus = RuntimeEventBus()
    for _, event in back:  # a studio can feed an imported trace to its views
        bus.emit(event)
    assert bus.history[-1].type == "run.completed"


def test_a_bad_trace_line_is_named(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"schema_version": 1, "seq": 1, "type": "log", "time": 1.0}\nnot json\n')
    with pytest.raises(TraceError, match=r"bad\.jsonl line 2: not a trace event"):
        read_trace(path)
    path.write_text('{"schema_version": 7, "seq": 1, "type": "log", "time": 1.0}\n')
    with pytest.raises(TraceError, match=r"bad\.jsonl line 1: schema_version 7 is newer"):
        read_trace(path)


def test_cli_lists_exports_and_shows(recorded, tmp_path, capsys):
    path, run_id, seen = recorded
    assert main(["list", str(path)]) == 0
    assert run_id in capsys.readouterr().out
    out = tmp_path / "t.jsonl"
    assert main(["export", str(path), "--run", run_id, "-o", str(out)]) == 0
    assert len(out.read_text().splitlines()) == len(seen)
    assert main(["show", str(path), "2"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["id"] == 2 and shown["tick"] == 1 and "loop" in shown["statuses"]


@pytest.mark.parametrize("args, message", [
    (["show", "{db}", "999"], "unknown checkpoint id 999 in"),
    (["export", "{db}", "--run", "nope"], "no run 'nope' in"),
    (["list", "{missing}"], "missing.db: no such checkpoint store"),
    (["list", "{text}"], "notes.txt: not a checkpoint store"),
])
def test_cli_bad_input_gives_one_line_and_exit_2(recorded, tmp_path, args, message):
    path, _, _ = recorded
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    args = [a.format(db=path, missing=tmp_path / "missing.db", text=text) for a in args]
    done = subprocess.run([sys.executable, "-m", "runtime.memory.checkpoint", *args], capture_output=True,
                          text=True)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "missing.db").exists()
    assert text.read_text() == "hello"
