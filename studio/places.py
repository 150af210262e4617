"""Where the studio keeps what it records and what a user set up: the user's data directory
(platformdirs: `~/.local/share/jianmu-studio` on Linux), never a cache a cleaner may empty.

- The default store is `<data dir>/runs.db`, one file at a stable path: a newer version opens it
  and upgrades its schema in place.
- Breakpoints and saved bindings live in a settings folder beside a store file (`runs.studio/`,
  `studio.persist`); a store that is no file (a PostgreSQL URL) has its folder in the data
  directory, `store-<hash>.studio/`.

Earlier versions kept all of these in the user's cache directory, with a default store per
schema version (`runs-v4.db`, `runs-v5.db`, ...). On first use the newest of those this version
can upgrade is moved here, with its settings folder, so its runs still list; that happens once,
since the old one is gone afterwards. A store another process still has open (an older studio
that is running) is not moved: it is used where it is this time, and moved on a later start.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
from pathlib import Path

import platformdirs

from runtime.config import USER_DIRS
from runtime.memory.checkpoint.sqlite_store import OLDEST_UPGRADED, SCHEMA_VERSION

DEFAULT_STORE = "runs.db"
_OLD_STORE = re.compile(r"runs-v(\d+)\.db")


def data_dir() -> Path:
    return Path(platformdirs.user_data_dir(USER_DIRS))


def old_cache_dir() -> Path:
    """Where versions before the data directory kept the default store and the settings."""
    return Path(platformdirs.user_cache_dir(USER_DIRS))


def default_db_path() -> Path:
    return data_dir() / DEFAULT_STORE


def default_store() -> Path:
    """The default store to open: `default_db_path()`, once an older version's store (and its settings)
    in the cache directory has been moved there; that store where it is while another process has it open."""
    path = default_db_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    old = None if path.exists() else _newest_old_store()
    if old is not None and not _move_store(old, path):
        return old
    settings = path.with_suffix(".studio")
    if old is not None:
        move_once(old.with_suffix(".studio"), settings)
    elif not settings.exists():  # its store gone (a cache cleaner), its settings kept
        for folder in _old_by_version(".studio"):
            move_once(folder, settings)
            break
    return path


def _old_by_version(suffix: str) -> list[Path]:
    """The cache directory's `runs-v<N><suffix>` of the versions this one upgrades, newest first."""
    found = []
    for candidate in old_cache_dir().glob(f"runs-v*{suffix}"):
        match = _OLD_STORE.fullmatch(candidate.with_suffix(".db").name)
        if match and OLDEST_UPGRADED <= int(match[1]) <= SCHEMA_VERSION:
            found.append((int(match[1]), candidate))
    return [candidate for _, candidate in sorted(found, reverse=True)]


def _newest_old_store() -> Path | None:
    return next((path for path in _old_by_version(".db") if path.is_file()), None)


def _move_store(old: Path, new: Path) -> bool:
    """Move an SQLite store to `new`, what its write-ahead log holds written into it first; False when
    another process has it open (it holds a lock on it while it does) or it cannot be moved."""
    try:
        conn = sqlite3.connect(old, timeout=0, isolation_level=None)
    except sqlite3.Error:
        return False
    try:
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        conn.execute("BEGIN EXCLUSIVE")  # refused while any other connection has the file open
        conn.execute("COMMIT")  # (the lock is kept: exclusive locking mode)
        conn.execute("PRAGMA journal_mode = DELETE")  # the log written into the file, and removed
        try:
            os.link(old, new)  # never over a store another process created meanwhile
        except FileExistsError:
            return True
        except OSError:  # no hard links here (or another file system): move it
            if new.exists():
                return True
            shutil.move(old, new)
        else:
            old.unlink()
    except (sqlite3.Error, OSError):
        return False
    finally:
        conn.close()
    for leftover in (Path(f"{old}-wal"), Path(f"{old}-shm")):
        with contextlib.suppress(OSError):
            leftover.unlink()
    return True


def move_once(old: Path, new: Path) -> None:
    """Move `old` (a file or folder) to `new` unless `new` exists already or `old` does not."""
    if new.exists() or not old.exists():
        return
    new.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):  # (another process moved it first)
        shutil.move(old, new)


__all__ = ["data_dir", "default_db_path", "default_store", "move_once", "old_cache_dir"]
