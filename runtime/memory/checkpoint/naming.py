"""One way to name a checkpoint store everywhere: a file (`runs.db`) or a PostgreSQL URL
(`postgresql://user:password@host/db`), given with `--db` or in `$JIANMU_DB`.

What a name shows in messages is `display_name`: a URL loses its password there. The
PostgreSQL driver is imported only when a URL is opened or shown (psycopg is ~13 MB of a
process that never uses it: the studio on a file store).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ...extras import MissingExtra, require
from ...urls import masked_url
from .sql_store import SQLCheckpointStore
from .sqlite_store import SQLiteCheckpointStore, ThreadedSQLiteCheckpointStore
from .store import StoreError

ENVIRONMENT = "JIANMU_DB"
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:/|file:")  # a scheme: sqlite:///, mysql://, file:runs.db (C:/ is a drive)


def is_postgres_url(name: str) -> bool:
    return name.startswith(("postgresql://", "postgres://"))


def chosen_store(given: str | Path | None, default: str | Path | None = None) -> str | None:
    """The store a command uses: the one it was given, else `$JIANMU_DB`, else `default`. A name given
    empty (`--db ''`, a variable that expanded to nothing) is refused, never read as "the default"."""
    if given is not None:
        _named(given)
    for name in (given, os.environ.get(ENVIRONMENT), default):
        if name:
            return str(name)
    return None


def _named(name: str | Path) -> str:
    """`name` as a string; `StoreError` when it is empty (SQLite would open a throw-away database) or
    a URL of another kind: `sqlite:///tmp/runs.db` (SQLAlchemy's form) was taken as a relative path,
    recording into a folder `sqlite:` made where the command ran, never in /tmp/runs.db."""
    if not str(name).strip():
        raise StoreError(f"an empty store name ({str(name)!r}): give FILE.db or postgresql://…")
    if isinstance(name, str) and _URL.match(name) and not is_postgres_url(name):
        raise StoreError(f"{masked_url(name)}: not a store address this version opens: give FILE.db (a path, "
                         "no scheme) or postgresql://…")
    return str(name)


def open_store(name: str | Path, *, create: bool = True, asynchronous: bool = False) -> SQLCheckpointStore:
    """The store `name` names; raises `StoreError` (one line, no password) when it cannot be opened.
    With `create=False` a store that does not exist yet is refused instead of created. With
    `asynchronous`, the store's writes are ones a runner awaits (many runs in one event loop): a
    PostgreSQL store's go over asyncio connections, an SQLite file's commit in a writer thread."""
    name = _named(name)
    if is_postgres_url(name):
        require("postgres", "psycopg")
        if asynchronous:
            from .postgres_async import AsyncPostgresCheckpointStore

            return AsyncPostgresCheckpointStore(name, create=create)
        from .postgres_store import PostgresCheckpointStore

        return PostgresCheckpointStore(name, create=create)
    if asynchronous:
        return ThreadedSQLiteCheckpointStore(name, create=create)
    return SQLiteCheckpointStore(name, create=create)


async def open_store_async(name: str | Path, *, create: bool = True) -> SQLCheckpointStore:
    """`open_store` for a run driven in an event loop: a PostgreSQL URL opens the asyncio store without
    ever holding the loop (`AsyncPostgresCheckpointStore.open`: a server that never answers costs the
    connect's timeout at most, and a cancellation ends the wait); a file opens as `open_store` opens it."""
    name = _named(name)
    if not is_postgres_url(name):
        return open_store(name, create=create)
    require("postgres", "psycopg")
    from .postgres_async import AsyncPostgresCheckpointStore

    return await AsyncPostgresCheckpointStore.open(name, create=create)


async def close_store_async(store: SQLCheckpointStore) -> None:
    """Close a store from its event loop: the asyncio PostgreSQL store over its own connections (`aclose`)."""
    aclose = getattr(store, "aclose", None)
    if aclose is not None:
        await aclose()
    else:
        store.close()


def display_name(name: str | Path) -> str:
    if not is_postgres_url(str(name)):
        return str(name)
    try:
        require("postgres", "psycopg")
    except MissingExtra:  # no driver to read the URL with: as given, its password masked
        return masked_url(str(name))
    from .postgres_store import redacted

    return redacted(str(name))


__all__ = ["ENVIRONMENT", "chosen_store", "close_store_async", "display_name", "is_postgres_url", "open_store",
           "open_store_async"]
