"""Text the studio draws is shown, never obeyed: control characters become visible pictures.

Node names, state values, model replies and tool results come from trees, stores and models. Rich
and Textual drop a few control characters from the text they draw (BEL, BS, VT, FF, CR) but pass
ESC and the rest to the terminal as they are: a node named `"\\x1b]0;x\\x07"` retitles the window,
one holding `"\\x1b[2J"` clears the screen under the app. Both libraries strip through one table
each, read whenever text is made (`Text`, `Content`); this module extends those tables once, on
import, so every widget's text is covered without a call per widget: each other C0 control but tab
and newline, DEL and the C1 controls are drawn as their Unicode control pictures (`␛`, `␀`, `␡`) or `�`
(the five the libraries drop stay dropped: a CR of a `\r\n` line end is no news).
A widget that draws its own segments (`Segment`, `Strip`) bypasses both tables: it passes its text
through `shown` first. The CLI's lines are made safe by `runtime.terminal.terminal_line` instead (it
prints no widgets).

Nor is such text read as markup: Textual reads a `str` given to a label, a static, a border title, a
notification or a data table's cell as markup, so a node named `Q[x=:1]` raised `MarkupError` and
ended the studio, and a condition `items[i] > 0` was listed as `items > 0`. The studio writes no
markup of its own: it gives those widgets `Content`/`Text`, `markup=False`, and its notifications
are never read as markup (`StudioApp.notify`).
"""

from __future__ import annotations

from rich import control as rich_control
from textual import content as textual_content

KEPT = {0x09, 0x0A}  # tab and newline: text the widgets lay out


def _picture(code: int) -> str:
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟
    return "\u2421" if code == 0x7F else "\ufffd"  # ␡ for DEL, � for a C1 control


PICTURES = {code: _picture(code) for code in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if code not in KEPT}

for _table in (rich_control._CONTROL_STRIP_TRANSLATE, textual_content._CONTROL_STRIP_TRANSLATE):
    for _code, _shown in PICTURES.items():
        _table.setdefault(_code, _shown)



ONE_LINE = {**PICTURES, 0x09: "\u2409", 0x0A: "\u240a"}  # a line drawn as segments: no tab or newline either


def shown(text: str) -> str:
    """`text` with each control character as its picture, tab and newline too, for a widget that draws one
    line of segments itself (a tab or a newline in a segment moved the terminal's cursor off the line), or
    measures one (a control character takes a cell as its picture, none as itself)."""
    return text if text.isprintable() else text.translate(ONE_LINE)  # (the test in C: 100,000 names a pass)


__all__ = ["ONE_LINE", "PICTURES", "shown"]
