"""The SQL stores' schema: a store written with schema 3, 4 or 5 is upgraded on open (only its indexes
change) and reads back the same; read-only, it is read as it is; PostgreSQL's list chunks, no longer
unique by key, are checked on reading; a tool's result and the message carrying it are stored once."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import rows, tamper
from test_reliability_inputs import _read_only

from runtime import ModelClient, ReActConfig, ReActState, ScriptedProvider, create_react_node, human, tool
from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import SCHEMA_VERSION, StoreError, open_store

ROOT = Path(__file__).resolve().parents[1]

# What schema 4 had that 5 has not (SQLite's run index; 5 adds a record form old rows do not use)
SCHEMA_4 = {
    "sqlite": "DROP INDEX checkpoints_run; CREATE INDEX checkpoints_run ON checkpoints(run_id, branch, id)",
    "postgres": "",
}
# What schema 3 had that 5 has not (its indexes; the tables and rows are the same)
SCHEMA_3 = {
    "sqlite": SCHEMA_4["sqlite"] + """;
        CREATE INDEX checkpoints_base ON checkpoints(base_id, id);
        DROP INDEX io_call; CREATE INDEX io_call ON io(run_id, kind, node, round, idx)""",
    "postgres": """
        CREATE INDEX checkpoints_base ON checkpoints(base_id, id);
        DROP INDEX checkpoints_run; CREATE INDEX checkpoints_run ON checkpoints(run_id, branch, id);
        ALTER TABLE checkpoints ALTER data SET STORAGE EXTENDED;
        DROP INDEX chunks_list; ALTER TABLE chunks ADD PRIMARY KEY (list_id, start);
        DROP INDEX events_run; CREATE INDEX events_run ON events(run_id, id);
        ALTER TABLE events ADD PRIMARY KEY (id); ALTER TABLE io ADD PRIMARY KEY (id);
        DROP INDEX io_call; CREATE INDEX io_call ON io(run_id, kind, node, round, idx)""",
}
# What schema 5 had that 6 has not: nothing (6 adds a record form, packed statuses: tests/test_packed_statuses.py)
SCHEMA_5 = {"sqlite": "", "postgres": ""}
OLDER = {3: SCHEMA_3, 4: SCHEMA_4, 5: SCHEMA_5}


def _observation(round: int) -> str:
    return f"observation {round}: " + "word " * 60


@tool
def lookup(round: int) -> str:
    """A long observation (an item of its own)."""
    return _observation(round)


async def _recorded(name: str) -> str:
    """A ReAct run of 5 rounds (checkpoints, list chunks, items, events, recorded model and tool calls)."""
    steps = [{"content": f"thinking {i} " + "about it " * 30, "tool_calls": [{"name": "lookup", "arguments": {"round": i}}]}
             for i in range(5)]
    node = create_react_node(name="Agent", model_client=ModelClient.resolve(ScriptedProvider([*steps, {"content": "done"}])),
                             tools=[lookup], config=ReActConfig(max_iterations=10))
    store = open_store(name)
    runner = ReactiveRunner(node, ReActState, checkpointer=store)
    await runner.run(input_data={"messages": [human("Look it up.")]})
    store.close()
    return runner.run_id


def _everything(name: str, run_id: str) -> list:
    """All a store gives back of the run, through a store just opened."""
    store = open_store(name)
    try:
        infos = store.list(run_id)
        calls = rows(store, "SELECT kind, node, round, idx FROM io ORDER BY id")
        return [infos, [store.get(info.id) for info in infos], store.events(run_id), store.runs(),
                [store.get_io(run_id, *call) for call in calls], len(calls)]
    finally:
        store.close()


def _schema(store) -> tuple[str, list]:
    """The store's schema version and its indexes (and PostgreSQL's checkpoint data storage)."""
    version = rows(store, "SELECT value FROM meta WHERE key = 'schema_version'")[0][0]
    if store.location.startswith("postgresql://"):
        return version, sorted(rows(store, "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'jianmu'")
                               + rows(store, "SELECT attname, attstorage::text FROM pg_attribute "
                                             "WHERE attrelid = 'jianmu.checkpoints'::regclass AND attname = 'data'"))
    return version, sorted(rows(store, "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"))


def _opened_schema(name: str) -> tuple[str, list]:
    store = open_store(name)
    try:
        return _schema(store)
    finally:
        store.close()


def _as_schema(name: str, version: int) -> tuple[str, list]:
    """Give a store an older schema's indexes and version, as that version wrote them; its schema then."""
    store = open_store(name)
    try:
        for statement in filter(str.strip, OLDER[version]["postgres" if name.startswith("postgresql://") else "sqlite"].split(";")):
            tamper(store, statement)
        tamper(store, f"UPDATE meta SET value = '{version}' WHERE key = 'schema_version'")
        return _schema(store)
    finally:
        store.close()


@pytest.mark.parametrize("version", sorted(OLDER))
async def test_an_older_store_is_upgraded_on_open_and_reads_back_the_same(store_name, tmp_path, request, version):
    run_id = await _recorded(store_name)
    before = _everything(store_name, run_id)
    assert before[-1] > 0 and len(before[0]) > 10
    fresh = request.getfixturevalue("postgres_url") if store_name.startswith("postgresql://") else str(tmp_path / "new.db")
    fresh_schema = _opened_schema(fresh)
    assert fresh_schema[0] == str(SCHEMA_VERSION)
    old_schema = _as_schema(store_name, version)
    assert old_schema[0] == str(version)
    assert (old_schema[1] != fresh_schema[1]) == bool(OLDER[version]["postgres" if store_name.startswith("postgresql://") else "sqlite"])
    assert _everything(store_name, run_id) == before
    assert _opened_schema(store_name) == fresh_schema


async def test_a_schema_3_store_opened_read_only_is_read_as_it_is(tmp_path):
    path = tmp_path / "old.db"
    run_id = await _recorded(str(path))
    _as_schema(str(path), 3)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode = DELETE")  # one file: nothing besides it to write
    conn.close()
    before = path.read_bytes()
    path.chmod(0o444)
    tmp_path.chmod(0o555)
    try:
        shown = subprocess.run(_read_only(sys.executable, "-m", "runtime.memory.checkpoint", "show", str(path), "3"),
                               capture_output=True, text=True, cwd=ROOT, timeout=120)
    finally:
        tmp_path.chmod(0o755)
        path.chmod(0o644)
    assert shown.returncode == 0 and '"id": 3' in shown.stdout and run_id in shown.stdout, shown.stderr
    assert path.read_bytes() == before
    assert sqlite3.connect(path).execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("3",)


async def test_a_list_chunk_stored_twice_or_lost_is_a_one_line_store_error(store_name):
    run_id = await _recorded(store_name)
    store = open_store(store_name)
    try:
        last = store.list(run_id)[-1]
        (list_id, length), = [entry for values in store.get(last.id, read_lists=False).lists.values()
                              for entry in values.values()]
        if store_name.startswith("postgresql://"):  # no key stops it there
            tamper(store, "INSERT INTO chunks SELECT list_id, start, items FROM chunks WHERE list_id = ? AND start = 0",
                   (list_id,))
        else:  # the first chunk lost: the next does not follow on from nothing
            tamper(store, "DELETE FROM chunks WHERE list_id = ? AND start = 0", (list_id,))
    finally:
        store.close()
    store = open_store(store_name)
    try:
        with pytest.raises(StoreError, match=rf"stored list {list_id} is corrupt \(a chunk at \d+ after \d+ items\)") as raised:
            store.get(last.id)
        assert "\n" not in str(raised.value)
    finally:
        store.close()


def _spliced_items(store) -> list[tuple[int, str]]:
    """Items stored as another item spliced into their text (schema 4)."""
    column = "text" if store.location.startswith("postgresql://") else "data"
    return rows(store, f"SELECT id, {column} FROM items WHERE substr({column}, 1, 1) = ?", ("\x01",))


async def test_a_tool_result_and_the_message_that_carries_it_are_stored_once(store_name):
    run_id = await _recorded(store_name)
    store = open_store(store_name)
    try:
        assert len(_spliced_items(store)) == 5  # one per tool call: its message points at its result
        last = store.list(run_id)[-1]
        messages = store.get(last.id).state[""]["messages"]
        assert [m["content"] for m in messages if m["role"] == "tool"] == [_observation(i) for i in range(5)]
        calls = rows(store, "SELECT node, round, idx FROM io WHERE kind = 'tool' ORDER BY id")
        assert [store.get_io(run_id, "tool", *call).response for call in calls] == [_observation(i) for i in range(5)]
    finally:
        store.close()


@pytest.mark.parametrize("damage, message", [
    ("\x01999999\x01{\x01}", "recorded item 999999 is missing"),
    ("\x01not a number", "corrupt checkpoint store"),
])
async def test_a_damaged_spliced_item_is_a_one_line_store_error(store_name, damage, message):
    run_id = await _recorded(store_name)
    store = open_store(store_name)
    try:
        column = "text" if store_name.startswith("postgresql://") else "data"
        tamper(store, f"UPDATE items SET {column} = ? WHERE id = ?", (damage, _spliced_items(store)[0][0]))
    finally:
        store.close()
    store = open_store(store_name)
    try:
        with pytest.raises(StoreError, match=message) as raised:
            store.get(store.list(run_id)[-1].id)
        assert "\n" not in str(raised.value)
    finally:
        store.close()
