"""`RuntimeEventBus.emit` hands an event to its type's route, worked out once per type: a subscriber
added, closed or filtering after that type was published gets exactly what it would without the routes,
and a batch's events after a take land in its new list and wake its reader again."""

from __future__ import annotations

from runtime.engine.events import RuntimeEventBus


def test_a_route_follows_subscribers_added_and_closed_after_its_type_was_published():
    bus = RuntimeEventBus(history=10)
    first: list = []
    bus.subscribe(first.append, types=["log"])
    bus.publish("log", {"n": 1})
    later: list = []
    sub = bus.subscribe(later.append)
    odd: list = []
    bus.subscribe(odd.append, filter=lambda event: event.payload.get("n", 0) % 2 == 1)
    bus.publish("log", {"n": 2})
    bus.publish("log", {"n": 3})
    sub.close()
    bus.publish("log", {"n": 4})
    assert [e.payload["n"] for e in first] == [1, 2, 3, 4]
    assert [e.payload["n"] for e in later] == [2, 3]
    assert [e.payload["n"] for e in odd] == [3]
    assert [e.payload["n"] for e in bus.history] == [1, 2, 3, 4]


def test_a_batch_wakes_once_a_take_and_keeps_the_events_after_it_in_its_new_list():
    bus = RuntimeEventBus(history=0)
    woken: list = []
    batch = bus.batch(lambda: woken.append(1), 100)
    for n in range(3):
        bus.publish("log", {"n": n})
    assert [e.payload["n"] for e in batch.take()] == [0, 1, 2] and len(woken) == 1
    bus.publish("log", {"n": 3})
    bus.publish("log", {"n": 4})
    assert [e.payload["n"] for e in batch.take()] == [3, 4] and len(woken) == 2


def test_wants_any_of_a_set_follows_subscribers_as_wants_does():
    bus = RuntimeEventBus(history=10)
    telemetry = frozenset({"node.status", "tick.completed"})
    assert not bus.wants_any(telemetry)  # the history keeps no tick telemetry
    sub = bus.subscribe(lambda event: None, types=["tick.completed"])
    assert bus.wants_any(telemetry) and not bus.wants_any(frozenset({"node.status"}))
    sub.close()
    assert not bus.wants_any(telemetry) and bus.wants_any(frozenset({"log", "node.status"}))
