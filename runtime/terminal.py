"""`terminal_line`: any text a tree, a store or a model supplied, made safe to print as one terminal line.

Node names, tool names, error messages and model answers are data: printed raw, an ESC starts an
escape sequence (it can recolour, move the cursor, retitle the window or hide what follows), a BEL
rings, a NUL or a CR hides what was before it, a newline forges a line of the CLI's own, a lone
surrogate makes `print` raise. Each such character is shown as its Python escape instead (`\\x1b`,
`\\n`, `\\u202e`), so the line reads the same and says exactly what the text holds.
"""

from __future__ import annotations

import re
import unicodedata

_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
"""C0 and C1 controls and DEL; the marks that reorder text (bidi overrides, isolates); the line and
paragraph separators; lone surrogates (a valid string never holds one, a decoded hostile one may)."""


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    return repr(char)[1:-1] if unicodedata.category(char) != "Cs" else f"\\u{ord(char):04x}"


def terminal_line(text: object) -> str:
    """`text` (or its `str`) with every character that would act on a terminal shown as its escape."""
    return _UNSAFE.sub(_escaped, str(text))


__all__ = ["terminal_line"]
