"""`RunFollower`: a recorded run that another process is still writing, read as it lands.

The store says when it may have changed (`wait_for_change`: PostgreSQL's `LISTEN` on a
connection of its own, SQLite's `data_version` polled). That wait blocks, so it runs in a
thread of its own, which also reads what is new (the checkpoints after the last one seen,
the events stored since the last look, how it ended) and hands it to the session's event
loop; the loop only applies it. A look costs what landed, never the whole run
again. While nothing lands it asks every few seconds whether the run's writer is still there
(`liveness.py`): a writer that died leaves its run abandoned, and the follower says so. `stop()`
ends the thread (within one wait) before the store is closed.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from runtime.engine.events import RuntimeEvent
from runtime.memory.checkpoint import (
    CheckpointInfo,
    CheckpointStore,
    EventsRead,
    Liveness,
    StoreError,
    run_liveness,
)
from runtime.memory.checkpoint.liveness import ABANDONED, RUNNING, SUSPENDED

WAIT = 0.5  # seconds one wait lasts at most: how long `stop()` may take
WRITER_CHECK = 2.0  # seconds between looks at the writer while nothing lands (a dead one's run is abandoned)
FINAL = frozenset({"completed", "failed"})  # endings after which a writer adds nothing more


@dataclass(frozen=True)
class Landed:
    """What a writer added to the run since the last look."""

    run_id: str
    before: int | None  # the newest checkpoint seen before these
    checkpoints: list[CheckpointInfo]  # the new ones, oldest first
    saved: dict[tuple[str, int], int]  # (branch, tick) -> event position, of every checkpoint so far
    events: list[tuple[str, RuntimeEvent]]  # the events stored since the last look
    ended: str | None  # "completed", "failed", "suspended", or None while it runs
    liveness: Liveness = Liveness(RUNNING)  # whether its writer still writes it (or is gone: abandoned)
    error: str | None = None  # the store failed (a lost connection): following has stopped

    @property
    def grew(self) -> bool:
        return bool(self.checkpoints or self.events)


def ending(store: CheckpointStore, run_id: str) -> str | None:
    """How the run ended, as its writer recorded it (None: still running, or its writer died)."""
    facts = store.get_meta(f"run:{run_id}")
    return json.loads(facts).get("ended") if facts else None


def following(liveness: Liveness, tick: int | None = None) -> str:
    """What following says of a run: how it ended, that it waits for an approval, that its writer is
    gone (abandoned), or what just landed (`tick`) while it is written."""
    if liveness.state in FINAL:
        return f"writer finished: run {liveness.state}"
    if liveness.state == ABANDONED:
        return f"{liveness}: its writer is gone"
    if liveness.state == SUSPENDED:
        return "following: run suspended" if tick is None else f"following: tick {tick}, run suspended"
    return "following: the writer is recording" if tick is None else f"following: tick {tick} just landed"


def liveness_of(store: CheckpointStore, run_id: str) -> Liveness:
    """How the run stands now: its end, or whether its writer is still there."""
    found = store.runs(run_id)
    return run_liveness(found[0]) if found else Liveness(RUNNING)


class RunFollower:
    """Hands `deliver` (on the loop) each `Landed`; following stops when it returns False, when the
    run ends, when the store fails, or at `stop()`."""

    def __init__(self, store: CheckpointStore, run_id: str, seen: list[CheckpointInfo], read: EventsRead,
                 deliver: Callable[[Landed], bool]):
        """`seen`: the checkpoints already shown; `read`: where the reading of the events shown stands."""
        self.store, self.run_id, self.deliver, self._read = store, run_id, deliver, read
        self._last = seen[-1].id if seen else None
        self._saved = {(info.branch, info.tick): info.event_position for info in seen}
        self._ended = ending(store, run_id)
        self.liveness = liveness_of(store, run_id)
        self._checked = time.monotonic()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._thread = threading.Thread(target=self._follow, args=(loop,), name=f"follow {self.run_id}",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def _follow(self, loop: asyncio.AbstractEventLoop) -> None:
        while not self._stopping.is_set():
            try:
                landed = self._look() if self.store.wait_for_change(WAIT) else None
                if landed is None and time.monotonic() - self._checked >= WRITER_CHECK:
                    landed = self._check_writer()
            except StoreError as exc:  # a lost connection: said once, and following ends
                landed = Landed(self.run_id, self._last, [], dict(self._saved), [], self._ended, self.liveness,
                                str(exc))
            if landed is None:
                continue
            try:
                loop.call_soon_threadsafe(self._deliver, landed)
            except RuntimeError:  # the loop has closed: nobody is looking any more
                return
            if landed.error is not None or landed.ended in FINAL:
                return

    def _deliver(self, landed: Landed) -> None:
        """On the loop: what landed, unless the follower was stopped meanwhile."""
        if not self._stopping.is_set() and not self.deliver(landed):
            self._stopping.set()

    def _look(self) -> Landed | None:
        """What is new since the last look, or None when nothing of this run is."""
        ended = ending(self.store, self.run_id)  # first: every checkpoint before the end is then listed
        events = self.store.events(self.run_id, self._read)  # before the checkpoints: those they follow are listed
        new = self.store.list(self.run_id, after=self._last)
        if not new and not events and ended == self._ended:
            return None
        before = self._last
        if new:
            self._last = new[-1].id
            self._saved.update({(info.branch, info.tick): info.event_position for info in new})
        self._ended = ended
        self._checked = time.monotonic()  # something landed: its writer was there just now
        self.liveness = Liveness(ended or RUNNING)
        return Landed(self.run_id, before, new, dict(self._saved), events, ended, self.liveness)

    def _check_writer(self) -> Landed | None:
        """A `Landed` of nothing when the run's writer has died since, else None. Anything else comes
        with what a writer wrote, in a look (how it ended, a writer taking it over), not ahead of it."""
        self._checked = time.monotonic()
        liveness = liveness_of(self.store, self.run_id)
        if liveness == self.liveness or liveness.state != ABANDONED:
            return None
        self.liveness = liveness
        return Landed(self.run_id, self._last, [], dict(self._saved), [], self._ended, liveness)


__all__ = ["FINAL", "Landed", "RunFollower", "ending", "following", "liveness_of"]
