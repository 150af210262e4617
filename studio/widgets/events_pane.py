"""The telemetry bus, newest last, cheap under bursts because it formats only what shows.

Events wait in a queue and are filtered into a ring buffer of rows a few milliseconds at a
time, so a burst of thousands never holds a key press back (with no filter and no stream to
join there is nothing to do per event: they all become rows at once). A row is formatted
(the JSON preview of its payload is the costly part) when it comes on screen, or when a text
term of the filter has to read it; `text.delta` rows extend the line of the model call they
belong to, so streamed text reads as it arrives. A tick's telemetry comes as one block
(`studio.event_log.TickEvents`, ~10,000 `node.status` events a step at 100,000 nodes): its rows
count at once and each is built when drawn (`EventRows`); a filter reads them event by event.
Changing the filter refills the buffer from the session's event history, in the same slices.

Up and down move a cursor over the rows (the pane stops following while one is there);
enter asks for the event under it whole (`Chosen`); end follows the newest again.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from operator import attrgetter
from typing import Any

from pydantic_core import to_jsonable_python
from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.content import Content
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip

from runtime.engine.events import EventType

from ..event_log import Entry, Events, StampedEvent, TickEvents
from .event_rows import EventRows
from .extent import set_extent
from .values import fit

FIELDS = ("type", "node", "branch", "run")

def filter_example(node_names: list[str]) -> str:
    """A filter naming two of the tree's own leaf-most nodes (`node:` terms cannot hold spaces)."""
    names = [name for name in reversed(dict.fromkeys(node_names)) if name and " " not in name][:2]
    if len(names) < 2:
        return "type:tool. -type:node.status -noise"
    return f"type:tool. -type:node.status node:{names[1]} -node:{names[0]} -noise"
MAX_ROWS = 20_000  # the oldest rows drop off; the session keeps a longer history for refiltering
LINES_KEPT = 1_024  # formatted lines kept (a few screens'): a row scrolled back to is formatted again
SLICE = 0.004  # seconds of filtering per turn: what a key press may wait behind
CHUNK = 256  # events filtered between two looks at the clock
PAYLOAD_CHARS = 200  # of a row's payload
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")  # would move the terminal's cursor (C1: an 8-bit CSI, too)
_STR = frozenset({str})  # the type of a plain dict's keys (`_json_pieces`)
_TYPE = attrgetter("type")  # an event's or a tick's block's, read in C: a refill scans every entry for streams


@dataclass
class EventFilter:
    """Parsed from terms like `type:tool. -node:Count words` (see `filter_example`): `-` excludes;
    terms of one field OR, fields AND."""

    text: str = ""
    include: dict[str, list[str]] = field(default_factory=dict)
    exclude: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> EventFilter:
        parsed = cls(text.strip())
        for term in text.split():
            target = parsed.exclude if term.startswith("-") else parsed.include
            term = term.lstrip("-")
            name, sep, value = term.partition(":")
            if sep and name in FIELDS and value:
                target.setdefault(name, []).append(value.lower())
            elif term:
                target.setdefault("text", []).append(term.lower())
        return parsed

    @property
    def active(self) -> bool:
        return bool(self.include or self.exclude)

    def rejects_type(self, event_type: str) -> bool:
        """Whether every event of `event_type` fails the type terms (a tick's node.status rows are then
        passed over without being built)."""
        wanted, unwanted = self.include.get("type"), self.exclude.get("type")
        return bool((wanted and not any(event_type.startswith(v) for v in wanted))
                    or (unwanted and any(event_type.startswith(v) for v in unwanted)))

    def accepts(self, event: StampedEvent, line: Callable[[], str]) -> bool:
        """Type and node terms decide first; `line()` (formatting the event) only for text terms."""
        for name in (*FIELDS, "text"):
            wanted, unwanted = self.include.get(name), self.exclude.get(name)
            if not (wanted or unwanted):
                continue
            value = _field(name, event, line).lower()
            if wanted and not any(_matches(name, value, v) for v in wanted):
                return False
            if unwanted and any(_matches(name, value, v) for v in unwanted):
                return False
        return True


def _field(name: str, event: StampedEvent, line: Callable[[], str]) -> str:
    if name == "type":
        return event.type
    if name == "branch":
        return event.branch
    if name == "run":
        return event.run_id or ""
    return event.node or "" if name == "node" else line()


def _matches(name: str, field_value: str, wanted: str) -> bool:
    if name == "branch":
        return field_value == wanted
    return field_value.startswith(wanted) if name in ("type", "run") else wanted in field_value


def _delta(event: StampedEvent) -> str:
    return _CONTROL.sub("�", str(event.payload.get("delta", "")).replace("\n", " ⏎ ").expandtabs())


def payload_preview(value: Any, limit: int = PAYLOAD_CHARS) -> str:
    """`preview(value, limit)`, JSON written only as far as the line shows: a tick's
    `tick.completed` at 10,000 nodes carries ~1,000 changed nodes (65 KB of JSON, ~2 ms to write
    whole), and its line is formatted at every step and every refill."""
    pieces: list[str] = []
    length = 0
    for piece in _json_pieces(value):
        piece = piece.replace("\\n", "⏎")  # a piece is whole tokens: no escape is cut in two
        pieces.append(piece)
        length += len(piece)
        if length > limit:
            break
    return fit("".join(pieces), limit)


def _json_pieces(value: Any) -> Iterator[str]:
    """`json.dumps(to_jsonable_python(value))` in order, a token or a leaf at a time: plain dicts
    (of string keys), lists and tuples are walked, anything else is written whole as `preview` writes it."""
    if type(value) is dict and _STR.issuperset(map(type, value)):  # (keys checked in C: a tick's changes map 10,000)
        yield "{"
        for i, (key, item) in enumerate(value.items()):
            yield f"{', ' if i else ''}{json.dumps(key, ensure_ascii=False)}: "
            yield from _json_pieces(item)
        yield "}"
    elif type(value) is list or type(value) is tuple:
        yield "["
        for i, item in enumerate(value):
            if i:
                yield ", "
            yield from _json_pieces(item)
        yield "]"
    else:
        yield json.dumps(to_jsonable_python(value, fallback=repr), ensure_ascii=False)


def format_event(event: StampedEvent, branch: bool = False) -> str:
    """`seq [branch] tick type node payload`; the tick of an event published between two ticks
    (after tick 4's checkpoint, say) reads `t4+`."""
    node = (event.node or "").rpartition("/")[2]
    payload = _delta(event) if event.type == EventType.TEXT_DELTA else payload_preview(event.payload)
    tick = f"t{event.tick}{'+' if event.between else ''}"
    where = f"{event.branch:<10} " if branch else ""
    return _CONTROL.sub("�", f"{event.seq:>6} {where}{tick:<5} {event.type:<22} {node:<18} {payload}")


class EventsPane(ScrollView, can_focus=True):
    """Events that pass the filter; `add()` a batch, `refilter()` after the filter changed.

    Anchored to the bottom (newest last) until the user scrolls up; back at the bottom, it
    follows again.
    """

    ALLOW_SELECT = True
    BINDINGS = [Binding("up", "cursor(-1)", "Older event", show=False),
                Binding("down", "cursor(1)", "Newer event", show=False),
                Binding("enter", "choose", "Open the event", show=False),
                Binding("end", "follow", "Follow the newest", show=False)]
    COMPONENT_CLASSES = {"events-pane--cursor"}
    DEFAULT_CSS = """
    EventsPane {
        background: $surface;
        color: $text;
        overflow: scroll;
        &:focus {
            background-tint: $foreground 5%;
        }
        & > .events-pane--cursor {
            background: $block-cursor-blurred-background;
        }
        &:focus > .events-pane--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
        }
    }
    """

    class Chosen(Message):
        """Enter on an event: the screen opens it (a model call's whole request and response)."""

        def __init__(self, event: StampedEvent) -> None:
            super().__init__()
            self.event = event

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.filter = EventFilter()
        self._rows = EventRows(MAX_ROWS)
        # A row's line by the row's number (`EventRows.base` + index), the last LINES_KEPT formatted: kept for
        # each row drawn, they grew with the run's length. A text.delta row's line, its stream's later deltas
        # joined, is made of events no row holds: kept in `_joined` while its row is.
        self._texts: dict[int, str] = {}
        self._joined: dict[int, str] = {}
        self._pending: deque[Entry] = deque()  # events, and ticks' telemetry blocks (filtered event by event)
        self._stream: tuple[str | None, str | None] | None = None  # (run, node) of the open text.delta row
        self._width = 0  # the widest line formatted so far
        self._resuming = False
        self.show_branch = False  # a branch column, when the run has more than one branch
        self.cursor: int | None = None  # the row under the cursor; None: no cursor, following
        self._look: tuple[Style, int] | None = None  # (style, width) while render_lines draws

    def on_mount(self) -> None:
        self.anchor()

    @property
    def allow_select(self) -> bool:
        return True

    @property
    def lines(self) -> list[str]:
        """Every row, formatted: for copying a selection and for tests, not for drawing."""
        return [self._line(index) for index in range(len(self._rows))]

    @property
    def line_count(self) -> int:
        return len(self._rows)

    @property
    def backlog(self) -> int:
        """Events received but not filtered yet (a burst is taken a slice at a time)."""
        return len(self._pending)

    def _line(self, index: int) -> str:
        """A row's line, formatted when needed (a row is its event: refilling 10,000 of them built no
        object per row) and kept among the last LINES_KEPT formatted."""
        row = self._rows.base + index
        text = self._joined.get(row)
        if text is None:
            texts = self._texts
            text = texts.get(row)
            if text is None:
                text = texts[row] = format_event(self._rows[index], self.show_branch)
                if len(texts) > LINES_KEPT:
                    del texts[next(iter(texts))]
        return text

    def add(self, events: Iterable[Entry]) -> None:
        """Events, or a tick's telemetry as one block (`TickEvents`: its rows built only when drawn)."""
        self._pending.extend(events)
        self._take()

    def refilter(self, text: str, history: Events | Iterable[StampedEvent]) -> None:
        self.filter = EventFilter.parse(text)
        self.border_subtitle = Content(f"filter: {self.filter.text}") if self.filter.text else "/ to filter"  # (data)
        self._rows.clear()
        self._texts.clear()
        self._joined.clear()
        self._pending.clear()
        self._stream = None
        self.cursor = None
        self._width = 0
        self.add(history.entries if isinstance(history, Events) else history)

    def _take(self) -> None:
        """Filter queued events into rows for one SLICE; the rest waits for the next turn."""
        pending, rows, stream_open, show_branch = self._pending, self._rows, self._stream, self.show_branch
        accepts = self.filter.accepts if self.filter.active else None
        deadline = time.perf_counter() + SLICE
        before, appended = len(rows), 0
        if accepts is None and pending and EventType.TEXT_DELTA not in map(_TYPE, pending):
            stream_open = None  # nothing to filter or join: all rows at once (a refill at enter and esc)
            appended += self._append(pending)
            pending.clear()
        while pending and time.perf_counter() < deadline:
            chunk = [pending.popleft() for _ in range(min(CHUNK, len(pending)))]
            if accepts is not None:
                if any(type(entry) is TickEvents for entry in chunk):  # filtered event by event
                    chunk = [event for entry in chunk
                             for event in (self._typed(entry) if type(entry) is TickEvents else (entry,))]
                chunk = [event for event in chunk if accepts(event, partial(format_event, event, show_branch))]
            if EventType.TEXT_DELTA not in map(_TYPE, chunk):  # no stream: rows at once
                stream_open = None if chunk else stream_open
                appended += self._append(chunk)
                continue
            for event in chunk:
                if event.type != EventType.TEXT_DELTA:
                    stream_open = None
                elif stream_open == (stream := (event.run_id, event.node)):
                    self._joined[rows.base + len(rows) - 1] = self._line(len(rows) - 1) + _delta(event)
                    continue
                else:
                    stream_open = stream
                appended += self._append([event])
        self._stream = stream_open
        if self.cursor is not None:  # the oldest rows dropped off: the cursor stays on its event
            self.cursor -= before + appended - len(rows)
            self.cursor = self.cursor if self.cursor >= 0 else None
        self._resize()
        self.refresh()
        if pending and not self._resuming:
            self._resuming = True
            self.call_later(self._resume)

    def _typed(self, block: TickEvents) -> Iterator[StampedEvent]:
        """The events of a tick's block whose type the filter may pass: those it rejects by type are not built."""
        for event_type, places in block.parts():
            if not self.filter.rejects_type(event_type):
                yield from map(block.__getitem__, places)  # (held by the rows they make, not by the block)

    def _append(self, events: Iterable[Entry]) -> int:
        """Rows for `events`; the oldest drop off, and their streams' lines with them (a line formatted
        for one goes when newer lines push it out)."""
        came, base, joined = self._rows.extend(events), self._rows.base, self._joined
        if joined and next(iter(joined)) < base:  # (rows numbered in order: the first is the oldest)
            self._joined = {row: text for row, text in joined.items() if row >= base}
        return came

    async def _resume(self) -> None:
        await asyncio.sleep(0)  # a real turn of the event loop: keys and screen updates go first
        self._resuming = False
        self._take()

    def _resize(self) -> None:
        """The rows' extent. Following the newest with nothing left to take, the rows about to show
        are measured first: found wider while drawn, they would lay the screen out and draw it a
        second time (each refill, so each enter and esc)."""
        following = self._anchored and not self._anchor_released  # as the compositor tells it
        if not self._pending and following:
            shown = range(max(0, len(self._rows) - self.size.height), len(self._rows))
            self._width = max(self._width, *(cell_len(self._line(index)) for index in shown), 0)
        if set_extent(self, Size(self._width, len(self._rows))) and following:  # at the bottom, as a layout puts it
            self.scroll_target_y = self.scroll_y = self.max_scroll_y

    def render_lines(self, crop: Region) -> list[Strip]:
        """The pane's style and width worked out once for the lines drawn, not once a line: the style
        walks the pane's ancestors, and a step draws every line again (the rows scroll by)."""
        self._look = (self.rich_style, self.size.width)
        try:
            return super().render_lines(crop)
        finally:
            self._look = None

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        style, width = self._look or (self.rich_style, self.size.width)
        index = scroll_y + y
        if index >= len(self._rows):
            return Strip.blank(width, style)
        line = self._line(index)
        length = cell_len(line)
        if length > self._width:  # found a wider line: the horizontal scroll range grows after this frame
            self._width = length
            self.call_later(self._resize)
        if index == self.cursor:  # a bar across the pane: crop_extend pads with this style too
            style += self.get_component_rich_style("events-pane--cursor")
        selection = self.text_selection
        span = selection.get_span(index) if selection is not None else None
        if span is None:
            strip = Strip([Segment(line, style)], length)
        else:
            text = Text(line, style=style, no_wrap=True)
            start, end = span
            text.stylize(self.screen.get_component_rich_style("screen--selection"), start,
                         len(line) if end == -1 else end)
            strip = Strip(text.render(self.app.console), length)
        return strip.crop_extend(scroll_x, scroll_x + width, style).apply_offsets(scroll_x, index)

    # -- the cursor ----------------------------------------------------------------------
    def action_cursor(self, delta: int) -> None:
        """Move the cursor; the first press puts it on the newest row shown and stops following."""
        if not self._rows:
            return
        if self.cursor is None:
            self.release_anchor()
            self.cursor = min(len(self._rows), int(self.scroll_y) + self.size.height) - 1
        else:
            self.cursor = max(0, min(len(self._rows) - 1, self.cursor + delta))
        top, height = int(self.scroll_y), self.size.height
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False)
        self.refresh()

    @property
    def chosen(self) -> StampedEvent | None:
        """The event under the cursor."""
        return self._rows[self.cursor] if self.cursor is not None else None

    def action_choose(self) -> None:
        if self.chosen is not None:
            self.post_message(self.Chosen(self.chosen))

    def action_follow(self) -> None:
        self.cursor = None
        self.scroll_end(animate=False)
        self.refresh()

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        return selection.extract("\n".join(self.lines)), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()
