"""Output files (traces, exports) that can never destroy what they are written from.

A trace written over the store empties it; one written over a tree file loses the tree.
So an output path is refused when it is the store or one of its `-wal`/`-shm`/`-journal`
files (also through a link), any SQLite database, a source file, or not a regular file (a
pipe, `/dev/null`: renamed over, a device node would be gone); an existing file is
replaced only when the caller says so (`--force`). The check runs before any work starts,
and the file is written beside its destination and renamed over it at the end, so a write
that fails halfway leaves an earlier file whole.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

_SQLITE_MAGIC = b"SQLite format 3\x00"
_SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")
SOURCE_SUFFIXES = frozenset({".py", ".pyi", ".pyw", ".pyx", ".ipynb", ".yaml", ".yml", ".toml", ".cfg"})


class OutputPathError(ValueError):
    """An output path that would overwrite something it must not; the message says which."""


def _same(path: Path, other: Path) -> bool:
    if path.resolve() == other.resolve():
        return True
    try:
        return path.exists() and other.exists() and os.path.samefile(path, other)
    except OSError:
        return False


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    except OSError:
        return False


def check_output_path(path: str | Path, *, store: str | Path | None = None, force: bool = False) -> Path:
    """The path to write, or `OutputPathError` saying why it must not be written."""
    target = Path(path)
    if target.suffix.lower() in SOURCE_SUFFIXES:
        raise OutputPathError(f"{target}: refusing to write output over a source file ({target.suffix})")
    if store is not None and str(store) != ":memory:":
        for suffix in _SQLITE_SUFFIXES:
            if _same(target, Path(f"{store}{suffix}")):
                raise OutputPathError(f"{target}: is the checkpoint store {'' if not suffix else suffix + ' file '}"
                                      f"({store}); choose another output file")
    if target.is_dir():
        raise OutputPathError(f"{target}: is a directory")
    if target.exists() and not target.is_file():  # a pipe would hang the check; a device be replaced
        raise OutputPathError(f"{target}: not a regular file (a pipe, device or socket); write to a file")
    if target.exists():
        if _is_sqlite(target):
            raise OutputPathError(f"{target}: is an SQLite database; refusing to overwrite it")
        if not force:
            raise OutputPathError(f"{target}: already exists (pass --force to overwrite it)")
    folder = target.parent
    if not folder.is_dir():
        raise OutputPathError(f"{target}: no such directory {folder}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputPathError(f"{target}: directory {folder} is not writable")
    return target


@contextmanager
def replacing(path: Path) -> Iterator[TextIO]:
    """A text file that becomes `path` only once written whole (an earlier `path` stays until then)."""
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # what a plain open() would give, not mkstemp's 0600
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            yield out
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


__all__ = ["SOURCE_SUFFIXES", "OutputPathError", "check_output_path", "replacing"]
