"""Two runs or branches side by side (`runtime.debug.compare`): a row per tick with what each side's
checkpoint says, the first divergence selected, and below, for the selected tick, what differed
there and every state key whose value differs between the two (asked of the debug server, for an
attached studio, when the tick is selected).

`ComparePicker` chooses the second side: another branch of the run, or another run of the store."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, OptionList, Static
from textual.widgets.option_list import Option

from runtime.check.compare import Difference
from runtime.debug.compare import Cell, Comparison, Row, Target

CELL = 34  # characters of a side's summary in its cell


class ComparePicker(ModalScreen[Target | None]):
    """The branches and runs to compare the one shown with."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="compare-pick-cancel")]

    def __init__(self, shown: str, choices: list[Target]) -> None:
        super().__init__()
        self._shown, self.choices = shown, choices

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog") as dialog:
            dialog.border_title = Content(f"compare {self._shown} with")
            dialog.border_subtitle = "enter: compare · esc: cancel"
            yield OptionList(*(Option(Content(target.label), id=str(i)) for i, target in enumerate(self.choices)),
                             id="compare-choices")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.choices[int(event.option.id)])


def _cell(cell: Cell | None) -> Text:
    if cell is None:
        return Text("(not reached)", "dim")
    summary = cell.summary
    return Text(f"{cell.status:<8} {summary[:CELL - 1] + '…' if len(summary) > CELL else summary}")


def _side_style(line: str) -> str:
    """An excerpt's line in its side's colour (`-` the first side, `+` the second), any other dim."""
    return "red" if line.startswith("-") else "green" if line.startswith("+") else "dim"


class CompareScreen(ModalScreen[None]):
    """The comparison, the first divergence selected; the selected tick's differences below."""

    BINDINGS = [Binding("escape", "dismiss", "Close", id="compare-close")]

    def __init__(self, comparison: Comparison) -> None:
        super().__init__()
        self.comparison = comparison

    def compose(self) -> ComposeResult:
        comparison = self.comparison
        a, b = comparison.a.label, comparison.b.label
        with Vertical(classes="dialog wide tall") as dialog:
            dialog.border_title = Content(f"compare: {a} ⟷ {b}")
            dialog.border_subtitle = "arrows: another tick · esc: close"
            yield Label(f"first divergence: {comparison.first_line}" if comparison.first_line is not None
                        else "the two match, tick for tick (times and ids aside)", classes="hint", id="compare-first",
                        markup=False)
            table: DataTable = DataTable(id="compare-rows", cursor_type="row", zebra_stripes=True)
            table.add_columns("tick", "differs", Text(a), Text(b))
            for row in comparison.rows:
                differs = Text(f"✘ {row.differences[0].what}" + (f" +{len(row.differences) - 1}"
                                                                  if len(row.differences) > 1 else ""), "red") \
                    if row.differences else Text("")
                table.add_row(str(row.tick), differs, _cell(row.a), _cell(row.b),
                              key=str(row.tick))
            yield table
            with VerticalScroll(id="compare-detail"):
                yield Static("", id="compare-tick")

    def on_mount(self) -> None:
        table = self.query_one("#compare-rows", DataTable)
        first = self.comparison.first
        at = next((i for i, row in enumerate(self.comparison.rows) if row.tick == first), 0)
        table.move_cursor(row=at)
        table.focus()
        self._show(at)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show(event.cursor_row)

    def _show(self, index: int) -> None:
        if not self.comparison.rows:
            return
        row: Row = self.comparison.rows[index]
        text = Text()
        text.append(f"tick {row.tick}: ", "bold")
        if row.differences:
            text.append(f"{len(row.differences)} difference{'s' if len(row.differences) > 1 else ''}\n", "red")
            for difference in row.differences:
                text.append(f"{difference.line}\n")
                for line in difference.detail:
                    text.append(f"    {line}\n", _side_style(line))
        else:
            text.append("nothing new differs here\n", "green")
        state = self.comparison.states(row)
        if inspect.isawaitable(state):  # asked of the debug server
            self._asked(text, row.tick, state)
        else:
            self._with_state(text, row.tick, state)

    @work(exclusive=True, group="compare-state", exit_on_error=False)
    async def _asked(self, text: Text, tick: int, state: Awaitable[list[Difference] | None]) -> None:
        self._with_state(text, tick, await state)

    def _with_state(self, text: Text, tick: int, state: list[Difference] | None) -> None:
        text.append(f"\nstate at tick {tick}: ", "bold")
        if state is None:  # the server could not tell (the status line says why)
            text.append("not known\n", "dim")
        else:
            text.append(("1 key differs\n" if len(state) == 1 else f"{len(state)} keys differ\n") if state
                        else "the same\n")
        for difference in state or ():
            text.append(f"{difference.what}: {difference.summary}\n")
            for line in difference.detail:
                text.append(f"    {line}\n", _side_style(line))
        self.query_one("#compare-tick", Static).update(text)

__all__ = ["ComparePicker", "CompareScreen"]
