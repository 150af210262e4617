"""One way to name a checkpoint store everywhere: a file (`runs.db`) or a PostgreSQL URL
(`postgresql://user:password@host/db`), given with `--db` or in `$JIANMU_DB`.

What a name shows in messages is `display_name`: a URL loses its password there. The
PostgreSQL driver is imported only when a URL is opened or shown (psycopg is ~13 MB of a
process that never uses it: the studio on a file store).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from ...extras import MissingExtra, require
from .sql_store import SQLCheckpointStore
from .sqlite_store import SQLiteCheckpointStore

ENVIRONMENT = "JIANMU_DB"


def is_postgres_url(name: str) -> bool:
    return name.startswith(("postgresql://", "postgres://"))


def chosen_store(given: str | Path | None, default: str | Path | None = None) -> str | None:
    """The store a command uses: the one it was given, else `$JIANMU_DB`, else `default`."""
    for name in (given, os.environ.get(ENVIRONMENT), default):
        if name:
            return str(name)
    return None


def open_store(name: str | Path, *, create: bool = True, asynchronous: bool = False) -> SQLCheckpointStore:
    """The store `name` names; raises `StoreError` (one line, no password) when it cannot be opened.
    With `create=False` a store that does not exist yet is refused instead of created. With
    `asynchronous`, a PostgreSQL store is the one whose writes a runner awaits (many runs in one
    event loop); an SQLite file's saves are short synchronous commits either way."""
    name = str(name)
    if is_postgres_url(name):
        require("postgres", "psycopg")
        if asynchronous:
            from .postgres_async import AsyncPostgresCheckpointStore

            return AsyncPostgresCheckpointStore(name, create=create)
        from .postgres_store import PostgresCheckpointStore

        return PostgresCheckpointStore(name, create=create)
    return SQLiteCheckpointStore(name, create=create)


def display_name(name: str | Path) -> str:
    if not is_postgres_url(str(name)):
        return str(name)
    try:
        require("postgres", "psycopg")
    except MissingExtra:  # no driver to read the URL with: its plain parts, still without the password
        parts = urlsplit(str(name))
        user = f"{parts.username}@" if parts.username else ""
        return f"postgresql://{user}{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}"
    from .postgres_store import redacted

    return redacted(str(name))


__all__ = ["ENVIRONMENT", "chosen_store", "display_name", "is_postgres_url", "open_store"]
