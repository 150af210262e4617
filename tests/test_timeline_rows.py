"""The timeline pane draws only the lines on screen, a row once: a new checkpoint draws its own row
(and the one the cursor left), lays nothing out, at 10 rows as at 4,000; its columns fit the pane."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.screen import Screen

from studio.widgets.timeline import KEPT, Timeline

LONG = "1,203 nodes; messages, final_answer, actions, rounds, usage, llm.usage, pulse"


def rows(count: int, summary: str = "2 nodes; pulse", start: int = 0) -> list[dict]:
    return [{"id": start + i, "tick": i, "status": "RUNNING", "branch": "main", "summary": summary}
            for i in range(count)]


class TimelineApp(App[None]):
    def __init__(self, width: int = 60) -> None:
        super().__init__()
        self.width = width
        self.chosen: list = []

    def compose(self) -> ComposeResult:
        timeline = Timeline()
        timeline.styles.width = self.width
        timeline.styles.height = 12
        yield timeline

    def on_timeline_chosen(self, event: Timeline.Chosen) -> None:
        self.chosen.append(event.checkpoint_id)


def lines(timeline: Timeline) -> list[str]:
    return [strip.text for strip in timeline.render_lines(Region(0, 0, *timeline.size))]


def drawn_rows(timeline: Timeline) -> list[str]:
    """The ticks of the rows drawn anew from now on (what each draw was given)."""
    drawn: list[str] = []
    draw = timeline._draw

    def counted(cells, *args):
        drawn.append(cells[1][0])
        return draw(cells, *args)

    timeline._draw = counted
    return drawn


async def test_a_new_checkpoint_draws_its_row_and_the_one_the_cursor_left_at_any_length():
    for count in (30, 4_000):
        app = TimelineApp()
        async with app.run_test() as pilot:
            timeline = app.query_one(Timeline)
            timeline.sync(rows(count))
            await pilot.pause()
            assert timeline.cursor_row == count - 1 and lines(timeline)[-1].split()[0] == str(count - 1)
            drawn = drawn_rows(timeline)
            timeline.sync(rows(count + 1))
            await pilot.pause()
            assert sorted(drawn) == [str(count - 1), str(count)]  # the rows scrolled by are drawn as they were
            assert timeline.cursor_row == count and lines(timeline)[-1].split()[0] == str(count)


async def test_a_new_checkpoint_lays_out_nothing(monkeypatch):
    app = TimelineApp()
    async with app.run_test() as pilot:
        timeline = app.query_one(Timeline)
        timeline.sync(rows(30))  # more than the pane holds: its scrollbar is there already
        await pilot.pause()
        layouts = []
        original = Screen._refresh_layout
        monkeypatch.setattr(Screen, "_refresh_layout", lambda screen, *args, **kwargs: (
            layouts.append(args), original(screen, *args, **kwargs)))
        for count in range(31, 35):
            timeline.sync(rows(count))
            await pilot.pause()
        assert layouts == [] and timeline.max_scroll_y == 34 + 1 - timeline.scrollable_content_region.height


async def test_the_changed_column_is_fitted_to_the_pane_with_an_ellipsis():
    app = TimelineApp(width=50)
    async with app.run_test() as pilot:
        timeline = app.query_one(Timeline)
        timeline.sync(rows(3, LONG))
        await pilot.pause()
        drawn = lines(timeline)
        assert all(len(line) == timeline.size.width for line in drawn)
        assert drawn[0].split() == ["tick", "status", "branch", "changed"]
        for line in drawn[1:4]:
            assert line.rstrip().endswith("…") and line.split("main", 1)[1].strip()[:-1] in LONG
        assert timeline.virtual_size.width <= timeline.size.width  # nothing to scroll sideways to
        assert timeline.get_cell("1", "changed") == LONG  # the row holds it whole
        timeline.sync(rows(30, LONG))  # more rows than the pane holds: fitted beside the scrollbar
        await pilot.pause()
        room = timeline.scrollable_content_region.width
        assert timeline.show_vertical_scrollbar and not timeline.show_horizontal_scrollbar
        assert room < timeline.size.width and all(line[:room].endswith("…") for line in lines(timeline)[1:])


async def test_the_cursor_moves_by_keys_and_clicks_and_enter_chooses():
    app = TimelineApp()
    async with app.run_test() as pilot:
        timeline = app.query_one(Timeline)
        timeline.sync(rows(40))
        timeline.focus()
        await pilot.pause()
        height = timeline.scrollable_content_region.height - 1  # rows under the header
        for key, row in (("home", 0), ("down", 1), ("down", 2), ("up", 1), ("pagedown", 1 + height),
                         ("pageup", 1), ("end", 39), ("pageup", 39 - height)):
            await pilot.press(key)
            assert timeline.cursor_row == row, key
            shown = [int(line.split()[0]) for line in lines(timeline)[1:]]
            assert row in shown, key  # scrolled to the cursor
        await pilot.press("enter")
        await pilot.pause()
        assert app.chosen == [str(39 - height)]
        top = int(lines(timeline)[1].split()[0])
        await pilot.click(Timeline, offset=(5, 2))  # the second row on screen: the cursor goes there
        await pilot.pause()
        assert timeline.cursor_row == top + 1 and app.chosen == [str(39 - height)]
        await pilot.click(Timeline, offset=(5, 2))  # on the cursor's row: chosen
        await pilot.pause()
        assert app.chosen == [str(39 - height), str(top + 1)]


async def test_the_viewed_row_is_marked_and_a_replaced_timeline_drops_the_rows_gone():
    app = TimelineApp()
    async with app.run_test() as pilot:
        timeline = app.query_one(Timeline)
        timeline.sync(rows(5))
        timeline.sync(rows(5), viewing={"id": 2})
        await pilot.pause()
        assert [line.split()[0] for line in lines(timeline)[1:6]] == ["0", "1", "▶", "3", "4"]
        assert timeline.cursor_row == 2 and timeline.get_cell("2", "mark") == "▶"
        timeline.sync(rows(5))  # back live
        await pilot.pause()
        assert [line.split()[0] for line in lines(timeline)[1:6]] == ["0", "1", "2", "3", "4"]
        timeline.sync(rows(3, start=100))  # another run: its own rows alone
        await pilot.pause()
        assert timeline.row_count == 3 and [timeline.get_row_at(i)[1] for i in range(3)] == ["0", "1", "2"]
        assert lines(timeline)[4].strip() == "" and timeline.cursor_key in ("100", "101", "102")


async def test_rows_are_striped_and_the_cursor_row_lit():
    app = TimelineApp()
    async with app.run_test() as pilot:
        timeline = app.query_one(Timeline)
        timeline.sync(rows(4))
        timeline.move_cursor(row=1)
        await pilot.pause()
        strips = timeline.render_lines(Region(0, 0, *timeline.size))
        backgrounds = [strip._segments[0].style.bgcolor for strip in strips[1:5]]
        assert backgrounds[0] == backgrounds[2] != backgrounds[3]  # zebra: even rows one colour, odd another
        assert backgrounds[1] not in (backgrounds[0], backgrounds[3])  # the cursor's row its own
        assert str(strips[1]._segments[-1].style.bgcolor) == str(backgrounds[0])  # a row's colour to the edge


async def test_only_the_lines_of_rows_near_the_screen_are_kept():
    app = TimelineApp()
    async with app.run_test() as pilot:
        timeline = app.query_one(Timeline)
        for count in range(1, KEPT + 50):  # a step at a time: every new row drawn
            timeline.sync(rows(count))
            await pilot.pause()
        assert len(timeline._drawn) <= KEPT
        timeline.focus()
        await pilot.press("home")  # the first rows again: drawn anew
        assert [line.split()[0] for line in lines(timeline)[1:4]] == ["0", "1", "2"]


class Counted(list):
    """Rows that count their reads (a local session's are built, their summaries noted, when read)."""

    reads = 0

    def __getitem__(self, index):
        Counted.reads += 1
        return super().__getitem__(index)


async def test_another_run_s_rows_replace_the_rows_held_without_reading_them_again():
    app = TimelineApp()
    async with app.run_test() as pilot:
        timeline = app.query_one(Timeline)
        old = Counted(rows(400))
        timeline.sync(old)
        await pilot.pause()
        Counted.reads = 0
        timeline.sync(rows(3, start=1_000))  # a restart: another run's first rows
        await pilot.pause()
        assert Counted.reads == 0 and timeline.row_count == 3 and timeline.get_row_at(0)[1] == "0"
