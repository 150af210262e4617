"""Who writes a run, and whether it still does: a run whose writer died is abandoned, not running.

A store that writes a run claims it for its writer: a row of `writers` (host, process id, the
process's start identity, its last heartbeat) that the run's facts (`run:<id>` in `meta`) name.
The writer says it is alive in the transactions of its saves (at most once a second) and, while
it saves nothing (a run paused in a studio, or suspended for an approval), from one thread per
process every `writers.heartbeat` seconds (jianmu.yaml); closing the store, or the process
exiting, marks its row closed. A heartbeat is one row updated: the runner never waits for it.

A reader takes a writer for gone when its row says it closed; when it ran on this machine (the
same boot and process namespace) and its process is dead, or its pid names another process now
(another start time); and, on any machine, when nothing was heard from it for
`writers.abandoned_after` seconds. A run with no end recorded is then abandoned (as is one its
writer released, going on with another: a studio restarted). A run that
ended suspended (an approval pending) stays suspended whoever wrote it: another process can
resume it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...config import ConfigError, WritersSettings, get_config
from .store import RunSummary, Writer

WRITERS_TABLE = """CREATE TABLE IF NOT EXISTS writers(id TEXT PRIMARY KEY, host TEXT NOT NULL,
    machine TEXT NOT NULL, pid INTEGER NOT NULL, process TEXT NOT NULL, since DOUBLE PRECISION NOT NULL,
    seen DOUBLE PRECISION NOT NULL, closed DOUBLE PRECISION)"""
WRITER_COLUMNS = "id, host, machine, pid, process, since, seen, closed"
PIGGYBACK = 1.0  # seconds: a save says its writer is alive at most this often (a row update in its transaction)

RUNNING, ABANDONED, SUSPENDED = "running", "abandoned", "suspended"


@dataclass(frozen=True)
class Process:
    """This process, as its writer rows name it."""

    host: str
    machine: str
    pid: int
    start: str


def _stat(pid: int) -> tuple[str, str] | None:
    """(state, start time in clock ticks since boot) of a process, from /proc; None where unreadable."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    fields = text[text.rindex(")") + 2:].split()  # after the command name, which may hold spaces
    return fields[0], fields[19]


def _machine() -> str:
    """The boot and process namespace a pid belongs to: two hosts, two containers or two boots differ."""
    try:
        return f"{Path('/proc/sys/kernel/random/boot_id').read_text().strip()} {os.readlink('/proc/self/ns/pid')}"
    except OSError:
        return ""


_this: Process | None = None


def this_process() -> Process:
    global _this
    if _this is None or _this.pid != os.getpid():  # (a forked child is a process of its own)
        pid = os.getpid()
        stat = _stat(pid)
        _this = Process(socket.gethostname(), _machine(), pid, stat[1] if stat else "")
    return _this


def process_alive(pid: int, start: str) -> bool:
    """Whether process `pid` of this machine still runs (and, with `start`, is the one that started then)."""
    if os.name == "nt":  # os.kill would end it: the heartbeat alone tells there
        return True
    stat = _stat(pid)
    if stat is not None:
        state, started = stat
        return state not in ("Z", "X", "x") and (not start or started == start)  # a zombie has died
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: it exists
        return True
    return True


def writer_gone(writer: Writer, now: float, timeout: float) -> bool:
    if writer.closed is not None:
        return True
    me = this_process()
    if (writer.host, writer.machine) == (me.host, me.machine) and not process_alive(writer.pid, writer.process):
        return True
    return now - writer.seen > timeout


def settings() -> WritersSettings:
    """jianmu.yaml's `writers:`; the defaults when the file cannot be read (its error shows elsewhere)."""
    try:
        return get_config().writers
    except ConfigError:
        return WritersSettings()


@dataclass(frozen=True)
class Liveness:
    """Whether a run is still written: `state` is running, abandoned, suspended, completed or failed."""

    state: str
    last_seen: float | None = None  # abandoned: when its writer was last heard from

    def __str__(self) -> str:
        if self.state == ABANDONED:
            return f"abandoned, last seen {when(self.last_seen)}"
        if self.state == SUSPENDED:
            return "suspended: waiting for approval"
        return self.state


def run_liveness(run: RunSummary, now: float | None = None, timeout: float | None = None) -> Liveness:
    """How `run` stands: its recorded end, else whether its writer is still there."""
    if run.ended is not None:
        return Liveness(run.ended)
    if run.released is not None:
        return Liveness(ABANDONED, run.released)
    now = time.time() if now is None else now
    timeout = settings().abandoned_after if timeout is None else timeout
    writer = run.writer
    if writer is not None:
        return Liveness(ABANDONED, writer.closed or writer.seen) if writer_gone(writer, now, timeout) \
            else Liveness(RUNNING)
    # recorded before writers were: the process it first ran in, and its last checkpoint
    dead = run.host == this_process().host and run.pid is not None and not process_alive(run.pid, "")
    return Liveness(ABANDONED, run.last_time) if dead or now - run.last_time > timeout else Liveness(RUNNING)


def when(t: Any) -> str:
    """A stored time as a date; a damaged one (text, past year 9999, NaN) as itself."""
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))
    except (TypeError, ValueError, OverflowError, OSError):
        return f"(time {t!r:.30})"


class _Heartbeats:
    """One daemon thread for the process, beating for every open store that writes runs (held weakly:
    a store nobody holds goes, and with it its beats). It ends when no store is left to beat for."""

    def __init__(self) -> None:
        self._stores: weakref.WeakSet[Any] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._added = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, store: Any) -> None:
        with self._lock:
            self._stores.add(store)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="jianmu heartbeats", daemon=True)
                self._thread.start()
        self._added.set()  # the interval is read again (a store may bring a shorter one)

    def discard(self, store: Any) -> None:
        with self._lock:
            self._stores.discard(store)

    def _run(self) -> None:
        while True:
            interval = settings().heartbeat
            self._added.clear()
            self._added.wait(interval)
            with self._lock:
                if not self._stores:
                    self._thread = None
                    return
            self._beat(interval)

    def _beat(self, interval: float) -> None:
        """(Its own frame: the stores are not held while the thread waits.)"""
        with self._lock:
            stores = list(self._stores)
        for store in stores:
            store.beat(interval)

    def close_all(self) -> None:
        """At exit: every writer still open says it closed (a clean exit is no death)."""
        with self._lock:
            stores = list(self._stores)
        for store in stores:
            with contextlib.suppress(Exception):
                store.close_writer()


heartbeats = _Heartbeats()
atexit.register(heartbeats.close_all)

__all__ = ["ABANDONED", "PIGGYBACK", "RUNNING", "SUSPENDED", "WRITERS_TABLE", "WRITER_COLUMNS", "Liveness",
           "heartbeats", "process_alive", "run_liveness", "settings", "this_process", "when", "writer_gone"]
