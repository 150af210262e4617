"""A schema field has one slot whichever of its names writes it (attribute or alias): a checkpoint
holds it once, so a restore and the past view give the value written last, not the one whose name
happened to come later in the record."""

from __future__ import annotations

from py_trees.common import Status
from pydantic import BaseModel, ConfigDict, Field

from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import SQLiteCheckpointStore
from runtime.node import AsyncNode, Sequence


class State(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    usage: dict = Field(default_factory=dict, alias="llm.usage")
    step: int = 0


class Write(AsyncNode):
    """Writes `usage` by the name given and counts the steps, between ticks: one write a tick."""

    def __init__(self, name: str, key: str, total: int):
        super().__init__(name=name)
        self.key, self.total = key, total

    async def update_async(self) -> Status:
        self.write_state({self.key: {"total": self.total}, "step": self.read_state("step") + 1})
        return Status.SUCCESS


def tree() -> Sequence:
    return Sequence("Root", memory=True, children=[
        Write("by alias", "llm.usage", 1), Write("by attribute", "usage", 2), Write("by alias again", "llm.usage", 3)])


async def test_every_checkpoint_holds_a_field_once_and_restores_its_last_value(tmp_path):
    store = SQLiteCheckpointStore(tmp_path / "runs.db")
    runner = ReactiveRunner(tree(), State, checkpointer=store)
    await runner.run()
    assert runner.state_manager.get("usage") == {"total": 3}
    for info in store.list(runner.run_id):
        saved = store.get(info.id).state[""]
        assert "llm.usage" not in saved, f"checkpoint {info.id} keeps the field under both names: {saved}"
        again = ReactiveRunner(tree(), State, checkpointer=store)
        again.restore(info.id)
        assert again.state_manager.get("usage") == ({"total": saved["step"]} if saved["step"] else {}), info
