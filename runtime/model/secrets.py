"""Keeping an API key out of everything a run prints, records or stores.

`checked_api_key` runs when a client is built: a key pasted with a trailing newline would
otherwise be sent as an illegal header whose error message quotes it, so surrounding
whitespace is stripped and a key still holding control characters is refused in one line
that does not print it.

`Redactor` removes the key from error texts before they leave the provider, also when a
server or a library echoes it escaped (JSON, URL, repr) or in part (a key minus its last
character is still a key): any run of the text made of fragments of the key at least
`FRAGMENT` characters long is replaced by `***`.
"""

from __future__ import annotations

import json
import re
import urllib.parse

from runtime.model.errors import ModelConfigurationError

FRAGMENT = 8
"""Fragments of the key this long or longer are redacted (shorter ones say nothing useful)."""
MASK = "***"
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

    def __call__(self, text: str) -> str:
        if not self._forms or not text:
            return text
        for form in self._forms:
            text = text.replace(form, MASK)
        return self._mask_fragments(text)

    def _mask_fragments(self, text: str) -> str:
        """Mask every stretch covered by windows of `FRAGMENT` characters that occur in the key."""
        size, grams = self._size, self._grams
        covered = [False] * len(text)
        hit = False
        for start in range(len(text) - size + 1):
            if text[start : start + size] in grams:
                hit = True
                for i in range(start, start + size):
                    covered[i] = True
        if not hit:
            return text
        out: list[str] = []
        i = 0
        while i < len(text):
            if covered[i]:
                while i < len(text) and covered[i]:
                    i += 1
                out.append(MASK)
            else:
                out.append(text[i])
                i += 1
        return "".join(out)


__all__ = ["FRAGMENT", "MASK", "Redactor", "checked_api_key"]
