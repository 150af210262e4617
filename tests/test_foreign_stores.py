"""A database that holds another program's tables under our names is refused in one line saying it is
not a Jianmu store, never a driver's `column "value" does not exist`; nothing in it is changed."""

from __future__ import annotations

import sqlite3

import pytest

from runtime.memory.checkpoint import StoreError, open_store

FOREIGN_META = {
    "other columns": "CREATE TABLE meta(k TEXT, v TEXT)",
    "a key of another type": "CREATE TABLE meta(key INTEGER, value TEXT)",
}


@pytest.mark.parametrize("table", FOREIGN_META.values(), ids=FOREIGN_META.keys())
def test_another_programs_meta_table_in_postgresql(postgres_url, table):
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA jianmu")
        conn.execute(table.replace("TABLE meta", "TABLE jianmu.meta"))
    for create in (True, False):
        with pytest.raises(StoreError) as raised:
            open_store(postgres_url, create=create)
        assert str(raised.value).endswith(": not a checkpoint store (schema jianmu has a table meta of another "
                                          "program)")
        assert "s3cret" not in str(raised.value)
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'jianmu'").fetchone() == (1,)


def test_another_programs_meta_table_in_sqlite(tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE meta(k TEXT, v TEXT)")
    for create in (True, False):
        with pytest.raises(StoreError, match=r"other\.db: not a checkpoint store \(an SQLite database whose table "
                                             r"meta is another program's\)"):
            open_store(path, create=create)


@pytest.mark.parametrize("value", ["abc", "", "5.0", "9" * 5000])
def test_a_schema_version_that_is_no_number(tmp_path, value):
    path = tmp_path / "odd.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (value,))
    with pytest.raises(StoreError, match=r"odd\.db: (not a checkpoint store|written by a newer version)") as raised:
        open_store(path, create=False)
    assert len(str(raised.value)) < 200
