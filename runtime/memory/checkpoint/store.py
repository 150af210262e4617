"""The `CheckpointStore` protocol, and the errors a store raises (one line, naming file or id)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ...engine.events import RuntimeEvent
from .model import Checkpoint, CheckpointInfo, CheckpointRecord, ListChunk


class CheckpointError(LookupError):
    """A checkpoint that does not exist or does not fit (the message names the id)."""

    def __str__(self) -> str:  # LookupError would quote the message
        return str(self.args[0]) if self.args else ""


class StoreError(OSError):
    """A store file that is missing, corrupt, locked or newer than this version reads.

    Its message is one line of printable text whatever the driver said: SQLite quotes a
    damaged schema with its newlines, a damaged row with its bytes."""

    def __init__(self, message: str):
        text = " ".join(str(message).split())
        super().__init__("".join(c if c.isprintable() else repr(c)[1:-1] for c in text))


@dataclass(frozen=True)
class Writer:
    """A process that writes runs into a store (`liveness.py`): where it runs, and when it last
    said it was alive."""

    id: str
    host: str
    machine: str  # the boot and process namespace `pid` belongs to ("" where that cannot be read)
    pid: int
    process: str  # the process's start identity: a pid reused by another process has another ("": unknown)
    since: float
    seen: float  # its last heartbeat
    closed: float | None = None  # when it closed the store (a clean exit)


@dataclass(frozen=True)
class RunSummary:
    """A run as a run picker lists it: its checkpoints, and what its writer recorded about it."""

    run_id: str
    branches: list[str]
    checkpoints: int
    first_time: float
    last_time: float
    last_status: str
    tree: str | None = None  # the tree file it came from, when a session recorded it
    host: str | None = None  # where it ran, and the writing process
    pid: int | None = None
    started: float | None = None
    ended: str | None = None  # "completed", "failed", "suspended"; None: still running (or its writer died)
    writer: Writer | None = None  # the process that writes it now (None: a run recorded before writers were)
    released: float | None = None  # when its writer left it unfinished, going on with another run


@dataclass(frozen=True)
class IORecord:
    """One recorded model or tool call: `kind` "model" (index: attempt) or "tool" (index: call)."""

    run_id: str
    branch: str
    kind: str
    node: str
    round: int
    index: int
    request: dict[str, Any]
    response: Any = None
    error: dict[str, str] | None = None  # {"type", "module", "message"}


class CheckpointStore(Protocol):
    """Where checkpoints, the events of a run and its recorded I/O live."""

    location: str

    def save(self, record: CheckpointRecord, events: Sequence[tuple[str, RuntimeEvent]] = ()) -> int:
        """Write one record and the events since the previous one atomically; returns the new id."""

    def get(self, checkpoint_id: int, *, read_lists: bool = True) -> Checkpoint:
        """The whole checkpoint; `CheckpointError` for an unknown id. With `read_lists=False`
        stored lists are left out of `state` (`lists` says where they are)."""

    def list(self, run_id: str | None = None, branch: str | None = None, *,
             after: int | None = None) -> list[CheckpointInfo]:
        """Headers, oldest first; `after`: only those with a greater id."""

    def latest(self, run_id: str, branch: str | None = None) -> CheckpointInfo | None: ...

    def history(self, run_id: str, branch: str = "main") -> list[CheckpointInfo]:
        """Newest first: the branch's head, then its parents (into the branch it forked from)."""

    def runs(self, run_id: str | None = None) -> list[RunSummary]:
        """Every run (or the one `run_id` names), oldest first; whether each is still written is
        `liveness.run_liveness`'s to say."""

    def release(self, run_id: str) -> None:
        """This store's writer leaves `run_id` unfinished for good (it is abandoned from now)."""

    def take_over(self, run_id: str, seen: str | None) -> bool:
        """Make this store's writer the writer of `run_id` if its facts (`run:<id>` in meta) are still
        `seen`; False when another writer took it first (see `waiting.ResumePoint`)."""

    def written_elsewhere(self, run_id: str) -> bool:
        """Whether another writer took `run_id` over from this store's writer since it wrote it."""

    def branches(self, run_id: str) -> list[str]: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def get_meta(self, key: str) -> str | None: ...

    def add_events(self, events: Sequence[tuple[str, RuntimeEvent]]) -> None: ...

    def events(self, run_id: str, since: Any = None) -> list[tuple[str, RuntimeEvent]]:
        """(branch, event) pairs in the order they were stored; with `since` (the store's own
        `EventsRead`), only those stored after it last stood, and it moves on."""

    def put_io(self, record: IORecord, chunks: Sequence[ListChunk] = ()) -> None: ...

    def get_io(self, run_id: str, kind: str, node: str, round: int, index: int,
               branch: str | None = None) -> IORecord | None:
        """The latest matching record, preferring `branch`."""

    def io_records(self, run_id: str) -> list[IORecord]:
        """Every recorded call of a run, all branches, in the order recorded."""

    def read_list(self, list_id: str, length: int, first: int = 0) -> list[Any]:
        """Items `first` to `length` of a stored list."""

    def read_list_json(self, list_id: str, length: int, first: int = 0) -> str:
        """The first `length` items of a stored list (from `first`) as one JSON array text."""
        ...

    def wait_for_change(self, timeout: float) -> bool:
        """Block until another writer may have changed the store (or `timeout` seconds pass)."""

    def close(self) -> None: ...


__all__ = ["CheckpointError", "CheckpointStore", "IORecord", "RunSummary", "StoreError", "Writer"]
