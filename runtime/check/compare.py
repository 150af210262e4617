"""What differs between two pictures of a run at the same tick, said the way a user reads it.

`check` (a re-run against its recording) and `diff` (two recorded runs or branches) compare
the same things with the same words: each node's status, each state key, each model request
and answer, each tool call. A `Difference` is one line (tick, node, what differed) and a
short excerpt of the item, never the whole value: the first place inside it where the two
sides part (`messages[3].content`), with a window of text around the first differing
character.

Ids and times aside: approval ids (random per run) are numbered in order of appearance,
and so are tool-call ids (a live model makes new ones each run), so two runs that did the
same thing compare equal.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..state import InteractionKeys

if TYPE_CHECKING:
    from ..engine.record import Returns
    from ..memory.checkpoint import Checkpoint

EXCERPT = 100  # characters of a value or of a text window shown
SHOWN_NODES = 5  # other nodes listed when several statuses differ at once
_ID_KEYS = {"tool_call_id"}  # keys whose string values are ids, wherever they are
_ID_HOLDERS = {"tool_calls"}  # lists whose items' "id" is an id
_KEYED_BY_ID = (InteractionKeys.PENDING, InteractionKeys.RESPONSES)  # global keys: dicts keyed by request id


@dataclass(frozen=True)
class Difference:
    """One thing that differs at one tick: `line` says where and what, `detail` shows it."""

    tick: int
    node: str | None
    what: str  # "status", "state key 'ns.key'", "returned status", "model request", "tool call", ...
    summary: str
    detail: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.line

    @property
    def line(self) -> str:
        where = f"tick {self.tick}, node {self.node}" if self.node else f"tick {self.tick}"
        return f"{where}: {self.what} differs: {self.summary}"

    def text(self, indent: str = "  ") -> str:
        return "\n".join([self.line, *(indent + line for line in self.detail)])


@dataclass
class Sides:
    """The names of the two sides ("recorded" / "now", or the two runs) and their id numbering."""

    old: str = "recorded"
    new: str = "now"
    _ids: tuple[dict[str, str], dict[str, str]] = field(default_factory=lambda: ({}, {}))

    def normal(self, side: int, value: Any) -> Any:
        """The value with its ids replaced by their number on this side (`#1`, `#2`, ...)."""
        return _renumbered(value, self._ids[side])

    def normal_key(self, side: int, key: str, value: Any) -> Any:
        if key in _KEYED_BY_ID and isinstance(value, Mapping):
            ids = self._ids[side]
            for request_id in value:
                ids.setdefault(request_id, f"#{len(ids) + 1}")
        return self.normal(side, value)


def _renumbered(value: Any, ids: dict[str, str], key: str | None = None) -> Any:
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if k in ids:
                k = ids[k]
            if (k in _ID_KEYS or key in _ID_HOLDERS and k == "id") and isinstance(v, str):
                v = ids.setdefault(v, f"#{len(ids) + 1}")
            out[k] = _renumbered(v, ids, k)
        return out
    if isinstance(value, list | tuple):
        return [_renumbered(item, ids, key) for item in value]
    if isinstance(value, str) and value in ids:
        return ids[value]
    return value


# -- where two values part -------------------------------------------------------------
def first_split(old: Any, new: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """(path inside the values, old part, new part) where two JSON-like values first differ."""
    if old == new:
        return None
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in [*old, *(k for k in new if k not in old)]:
            if key not in old or key not in new:
                return f"{path}.{key}" if path else str(key), old.get(key, _MISSING), new.get(key, _MISSING)
            found = first_split(old[key], new[key], f"{path}.{key}" if path else str(key))
            if found:
                return found
    if isinstance(old, list | tuple) and isinstance(new, list | tuple):
        for i in range(max(len(old), len(new))):
            if i >= len(old) or i >= len(new):
                return f"{path}[{i}]", old[i] if i < len(old) else _MISSING, new[i] if i < len(new) else _MISSING
            found = first_split(old[i], new[i], f"{path}[{i}]")
            if found:
                return found
    return path, old, new


class _Missing:
    def __repr__(self) -> str:
        return "(none)"


_MISSING = _Missing()


def shown(value: Any, limit: int = EXCERPT) -> str:
    """A value as one short line: JSON, cut with … past `limit` characters."""
    if value is _MISSING:
        return "(none)"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=repr)
    text = repr(text) if isinstance(value, str) else text
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _window(old: str, new: str) -> tuple[str, str]:
    """Both texts around the first character where they differ (`…` where cut)."""
    at = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new)))
    start = max(0, at - EXCERPT // 3)

    def cut(text: str) -> str:
        part = text[start:start + EXCERPT]
        return ("…" if start else "") + part + ("…" if start + EXCERPT < len(text) else "")

    return repr(cut(old)), repr(cut(new))


def excerpt(old: Any, new: Any, sides: Sides, prefix: str = "") -> tuple[str, ...]:
    """Two lines (`- old side: …`, `+ new side: …`) at the first place the values part."""
    found = first_split(old, new)
    if found is None:
        return ()
    path, a, b = found
    where = f"{prefix}{path}" if not prefix or not path or path.startswith("[") or prefix.endswith(".") \
        else f"{prefix}.{path}"
    if isinstance(a, str) and isinstance(b, str):
        a_text, b_text = _window(a, b)
    else:
        a_text, b_text = shown(a), shown(b)
    label = f" {where}" if where else ""
    width = max(len(sides.old), len(sides.new))
    return (f"-{label} {sides.old:<{width}} {a_text}", f"+{label} {sides.new:<{width}} {b_text}")


# -- a tick's pictures -------------------------------------------------------------------
def status_differences(tick: int, old: Mapping[str, str], new: Mapping[str, str],
                       sides: Sides) -> list[Difference]:
    """One `Difference` naming the first node (in tree order) whose status differs, the others listed."""
    paths = [p for p in dict.fromkeys([*old, *new]) if old.get(p, "INVALID") != new.get(p, "INVALID")]
    if not paths:
        return []
    first = paths[0]
    detail = [f"{path}: {sides.old} {old.get(path, '(no such node)')}, {sides.new} {new.get(path, '(no such node)')}"
              for path in paths[:SHOWN_NODES + 1]]
    if len(paths) > SHOWN_NODES + 1:
        detail.append(f"… and {len(paths) - SHOWN_NODES - 1} more nodes")
    return [Difference(tick, first, "status", f"{sides.old} {old.get(first, '(no such node)')}, "
                       f"{sides.new} {new.get(first, '(no such node)')}", tuple(detail))]


def qualified(namespace: str, key: str) -> str:
    return f"{namespace}.{key}" if namespace else key


def state_differences(tick: int, old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]],
                      sides: Sides, writer: Any = None) -> list[Difference]:
    """One `Difference` per state key whose value differs (ids aside); `writer(namespace, key)`
    names the node that wrote it, when it can be told."""
    out = []
    for ns in dict.fromkeys([*old, *new]):
        a, b = old.get(ns, {}), new.get(ns, {})
        for key in dict.fromkeys([*a, *b]):
            va = sides.normal_key(0, key, a[key]) if key in a else _MISSING
            vb = sides.normal_key(1, key, b[key]) if key in b else _MISSING
            if va != vb:
                out.append(_state_difference(tick, ns, key, va, vb, sides, writer))
    return out


def _state_difference(tick: int, ns: str, key: str, va: Any, vb: Any, sides: Sides, writer: Any) -> Difference:
    name = qualified(ns, key)
    summary = (f"{sides.old} {shown(va, 40)}, {sides.new} {shown(vb, 40)}"
               if not isinstance(va, list | dict) and not isinstance(vb, list | dict) else
               f"at {first_split(va, vb)[0] or name}")
    return Difference(tick, writer(ns, key) if writer else None, f"state key {name!r}", summary,
                      excerpt(va, vb, sides, prefix=name))


Reader = Callable[..., list]  # a store's read_list(list id, length, first=0)


class Pictures:
    """Two runs' pictures compared tick after tick, as cheaply as the store keeps them.

    Checkpoints are read without their lists (`read_lists=False`); a key whose stored form
    did not change on either side since the last tick is not compared again (it was equal,
    or its difference was said), and a list (a message history) that only grew is compared
    from where the two last matched: a 200-round run costs what each tick added, not its
    whole history every tick. A status that differs is said at the tick it starts to."""

    def __init__(self, sides: Sides, read_old: Reader, read_new: Reader):
        self.sides = sides
        self._read = (read_old, read_new)
        self._seen: dict[tuple[str, str], tuple[Any, Any]] = {}  # key -> both stored forms last compared
        self._matched: dict[tuple[str, str], int] = {}  # (list id, list id) -> items known equal
        self._statuses: tuple[Mapping[str, str], Mapping[str, str]] | None = None
        self._returned: tuple[Any, Any] | None = None  # the returns difference said at the last tick

    def differences(self, tick: int, old: Checkpoint, new: Checkpoint, writer: Any = None) -> list[Difference]:
        """What differs at this tick: what the nodes returned (in order), then the statuses the tick
        left, then the state keys."""
        return [*self._returns_differences(tick, old.returns, new.returns),
                *self._status_differences(tick, old.statuses, new.statuses),
                *self._state_differences(tick, (old, new), writer)]

    def _returns_differences(self, tick: int, old: Returns | None, new: Returns | None) -> list[Difference]:
        """The first return (in the tick's order) where the two differ: a node that returned another
        status, or another node returning there. Said at the first tick it happens, and again only
        when it is not the same difference as the tick before (two runs that went apart differ every tick).
        A side with no returns (a tick recorded before returns were) compares nothing."""
        if old is None or new is None:
            return []
        a, b = list(zip(old.paths, old.statuses, strict=True)), list(zip(new.paths, new.statuses, strict=True))
        if a == b:
            self._returned = None
            return []
        at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        one, other = (a[at] if at < len(a) else None), (b[at] if at < len(b) else None)
        signature = (one, other)
        if signature == self._returned:
            return []
        self._returned = signature

        def said(side: str, item: tuple[str, Any] | None) -> str:
            return f"{side} returns nothing more" if item is None else f"{side} {item[1].value}"

        if one is not None and other is not None and one[0] == other[0]:
            summary = f"{said(self.sides.old, one)}, {said(self.sides.new, other)}"
        else:
            summary = ", ".join(said(side, item) if item is None else f"{side} {item[0]} returned {item[1].value}"
                                for side, item in ((self.sides.old, one), (self.sides.new, other)))
        node = (one or other)[0]
        detail = [f"{side}: " + ", ".join(f"{p.rpartition('/')[2]} {s.value}" for p, s in returns[max(0, at - 2):at + 3])
                  for side, returns in ((self.sides.old, a), (self.sides.new, b))]
        return [Difference(tick, node, "returned status", f"return {at + 1} of the tick: {summary}", tuple(detail))]

    def _status_differences(self, tick: int, old: Mapping[str, str], new: Mapping[str, str]) -> list[Difference]:
        before, self._statuses = self._statuses, (old, new)
        if old == new:
            return []
        if before is not None:
            changed = {p for now, was in zip((old, new), before, strict=True) for p, s in now.items()
                       if was.get(p) != s}
            old, new = ({p: s for p, s in side.items() if p in changed} for side in (old, new))
        return status_differences(tick, old, new, self.sides)

    def _state_differences(self, tick: int, pictures: tuple[Checkpoint, Checkpoint], writer: Any) -> list[Difference]:
        forms = [_stored_forms(cp) for cp in pictures]
        out = []
        for ns, key in dict.fromkeys([*forms[0], *forms[1]]):
            pair = (forms[0].get((ns, key), _MISSING), forms[1].get((ns, key), _MISSING))
            if self._seen.get((ns, key)) == pair:
                continue
            self._seen[(ns, key)] = pair
            if not self._equal(key, pair):
                values = [self._value(side, key, form) for side, form in enumerate(pair)]
                out.append(_state_difference(tick, ns, key, *values, self.sides, writer))
        return out

    def _equal(self, key: str, pair: tuple[Any, Any]) -> bool:
        a, b = pair
        if isinstance(a, _ListRef) and isinstance(b, _ListRef):
            if a.length != b.length:
                return False
            done = self._matched.get((a.list_id, b.list_id), 0)
            items = [self.sides.normal(side, self._read[side](ref.list_id, ref.length, done))
                     for side, ref in enumerate(pair)]
            if items[0] != items[1]:
                return False
            self._matched[(a.list_id, b.list_id)] = a.length
            return True
        return self._value(0, key, a) == self._value(1, key, b)

    def _value(self, side: int, key: str, form: Any) -> Any:
        if isinstance(form, _ListRef):
            return self.sides.normal(side, self._read[side](form.list_id, form.length))
        return form if form is _MISSING else self.sides.normal_key(side, key, form)


@dataclass(frozen=True)
class _ListRef:
    list_id: str
    length: int


def _stored_forms(cp: Checkpoint) -> dict[tuple[str, str], Any]:
    """Each state key's value as read without lists: the value, or where its stored list is."""
    forms: dict[tuple[str, str], Any] = {(ns, k): v for ns, values in cp.state.items() for k, v in values.items()}
    for ns, lists in cp.lists.items():
        for key, (list_id, length) in lists.items():
            forms[(ns, key)] = _ListRef(list_id, length)
    return forms


def tools_offered(config: Mapping[str, Any] | None) -> list[str]:
    return [(tool.get("function") or tool).get("name", "?") for tool in (config or {}).get("tools") or ()
            if isinstance(tool, Mapping)]


def config_difference(old: Mapping[str, Any], new: Mapping[str, Any], sides: Sides) -> tuple[str, tuple[str, ...]] | None:
    """(summary, detail) of two model configs: the tools offered first (added, removed, changed)."""
    if old == new:
        return None
    a, b = tools_offered(old), tools_offered(new)
    if a != b:
        gone, added = [t for t in a if t not in b], [t for t in b if t not in a]
        change = ", ".join([*(f"-{t}" for t in gone), *(f"+{t}" for t in added)]) or "their order"
        return (f"tools offered ({change})", (f"- {sides.old}: {', '.join(a) or '(none)'}",
                                              f"+ {sides.new}: {', '.join(b) or '(none)'}"))
    path = first_split(old, new)[0]
    return f"config {path}", excerpt(old, new, sides, prefix="config")


def message_lines(messages: Sequence[Mapping[str, Any]], limit: int = 3) -> Iterable[str]:
    """The last few messages of a request as short lines (role: content)."""
    for message in list(messages)[-limit:]:
        text = message.get("content") or shown(message.get("tool_calls") or "")
        yield f"{message.get('role')}: {shown(str(text), EXCERPT)}"


__all__ = ["Difference", "Pictures", "Sides", "config_difference", "excerpt", "first_split", "qualified", "shown",
           "state_differences", "status_differences", "tools_offered"]
