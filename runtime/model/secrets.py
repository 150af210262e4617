"""Keeping an API key out of everything a run prints, records or stores.

`checked_api_key` runs when a client is built: a key pasted with a trailing newline would
otherwise be sent as an illegal header whose error message quotes it, so surrounding
whitespace is stripped and a key still holding control characters is refused in one line
that does not print it.

`Redactor` removes the key from error texts before they leave the provider, also when a
server or a library echoes it escaped (JSON, URL, repr) or in part (a key minus its last
character is still a key): any run of the text made of fragments of the key at least
`FRAGMENT` characters long is replaced by `***`. A successful answer is redacted too (a proxy
or a model repeating the key): `scrub` walks its strings, and `holding_back` passes a stream's
deltas on redacted, holding back only an end that begins like the key (`HOLD_FROM` characters
or more) until the next delta says whether it goes on, so a key split across deltas of a few
characters each is masked as well while ordinary text streams as it came.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Callable
from typing import Any

from runtime.model.errors import ModelConfigurationError

FRAGMENT = 8
"""Fragments of the key this long or longer are redacted (shorter ones say nothing useful)."""
MASK = "***"
HOLD_FROM = 3
"""A stream's end held back once this many of its characters begin a fragment of the key (fewer:
passed on; at most that many characters of the key can show before the rest is masked)."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def checked_api_key(api_key: str | None) -> str | None:
    """The key without surrounding whitespace (None when empty); `ModelConfigurationError` if it
    still holds a control character or is not text a header can carry."""
    if api_key is None:
        return None
    if not isinstance(api_key, str):
        raise ModelConfigurationError(f"the API key must be a string, not {type(api_key).__name__}")
    key = api_key.strip()
    bad = _CONTROL.search(key)
    if bad is not None:
        raise ModelConfigurationError(
            f"the API key contains a control character (U+{ord(bad.group()):04X} at position {bad.start() + 1} "
            f"of {len(key)}); the key is not shown: check JIANMU_API_KEY / OPENAI_API_KEY or api_key="
        )
    if not key.isascii():
        raise ModelConfigurationError(
            f"the API key contains a non-ASCII character (a key of {len(key)} characters, not shown): "
            "check JIANMU_API_KEY / OPENAI_API_KEY or api_key="
        )
    return key or None


class Redactor:
    """`redactor(text)`: the text with every trace of the key replaced by `***`."""

    def __init__(self, key: str | None):
        self._forms: list[str] = []
        self._grams: set[str] = set()
        if not key:
            return
        forms = {key, json.dumps(key)[1:-1], urllib.parse.quote(key, safe=""), repr(key)[1:-1]}
        self._forms = sorted(forms, key=len, reverse=True)
        self._size = min(FRAGMENT, len(key))
        for form in forms:
            self._grams.update(form[i : i + self._size] for i in range(len(form) - self._size + 1))
        self._hold_from = max(1, min(HOLD_FROM, self._size - 1))
        self._beginnings = {gram[:n] for gram in self._grams for n in range(self._hold_from, self._size)}

    def __call__(self, text: str) -> str:
        if not self._forms or not text:
            return text
        for form in self._forms:
            text = text.replace(form, MASK)
        return self._mask_fragments(text)

    def scrub(self, value: Any) -> Any:
        """A JSON-like value (str, list, dict) with every string redacted; `value` itself when none
        held a trace of the key (the common case costs a search per string, no copy)."""
        if not self._forms:
            return value
        if isinstance(value, str):
            return self(value) if any(gram in value for gram in self._grams) else value
        if isinstance(value, list):
            items = [self.scrub(item) for item in value]
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        if isinstance(value, dict):
            pairs = {self.scrub(key): self.scrub(item) for key, item in value.items()}
            same = len(pairs) == len(value) and all(k in value and pairs[k] is value[k] for k in pairs)
            return value if same else pairs
        return value

    def holding_back(self, emit: Callable[[str], Any]) -> tuple[Callable[[str], None], Callable[[], None]]:
        """(feed, flush): `feed(delta)` passes the text so far on to `emit`, redacted as the whole text
        would be, except an end that begins a fragment of the key (the next delta may complete it);
        `flush()` passes that rest at the stream's end. Without a key, `emit` is fed as is."""
        if not self._forms:
            return emit, lambda: None
        size = self._size
        recent, tail, carried = "", "", []  # the end passed on (raw); raw text held; which of it is masked
        masking = False

        def render(text: str, covered: list[bool]) -> None:
            nonlocal masking
            out = []
            for char, hidden in zip(text, covered, strict=True):
                if not hidden:
                    out.append(char)
                elif not masking:
                    out.append(MASK)
                masking = hidden
            if out:
                emit("".join(out))

        def feed(delta: str) -> None:
            nonlocal recent, tail, carried
            text = tail + delta
            seen = recent + text  # a window may begin in what was passed on already
            covered = self._cover(seen, [False] * len(recent) + carried + [False] * len(delta))[len(recent):]
            held = next((n for n in range(min(size - 1, len(seen)), self._hold_from - 1, -1)
                         if seen[-n:] in self._beginnings), 0)
            cut = len(text) - min(held, len(text))
            render(text[:cut], covered[:cut])
            recent = (recent + text[:cut])[-(size - 1):]
            tail, carried = text[cut:], covered[cut:]

        def flush() -> None:
            nonlocal recent, tail, carried
            render(tail, carried)
            recent, tail, carried = "", "", []

        return feed, flush

    def _cover(self, text: str, covered: list[bool]) -> list[bool]:
        """`covered`, with every character inside a window of `FRAGMENT` characters found in the key marked."""
        size, grams = self._size, self._grams
        for start in range(len(text) - size + 1):
            if text[start : start + size] in grams:
                covered[start : start + size] = [True] * size
        return covered

    def _mask_fragments(self, text: str) -> str:
        """Mask every stretch covered by windows of `FRAGMENT` characters that occur in the key."""
        covered = self._cover(text, [False] * len(text))
        if not any(covered):
            return text
        out: list[str] = []
        for i, char in enumerate(text):
            if not covered[i]:
                out.append(char)
            elif i == 0 or not covered[i - 1]:
                out.append(MASK)
        return "".join(out)


__all__ = ["FRAGMENT", "HOLD_FROM", "MASK", "Redactor", "checked_api_key"]
