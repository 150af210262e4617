"""The past is the past for a swarm too: at a past checkpoint the studio shows the agents that checkpoint
holds (their trees under the nodes that spawned them, their statuses, namespaces and tokens of then),
locally and attached; and replaying from one brings the agents back, so the run ends as the original."""

from __future__ import annotations

from pathlib import Path

from test_tui_app import plain
from test_tui_timeline import choose_checkpoint
from tui_fixtures import BOTH, settle, steady_terminal, studio_on, until  # noqa: F401

from runtime.engine.events import EventType
from runtime.memory.checkpoint import open_store
from studio.session import DebugSession, RunState
from studio.widgets.marks import MARKS
from studio.widgets.state_pane import StatePane
from studio.widgets.tree_pane import TreePane

ROOT = Path(__file__).resolve().parents[1]
SWARM_CHAT = ROOT / "sample_trees" / "swarm_chat.py"
RESEARCH_LLM = "@researcher/Researcher/Research/Research.loop/Research.llm"
SPAWNED_BY = {"@researcher/Researcher": "Coordinator/Hire/Hire researcher", "@writer/Writer": "Coordinator/Hire/Hire writer"}


def store_of(kind: str, tmp_path: Path):
    """The store the studio's run records into (the served process's, attached)."""
    return open_store(tmp_path / ("runs.db" if kind == "local" else "served.db"))


async def finished(session, app, pilot) -> None:
    await settle(app, pilot)
    await pilot.press("c")
    await until(lambda: session.run_state == RunState.FINISHED)
    await until(lambda: session.node_status("@writer/Writer").name == "SUCCESS")  # the agents' last ticks
    await settle(app, pilot)


def tokens_then(store, info) -> int:
    """The tokens of the model calls (the agents') stored by the time the checkpoint was saved."""
    return sum(event.payload["usage"]["total_tokens"] for branch, event in store.events(info.run_id)
               if event.type == EventType.MODEL_CALL_COMPLETED and event.seq <= info.event_position)


@BOTH
async def test_each_past_checkpoint_shows_the_agents_it_holds_as_they_were_then(kind, tmp_path):
    async with studio_on(kind, SWARM_CHAT, tmp_path) as (session, app, pilot):
        await finished(session, app, pilot)
        store = store_of(kind, tmp_path)
        infos = store.list(session.run_id)
        holding = 0
        for row, info in enumerate(infos):
            await choose_checkpoint(app, pilot, row)
            assert session.viewing is not None and session.viewing.id == info.id
            saved = store.get(info.id)
            agents = {path: status for path, status in saved.statuses.items() if path.startswith("@")}
            lines = app.main.query_one(TreePane)
            assert {path for path in lines.statuses() if path.startswith("@")} == set(agents), f"tick {info.tick}"
            for path, status in agents.items():  # each as it was then, not as it ended
                name = path.rpartition("/")[2]
                assert f"{MARKS[status][0]} {name}" in str(lines.label_of(path)), f"tick {info.tick}: {path}"
            for root, spawner in SPAWNED_BY.items():
                if root in agents:
                    assert lines.parent_of(root) == spawner
            keys = app.main.query_one(StatePane)._key_nodes
            assert {ns for ns, _ in keys if ns.startswith("@")} == {ns for ns in saved.state if ns.startswith("@")}
            assert session.frame.tokens == tokens_then(store, info), f"tick {info.tick}"
            if "@researcher" in saved.state:
                holding += 1
                assert ("@researcher", "messages") in keys
                tree = app.main.query_one(TreePane)
                assert tree.jump(RESEARCH_LLM)
                await settle(app, pilot)
                detail = " ".join(plain(app.main.query_one("#node-detail-body")).split())
                assert "namespace @researcher " in detail
                assert f"rounds → rounds = {saved.state['@researcher']['rounds']}" in detail  # read then
        assert holding >= 1 and not any(path.startswith("@") for path in store.get(infos[1].id).statuses)
        last = store.get(infos[-1].id)
        assert last.statuses["@researcher/Researcher"] == "SUCCESS" and session.frame.tokens > 0
        store.close()


@BOTH
async def test_replaying_a_checkpoint_of_the_swarm_brings_its_agents_back_and_ends_as_the_original(kind, tmp_path):
    async with studio_on(kind, SWARM_CHAT, tmp_path) as (session, app, pilot):
        await finished(session, app, pilot)
        final = dict(session.state_snapshot()[""])
        store = store_of(kind, tmp_path)
        infos = store.list(session.run_id)
        middle = next(info for info in infos if "@researcher/Researcher" in store.get(info.id).statuses)
        store.close()
        await choose_checkpoint(app, pilot, infos.index(middle))
        await pilot.press("f")
        await pilot.pause()
        await pilot.click("#replay")
        await settle(app, pilot)
        assert session.branch == "replay-1" and session.viewing is None
        assert {view.path for view in session.node_views()} >= {"@researcher/Researcher", "@writer/Writer"}
        await pilot.press("c")
        await until(lambda: session.run_state == RunState.FINISHED)
        await settle(app, pilot)
        assert session.root_status.name == "SUCCESS", session.failure
        assert session.state_snapshot()[""] == final


async def test_an_agents_model_call_shows_the_conversation_recorded_with_its_host(tmp_path):
    session = DebugSession.load(str(SWARM_CHAT), db=tmp_path / "runs.db")
    await session.continue_()
    calls = session.model_calls(RESEARCH_LLM)
    assert [call.round for call in calls] == [0, 1]
    first = session.model_call(calls[0])  # read from the store's recorded I/O, not only the events
    assert first.messages[-1]["content"].startswith("Three hives hold 40,000 bees")
    assert first.response["message"]["tool_calls"][0]["name"] == "calculator"
