"""RunTimeline reading checkpoints back from the store."""

from __future__ import annotations

from pathlib import Path

from runtime.debug.past import checkpoint_summary
from runtime.memory.checkpoint import CheckpointInfo
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


def test_a_rows_changed_column_counts_nodes_in_words():
    def row(parent_id, tick=3, source="loop"):
        return CheckpointInfo(7, "run", "main", parent_id, tick, 0.0, "RUNNING", source, 0)

    assert checkpoint_summary(row(None, tick=0, source="input"), 5, []) == "input"
    assert checkpoint_summary(row(6), 1, []) == "1 node"
    assert checkpoint_summary(row(6, source="fork"), 1_001, ["a", "b", "c", "d", "e"]) == \
        "fork: 1,001 nodes; a, b, c, d …"
    assert checkpoint_summary(row(6, source="replay"), 0, []) == "replay: 0 nodes"
