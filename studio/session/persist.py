"""Where the studio keeps what a user set up for a tree: beside the store, never in the source tree.

A store `runs.db` gets a folder `runs.studio/` next to it; each tree file opened with that
store has its breakpoints and its saved bindings there, named after the tree file and a
short hash of its full path (two `agent.py` in different folders do not share settings).
A store that is not a file (a PostgreSQL URL) keeps them in the user's data directory (the
default store's are beside it there too: `studio.places`); a folder an earlier version kept in
the cache directory is moved there on first use.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ..places import data_dir, move_once, old_cache_dir


def settings_dir(store: Any) -> Path:
    """The folder beside the store's file (`runs.db` -> `runs.studio/`)."""
    location = str(getattr(store, "location", "") or "")
    if location and "://" not in location and location != ":memory:":
        return Path(location).with_suffix(".studio")
    name = f"store-{hashlib.sha256(location.encode()).hexdigest()[:8]}.studio"
    move_once(old_cache_dir() / name, data_dir() / name)
    return data_dir() / name


def tree_file(store: Any, tree_path: Path, function: str, kind: str) -> Path:
    """`<settings dir>/<tree stem>-<hash>.<kind>.json` for one tree file and builder."""
    digest = hashlib.sha256(f"{tree_path.resolve()}:{function}".encode()).hexdigest()[:8]
    return settings_dir(store) / f"{tree_path.stem}-{digest}.{kind}.json"


def write_json(path: Path, data: Any) -> Path:
    """Write beside and rename, so a failed write never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    os.replace(partial, path)
    return path


def read_json(path: Path) -> Any:
    """The file's JSON, None when it does not exist; `ValueError` naming the file when it is not JSON."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ValueError(f"{path}: cannot be read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise ValueError(f"{path}: nested too deeply to read") from None


__all__ = ["read_json", "settings_dir", "tree_file", "write_json"]
