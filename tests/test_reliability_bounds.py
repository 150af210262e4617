"""Issue #13 point 6: breakpoint conditions and the state editor are bounded.

What would take seconds and gigabytes (`len('a' * 3000000000)`, `str()` of a 400-million-item
list) is refused before it is built; deep expressions and deep JSON are a clear error, not a
`RecursionError`; a condition that only grows too large once the run has state disables its
breakpoint with a message; and no text typed into a prompt crashes the TUI.
"""

from __future__ import annotations

import re

import pytest
from textual.widgets import Input, Static, TextArea
from tui_fixtures import SIZE, approval_session, pipeline_session, settle, steady_terminal  # noqa: F401

from runtime.debug.bounded import TooLarge, parse_value
from runtime.debug.breakpoints import BreakpointError
from runtime.messages import human
from studio.app import StudioApp
from studio.screens.approval import ApprovalScreen
from studio.screens.bindings_editor import BindingsEditor
from studio.screens.prompt import PromptScreen
from studio.screens.state_editor import StateEditor

EXPENSIVE = {
    "len('a' * 3000000000)": "'*' would build more than 1,000,000 items",
    "len(str([[0]*20000]*20000))": "str() would build more than 1,000,000 items",
    "len('%s' % [[0]*1000]*2000) > 0": "would build more than 1,000,000 items",
    # a format's width or precision: a tiny template and argument, a hundred million characters (#32.8)
    "len('%99999999d' % 1) > 0": "'%' would build more than 1,000,000 items",
    "len('%.99999999f' % 0.5) > 0": "'%' would build more than 1,000,000 items",
    "len('%-+#099999999.3e' % 2) > 0": "'%' would build more than 1,000,000 items",
    "len(b'%99999999s' % b'') > 0": "'%' would build more than 1,000,000 items",
    "len('%s%%%99999999x' % ['a']) > 0": "'%' would build more than 1,000,000 items",
    "len('%d %99999999d' % (1, 2)) > 0": "'%' would build more than 1,000,000 items",  # a tuple written there
    "len((0, 1) * 999999) > 0": "'*' would build more than 1,000,000 items",
    "1+" * 5000 + "1": "expression of 10,001 characters",
    "1+" * 400 + "1": "nested too deeply",
    "-" * 900 + "1": "nested too deeply",
    "(" * 3000 + "1" + ")" * 3000: "expression of 6,001 characters",
    # cheap to build (rows shared), yet 10^12 steps to walk: refused before walking
    "[[0]*999999]*999999 == [[0]*999999]*999999": "comparing would walk more than 1,000,000 items",
    "[[0]*999999]*999999 < [[0]*999999]*999999": "comparing would walk more than 1,000,000 items",
    "[0]*999998+[1] in [[0]*999999]*999999": "'in' would walk more than 1,000,000 items",
    "'a'*999998+'b' not in ['a'*999999]*999999": "'not in' would walk more than 1,000,000 items",
    "max([[0]*999999]*999999) == 0": "max() would walk more than 1,000,000 items",
    "min([[0]*999999]*999999) == 0": "min() would walk more than 1,000,000 items",
}
NASTY = [*EXPENSIVE, "[" * 3000 + "]" * 3000, "\x00", "9" * 5000, "int('9' * 5000) > 1", "__import__('os')",
         "words.__class__", "{", "\\", "1e999 > words", "'\ud800'", "🙂" * 3000, "a" * 200_000]


@pytest.mark.parametrize("expression", EXPENSIVE)
def test_expensive_or_deep_conditions_are_refused_when_set(expression):
    session = pipeline_session()
    with pytest.raises(BreakpointError, match=re.escape(EXPENSIVE[expression])) as refused:
        session.add_condition_breakpoint(expression)
    assert len(str(refused.value)) < 300 and "\n" not in str(refused.value)
    assert session.breakpoints == []


async def test_a_condition_that_grows_too_large_with_the_state_disables_its_breakpoint():
    session = pipeline_session()
    bp = session.add_condition_breakpoint("len(normalized_text * 100000000) > 0")  # '' * n is fine at first
    stop = await session.continue_()
    assert stop.kind == "error" and "would build more than 1,000,000 items" in stop.message
    assert "(breakpoint disabled)" in stop.message and not bp.enabled
    assert (await session.continue_()).kind == "finished"  # the run goes on without it


def test_comparisons_and_min_max_of_ordinary_values_still_evaluate():
    from runtime.debug.conditions import Condition

    snapshot = {"": {"words": [[0] * 999] * 999, "n": 4}}  # 999,000 items: under the budget
    for expression in ("words == words", "words == [[0] * 999] * 999", "[] != words", "0 in words[0]",
                       "max(n, 3) == 4", "min([3, n]) == 3", "'x' not in 'abc'"):
        assert Condition(expression).evaluate(snapshot) is True, expression


class _Grows:
    """A state value of the tree's own type: its operators are code no budget sees."""

    def __mul__(self, other):
        return "x" * 10 ** 9


@pytest.mark.parametrize(("expression", "refused"), [
    ("len('%*d' % widths) > 0", "'%' would build more than 1,000,000 items"),  # the width an argument
    ("len('%.*f' % widths) > 0", "'%' would build more than 1,000,000 items"),
    ("len(grows * 2) > 0", "'*' of a _Grows: what it would build cannot be bounded"),
    ("len(2 * grows) > 0", "'*' of a _Grows: what it would build cannot be bounded"),
    ("len(str(notes)) > 0", "str() would build more than 1,000,000 items"),  # one long message, shared
])
def test_every_operator_on_every_state_value_is_bounded_before_it_runs(expression, refused):
    from runtime.debug.conditions import Condition, ConditionError

    snapshot = {"": {"widths": (99_999_999, 1), "grows": _Grows(), "notes": [human("x" * 1000)] * 2000}}
    with pytest.raises(ConditionError, match=re.escape(refused)):
        Condition(expression).evaluate(snapshot)


def test_formats_of_ordinary_widths_still_evaluate():
    from runtime.debug.conditions import Condition

    snapshot = {"": {"pair": (3.14159, 7), "widths": (6, 2)}}
    for expression in ("'%5.2f|%d|%%' % pair == ' 3.14|7|%'", "'%*d' % widths == '     2'",
                       "len('%-8s|' % 'ab') == 9", "'%s' % 'x' == 'x'",
                       # a tuple written in the condition is a tuple, as in Python: a format's arguments
                       "'%d of %d' % (2, widths[0]) == '2 of 6'", "pair == (3.14159, 7)", "2 in (1, 2)"):
        assert Condition(expression).evaluate(snapshot) is True, expression


def test_deep_or_huge_state_values_are_refused_and_ordinary_ones_parse():
    with pytest.raises(TooLarge, match="nested too deeply"):
        parse_value("[" * 3000 + "]" * 3000)
    with pytest.raises(TooLarge, match="characters"):
        parse_value("x" * 3_000_000)
    assert parse_value('{"a": [1, {"b": "]]]]"}]}') == {"a": [1, {"b": "]]]]"}]}
    assert parse_value("[" * 50 + "]" * 50) is not None and parse_value("not json [") == "not json ["


async def test_no_text_typed_into_a_prompt_crashes_the_tui():
    session = pipeline_session()
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        prompts = [lambda: PromptScreen("conditional breakpoint", "", apply=session.add_condition_breakpoint),
                   lambda: PromptScreen("event breakpoint", "", apply=session.add_event_breakpoint),
                   lambda: StateEditor(session, "", "text", "x")]
        for make in prompts:
            screen = make()
            app.push_screen(screen)
            await pilot.pause()
            for text in NASTY:
                screen.query_one(Input).value = text
                await pilot.press("enter")
                await pilot.pause()
                if app.screen is not screen:  # accepted (an odd event type, a text value): open it again
                    screen = make()
                    app.push_screen(screen)
                    await pilot.pause()
                    continue
                error = str(screen.query_one(".error", Static).render())
                assert error.startswith("✘ ") and len(error) < 400, (text[:40], error[:400])
            app.pop_screen()
            await pilot.pause()
        assert app.is_running and app.screen is app.main


async def test_no_text_typed_into_the_bindings_editor_or_the_tree_search_crashes_the_tui(tmp_path):
    session = pipeline_session(tmp_path)
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        search = app.query_one("#tree-search", Input)
        for text in NASTY:
            search.value = text
            await pilot.pause()
            search.post_message(Input.Submitted(search, text))
            await pilot.pause()
        before = session.bindings()
        screen = BindingsEditor(session, "TextPipeline/Normalize")
        app.push_screen(screen)
        await pilot.pause()
        for text in NASTY:
            screen.query_one(".port-key", Input).value = text
            await pilot.pause()
            await pilot.press("ctrl+s")
            await pilot.pause()
            assert app.screen is screen, text[:40]  # no such key: refused, the editor stays open
            check = str(screen.query_one(".port-check", Static).render())
            assert check.startswith("✘ ") and len(check) < 400, (text[:40], check[:400])
        assert session.bindings() == before
        assert app.is_running


async def test_no_text_typed_into_the_approval_dialog_crashes_the_tui(tmp_path):
    session = approval_session(tmp_path)
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("c")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        for text in NASTY:  # as corrected arguments: each refused with a line, the dialog stays
            screen.query_one("#approval-arguments", TextArea).text = text
            await pilot.press("ctrl+o")
            await pilot.pause()
            assert app.screen is screen, text[:40]
            error = str(screen.query_one("#approval-error", Static).render())
            assert error.startswith("✘ ") and len(error) < 400, (text[:40], error[:400])
        screen.query_one("#approval-arguments", TextArea).text = screen._original
        screen.query_one("#approval-reason", Input).value = "no: " + "".join(NASTY)[:5000]
        await pilot.press("ctrl+n")  # denied with all of it as the reason the model reads
        await settle(app, pilot)
        assert app.is_running and app.screen is app.main
        assert session.state_snapshot()[""]["messages"][2]["content"].startswith("Error: tool 'calculator' was not")
