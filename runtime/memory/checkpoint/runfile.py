"""A run as one file: an SQLite checkpoint store of its own holding one run, sent and opened anywhere.

`export_run_file` writes a run (every branch, every checkpoint, its events, its recorded
model and tool I/O and its what-if marks) with the text of the tree file it ran and that text's hash
(`tree_source`) into a new file; `import_run_file` puts the runs of such a file into another
store. A run file *is* a store, so everything that opens a store opens it: `replay`,
`check`, `diff`, `python -m runtime.memory.checkpoint list` / `show`.

The copy goes through the stores' public reads and writes (`get`, `events`, `io_records`,
`save`, `add_events`, `put_io`), so it works from and into SQLite and PostgreSQL alike,
and writes what the store's own encoding makes small: a checkpoint is a delta on the one
before it in its branch (a full record at each branch's start and every `FULL_EVERY`), a
tick's returns are encoded against the record before, a list (a message history) is
stored once at its longest, and its references keep their ids.
Checkpoint ids are new in the copy, parents follow them; events keep their order, and a
tick's telemetry, rebuilt by the source, is written as the events it was.

Secrets never travel: every text is passed through the model client's `Redactor` for the
API keys this process knows (`JIANMU_API_KEY`, `OPENAI_API_KEY`), the tree text too; a
PostgreSQL source is named without its password.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...model.secrets import Redactor
from . import whatif_marks
from .model import Checkpoint, CheckpointRecord, ListChunk, TreePaths, dumps
from .naming import display_name
from .output import OutputPathError, check_output_path
from .returns import ReturnsWriter
from .runner_checkpoints import TREE_PATHS_FROM
from .sqlite_store import SQLiteCheckpointStore
from .store import CheckpointError, CheckpointStore, IORecord, StoreError
from .tree_source import put_tree_source, tree_source

SUFFIX = ".jianmu"
RUNFILE_KEY = "runfile"  # in a run file's meta: what it holds and where it came from
FULL_EVERY = 20  # records of a chain before a full one again (as a recording run writes them)
KEY_VARIABLES = ("JIANMU_API_KEY", "OPENAI_API_KEY")


def redactor() -> Callable[[Any], Any]:
    """Every API key this process knows, masked wherever it appears in a JSON-like value."""
    scrubs = [Redactor(key).scrub for name in KEY_VARIABLES if (key := os.environ.get(name, "").strip())]

    def scrub(value: Any) -> Any:
        for one in scrubs:
            value = one(value)
        return value

    return scrub


@dataclass
class _Chain:
    """A chain of deltas as a reader sees it at its last record (its state entries as written)."""

    base: int  # the id (in the copy) of its full record
    length: int
    returns: ReturnsWriter  # each record's returns, encoded against the one before
    statuses: dict[str, str]
    resume: dict[str, Any]
    state: dict[str, dict[str, list]]


@dataclass
class _Copy:
    source: CheckpointStore
    dest: CheckpointStore
    run_id: str
    scrub: Callable[[Any], Any]
    ids: dict[int, int] = field(default_factory=dict)  # source checkpoint id -> id in the copy
    chains: dict[int, _Chain] = field(default_factory=dict)  # copy id of a chain's last record -> the chain
    lists: dict[str, int] = field(default_factory=dict)  # list id -> the longest length referenced
    written: set[str] = field(default_factory=set)  # lists whose chunk is written
    tree: TreePaths | None = None  # the large tree's paths of the last record (a record names nodes in it)

    def run(self) -> int:
        infos = self.source.list(self.run_id)
        if not infos:
            raise CheckpointError(f"{display_name(self.source.location)}: no run {self.run_id!r}")
        if self.dest.list(self.run_id):
            raise StoreError(f"{display_name(self.dest.location)}: already holds run {self.run_id}")
        checkpoints = [self.source.get(info.id, read_lists=False) for info in infos]
        records = self.source.io_records(self.run_id)
        for checkpoint in checkpoints:
            for lists in checkpoint.lists.values():
                for list_id, length in lists.values():
                    self._refer(list_id, length)
        for record in records:
            if (ref := _list_ref(record.request.get("messages"))) is not None:
                self._refer(*ref)
        for checkpoint in checkpoints:
            self._save(checkpoint)
        for record in records:
            self._put_io(record)
        self.dest.add_events([(branch, replace(event, payload=self.scrub(event.payload)))
                              for branch, event in self.source.events(self.run_id)])
        for key in (f"tree:{self.run_id}", f"run:{self.run_id}", whatif_marks.KEY + self.run_id):
            value = self.source.get_meta(key)
            if value is not None:
                self.dest.set_meta(key, self.scrub(value))
        kept = tree_source(self.source, self.run_id)
        if kept is not None:
            put_tree_source(self.dest, self.run_id, replace(kept, text=self.scrub(kept.text)))
        return len(checkpoints)

    def _refer(self, list_id: str, length: int) -> None:
        self.lists[list_id] = max(length, self.lists.get(list_id, 0))

    def _chunks(self, list_ids: Iterable[str]) -> list[ListChunk]:
        """The chunk of each list not written yet: the list at its longest, once."""
        out = []
        for list_id in dict.fromkeys(list_ids):
            if list_id not in self.written:
                self.written.add(list_id)
                items = self.scrub(self.source.read_list(list_id, self.lists[list_id]))
                out.append(ListChunk(list_id, 0, [dumps(item) for item in items]))
        return out

    def _save(self, cp: Checkpoint) -> None:
        """One checkpoint: a delta on its parent when the parent ends a chain still short, else full
        (also when a node is gone: a tree reshaped by a compiled subtree; a delta cannot drop a path)."""
        state = {ns: {key: ["v", self.scrub(value)] for key, value in values.items() if key not in cp.lists.get(ns, {})}
                 for ns, values in cp.state.items()}
        for ns, lists in cp.lists.items():
            for key, (list_id, length) in lists.items():
                state.setdefault(ns, {})[key] = ["l", list_id, length]
        resume = self.scrub(cp.resume)
        parent = self.ids.get(cp.parent_id) if cp.parent_id is not None else None
        chain = self.chains.pop(parent, None) if parent is not None else None  # a second child starts a chain
        lists = [entry[1] for values in state.values() for entry in values.values() if entry[0] == "l"]
        record = CheckpointRecord(
            run_id=cp.run_id, branch=cp.branch, parent_id=parent, base_id=None, tick=cp.tick, time=cp.time,
            status=cp.status, source=cp.source, event_position=cp.event_position, wake=cp.wake,
            statuses=cp.statuses, resume=resume, state=state, bindings=cp.bindings, chunks=self._chunks(lists))
        record.tree = self._tree_of(cp.statuses)
        if chain is not None and chain.length < FULL_EVERY and chain.statuses.keys() <= cp.statuses.keys():
            record.base_id = chain.base
            record.statuses = {p: s for p, s in cp.statuses.items() if chain.statuses.get(p) != s}
            record.resume = {p: r for p, r in resume.items() if chain.resume.get(p) != r}
            record.resume.update({p: None for p in chain.resume if p not in resume})
            record.state = _state_delta(chain.state, state)
            returns = chain.returns
        else:
            returns = ReturnsWriter()
        record.returns = returns.encode(cp.returns, record.tree, record.full)
        new_id = self.dest.save(record)
        self.ids[cp.id] = new_id
        self.chains[new_id] = _Chain(record.base_id or new_id, 1 if record.full else chain.length + 1, returns,
                                     dict(cp.statuses), resume, state)

    def _tree_of(self, statuses: dict[str, str]) -> TreePaths | None:
        """A large tree's paths (in tree order, as a checkpoint lists its statuses), made once per shape."""
        if len(statuses) < TREE_PATHS_FROM:
            return None
        if self.tree is None or self.tree.paths != tuple(statuses):
            self.tree = TreePaths.of(statuses)
        return self.tree

    def _put_io(self, record: IORecord) -> None:
        request = self.scrub(record.request)
        ref = _list_ref(request.get("messages"))
        self.dest.put_io(replace(record, request=request, response=self.scrub(record.response),
                                 error=self.scrub(record.error)), self._chunks([ref[0]]) if ref else [])


def _list_ref(entry: Any) -> tuple[str, int] | None:
    """(list id, length) of a stored list's reference `["l", id, length]`, else None."""
    if isinstance(entry, list) and len(entry) == 3 and entry[0] == "l":
        return entry[1], entry[2]
    return None


def _state_delta(old: dict[str, dict[str, list]], new: dict[str, dict[str, list]]) -> dict[str, dict[str, list]]:
    """The entries of `new` that differ from `old`, and `["d"]` for each key `old` had and `new` has not."""
    delta: dict[str, dict[str, list]] = {}
    for ns in {*old, *new}:
        before, after = old.get(ns, {}), new.get(ns, {})
        changed = {key: entry for key, entry in after.items() if before.get(key) != entry}
        changed.update({key: ["d"] for key in before if key not in after})
        if changed:
            delta[ns] = changed
    return delta


def copy_run(source: CheckpointStore, dest: CheckpointStore, run_id: str) -> int:
    """Copy run `run_id` (all of it) from one store into another, secrets masked; returns its checkpoints."""
    return _Copy(source, dest, run_id, redactor()).run()


def is_run_file(path: str | Path) -> bool:
    """A file this module wrote (an SQLite store with a `runfile` entry)."""
    try:
        store = SQLiteCheckpointStore(path, create=False)
    except StoreError:
        return False
    try:
        return store.get_meta(RUNFILE_KEY) is not None
    finally:
        store.close()


def _target(path: Path, source: str, force: bool) -> Path:
    """Where an export may go: not over the store it reads, a source file or another store; an
    earlier run file only with `force`."""
    if path.is_file() and is_run_file(path):
        if not force:
            raise OutputPathError(f"{path}: already exists (pass --force to overwrite it)")
        if source != ":memory:" and Path(source).exists() and os.path.samefile(path, source):
            raise OutputPathError(f"{path}: is the store being exported; choose another output file")
        return path
    return check_output_path(path, store=source, force=force)


def export_run_file(source: CheckpointStore, run_id: str, path: str | Path, *, force: bool = False) -> int:
    """Write run `run_id` of `source` into the run file `path` (whole, or an earlier file stays);
    returns its checkpoints. `OutputPathError` when `path` must not be written."""
    target = _target(Path(path), source.location, force)
    if not source.list(run_id):
        raise CheckpointError(f"{display_name(source.location)}: no run {run_id!r}")
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    os.close(fd)
    os.unlink(temporary)  # the store creates its own file there
    dest = SQLiteCheckpointStore(temporary)
    try:
        count = copy_run(source, dest, run_id)
        dest.set_meta(RUNFILE_KEY, json.dumps({"run_id": run_id, "exported_at": time.time(),
                                               "from": display_name(source.location)}))
        dest.close()  # (its last connection closed: SQLite folds the -wal file in and removes it)
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException:
        dest.close()
        for suffix in ("", "-wal", "-shm"):
            Path(temporary + suffix).unlink(missing_ok=True)
        raise
    return count


def import_run_file(path: str | Path, dest: CheckpointStore) -> list[str]:
    """Copy every run of the run file `path` into `dest`; returns their ids."""
    if not is_run_file(path):
        if Path(path).is_dir():
            raise StoreError(f"{path}: a folder, not a run file")
        if not Path(path).is_file():
            raise StoreError(f"{path}: no such run file")
        raise StoreError(f"{path}: not a run file (export one with `jianmu-studio export STORE --run ID -o FILE{SUFFIX}`)")
    source = SQLiteCheckpointStore(path, create=False)
    try:
        runs = [run.run_id for run in source.runs()]
        for run_id in runs:
            copy_run(source, dest, run_id)
    finally:
        source.close()
    return runs


__all__ = ["RUNFILE_KEY", "SUFFIX", "copy_run", "export_run_file", "import_run_file", "is_run_file", "redactor"]
