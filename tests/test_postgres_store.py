"""The PostgreSQL store on a real (throw-away) server: its schema, bad URLs, many writers at once,
and a writer that loses its connection."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import textwrap
import time

import postgres_server
import psycopg
import pytest
from postgres_server import PASSWORD

from runtime.memory.checkpoint import SCHEMA_VERSION, PostgresCheckpointStore, StoreError, open_store

TESTS = os.path.dirname(__file__)


def _sql(url: str, sql: str, params: tuple = ()) -> list[tuple]:
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(sql, params)
        return cursor.fetchall() if cursor.description else []


def test_the_schema_is_created_on_first_use_in_its_own_namespace(postgres_url):
    _sql(postgres_url, "CREATE TABLE items(mine TEXT)")  # the user's own table of the same name stays theirs
    store = open_store(postgres_url)
    assert isinstance(store, PostgresCheckpointStore)
    store.close()
    tables = {row[0] for row in _sql(postgres_url, "SELECT tablename FROM pg_tables WHERE schemaname = 'jianmu'")}
    assert tables == {"meta", "checkpoints", "items", "chunks", "events", "io", "writers"}
    assert _sql(postgres_url, "SELECT value FROM jianmu.meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    assert _sql(postgres_url, "SELECT count(*) FROM public.items") == [(0,)]


@pytest.mark.parametrize("version, message", [
    ("99", f"written by a newer version (schema 99; this version reads up to {SCHEMA_VERSION})"),
    ("1", f"written by an older version (schema 1; this version reads schema {SCHEMA_VERSION})"),
])
def test_another_schema_version_is_refused_in_one_line_and_left_untouched(postgres_url, version, message):
    open_store(postgres_url).close()
    _sql(postgres_url, "UPDATE jianmu.meta SET value = %s WHERE key = 'schema_version'", (version,))
    with pytest.raises(StoreError) as caught:
        open_store(postgres_url)
    text = str(caught.value)
    assert "\n" not in text and PASSWORD not in text
    assert text.startswith(re.sub(r":[^:@/]+@", "@", postgres_url) + ": " + message)
    assert _sql(postgres_url, "SELECT value FROM jianmu.meta WHERE key = 'schema_version'") == [(version,)]


def test_a_schema_of_someone_elses_tables_is_refused(postgres_url):
    _sql(postgres_url, "CREATE SCHEMA jianmu; CREATE TABLE jianmu.other(x int)")
    with pytest.raises(StoreError, match=r"not a checkpoint store \(schema jianmu holds other tables\)"):
        open_store(postgres_url)


def test_reading_a_database_without_a_store_creates_nothing(postgres_url):
    with pytest.raises(StoreError, match=r"/t\d+: no checkpoint store in this database$"):
        open_store(postgres_url, create=False)
    assert _sql(postgres_url, "SELECT count(*) FROM pg_tables WHERE schemaname = 'jianmu'") == [(0,)]


def test_a_wrong_password_or_no_server_is_one_line_without_the_password(postgres_server):
    wrong = postgres_server.url().replace(PASSWORD, "not-the-" + PASSWORD)
    with pytest.raises(StoreError) as caught:
        open_store(wrong)
    text = str(caught.value)
    assert text.startswith(f"postgresql://jianmu@127.0.0.1:{postgres_server.port}/postgres: cannot connect (")
    assert "password authentication failed" in text and PASSWORD not in text and "\n" not in text

    port = _port_nothing_listens_on()
    with pytest.raises(StoreError) as caught:
        open_store(f"postgresql://jianmu:{PASSWORD}@127.0.0.1:{port}/db")
    assert str(caught.value).startswith(f"postgresql://jianmu@127.0.0.1:{port}/db: cannot connect (")
    assert PASSWORD not in str(caught.value)


def test_a_urls_own_options_are_kept_beside_the_stores_search_path(postgres_url, monkeypatch):
    open_store(postgres_url).close()
    for url, timeout in ((postgres_url + "?options=-c%20lock_timeout%3D4321", "4321ms"), (postgres_url, "1234ms")):
        monkeypatch.setenv("PGOPTIONS", "-c lock_timeout=1234")  # what libpq takes when the URL names none
        store = open_store(url)
        assert store._conn.execute("SHOW lock_timeout").fetchone() == (timeout,)
        assert store.list() == []  # the store's tables found: its schema is on the search path
        store.close()


def test_a_store_over_the_servers_unix_socket_records_and_restores(postgres_server):
    from test_checkpoint_store import Chat, chat_tree

    from runtime.engine.runner import ReactiveRunner

    url = postgres_server.new_database(socket=True)
    store = open_store(url)
    assert store.location.startswith(f"postgresql://jianmu@{postgres_server.root}:") and PASSWORD not in store.location
    runner = ReactiveRunner(chat_tree(5), Chat, checkpointer=store)
    asyncio.run(runner.run())
    store.close()
    store = open_store(url, create=False)
    last = store.latest(runner.run_id)
    assert store.get(last.id).state[""]["messages"] == [f"message {n}" for n in range(1, 6)]
    store.close()


def _port_nothing_listens_on() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


_WRITER = textwrap.dedent("""
    import asyncio, os, sys, time
    sys.path.insert(0, {tests!r})
    from test_checkpoint_store import Chat, chat_tree
    from runtime.engine.runner import ReactiveRunner
    from runtime.memory.checkpoint import open_store

    store = open_store(sys.argv[1])
    while not os.path.exists(sys.argv[2]):  # every writer starts at the same moment
        time.sleep(0.01)
    runner = ReactiveRunner(chat_tree(int(sys.argv[3])), Chat, checkpointer=store)
    asyncio.run(runner.run())
    print(runner.run_id, os.getpid(), flush=True)
""")

WRITERS, TURNS = 10, 40


def test_ten_processes_record_at_once_and_nothing_is_lost(store_name, tmp_path):
    go = tmp_path / "go"
    code = _WRITER.format(tests=TESTS)
    children = [subprocess.Popen([sys.executable, "-c", code, store_name, str(go), str(TURNS)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(WRITERS)]
    time.sleep(0.5)
    go.touch()
    finished = {}
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        run_id, pid = out.split()
        finished[run_id] = int(pid)
    store = open_store(store_name)
    runs = {run.run_id: run for run in store.runs()}
    assert runs.keys() == finished.keys()
    for run_id, pid in finished.items():
        infos = store.list(run_id)
        ticks = [info.tick for info in infos]
        assert ticks == list(range(len(ticks))) and infos[-1].status == "SUCCESS"
        final = store.get(infos[-1].id).state[""]
        assert final["messages"] == [f"message {i}" for i in range(1, TURNS + 1)]
        events = [event for _, event in store.events(run_id)]
        assert [e.seq for e in events] == sorted({e.seq for e in events}) and events[-1].type == "run.completed"
        assert runs[run_id].pid == pid and runs[run_id].ended == "completed"
    total = sum(run.checkpoints for run in runs.values())
    assert total == sum(len(store.list(run_id)) for run_id in finished) >= WRITERS * (TURNS + 1)
    store.close()


_FOREVER = textwrap.dedent("""
    import asyncio, sys
    sys.path.insert(0, {tests!r})
    from test_checkpoint_store import Chat, chat_tree
    from runtime.engine.runner import ReactiveRunner
    from runtime.memory.checkpoint import open_store

    runner = ReactiveRunner(chat_tree(10**9), Chat, checkpointer=open_store(sys.argv[1]))
    asyncio.run(runner.run())
    print("finished as if nothing happened")
""")


def test_a_writer_that_loses_its_connection_stops_with_a_clear_error(postgres_url):
    child = subprocess.Popen([sys.executable, "-c", _FOREVER.format(tests=TESTS), postgres_url],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        time.sleep(0.2)
        found = _sql(postgres_url, "SELECT to_regclass('jianmu.checkpoints')")
        if found[0][0] and _sql(postgres_url, "SELECT count(*) FROM jianmu.checkpoints")[0][0] > 50:
            break
    _sql(postgres_url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")
    out, err = child.communicate(timeout=30)
    assert child.returncode != 0 and "finished" not in out
    last = err.strip().splitlines()[-1]
    assert "StoreError: checkpoint of tick" in last and "postgresql://jianmu@127.0.0.1:" in last
    assert "lost the connection to the PostgreSQL server" in last
    assert PASSWORD not in err


_ENDLESS_TREE = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from test_checkpoint_store import Chat, chat_tree
    from runtime import Agent

    def build():
        return Agent(chat_tree(10**9), state_schema=Chat)
""")


def _run_until_recording(url: str, tree, tmp_path) -> subprocess.Popen:
    """`jianmu-studio run` of an endless tree into `url`, once it has written some checkpoints."""
    tree.write_text(_ENDLESS_TREE.format(tests=TESTS))
    child = subprocess.Popen([sys.executable, "-m", "studio.cli", "run", str(tree), "--db", url],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    for _ in range(300):
        time.sleep(0.1)
        if _sql(url, "SELECT to_regclass('jianmu.checkpoints')")[0][0] and \
                _sql(url, "SELECT count(*) FROM jianmu.checkpoints")[0][0] > 20:
            return child
    child.kill()
    raise AssertionError(f"the run never recorded: {child.communicate()[1]}")


def _stopped_lines(child: subprocess.Popen) -> list[str]:
    out, err = child.communicate(timeout=60)
    assert child.returncode == 1 and "SUCCESS" not in out, err
    assert "Traceback" not in err and PASSWORD not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 2, err
    assert re.fullmatch(r"jianmu-studio: the run stopped: StoreError: checkpoint of tick \d+ not written: "
                        r"postgresql://jianmu@127\.0\.0\.1:\d+/\w+: lost the connection to the PostgreSQL "
                        r"server \(.+\)", lines[0]), lines[0]
    return lines


def test_a_cli_run_whose_connection_is_killed_stops_and_records_that_it_failed(postgres_url, tmp_path):
    child = _run_until_recording(postgres_url, tmp_path / "endless.py", tmp_path)
    _sql(postgres_url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")
    lines = _stopped_lines(child)
    assert lines[1] == f"jianmu-studio: its end is recorded in {re.sub(r':[^:@/]+@', '@', postgres_url)} " \
                       "(status ERROR)"  # connected again for that
    store = open_store(postgres_url)
    (run,) = store.runs()
    infos = store.list(run.run_id)
    assert run.ended == "failed" and infos[-1].status == "ERROR"
    assert [info.tick for info in infos[:-1]] == list(range(len(infos) - 1))  # every tick before, intact
    store.close()


def test_a_cli_run_whose_server_stops_says_so_and_fails(tmp_path):
    if reason := postgres_server.why_not():
        pytest.skip(reason)
    server = postgres_server.PostgresServer().start()  # its own: this test stops it
    try:
        url = server.new_database()
        child = _run_until_recording(url, tmp_path / "endless.py", tmp_path)
        server.halt()
        lines = _stopped_lines(child)
        assert lines[1].startswith("jianmu-studio: its end could not be recorded either: checkpoint of tick ")
        assert f"postgresql://jianmu@127.0.0.1:{server.port}/t1: cannot connect (" in lines[1]
    finally:
        server.stop()


def test_without_postgresql_binaries_the_tests_skip_saying_how_to_get_them(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JIANMU_PG_BIN", raising=False)
    monkeypatch.setattr(postgres_server, "DEBIAN_DIRS", str(tmp_path / "*" / "bin"))
    reason = postgres_server.why_not()
    assert reason is not None and "apt-get install postgresql" in reason and "$JIANMU_PG_BIN" in reason


def test_a_writer_whose_items_another_stored_first_learns_their_ids_in_the_insert_s_round_trip(postgres_url, monkeypatch):
    from runtime.memory.checkpoint import IORecord
    from runtime.memory.checkpoint.answering import BoundedConnection

    answer = {"content": "the same long answer a repeated workload records in every process " * 4}
    first, second = open_store(postgres_url), open_store(postgres_url)
    first.put_io(IORecord("r1", "main", "model", "Ask", 0, 0, {"messages": []}, answer))
    sent, execute = [], BoundedConnection.execute

    def counted(self, query, params=None, **kwargs):
        sent.append(str(query))
        return execute(self, query, params, **kwargs)

    monkeypatch.setattr(BoundedConnection, "execute", counted)
    second.put_io(IORecord("r2", "main", "model", "Ask", 0, 0, {"messages": []}, answer))
    assert len(sent) == 2  # the item's insert (it was stored: its id answered too), the call's row
    assert second.get_io("r2", "model", "Ask", 0, 0).response == answer
    assert _sql(postgres_url, "SELECT count(*) FROM jianmu.items") == [(1,)]
    first.close()
    second.close()
