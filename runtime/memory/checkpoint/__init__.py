"""Checkpoints of a run, the stores that keep them, recorded I/O, traces and the recovery facade.

`PostgresCheckpointStore` (and `AsyncPostgresCheckpointStore`, whose writes a runner awaits) is imported on first use (its driver, psycopg, is ~13 MB)."""

from ...engine.recovery import EFFECTS_KEY, CheckpointRecoveryFacade
from ...extras import require
from .io import IORecorder, IOReplayer, ReplayDivergence, ReplayedModelError, ReplayedToolError
from .liveness import Liveness, run_liveness
from .memory_store import InMemoryCheckpointStore
from .model import Checkpoint, CheckpointInfo, CheckpointRecord, Source
from .naming import chosen_store, close_store_async, display_name, open_store, open_store_async
from .sql_store import EventsRead
from .sqlite_store import SCHEMA_VERSION, SQLiteCheckpointStore
from .store import CheckpointError, CheckpointStore, IORecord, RunSummary, StoreError, Writer
from .trace import FIELDS as FIELDS_OF_A_TRACE_LINE
from .trace import TRACE_SCHEMA_VERSION, TraceError, export_run, read_trace, write_trace


def __getattr__(name: str):
    if name == "PostgresCheckpointStore":
        require("postgres", "psycopg")
        from .postgres_store import PostgresCheckpointStore

        return PostgresCheckpointStore
    if name == "AsyncPostgresCheckpointStore":
        require("postgres", "psycopg")
        from .postgres_async import AsyncPostgresCheckpointStore

        return AsyncPostgresCheckpointStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EFFECTS_KEY",
    "AsyncPostgresCheckpointStore",
    "FIELDS_OF_A_TRACE_LINE",
    "SCHEMA_VERSION",
    "TRACE_SCHEMA_VERSION",
    "Checkpoint",
    "CheckpointError",
    "CheckpointInfo",
    "CheckpointRecord",
    "CheckpointRecoveryFacade",
    "CheckpointStore",
    "EventsRead",
    "IORecord",
    "IORecorder",
    "IOReplayer",
    "InMemoryCheckpointStore",
    "Liveness",
    "PostgresCheckpointStore",
    "ReplayDivergence",
    "ReplayedModelError",
    "ReplayedToolError",
    "RunSummary",
    "SQLiteCheckpointStore",
    "Source",
    "StoreError",
    "TraceError",
    "Writer",
    "export_run",
    "read_trace",
    "run_liveness",
    "write_trace",
    "chosen_store",
    "close_store_async",
    "display_name",
    "open_store",
    "open_store_async",
]
