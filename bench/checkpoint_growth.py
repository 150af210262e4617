"""How checkpoints grow: a 200-round scripted ReAct run adding two 1 KB messages per round.

    .venv/bin/python bench/checkpoint_growth.py [--rounds 200] [--postgres URL] [--writers 10]

Prints, side by side: bytes stored versus the final state's size, save time per tick
versus the tick's own time, and restore time at the first, middle and last checkpoint:
the median of repeated restores by one runner (it keeps the lists it restored decoded,
as when stepping through a timeline), and the first restore by a new runner (the message
list is read and validated when first read: that read is timed beside it), also by a
store just opened (a fresh process resuming a run). Items are the messages, recorded
replies and tool results, stored once by content. The message texts are random words, which compress
about as badly as any real text, so the ratio owes nothing to a repeated letter.
One column per store: an SQLite file, and a database of a PostgreSQL server on loopback
(`--postgres URL`, else a throw-away server started as the tests start theirs, measured over
TCP and over its Unix socket). Then the
concurrency figure: N processes recording one run each into one store at the same time,
checkpoints per second in total, beside one process alone on the same store kind.
Peer: LangGraph's SQLite checkpointer on the same workload (`create_react_agent`, full
message list in every checkpoint), measured in the same run when the bench extra is
installed (bench/langgraph_peer.py): bytes, time per checkpoint, and the cold restore of
its first / middle / last checkpoint. Goals here: bytes <= 3x, save <= 0.5 ms per tick,
restore <= 1 ms median. A follower (a studio following the run from another process) looks
after each save: its last looks, beside one read of the whole run's events, which each look was.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import statistics
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import langgraph_peer

from runtime import ModelClient, ReActConfig, ReActState, ScriptedProvider, create_react_node, human, tool
from runtime.debug.names import StateNames
from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import EventsRead, open_store
from studio.edits import StagedEdits
from studio.event_log import EventLog
from studio.frames import PastFrame
from studio.timeline import RunTimeline, whole

KB = 1000


def text(seed: str, size: int) -> str:
    """`size` characters of random lowercase words (zlib shrinks them 1.6x; prose 2.5-3x)."""
    rng = random.Random(seed)
    words = []
    while sum(map(len, words)) + len(words) < size:
        words.append("".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9))))
    return " ".join(words)[:size]


def script(rounds: int, latency: float = 0.0) -> list[dict]:
    """`latency`: seconds each answer is awaited first, as a real endpoint's would be."""
    steps = [{"content": f"round {i}: " + text(f"thought {i}", KB - 12),
              "tool_calls": [{"name": "lookup", "arguments": {"round": i}}]} for i in range(rounds)]
    return [{**step, "delay": latency} if latency else step for step in [*steps, {"content": "done"}]]


@tool
def lookup(round: int) -> str:
    """Return a 1 KB observation for a round."""
    return observation(round)


def observation(round: int) -> str:
    return f"observation {round}: " + text(f"observation {round}", KB - 20)


def build(rounds: int, latency: float = 0.0):
    client = ModelClient.resolve(ScriptedProvider(script(rounds, latency)))
    return create_react_node(name="Bench", model_client=client, tools=[lookup],
                             config=ReActConfig(max_iterations=rounds + 5))


TABLES = {"checkpoints, chunks": ("checkpoints", "chunks"), "items": ("items",), "events": ("events",),
          "recorded I/O rows": ("io",)}


INDEXES = "  of which indexes"  # of the groups above


def sqlite_sizes(path: Path) -> dict[str, int]:
    """Bytes on disk (pages, indexes included) of each group of tables; {} without dbstat."""
    conn = sqlite3.connect(path)
    try:
        sizes = dict(conn.execute("SELECT tbl_name, sum(pgsize) FROM dbstat JOIN sqlite_schema USING (name) "
                                  "GROUP BY tbl_name"))
        indexes = conn.execute("SELECT sum(pgsize) FROM dbstat JOIN sqlite_schema USING (name) "
                               "WHERE type = 'index' AND tbl_name != 'meta'").fetchone()[0]
    except sqlite3.OperationalError:  # SQLite built without dbstat
        return {}
    finally:
        conn.close()
    return {**{name: sum(sizes.get(t, 0) for t in tables) for name, tables in TABLES.items()}, INDEXES: indexes}


def postgres_sizes(url: str) -> dict[str, int]:
    """Bytes of each group of tables (heap, indexes and TOAST: `pg_total_relation_size`)."""
    import psycopg

    with psycopg.connect(url) as conn:
        sizes = {name: (total, indexes) for name, total, indexes in conn.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid), pg_indexes_size(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'jianmu' AND c.relkind = 'r'")}
    grouped = {name: sum(sizes.get(t, (0, 0))[0] for t in tables) for name, tables in TABLES.items()}
    return {**grouped, INDEXES: sum(sizes.get(t, (0, 0))[1] for tables in TABLES.values() for t in tables)}


def _first_restore_ms(store, rounds: int, checkpoint_id: int) -> tuple[float, float]:
    """A new runner's restore, and its restore plus the first read of the history (which a
    restore leaves undecoded until then): what a resumed run pays before its next model call."""
    runner = ReactiveRunner(build(rounds), ReActState, checkpointer=store)
    started = time.perf_counter()
    runner.restore(checkpoint_id)
    restored = time.perf_counter()
    runner.state_manager.stored("messages")
    return (restored - started) * 1000, (time.perf_counter() - started) * 1000


def _opened_restore_ms(name: str, rounds: int, checkpoint_id: int) -> float:
    """A new runner's restore by a store just opened (a fresh process resuming a run)."""
    store = open_store(name)
    try:
        return _first_restore_ms(store, rounds, checkpoint_id)[0]
    finally:
        store.close()


COLD = 11  # repetitions of a first restore or view (the machine is shared: a median of 5 swung 2x)
PAST_VIEW = ("RunTimeline.get", "+ PastFrame.state", "+ its marks", "+ ports' StateManager",
             "+ the history read")


def _past_view_ms(runner, store, run_id: str, checkpoint_id: int) -> tuple[float, ...]:
    """What the studio's past view pays to show a checkpoint (studio.session's `frame`), step by
    step, cumulative (`PAST_VIEW`): the checkpoint read and its state named (`RunTimeline.get`:
    `store.get` inside, stored lists left unread); the frame made and its state shown
    (`PastFrame.state`); its marks (its parent read, the two compared); the state a node's
    ports read (`PastFrame._value_reader`: a `StateManager` restored from it); then what a pane
    showing the history's items adds (the messages read: expand, enter, `e`, a port reading them)."""
    timeline = RunTimeline(store, StateNames(ReActState))
    timeline.infos(run_id)  # listed for the timeline pane before a checkpoint is viewed
    started = time.perf_counter()
    checkpoint, _ = timeline.get(checkpoint_id)
    got = time.perf_counter()
    frame = PastFrame(runner, timeline, EventLog(), checkpoint, StagedEdits())
    frame.state()
    shown = time.perf_counter()
    frame.marks()
    marked = time.perf_counter()
    frame._value_reader()
    ports = time.perf_counter()
    whole(frame.state()[""]["messages"])
    return tuple((t - started) * 1000 for t in (got, shown, marked, ports, time.perf_counter()))


def _first_past_view_ms(runner, name: str, run_id: str, checkpoint_id: int) -> tuple[float, ...]:
    """`_past_view_ms` by a store just opened (the studio opening a recorded run)."""
    store = open_store(name)
    try:
        return _past_view_ms(runner, store, run_id, checkpoint_id)
    finally:
        store.close()


def _medians(times: list[tuple[float, ...]]) -> list[float]:
    """The median of each step over repeated measurements."""
    return [statistics.median(step) for step in zip(*times, strict=True)]


def _median_ms(fn, repeat: int = 21) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def measure(name: str, rounds: int, sizes) -> dict:
    """Record the workload into the store `name` (a file or a URL), then restore from a fresh
    store object; `sizes()` gives the bytes stored by table group."""
    store = open_store(name)
    runner = ReactiveRunner(build(rounds), ReActState, checkpointer=store)
    checkpoints = runner.checkpoints
    save_ms: list[float] = []
    tick_ms: list[float] = []
    after_tick = checkpoints.after_tick

    follower, read, look_ms = open_store(name), EventsRead(), []  # a studio following the run (studio/follow.py)

    def timed(report):
        started = time.perf_counter()
        after_tick(report)
        save_ms.append((time.perf_counter() - started) * 1000)
        tick_ms.append(report.duration_ms)
        started = time.perf_counter()
        follower.events(runner.run_id, read)  # its look after each save: what landed since the last
        look_ms.append((time.perf_counter() - started) * 1000)

    checkpoints.after_tick = timed
    started = time.perf_counter()
    await runner.run(input_data={"messages": [human("Look everything up.")]})
    wall = time.perf_counter() - started
    final = runner.state_manager.snapshot()
    assert runner.state_manager.get("final_answer") == "done", "the scripted run did not finish"
    run_id = runner.run_id
    store.close()
    look = {"since": statistics.median(look_ms[-50:]), "whole": _median_ms(lambda: follower.events(run_id), 5)}
    follower.close()
    parts = sizes()

    store = open_store(name)  # restore from a freshly opened store
    again = ReactiveRunner(build(rounds), ReActState, checkpointer=store)
    infos = [c for c in store.list(run_id) if c.status == "RUNNING"]
    points = {"first": infos[0], "middle": infos[len(infos) // 2], "last": infos[-1]}
    restore = {point: _median_ms(lambda c=c: again.restore(c.id)) for point, c in points.items()}
    firsts = {point: [_first_restore_ms(store, rounds, c.id) for _ in range(COLD)] for point, c in points.items()}
    cold = {point: statistics.median(t[0] for t in times) for point, times in firsts.items()}
    cold_read = {point: statistics.median(t[1] for t in times) for point, times in firsts.items()}
    read = {point: _median_ms(lambda c=c: store.get(c.id)) for point, c in points.items()}
    view = {point: _medians([_past_view_ms(again, store, run_id, c.id) for _ in range(11)]) for point, c in points.items()}
    store.close()
    first_view = {point: _medians([_first_past_view_ms(again, name, run_id, c.id) for _ in range(COLD)])
                  for point, c in points.items()}
    cold_opened = {point: statistics.median(_opened_restore_ms(name, rounds, c.id) for _ in range(COLD))
                   for point, c in points.items()}
    return {"wall": wall, "final": final, "final_bytes": len(json.dumps(final, ensure_ascii=False).encode()),
            "parts": parts, "save_ms": save_ms, "tick_ms": tick_ms, "points": points, "restore": restore,
            "cold": cold, "cold_read": cold_read, "cold_opened": cold_opened, "read": read,
            "view": view, "first_view": first_view, "look": look}


def write_one_run(name: str, go: str, rounds: int) -> None:
    """A writer process of the concurrency figure: wait for `go`, record one run, print its checkpoints."""
    store = open_store(name)
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.005)
    runner = ReactiveRunner(build(rounds), ReActState, checkpointer=store)
    asyncio.run(runner.run(input_data={"messages": [human("Look everything up.")]}))
    print(len(store.list(runner.run_id)))
    store.close()


def concurrent_writers(name: str, processes: int, rounds: int) -> tuple[float, int]:
    """Checkpoints per second, in total, of `processes` writers recording one run each at once
    (timed from the start signal to the last writer's end); and how many were stored."""
    with tempfile.TemporaryDirectory(prefix="jianmu-go-") as folder:
        return _race(name, processes, rounds, Path(folder) / "go")


def _race(name: str, processes: int, rounds: int, go: Path) -> tuple[float, int]:
    open_store(name).close()  # the schema exists before the writers race
    children = [subprocess.Popen([sys.executable, __file__, "--writer", name, str(go), str(rounds)],
                                 stdout=subprocess.PIPE, text=True) for _ in range(processes)]
    for child in children:  # every writer has imported and connected
        assert child.stdout.readline().strip() == "ready", "a writer failed to start"
    started = time.perf_counter()
    go.touch()
    stored = 0
    for child in children:
        out, _ = child.communicate()
        assert child.returncode == 0, "a writer failed"
        stored += int(out)
    return stored / (time.perf_counter() - started), stored


def postgres_url(given: str | None):
    """The URL to measure PostgreSQL with: `--postgres URL`, else a throw-away server started
    as the tests start theirs (None, with the reason printed, when neither is possible)."""
    if given:
        return given, None
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from postgres_server import PostgresServer, why_not

    if reason := why_not():
        print(f"PostgreSQL column skipped: {reason}")
        return None, None
    server = PostgresServer().start()
    return server.new_database(), server


async def main(rounds: int, postgres: str | None, writers: int, writer_rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="jianmu-bench-") as folder:  # the stores go with the run
        await _measure_all(Path(folder), rounds, postgres, writers, writer_rounds)


async def _measure_all(folder: Path, rounds: int, postgres: str | None, writers: int, writer_rounds: int) -> None:
    path = folder / "bench.db"
    columns = {"SQLite": await measure(str(path), rounds, lambda: sqlite_sizes(path))}
    columns["SQLite"]["stored"] = sum(os.path.getsize(p) for p in folder.iterdir())
    url, server = postgres_url(postgres)
    try:
        databases = {"PostgreSQL": url} if url is not None else {}
        if server is not None:  # the throw-away server's Unix socket too: a round trip 0.04-0.07 ms cheaper here
            databases["PG Unix socket"] = server.new_database(socket=True)
        for column, database in databases.items():
            columns[column] = await measure(database, rounds, lambda database=database: postgres_sizes(database))
            columns[column]["stored"] = sum(columns[column]["parts"][part] for part in TABLES)
        concurrency = {"SQLite": [concurrent_writers(str(folder / f"writers-{n}.db"), n, writer_rounds)
                                  for n in (1, writers)]}
        if url is not None:
            concurrency["PostgreSQL"] = [concurrent_writers(server.new_database() if server else url, n,
                                                            writer_rounds) for n in (1, writers)]
    finally:
        if server is not None:
            server.stop()
    peer = measure_langgraph(folder / "langgraph.db", rounds) if langgraph_peer.AVAILABLE else None
    report(rounds, columns, peer, concurrency, writers, writer_rounds)


def measure_langgraph(path: Path, rounds: int) -> dict:
    """The peer column: LangGraph recording the same workload, and its cold restores."""
    steps, task = script(rounds), "Look everything up."
    started = time.perf_counter()
    ids = langgraph_peer.record(path, steps, observation, task)
    per_checkpoint = (time.perf_counter() - started) * 1000 / len(ids)
    points = {"first": ids[1], "middle": ids[len(ids) // 2], "last": ids[-1]}
    cold = {point: statistics.median(langgraph_peer.cold_restore_ms(path, steps, observation, i) for _ in range(5))
            for point, i in points.items()}
    return {"stored": path.stat().st_size, "ms_per_checkpoint": per_checkpoint, "cold": cold}


def report(rounds: int, columns: dict, peer: dict | None, concurrency: dict, writers: int,
           writer_rounds: int) -> None:
    first = next(iter(columns.values()))
    n = len(first["save_ms"])
    print(f"workload: {rounds} ReAct rounds, {n} ticks, {len(first['final'][''].get('messages', []))} messages, "
          f"final state {first['final_bytes'] / 1e3:.0f} KB (reference: 418 KB)")
    names = list(columns)
    print(f"{'':34}" + "".join(f"{name:>16}" for name in names) + f"{'LangGraph' if peer else '':>16}")
    if peer is None:
        print(langgraph_peer.MISSING)
    peer = peer or {}

    def row(label: str, cells: list[str], reference: str = "") -> None:
        print(f"{label:34}" + "".join(f"{cell:>16}" for cell in cells) + f"{reference:>16}")

    row("stored bytes", [f"{c['stored'] / 1e3:.0f} KB" for c in columns.values()],
        f"{peer['stored'] / 1e6:.0f} MB" if peer else "")
    row("ratio to final state (goal <= 3x)", [f"{c['stored'] / c['final_bytes']:.2f}x" for c in columns.values()],
        f"{peer['stored'] / first['final_bytes']:.0f}x" if peer else "")
    for part in (*TABLES, INDEXES):
        row("  " + part if part in TABLES else part, [f"{c['parts'].get(part, 0) / 1e3:.0f} KB" for c in columns.values()])
    row("save per tick, mean", [f"{statistics.fmean(c['save_ms']):.3f} ms" for c in columns.values()],
        f"{peer['ms_per_checkpoint']:.1f} ms/step" if peer else "")
    row("save per tick, median / p95", [f"{statistics.median(c['save_ms']):.3f}/"
                                        f"{sorted(c['save_ms'])[int(n * 0.95)]:.3f}" for c in columns.values()])
    row("tick own time, mean", [f"{statistics.fmean(c['tick_ms']):.3f} ms" for c in columns.values()])
    row("a follower's look at the end", [f"{c['look']['since']:.3f} ms" for c in columns.values()])
    row("  the whole run read instead", [f"{c['look']['whole']:.3f} ms" for c in columns.values()])
    for point, c in first["points"].items():
        row(f"restore {point} (tick {c.tick})", [f"{col['restore'][point]:.3f} ms" for col in columns.values()])
        row("  new runner (cold)", [f"{col['cold'][point]:.3f} ms" for col in columns.values()],
            f"{peer['cold'][point]:.3f} ms" if peer else "")
        row("    and its first read of messages", [f"{col['cold_read'][point]:.3f} ms" for col in columns.values()])
        row("  new runner, store just opened", [f"{col['cold_opened'][point]:.3f} ms" for col in columns.values()])
        row("  store.get alone", [f"{col['read'][point]:.3f} ms" for col in columns.values()])
        for label, key in (("  past view, store open", "view"), ("  past view, store just opened", "first_view")):
            row(label + ":", [])
            for i, step in enumerate(PAST_VIEW):
                row(f"    {step}", [f"{col[key][point][i]:.3f} ms" for col in columns.values()])
    print(f"concurrent writers: one run of {writer_rounds} ReAct rounds each, checkpoints/s in total "
          "from a common start to the last writer's end")
    for name, ((alone, _), (together, stored)) in concurrency.items():
        row(f"  {name}: 1 / {writers} processes", [f"{alone:.0f} / {together:.0f}"],
            f"({stored} stored)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--writer"]:
        write_one_run(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--postgres", metavar="URL", help="measure this database (default: a throw-away server)")
    parser.add_argument("--writers", type=int, default=10, help="processes of the concurrency figure")
    parser.add_argument("--writer-rounds", type=int, default=50, help="ReAct rounds each writer records")
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.postgres, args.writers, args.writer_rounds))
