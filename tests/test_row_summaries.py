"""A timeline row's summary is worked out once (`runtime.debug.changes.row_numbers`): the local studio's
rows (`studio.timeline`, from what the runner just saved) and an attached one's (`runtime.debug.past`,
decoded from the store) say the same of every checkpoint of a run."""

from __future__ import annotations

import pytest
from py_trees.common import Status
from test_views_match_the_store import run_to_the_end
from tui_fixtures import ROOT

from runtime.debug.changes import TakenStatuses, row_numbers
from runtime.debug.past import RunPast
from studio.session import DebugSession


@pytest.mark.parametrize("tree", ["react_calculator", "plan_execute", "flaky_tools"])
async def test_local_and_attached_rows_say_the_same(tree, tmp_path):
    session = DebugSession.load(str(ROOT / "sample_trees" / f"{tree}.py"), db=tmp_path / "runs.db")
    await run_to_the_end(session)
    await session.fork_from(session.checkpoints()[1].id)  # a row whose source is named
    await session.step()
    local = {row.id: row.summary for row in session.checkpoints()}
    past = RunPast(session.runner)  # nothing noted from ticks: every row decoded from the store
    attached = {info.id: past.summary(info) for info in session.runner.checkpoints.store.list(session.run_id)}
    assert len(local) >= 4 and local == attached
    assert any("fork: " in summary for summary in local.values())


def test_two_takes_of_a_tree_count_as_two_mappings_do():
    paths = ["/a", "/a/b", "/a/c"]
    before, after = [Status.RUNNING, Status.INVALID, Status.SUCCESS], [Status.SUCCESS, Status.INVALID, Status.SUCCESS]
    state, parent_state = {"": {"k": 1, "n": [1]}}, {"": {"k": 2, "n": [1]}}
    taken = row_numbers(TakenStatuses(paths, after), ["/a/b"], state, (TakenStatuses(paths, before), parent_state))
    named = row_numbers(dict(TakenStatuses(paths, after)), ["/a/b"], state, (dict(TakenStatuses(paths, before)), parent_state))
    assert taken == named == (2, ["k"])  # /a at the end, /a/b inside the tick only
    assert row_numbers(dict(TakenStatuses(paths, after)), (), state, None) == (3, [])
