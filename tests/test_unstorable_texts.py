"""A lone surrogate (a text no store can keep, from a decoded hostile input) outside the host's own state:
in an event a node emits, in a swarm agent's state. The run says which key holds it, in one line, and its
end is still recorded; an event keeps the text as its escape and the run goes on."""

from __future__ import annotations

from test_cli import ROOT, cli

from runtime.memory.checkpoint import open_store

EMITS = '''
from py_trees.common import Status
from pydantic import BaseModel
from runtime import Agent
from runtime.node import Node, Sequence


class S(BaseModel):
    x: int = 0


class Emits(Node):
    def update(self) -> Status:
        self.emit("user.note", {"text": "bad \\udcff text", "items": ["\\ud800"]})
        return Status.SUCCESS


def build():
    return Agent(Sequence("Root", memory=True, children=[Emits("Emits")]), state_schema=S)
'''


def test_an_event_holding_a_lone_surrogate_is_stored_with_its_escape_and_the_run_goes_on(tmp_path):
    tree = tmp_path / "emits.py"
    tree.write_text(EMITS)
    result = cli("run", str(tree), "--db", str(tmp_path / "s.db"))
    assert result.returncode == 0, result.stderr
    store = open_store(str(tmp_path / "s.db"))
    try:
        run = store.runs()[0]
        assert store.list(run.run_id)[-1].status == "SUCCESS"
        notes = [event.payload for _, event in store.events(run.run_id) if event.type == "user.note"]
        assert notes == [{"text": "bad \\udcff text", "items": ["\\ud800"]}]
    finally:
        store.close()


def test_an_agents_state_holding_a_lone_surrogate_stops_the_run_naming_it_and_the_end_is_recorded(tmp_path):
    """The writer agent drafts a text with a lone surrogate and sends it to the coordinator, which writes
    it into its own state in the same tick: two keys no store can keep in one (full) record. The run
    stops naming the first; both are refused at once, so its end is recorded (with their last stored
    values), and every earlier checkpoint stays readable."""
    sample = (ROOT / "sample_trees" / "swarm_chat.py").read_text()
    drafting = 'return {"draft": f"Draft: {state[\'notes\']} (checked by the calculator)"}'
    assert drafting in sample
    tree = tmp_path / "swarm.py"
    tree.write_text(sample.replace(drafting, 'return {"draft": "bad \\udcff draft"}'))
    result = cli("run", str(tree), "--db", str(tmp_path / "s.db"))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == ("jianmu-studio: the run stopped: StoreError: checkpoint of tick 4 not written: state key "
                        "'final_answer' written by node 'Coordinator/Wait for draft' holds a text that is not valid "
                        "Unicode (a lone surrogate): a store cannot keep it (and 1 more state key)")
    assert lines[1] == f"jianmu-studio: its end is recorded in {tmp_path / 's.db'} (status ERROR)"
    assert "Traceback" not in result.stderr
    store = open_store(str(tmp_path / "s.db"))
    try:
        run = store.runs()[0]
        checkpoints = store.list(run.run_id)
        assert [c.tick for c in checkpoints] == [0, 1, 2, 3, 4] and checkpoints[-1].status == "ERROR"
        for checkpoint in checkpoints:
            store.get(checkpoint.id)
        assert store.get(checkpoints[-1].id).state[""]["final_answer"] is None  # its last stored value
    finally:
        store.close()

