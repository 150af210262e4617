"""The telemetry bus, newest last, written in batches so a burst of events stays cheap.

A `Log` takes a whole batch in one `write_lines()`; `text.delta` events extend the line of
the model call they belong to, so streamed text reads as it arrives. Changing the filter
redraws from the session's event history.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from textual.widgets import Log

from runtime.engine.events import EventType, RuntimeEvent

from .values import preview

FILTER_EXAMPLE = "type:tool. -type:node.status node:Normalize -node:Count words -noise"


@dataclass
class EventFilter:
    """Parsed from terms like FILTER_EXAMPLE: `-` excludes; terms of one field OR, fields AND."""

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
            if sep and name in ("type", "node") and value:
                target.setdefault(name, []).append(value.lower())
            elif term:
                target.setdefault("text", []).append(term.lower())
        return parsed

    def accepts(self, event: RuntimeEvent, line: str) -> bool:
        fields = {"type": event.type.lower(), "node": (event.node or "").lower(), "text": line.lower()}
        for name, values in self.include.items():
            if not any(_matches(name, fields[name], v) for v in values):
                return False
        return not any(_matches(name, fields[name], v) for name, values in self.exclude.items() for v in values)


def _matches(name: str, field_value: str, wanted: str) -> bool:
    return field_value.startswith(wanted) if name == "type" else wanted in field_value


def _delta(event: RuntimeEvent) -> str:
    return str(event.payload.get("delta", "")).replace("\n", " ⏎ ")


def format_event(event: RuntimeEvent) -> str:
    node = (event.node or "").rpartition("/")[2]
    payload = _delta(event) if event.type == EventType.TEXT_DELTA else preview(event.payload, 200)
    return f"{event.seq:>6} t{event.tick:<4} {event.type:<20} {node:<18} {payload}"


class EventsPane(Log):
    """Events that pass the filter; `add()` a batch, `refilter()` after the filter changed."""

    def __init__(self, **kwargs) -> None:
        super().__init__(max_lines=20_000, **kwargs)
        self.filter = EventFilter()
        self._open_delta: tuple[str | None, str | None] | None = None  # (run, node) of an open text.delta line

    def add(self, events: Iterable[RuntimeEvent]) -> None:
        tail = ""  # text.delta that continues the stream line already in the log
        lines: list[str] = []
        for event in events:
            line = format_event(event)
            if not self.filter.accepts(event, line):
                continue
            if event.type == EventType.TEXT_DELTA:
                stream = (event.run_id, event.node)
                if stream == self._open_delta:
                    if lines:
                        lines[-1] += _delta(event)
                    else:
                        tail += _delta(event)
                    continue
                self._open_delta = stream
            else:
                self._open_delta = None
            lines.append(line)
        if tail:
            self.write(tail)
        if lines:
            self.write_lines(lines)

    def refilter(self, text: str, history: Iterable[RuntimeEvent]) -> None:
        self.filter = EventFilter.parse(text)
        self.border_subtitle = f"filter: {self.filter.text}" if self.filter.text else "/ to filter"
        self.clear()
        self._open_delta = None
        self.add(history)
