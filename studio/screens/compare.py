"""Two runs or branches side by side (`studio.compare`): a row per tick with what each side's
checkpoint says, the first divergence selected, and below, for the selected tick, what differed
there and every state key whose value differs between the two.

`ComparePicker` chooses the second side: another branch of the run, or another run of the store."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, OptionList, Static
from textual.widgets.option_list import Option

from ..compare import Comparison, Row, Target

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


def _cell(comparison: Comparison, info) -> Text:
    if info is None:
        return Text("(not reached)", "dim")
    summary = comparison.summary(info)
    return Text(f"{info.status:<8} {summary[:CELL - 1] + '…' if len(summary) > CELL else summary}")


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
        first = comparison.report.first
        with Vertical(classes="dialog wide tall") as dialog:
            dialog.border_title = Content(f"compare: {a} ⟷ {b}")
            dialog.border_subtitle = "arrows: another tick · esc: close"
            yield Label(f"first divergence: {first.line}" if first is not None
                        else "the two match, tick for tick (times and ids aside)", classes="hint", id="compare-first",
                        markup=False)
            table: DataTable = DataTable(id="compare-rows", cursor_type="row", zebra_stripes=True)
            table.add_columns("tick", "differs", Text(a), Text(b))
            for row in comparison.rows:
                differs = Text(f"✘ {row.differences[0].what}" + (f" +{len(row.differences) - 1}"
                                                                  if len(row.differences) > 1 else ""), "red") \
                    if row.differences else Text("")
                table.add_row(str(row.tick), differs, _cell(comparison, row.a), _cell(comparison, row.b),
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
        state = self.comparison.state_differences(row)
        text.append(f"\nstate at tick {row.tick}: ", "bold")
        text.append(("1 key differs\n" if len(state) == 1 else f"{len(state)} keys differ\n") if state else "the same\n")
        for difference in state:
            text.append(f"{difference.what}: {difference.summary}\n")
            for line in difference.detail:
                text.append(f"    {line}\n", _side_style(line))
        self.query_one("#compare-tick", Static).update(text)


__all__ = ["ComparePicker", "CompareScreen"]
