"""`RuntimeEventBus.batch`: events kept for a reader that takes them in batches (the debug server), with one
wake a batch and an exact count of the events let go past its limit."""

from runtime.engine.events import TICK_TELEMETRY, EventType, RuntimeEventBus


def test_a_batch_wakes_its_reader_once_and_hands_over_its_events_in_order_without_the_skipped_types():
    bus = RuntimeEventBus()
    wakes = []
    batch = bus.batch(lambda: wakes.append(bus.position), 100, skip=TICK_TELEMETRY)
    for i in range(3):
        bus.publish(EventType.LOG, {"i": i})
        bus.publish(EventType.TICK_STARTED, {})
    assert wakes == [1]  # the first event, not each one
    taken = batch.take()
    assert [(event.type, event.payload["i"]) for event in taken] == [("log", 0), ("log", 1), ("log", 2)]
    assert batch.take() == [] and batch.dropped == 0
    bus.publish(EventType.LOG, {"i": 3})
    assert wakes == [1, 4]  # the first after a take wakes it again (tick.started: built for nobody)
    batch.close()
    bus.publish(EventType.LOG, {"i": 4})
    assert [event.payload["i"] for event in batch.take()] == [3] and wakes == [1, 4]


def test_a_batch_keeps_its_newest_events_and_counts_each_one_it_let_go():
    bus = RuntimeEventBus(history=0)
    batch = bus.batch(lambda: None, 5)
    for i in range(12):
        bus.publish(EventType.LOG, {"i": i})
        if i == 7:
            batch.trim()  # the reader trims as it likes: nothing is counted twice
    assert [event.payload["i"] for event in batch.take()] == [7, 8, 9, 10, 11]
    assert batch.dropped == 7
