"""Every test records into its own store: the studio's default store and settings live under the
user's data directory, its config file in the user's config directory, and an earlier version's in
the cache directory: each test points all three at temporary folders of its own.

Store contract tests run once per kind of store: `store` is an open store in memory, in an
SQLite file or in a database of a throw-away PostgreSQL server (`postgres_server.py`, which
skips with the reason when this machine cannot start one), synchronous or asyncio; `store_name` names a new
persistent one (a file or a URL) for tests that reopen it. `server` is a loopback
OpenAI-compatible server (`openai_server.py`) for the model client's tests."""

import pytest
from openai_server import FakeServer
from postgres_server import PostgresServer, why_not

from runtime.config import reset_config_cache
from runtime.memory.checkpoint import InMemoryCheckpointStore, open_store

PERSISTENT = ["sqlite", "postgres"]


@pytest.fixture(autouse=True)
def private_user_dirs(tmp_path, monkeypatch):
    for kind in ("CACHE", "DATA", "CONFIG"):
        monkeypatch.setenv(f"XDG_{kind}_HOME", str(tmp_path / kind.lower()))
    monkeypatch.delenv("JIANMU_DB", raising=False)


@pytest.fixture(scope="session")
def postgres_server():
    if reason := why_not():
        pytest.skip(reason)
    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server):
    """A fresh, empty database of the test server."""
    return postgres_server.new_database()


@pytest.fixture(params=PERSISTENT)
def store_name(request, tmp_path):
    if request.param == "postgres":
        return request.getfixturevalue("postgres_url")
    return str(tmp_path / "s.db")


@pytest.fixture(params=["memory", *PERSISTENT, "postgres-async", "sqlite-threaded"])
def store(request, tmp_path):
    if request.param == "memory":
        made = InMemoryCheckpointStore()
    elif request.param.startswith("postgres"):  # postgres-async: the store whose writes a runner awaits
        made = open_store(request.getfixturevalue("postgres_url"), asynchronous=request.param == "postgres-async")
    else:  # sqlite-threaded: the file whose writes a runner awaits (its writer thread commits them)
        made = open_store(tmp_path / "s.db", asynchronous=request.param == "sqlite-threaded")
    yield made
    made.close()


def rows(store, sql: str, params: tuple = ()) -> list[tuple]:
    """Rows of a store's own tables (any kind), read through its connection: what it really keeps."""
    with store._guard() as conn:
        return list(conn.execute(sql, params).fetchall())


def tamper(store, sql: str, params: tuple = ()) -> None:
    """Change a store's tables behind its back (damage it), through its connection."""
    with store._guard() as conn:
        conn.execute(sql, params)


@pytest.fixture
def no_config_file(tmp_path, monkeypatch):
    """The test runs in an empty directory with no $JIANMU_CONFIG and a cold settings cache: the
    built-in settings, until it writes a jianmu.yaml into `tmp_path`."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JIANMU_CONFIG", raising=False)
    reset_config_cache()
    yield tmp_path
    reset_config_cache()


@pytest.fixture
async def server():
    fake = FakeServer()
    await fake.start()
    yield fake
    await fake.stop()
