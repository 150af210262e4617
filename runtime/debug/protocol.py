"""The debug protocol's vocabulary: version, message types, error codes, limits, parsing.

Everything here is what `docs/protocol.md` specifies; the server and the client both use
it so the two sides cannot drift apart. A message is one JSON object per WebSocket text
frame with a `type`; requests may carry an `id` that the answer (`ok` / `error`) echoes
as `re`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from itertools import groupby, starmap
from operator import attrgetter
from typing import Any

from py_trees.common import Status
from pydantic import TypeAdapter
from pydantic_core import PydanticSerializationError, to_json, to_jsonable_python
from typing_extensions import TypedDict  # (pydantic reads typing's only from Python 3.12)

from ..engine.events import RuntimeEvent
from ..engine.record import Returns, TickReport

PROTOCOL_VERSION = 8  # 2: step_into, the timeline, model_io; 3: hold_end, earlier events, corrected arguments;
# 4: why a run failed, the studio's marks, ticked nodes, one name per state value, swarm agents;
# 5: one debugger (a local studio's stops), breakpoints enabled/disabled and their hits, set_breakpoint,
# the tick's record (what each node returned) in the report, a tick held inside and a past checkpoint;
# 6: a tick's telemetry as numbers (`ticks`), NaN as a string; 7: events and the ticks' telemetry in columns;
# 8: the ticks' `status` as runs, their `started` and `completed` numbers and times as four flat columns
MAX_MESSAGE = 1 << 20  # a client message above this gets a `too_large` error; the session goes on
MAX_FRAME = 16 << 20  # above this the WebSocket library closes the connection (code 1009)
MAX_SERVER_FRAME = 64 << 20  # a server message above this makes the client close the connection (1009)
DEFAULT_PORT = 7777
DEFAULT_HEARTBEAT = 10.0  # seconds without a pong before a client is dropped and the agent released

# what a client may send, with the fields each one requires
REQUESTS: dict[str, tuple[str, ...]] = {
    "hello": ("protocol", "token"),
    "ping": (),
    "pause": (),
    "continue": (),
    "step": (),
    "step_into": (),
    "break": ("kind",),
    "unbreak": ("breakpoint",),
    "set_breakpoint": ("breakpoint",),
    "edit_state": ("key", "value"),
    "edit_binding": ("node", "direction", "port", "key"),
    "approve": ("approval",),
    "deny": ("approval",),
    "resync": (),
    "checkpoint": ("checkpoint",),
    "replay": ("checkpoint",),
    "fork": ("checkpoint",),
    "model_io": ("run_id", "node", "round"),
    "tool_io": ("run_id", "node", "round", "index", "branches"),
    "compare_targets": ("run_id", "branch"),
    "compare": ("run_id", "branch", "target"),
    "compare_state": ("a", "b", "tick", "checkpoints"),
    "what_if": ("call", "answer"),
    "resend": ("call",),
}


class ProtocolError(Exception):
    """A message that cannot be served; `code` is one of the protocol's error codes, `re` the message's
    `id` when it had one (its answer echoes it: a refused request is answered too)."""

    def __init__(self, code: str, message: str, re: Any = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.re = re


def parse_request(text: str | bytes) -> dict[str, Any]:
    """One client message, checked for shape (not meaning); raises `ProtocolError`."""
    if len(text) > MAX_MESSAGE:
        raise ProtocolError("too_large", f"message of {len(text)} bytes exceeds the limit of {MAX_MESSAGE}")
    try:
        message = json.loads(text)
    except ValueError as exc:  # not JSON, not UTF-8, a number past Python's 4,300 digits
        raise ProtocolError("bad_json", f"not JSON: {exc}") from None
    except RecursionError:
        raise ProtocolError("bad_json", "JSON nested too deeply to read") from None
    re = message.get("id") if isinstance(message, dict) else None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ProtocolError("bad_message", "a message is a JSON object with a string 'type'", re)
    kind = message["type"]
    if kind not in REQUESTS:
        raise ProtocolError("unknown_type", f"unknown message type {kind!r}", re)
    missing = [name for name in REQUESTS[kind] if name not in message]
    if missing:
        raise ProtocolError("bad_message", f"{kind}: missing field {missing[0]!r}", re)
    return message


def whole_number(value: Any) -> bool:
    """Whether a request's integer field (an id, a round) is one a store can look up: not true, 1.5,
    "3", 1e308 or past 64 bits (coerced, `true` read checkpoint 1; past 64 bits SQLite raised)."""
    return isinstance(value, int) and not isinstance(value, bool) and -2**63 <= value < 2**63


def encode(message: dict[str, Any]) -> str:
    """JSON text of a message (`frame`'s, as a str)."""
    return frame(message).decode()


def frame(message: dict[str, Any]) -> bytes:
    """A message's text frame, for `send(..., text=True)`: its JSON written by pydantic's serializer in one
    call (no Python call back per event: an update of thousands of events in half the time of
    `json.dumps`), as the UTF-8 bytes it writes (not decoded and encoded again: ~0.3 us a tick of a run
    at full speed); NaN and the infinities as the strings "NaN", "Infinity", "-Infinity" (a bare NaN
    token is not JSON: a client's parser refuses it), values JSON cannot hold as pydantic has them, else
    their repr. A message it refuses (a lone surrogate in a string: it has no UTF-8) goes through the
    generic encoder, such strings escaped (`\\ud800`), rather than the connection closing on it."""
    try:
        return to_json(message, inf_nan_mode="strings", fallback=repr)
    except PydanticSerializationError:
        return json.dumps(message, default=_jsonable, separators=(",", ":")).encode()


def _jsonable(value: Any) -> Any:
    return to_jsonable_python(value, fallback=repr)


def error(code: str, message: str, re: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "error", "code": code, "message": message}
    if re is not None:
        out["re"] = re
    return out


STATUS = {status.value: status for status in Status}  # a sent status by its value


def returns_json(returns: Returns | None) -> dict[str, list[str]] | None:
    """A tick's record (what each node returned, in order) as a `paused` message and a `checkpoint`
    answer carry it: `{paths, statuses}` side by side, or null for none."""
    if returns is None:
        return None
    return {"paths": list(returns.paths), "statuses": [status.value for status in returns.statuses]}


def returns_of(data: Any) -> Returns | None:
    """`returns_json` read back."""
    if data is None:
        return None
    return Returns(list(data["paths"]), [STATUS[value] for value in data["statuses"]])


def record_json(report: TickReport) -> dict[str, Any]:
    """The record a `report` adds to its `ticked` paths: `returned` (what each returned) and `unseen`
    (`[place, end status]` of the returns the tick's end does not show)."""
    return {"returned": [status.value for status in report.returned],
            "unseen": [[place, status.value] for place, status in report.unseen]}


def record_of(report: dict[str, Any]) -> dict[str, Any]:
    """`record_json` read back, as `TickReport` fields (none from a server that sends no record)."""
    return {"returned": [STATUS[value] for value in report.get("returned", ())],
            "unseen": [(place, STATUS[value]) for place, value in report.get("unseen", ())]}


def runs_json(run_ids: list[str | None]) -> list[list[Any]]:
    """The run id of each of a list's entries as `[[run_id, how many entries in a row], ...]` (one run
    for all, usually: counted in C)."""
    if run_ids and run_ids.count(run_ids[0]) == len(run_ids):
        return [[run_ids[0], len(run_ids)]]
    return [[run_id, sum(1 for _ in entries)] for run_id, entries in groupby(run_ids)]


def each_run(runs: Iterable[Sequence[Any]]) -> Iterator[str | None]:
    """`runs_json` read back: the run id of each entry."""
    for run_id, count in runs:
        for _ in range(int(count)):
            yield run_id


_SEQ, _TYPE, _TIME, _TICK, _NODE, _RUN, _PAYLOAD = map(attrgetter, RuntimeEvent.__slots__)


def events_json(events: Sequence[RuntimeEvent]) -> dict[str, list[Any]]:
    """Events as an update and the picture carry them: a list a field, an entry an event (`runs`: their
    run ids as `runs_json` has them), which a run continuing at full speed builds and encodes in about
    half the time of an object an event."""
    return {"runs": runs_json(list(map(_RUN, events))), "seq": list(map(_SEQ, events)), "type": list(map(_TYPE, events)),
            "time": list(map(_TIME, events)), "tick": list(map(_TICK, events)), "node": list(map(_NODE, events)),
            "payload": list(map(_PAYLOAD, events))}


class _EventColumns(TypedDict):
    runs: list[tuple[str | None, int]]
    seq: list[int]
    type: list[str]
    time: list[float]
    tick: list[int]
    node: list[str | None]
    payload: list[dict[str, Any]]


_EVENT_COLUMNS = TypeAdapter(_EventColumns)


def events_of(columns: Any) -> list[RuntimeEvent]:
    """`events_json` read back, every field checked as `RuntimeEvent.validate` checks one event's (a value
    of the wrong shape: `ValueError`); none for none."""
    if not columns:
        return []
    c = _EVENT_COLUMNS.validate_python(columns)
    return list(starmap(RuntimeEvent, zip(c["seq"], c["type"], c["time"], c["tick"], c["node"], each_run(c["runs"]),
                                          c["payload"], strict=True)))


def parse_address(address: str | int) -> tuple[str, int]:
    """`host:port`, `:port` or a bare port (loopback); raises `ValueError` with the reason."""
    text = str(address).strip()
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "", text
    host = host.strip("[]") or "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"debug address {text!r}: expected host:port, for example 127.0.0.1:{DEFAULT_PORT}") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"debug address {text!r}: port {number} is out of range")
    return host, number


__all__ = ["DEFAULT_HEARTBEAT", "DEFAULT_PORT", "MAX_FRAME", "MAX_MESSAGE", "MAX_SERVER_FRAME", "PROTOCOL_VERSION", "REQUESTS",
           "ProtocolError", "each_run", "encode", "error", "frame", "events_json", "events_of", "parse_address", "parse_request",
           "record_json", "record_of", "returns_json", "returns_of", "runs_json", "whole_number"]
