"""The session's event path: every event is logged and passed to each listener (a tick's telemetry as
one block, `TickEvents`), and the few it acts on itself (a replay divergence) are still found."""

from __future__ import annotations

from pathlib import Path

from runtime.engine.events import EventType
from studio.event_log import Events, TickEvents
from studio.session import DebugSession

PIPELINE = str(Path(__file__).resolve().parents[1] / "sample_trees/text_pipeline.py")


async def test_listeners_get_every_event_until_they_are_removed(tmp_path):
    session = DebugSession.load(PIPELINE, db=tmp_path / "runs.db")
    first, second = [], []
    stop_first = session.add_listener(lambda kind, data: first.append(data) if kind == "event" else None)
    session.add_listener(lambda kind, data: second.append(data) if kind == "event" else None)
    started = len(session.events)  # the run began as the session opened: its input is tick 0's state
    await session.step()
    assert list(Events(first)) == list(Events(second)) == list(session.events)[started:] and first
    assert any(type(told) is TickEvents for told in first)  # the tick's node.status events came as one block
    stop_first()
    stop_first()  # twice is harmless
    await session.step()
    assert len(Events(second)) == len(session.events) - started > len(Events(first))


async def test_a_listener_may_remove_itself_while_it_is_told(tmp_path):
    session = DebugSession.load(PIPELINE, db=tmp_path / "runs.db")
    told: list[str] = []
    stops = []
    stops.append(session.add_listener(lambda kind, data: (told.append("once"), stops[0]())))
    session.add_listener(lambda kind, data: told.append("always"))
    await session.step()
    assert told.count("once") == 1 and told.count("always") > 1


async def test_a_replay_divergence_published_as_a_node_error_stops_the_run_with_it(tmp_path):
    session = DebugSession.load(PIPELINE, db=tmp_path / "runs.db")
    await session.step()
    session.bus.publish(EventType.NODE_ERROR, {"error": "ReplayDivergence: no recorded model call"},
                        node="TextPipeline/Normalize")
    session.bus.publish(EventType.NODE_ERROR, {"error": "ValueError: not a divergence"}, node="TextPipeline/Normalize")
    stop = await session.continue_(max_ticks=1)
    assert (stop.kind, stop.message) == ("divergence", "ReplayDivergence: no recorded model call")
