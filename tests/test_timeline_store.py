"""RunTimeline reading checkpoints back from the store."""

from __future__ import annotations

from pathlib import Path

from studio.session import DebugSession
from studio.timeline import RunTimeline

CALCULATOR = str(Path(__file__).resolve().parents[1] / "sample_trees/react_calculator.py")


async def test_a_checkpoint_read_back_is_named_as_parsed_not_converted_again(tmp_path):
    """Its values were parsed from JSON: the named state holds them as read (converting a 400-message
    history again cost ~0.4 ms), and is what converting them would give."""
    session = DebugSession.load(CALCULATOR, db=tmp_path / "runs.db")
    assert (await session.continue_()).kind == "finished"
    names = session.timeline.names
    timeline = RunTimeline(session.store, names)
    containers = 0
    for info in timeline.infos(session.run_id):
        checkpoint, state = timeline.get(info.id)
        assert state == names.state(checkpoint.state)
        for ns, values in checkpoint.state.items():
            for key, value in values.items():
                if isinstance(value, list | dict) and (ns or names.key(key) == key):  # (two names: one wins)
                    containers += 1
                    assert state[ns][key] is value
    assert containers > 0
    session.store.close()
