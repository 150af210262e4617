"""One damaged row of a store costs that checkpoint or event batch only (#32).

A chain's checkpoints are deltas of the one before, and their rows (and a run's event batches)
were deflate streams continued row by row: one damaged row made the later checkpoints of its
chain unreadable. Each row now stands alone and carries its parent's record (a full record's
child its own delta from the checkpoint before it, the run's first record whole: `row_codec.py`):
the checkpoints before and after a damaged one, full or delta, read back as saved, and are listed,
shown, replayed and forked from; the damaged one is one line naming it. Two damaged rows in a row
cost exactly the line that builds on the first, up to the next full record, each read naming it.
"""

from __future__ import annotations

import asyncio
import re
import zlib

import pytest
from conftest import rows, tamper
from test_cli import cli
from test_packed_statuses import recorded as packed_run
from test_reliability_inputs import checkpoint_cli, one_line
from test_swarm_checkpoints import SAMPLE as SWARM_SAMPLE

from runtime.memory.checkpoint import EventsRead, StoreError, open_store, sql_store
from runtime.memory.checkpoint.row_codec import ZDICT, Carried, context_of, decode_row, encode_row
from runtime.memory.checkpoint.sql_store import SCHEMA_VERSION
from studio.loader import load_tree
from studio.session import DebugSession, EditError

TREE = '''
from runtime import Agent, CalculatorTool, ModelClient, ReActConfig, ReActState, ScriptedProvider, create_react_node, human

SCRIPT = [*({"tool_calls": [{"name": "calculator", "arguments": {"expression": f"{i} * 7"}}]} for i in range(6)),
          "done"]
INPUT = {"messages": [human("Multiply each number by 7.")]}


def build():
    client = ModelClient.resolve(ScriptedProvider(SCRIPT))
    root = create_react_node(name="Calc", model_client=client, tools=[CalculatorTool()],
                             config=ReActConfig(max_iterations=8))
    return Agent(root, state_schema=ReActState)
'''


@pytest.fixture
def recorded(store_name, tmp_path):
    """A store holding one run of 22 checkpoints (chains of 5, 9 and 8) and its events, and the
    run's checkpoints and events as read back before any damage."""
    tree = tmp_path / "calc.py"
    tree.write_text(TREE)
    assert cli("run", str(tree), "--db", store_name).returncode == 0
    store = open_store(store_name, create=False)
    run_id = store.runs()[0].run_id
    saved = {info.id: store.get(info.id) for info in store.list(run_id)}
    events = store.events(run_id)
    chains: dict[int, list[int]] = {}
    for checkpoint_id, base_id in rows(store, "SELECT id, base_id FROM checkpoints ORDER BY id"):
        chains.setdefault(base_id, []).append(checkpoint_id)
    longest = max(chains.values(), key=len)
    assert len(longest) >= 6
    return store, run_id, saved, events, longest


def _flip(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0x10]) + data[middle + 1:]


DAMAGES = {
    "flipped": lambda store, table, row_id: _rewrite(store, table, row_id, _flip),
    "truncated": lambda store, table, row_id: _rewrite(store, table, row_id, lambda data: data[:len(data) // 2]),
    "emptied": lambda store, table, row_id: _rewrite(store, table, row_id, lambda data: b""),
    "deleted": lambda store, table, row_id: tamper(store, f"DELETE FROM {table} WHERE id = ?", (row_id,)),
}


def _rewrite(store, table: str, row_id: int, change) -> None:
    (data,), = rows(store, f"SELECT data FROM {table} WHERE id = ?", (row_id,))
    tamper(store, f"UPDATE {table} SET data = ? WHERE id = ?", (change(bytes(data)), row_id))


def _own_texts(store, table: str) -> dict[int, bytes]:
    """Row id -> the JSON its row holds of its own, for each row of an undamaged `table`."""
    texts: dict[int, bytes] = {}
    for row_id, data in rows(store, f"SELECT id, data FROM {table} ORDER BY id"):
        texts[row_id] = decode_row(bytes(data), [texts[i] for i in context_of(bytes(data))[0]]).own
    return texts


def _reopened(store, name: str):
    store.close()
    return open_store(name, create=False)


def _without_tick(events, tick: int) -> list:
    return [(branch, event) for branch, event in events if event.tick != tick]


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_delta_costs_its_checkpoint_only(recorded, store_name, damage):
    store, run_id, saved, events, chain = recorded
    target = chain[len(chain) // 2]
    DAMAGES[damage](store, "checkpoints", target)
    store = _reopened(store, store_name)
    try:
        for checkpoint_id, checkpoint in saved.items():
            if checkpoint_id != target:  # before it and after it in its chain, and the other chains
                assert store.get(checkpoint_id) == checkpoint, checkpoint_id
        if damage == "deleted":  # its header gone too: its tick's telemetry cannot be rebuilt, the rest is there
            assert [info.id for info in store.list(run_id)] == [i for i in saved if i != target]
            tick = saved[target].tick
            assert _without_tick(store.events(run_id), tick) == _without_tick(events, tick)
        else:
            with pytest.raises(StoreError) as raised:
                store.get(target)
            assert str(raised.value) == f"{store.location}: checkpoint {target} is corrupt"
            assert store.events(run_id) == events  # its tick's telemetry read from the next row's copy
    finally:
        store.close()


def _bases(store) -> dict[int, int]:
    return dict(rows(store, "SELECT id, base_id FROM checkpoints ORDER BY id"))


@pytest.mark.parametrize("damage", list(DAMAGES))
@pytest.mark.parametrize("which", ["a chain's full record", "the run's first record"])
def test_a_damaged_full_record_costs_itself_only(recorded, store_name, damage, which):
    """A full record's child carries its own delta from the checkpoint before it (the run's first record,
    which has none, whole): its chain reads back, built on the chain before."""
    store, run_id, saved, events, chain = recorded
    bases = _bases(store)
    target = chain[0] if which == "a chain's full record" else min(saved)
    assert bases[target] == target and (target != min(saved)) == (which == "a chain's full record")
    DAMAGES[damage](store, "checkpoints", target)
    store = _reopened(store, store_name)
    try:
        assert all(store.get(i) == saved[i] for i in saved if i != target)
        if damage == "deleted":
            tick = saved[target].tick
            assert _without_tick(store.events(run_id), tick) == _without_tick(events, tick)
        else:
            with pytest.raises(StoreError, match=rf": checkpoint {target} is corrupt$"):
                store.get(target)
            assert store.events(run_id) == events  # its tick's telemetry from its own delta
    finally:
        store.close()


def _every_full_record_rebuilt(store, name: str, run_id: str) -> None:
    """Every full record of a run but its first damaged at once: each is rebuilt from its own delta on
    the checkpoint before it, itself rebuilt so (back to the run's first), and every delta reads back."""
    saved = {info.id: store.get(info.id) for info in store.list(run_id)}
    events, bases = store.events(run_id), _bases(store)
    fulls = [i for i in saved if bases[i] == i][1:]
    assert fulls and all(i + 1 in saved and bases[i + 1] == i for i in fulls)  # (each has a delta)
    for full in fulls:
        DAMAGES["flipped"](store, "checkpoints", full)
    store = _reopened(store, name)
    try:
        assert all(store.get(i) == saved[i] for i in saved if i not in fulls)
        assert store.events(run_id) == events
    finally:
        store.close()


async def test_a_large_trees_full_records_are_rebuilt_from_their_own_deltas(store_name):
    """Packed statuses (a tree of over 1,000 nodes whose leaves flip every tick)."""
    store = open_store(store_name)
    runner, _, _ = await packed_run(store, ticks=14, full_every=3)
    _every_full_record_rebuilt(store, store_name, runner.run_id)


async def test_a_swarms_full_records_are_rebuilt_from_their_own_deltas(store_name):
    """A swarm's agents: their statuses, resume entries and namespaces in the host's records."""
    loaded = load_tree(SWARM_SAMPLE)
    store = open_store(store_name)
    loaded.agent.runner = loaded.agent.make_runner(checkpointer=store)
    loaded.agent.runner.checkpoints.full_every = 3
    assert (await asyncio.wait_for(loaded.agent.run(loaded.input_data), 30)).ok
    _every_full_record_rebuilt(store, store_name, loaded.agent.runner.run_id)


async def test_a_large_trees_damaged_first_record_costs_itself_only(store_name, monkeypatch):
    """A line's first record of a large tree (a row deflated fast and alone) is carried whole in its
    child's row like any other: damaged, it is read back from there, and so is its chain."""
    monkeypatch.setattr(sql_store, "_LARGE_ROW", 4_000)  # (below the packed tree's first record)
    store = open_store(store_name)
    runner, _, _ = await packed_run(store, ticks=8, full_every=3)
    saved = {info.id: store.get(info.id) for info in store.list(runner.run_id)}
    first = min(saved)
    DAMAGES["flipped"](store, "checkpoints", first)
    store = _reopened(store, store_name)
    try:
        assert all(store.get(i) == saved[i] for i in saved if i != first)
        with pytest.raises(StoreError, match=rf": checkpoint {first} is corrupt$"):
            store.get(first)
    finally:
        store.close()


@pytest.mark.parametrize("where", ["in a chain", "a chain's last and the next full record",
                                   "a full record and its child", "the run's first two"])
def test_two_damaged_rows_in_a_row_cost_their_line_to_the_next_full_record_each_named(recorded, store_name, where):
    """The first of two damaged rows in a row had its only two copies in them: it is lost, and with it
    every checkpoint that builds on it, the second and the rest of its chain (up to the next full record
    not damaged). Exactly those fail, each in a line naming a damaged one; all the others read back."""
    store, run_id, saved, events, chain = recorded
    bases, ids = _bases(store), sorted(saved)
    first = {"in a chain": chain[2], "a chain's last and the next full record": chain[0] - 1,
             "a full record and its child": chain[0], "the run's first two": ids[0]}[where]
    second = ids[ids.index(first) + 1]
    assert saved[second].parent_id == first
    lost = {first} | {i for i in ids if i >= second and bases[i] == bases[second]}
    for row_id in (first, second):
        DAMAGES["flipped"](store, "checkpoints", row_id)
    store = _reopened(store, store_name)
    try:
        assert all(store.get(i) == saved[i] for i in ids if i not in lost)
        for i in sorted(lost):  # (a checkpoint after them names either: each is damaged, and it lacks both)
            reason = "is corrupt" if i in (first, second) else f"cannot be read: checkpoint ({first}|{second}) of its chain"
            with pytest.raises(StoreError, match=rf"^{re.escape(store.location)}: checkpoint {i} {reason}"):
                store.get(i)
        assert len(lost) < len(ids) // 2
        with pytest.raises(StoreError, match=rf": checkpoint {first} is corrupt$"):
            store.events(run_id)
    finally:
        store.close()


@pytest.mark.parametrize("which", ["delta", "full record"])
async def test_the_checkpoints_after_a_damaged_one_are_listed_shown_replayed_and_forked(recorded, store_name, which):
    store, run_id, saved, events, chain = recorded
    target, later = chain[len(chain) // 2] if which == "delta" else chain[0], chain[-1]
    DAMAGES["flipped"](store, "checkpoints", target)
    store.close()
    listed = checkpoint_cli("list", store_name)
    assert listed.returncode == 0 and run_id in listed.stdout, listed.stderr
    one_line(checkpoint_cli("show", store_name, str(target)), f"checkpoint {target} is corrupt")
    shown = checkpoint_cli("show", store_name, str(later))
    assert shown.returncode == 0 and f'"id": {later},' in shown.stdout, shown.stderr
    assert checkpoint_cli("export", store_name, "--run", run_id).stdout.count("\n") == len(events)

    session = DebugSession.open_recorded(store_name, run_id)
    try:
        session.select_checkpoint(later)
        assert session.frame.tick == saved[later].tick
        assert session.state_snapshot()[""]["messages"] == saved[later].state[""]["messages"]
        with pytest.raises(EditError, match=f"checkpoint {target} is corrupt$"):  # (the studio's one line)
            session.select_checkpoint(target)
        branch = await session.fork_from(later)
        assert branch == "fork-1"
        forked = session.store.latest(run_id, branch)
        assert session.store.get(forked.id).state == saved[later].state
    finally:
        session.store.close()


def test_a_damaged_event_batch_costs_that_batch_only(recorded, store_name):
    store, run_id, saved, events, chain = recorded
    batches = [row_id for row_id, size in rows(store, "SELECT id, length(data) FROM events ORDER BY id") if size > 100]
    target = batches[len(batches) // 2]
    after = store.events(run_id, since=EventsRead(events_after=target))
    DAMAGES["flipped"](store, "events", target)
    store = _reopened(store, store_name)
    try:
        line = f"{store.location}: run {run_id}: event batch {target} is corrupt"
        with pytest.raises(StoreError) as raised:  # a whole read (a copy, a comparison) would be short of it
            store.events(run_id)
        assert str(raised.value) == line
        assert store.events(run_id, since=EventsRead(events_after=target)) == after  # the batches after it
        assert after and all(store.get(i) == saved[i] for i in saved)
    finally:
        store.close()
    one_line(checkpoint_cli("export", store_name, "--run", run_id), line)
    assert checkpoint_cli("list", store_name).returncode == 0


def test_a_reader_that_keeps_its_place_reads_every_other_batch_and_names_the_damaged_one(recorded, store_name):
    """The studio's event pane and its past views of the run (a reader that keeps its place: `EventsRead`)
    read every batch before and after a damaged one, and say the damage in one line."""
    store, run_id, saved, events, chain = recorded
    batches = [row_id for row_id, size in rows(store, "SELECT id, length(data) FROM events ORDER BY id") if size > 100]
    target = batches[len(batches) // 2]
    before = events[:len(events) - len(store.events(run_id, since=EventsRead(events_after=target - 1)))]
    after = store.events(run_id, since=EventsRead(events_after=target))
    DAMAGES["truncated"](store, "events", target)
    store = _reopened(store, store_name)
    line = f"{store.location}: run {run_id}: event batch {target} is corrupt"
    try:
        read = EventsRead()
        assert store.events(run_id, since=read) == before + after
        assert read.damaged == [line]
        assert store.events(run_id, since=read) == [] and read.damaged == [line]  # (read once, said once)
    finally:
        store.close()
    session = DebugSession.open_recorded(store_name, run_id)
    try:
        assert session.message == line  # (it opened: the damage raised out of its load before)
    finally:
        session.store.close()


def test_a_schema_6_store_of_streamed_rows_is_upgraded_and_reads_back(recorded, store_name):
    """Schema 6 stored each chain, and each run's events, as one deflate stream continued row by row
    (`stream`: its first row's id): a store of those rows is opened, upgraded and read as before."""
    store, run_id, saved, events, _ = recorded
    for table, key in (("checkpoints", "base_id"), ("events", "run_id")):
        streams: dict = {}
        texts = _own_texts(store, table)
        for row_id, stream_key in rows(store, f"SELECT id, {key} FROM {table} ORDER BY id"):
            first, compressor = streams.setdefault(stream_key, (row_id, zlib.compressobj(6, zlib.DEFLATED, -15)))
            old = compressor.compress(texts[row_id]) + compressor.flush(zlib.Z_SYNC_FLUSH)
            tamper(store, f"UPDATE {table} SET stream = ?, data = ? WHERE id = ?",
                   (None if first == row_id else first, old, row_id))
    tamper(store, "UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    store = _reopened(store, store_name)
    try:
        assert rows(store, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
        assert all(store.get(i) == saved[i] for i in saved)
        assert store.events(run_id) == events
    finally:
        store.close()


def _schema_7(own: bytes, carried: tuple[int, bytes] | None) -> bytes:
    """A row as schema 7 wrote it: a delta's carrying the delta before it in its chain, no parent named."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS, zdict=ZDICT)
    head = b"" if carried is None else compressor.compress(b"%d\n%s\n" % carried)
    return head + compressor.compress(own) + compressor.flush()


@pytest.mark.parametrize("damage", [None, "flipped", "deleted"])
def test_a_schema_7_store_is_upgraded_and_reads_back(recorded, store_name, damage):
    """Schema 7 carried no full record and named no parent: its rows read as before, a damaged delta
    costing itself (a deleted one's copy is a delta of the record before it in its chain)."""
    store, run_id, saved, events, chain = recorded
    records = _own_texts(store, "checkpoints")
    bases = _bases(store)
    for row_id, own in records.items():
        parent = saved[row_id].parent_id
        carried = None if bases[row_id] == row_id else (parent, records[parent])
        tamper(store, "UPDATE checkpoints SET data = ? WHERE id = ?", (_schema_7(own, carried), row_id))
    tamper(store, "UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    target = chain[len(chain) // 2]
    if damage is not None:
        DAMAGES[damage](store, "checkpoints", target)
    store = _reopened(store, store_name)
    try:
        assert rows(store, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
        assert all(store.get(i) == saved[i] for i in saved if damage is None or i != target)
        if damage == "deleted":  # its header gone too: its tick's telemetry cannot be rebuilt, the rest is there
            tick = saved[target].tick
            assert _without_tick(store.events(run_id), tick) == _without_tick(events, tick)
        else:
            assert store.events(run_id) == events
    finally:
        store.close()


def test_a_row_is_checked_whole():
    """A flipped bit anywhere in a row, or a row cut short or lengthened, or read against other records
    than it was deflated against, is damage, never other data."""
    own, carried = b'{"s":{"root":"RUNNING"},"st":{"":{"n":["v",1]}}}', Carried(7, 5, b'{"s":{"root":"SUCCESS"}}')
    assert decode_row(encode_row(own, 6, carried._replace(of=None))) == (own, carried._replace(of=None))
    context = [Carried(3, 2, b'{"s":{"root":"FAILURE"},"st":{"":{"n":["v",0]}}}'), Carried(5, 3, b'{"s":{}}')]
    with_context = encode_row(own, 6, carried, context)
    assert context_of(with_context)[0] == [3, 5]
    assert decode_row(with_context, [c.json for c in context]) == (own, carried)
    for wrong in ([context[0].json, b'{"s":{"x":1}}'], [context[0].json]):
        with pytest.raises(ValueError):
            decode_row(with_context, wrong)
    for data, texts in ((encode_row(own, 6, carried), []), (with_context, [c.json for c in context])):
        for at in range(len(data)):
            for bit in range(8):
                try:
                    read = decode_row(data[:at] + bytes([data[at] ^ (1 << bit)]) + data[at + 1:], texts)
                except ValueError:
                    continue
                assert read == (own, carried), (at, bit)  # (a flip of a bit nobody reads is no damage)
        for cut in (data[:-1], data[:2], data + b"\x00", b""):
            with pytest.raises(ValueError):
                decode_row(cut, texts)


def test_a_reading_of_events_keeps_no_full_record_for_the_rows_after(recorded, store_name):
    """A follower keeps the records later rows are deflated against: deltas only (a full record never is one)."""
    store, run_id, _, events, _ = recorded
    read = EventsRead()
    assert store.events(run_id, since=read) == events
    bases = {base_id for _, base_id in rows(store, "SELECT id, base_id FROM checkpoints")}
    assert read.known and not bases & set(read.known)
