"""Traces: the events of a run as JSON Lines, one object per line, and back.

Every line has the same stable fields: `schema_version`, `run_id`, `branch`, `seq`,
`type`, `tick`, `node`, `time`, `payload`. A reader accepts any `schema_version` up to
its own and names the file and line of anything it cannot read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from pydantic import ValidationError

from ...engine.events import RuntimeEvent
from .model import dumps
from .store import CheckpointStore

TRACE_SCHEMA_VERSION = 1
FIELDS = ("schema_version", "run_id", "branch", "seq", "type", "tick", "node", "time", "payload")


class TraceError(ValueError):
    """A trace line that cannot be read (the message names file and line)."""


def to_line(event: RuntimeEvent, branch: str = "main") -> str:
    return dumps({"schema_version": TRACE_SCHEMA_VERSION, "run_id": event.run_id, "branch": branch,
                  "seq": event.seq, "type": event.type, "tick": event.tick, "node": event.node,
                  "time": event.time, "payload": event.payload})


def write_trace(events: Iterable[tuple[str, RuntimeEvent]], out: TextIO) -> int:
    """Write (branch, event) pairs as JSON Lines; returns how many."""
    count = 0
    for branch, event in events:
        out.write(to_line(event, branch) + "\n")
        count += 1
    return count


def export_run(store: CheckpointStore, run_id: str, out: TextIO) -> int:
    """Write every stored event of a run (all its branches, in the order they happened)."""
    return write_trace(store.events(run_id), out)


def read_trace(path: str | Path) -> list[tuple[str, RuntimeEvent]]:
    """(branch, event) pairs of a JSON Lines trace; `TraceError` names the file and line."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise TraceError(f"{path}: no such trace file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"{path}: cannot be read ({exc})") from None
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            version = obj["schema_version"]
            if not isinstance(version, int) or version > TRACE_SCHEMA_VERSION:
                raise TraceError(f"{path} line {number}: schema_version {version!r} is newer than this version "
                                 f"reads ({TRACE_SCHEMA_VERSION})")
            branch = obj.get("branch") or "main"
            event = RuntimeEvent.validate({k: obj[k] for k in FIELDS[3:] if k in obj} | {"run_id": obj.get("run_id")})
        except TraceError:
            raise
        except (ValueError, KeyError, TypeError, ValidationError) as exc:
            detail = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc).splitlines()[0]
            raise TraceError(f"{path} line {number}: not a trace event ({detail})") from None
        out.append((branch, event))
    return out


__all__ = ["FIELDS", "TRACE_SCHEMA_VERSION", "TraceError", "export_run", "read_trace", "to_line", "write_trace"]
