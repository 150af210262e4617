"""A node's `terminate()` that never returns, in a stop no signal caused (the studio's restart, its quit):
within a command's loop it is cut after `GRACE` as a signal's stop cuts it (runtime/signals.py `CUT`), the
stop names the node, and the command goes on: the restart says so in one line, the old run's records kept."""

from __future__ import annotations

import time

import pytest
import user_code_hold_tree
from py_trees.behaviours import Success
from py_trees.common import Status
from py_trees.composites import Sequence
from pydantic import BaseModel

from runtime import signals
from runtime.engine.behaviour import Behaviour
from runtime.engine.runner import ReactiveRunner
from runtime.signals import CUT, user_code_stops
from studio.session import DebugSession
from studio.stopping import on_signals


class Blank(BaseModel):
    pass


class HoldsWhenStopped(Behaviour):
    def __init__(self, name: str, hold):
        super().__init__(name)
        self.hold = hold

    def update(self) -> Status:
        return Status.RUNNING

    def terminate(self, new_status: Status) -> None:
        if new_status == Status.INVALID:
            self.hold()


def spin() -> None:
    while True:
        pass


@pytest.fixture
def short_grace(monkeypatch):
    monkeypatch.setattr(signals, "GRACE", 0.2)


@pytest.mark.parametrize("hold", [spin, lambda: time.sleep(3600)], ids=["loops", "blocks"])
async def test_a_stop_no_signal_caused_cuts_a_terminate_that_holds_on_and_names_its_node(short_grace, hold):
    tree = Sequence("Steps", memory=True, children=[Success("First"), HoldsWhenStopped("Holds", hold), Success("Last")])
    runner = ReactiveRunner(tree, Blank)
    await runner.step()
    with user_code_stops():
        assert runner.stop() == "Steps/Holds"
        assert runner.stop() is None  # (stopped already: nothing of the user's runs)
    assert {node.status for node in runner.nodes.values()} == {Status.INVALID}
    assert signals.signal.getsignal(CUT) == signals.signal.SIG_DFL  # a late cut does nothing


async def test_the_studios_restart_cuts_a_terminate_that_never_returns_and_says_whose(short_grace, tmp_path,
                                                                                        monkeypatch):
    monkeypatch.setenv(user_code_hold_tree.HOLD, "terminate")
    monkeypatch.setenv(user_code_hold_tree.FLAG, str(tmp_path / "holding"))
    session = DebugSession.load(user_code_hold_tree.__file__, db=tmp_path / "runs.db")
    with on_signals(lambda signum: None):  # the studio's (`StudioApp.on_mount`)
        await session.step()
        old = session.run_id
        kept = [row.id for row in session.checkpoints()]
        await session.restart()
        assert session.message.startswith("Spins: terminate() did not return within 0.2 s, cut; restarted: run ")
        assert session.run_id != old and session.root_status == Status.INVALID
        assert [info.id for info in session.store.list(old)] == kept  # the old run's records, as they were
        await session.step()
        assert session.root_status == Status.RUNNING
