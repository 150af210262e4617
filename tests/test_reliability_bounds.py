"""Issue #13 point 6: breakpoint conditions and the state editor are bounded.

What would take seconds and gigabytes (`len('a' * 3000000000)`, `str()` of a 400-million-item
list) is refused before it is built; deep expressions and deep JSON are a clear error, not a
`RecursionError`; a condition that only grows too large once the run has state disables its
breakpoint with a message; and no text typed into a prompt crashes the TUI.
"""

from __future__ import annotations

import re

import pytest
from textual.widgets import Input, Static
from tui_fixtures import SIZE, pipeline_session, settle, steady_terminal  # noqa: F401

from runtime.debug.bounded import TooLarge, parse_value
from studio.app import StudioApp
from studio.breakpoints import BreakpointError
from studio.screens.prompt import PromptScreen
from studio.screens.state_editor import StateEditor

EXPENSIVE = {
    "len('a' * 3000000000)": "'*' would build more than 1,000,000 items",
    "len(str([[0]*20000]*20000))": "str() would build more than 1,000,000 items",
    "len('%s' % [[0]*1000]*2000) > 0": "would build more than 1,000,000 items",
    "1+" * 5000 + "1": "expression of 10,001 characters",
    "1+" * 400 + "1": "nested too deeply",
    "-" * 900 + "1": "nested too deeply",
    "(" * 3000 + "1" + ")" * 3000: "expression of 6,001 characters",
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
