"""How checkpoints grow: a 200-round scripted ReAct run adding two 1 KB messages per round.

    .venv/bin/python bench/checkpoint_growth.py [--rounds 200]

Prints, side by side: bytes stored versus the final state's size, save time per tick
versus the tick's own time, and restore time at the first, middle and last checkpoint:
the median of repeated restores by one runner (it keeps the lists it restored decoded,
as when stepping through a timeline), and the first restore by a new runner (which reads
and validates the whole message list). Items are the messages, recorded replies and tool
results, stored once by content. The message texts are random words, which compress
about as badly as any real text, so the ratio owes nothing to a repeated letter.
Reference column: LangGraph's SQLite checkpointer on the same workload (full message list
in every checkpoint), QUOTED, not measured by this script: 84 MB for a 418 KB final state
(202x), 1.3 ms per step (bench/RESULTS.md, 2026-12-01); cold restore of the first /
middle / last checkpoint 1.3 / 5.0 / 7.6 ms (issue #14, LangGraph 1.2.24, measured by
the session that filed it). Goals here: bytes <= 3x, save <= 0.5 ms per tick, restore
<= 1 ms median.
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
import tempfile
import time
from pathlib import Path

from runtime import ModelClient, ReActConfig, ReActState, ScriptedProvider, create_react_node, human, tool
from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import SQLiteCheckpointStore

KB = 1000


def text(seed: str, size: int) -> str:
    """`size` characters of random lowercase words (zlib shrinks them 1.6x; prose 2.5-3x)."""
    rng = random.Random(seed)
    words = []
    while sum(map(len, words)) + len(words) < size:
        words.append("".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9))))
    return " ".join(words)[:size]


def script(rounds: int) -> list[dict]:
    steps = [{"content": f"round {i}: " + text(f"thought {i}", KB - 12),
              "tool_calls": [{"name": "lookup", "arguments": {"round": i}}]} for i in range(rounds)]
    return [*steps, {"content": "done"}]


@tool
def lookup(round: int) -> str:
    """Return a 1 KB observation for a round."""
    return f"observation {round}: " + text(f"observation {round}", KB - 20)


def build(rounds: int):
    client = ModelClient.resolve(ScriptedProvider(script(rounds)))
    return create_react_node(name="Bench", model_client=client, tools=[lookup],
                             config=ReActConfig(max_iterations=rounds + 5))


def breakdown(path: Path) -> dict[str, int]:
    """Bytes on disk (pages, indexes included) of checkpoints, items, events and recorded I/O."""
    groups = {"checkpoints, chunks": ("checkpoints", "chunks"), "items": ("items",), "events": ("events",),
              "recorded I/O rows": ("io",)}
    conn = sqlite3.connect(path)
    try:
        sizes = dict(conn.execute("SELECT tbl_name, sum(pgsize) FROM dbstat JOIN sqlite_schema USING (name) "
                                  "GROUP BY tbl_name"))
    except sqlite3.OperationalError:  # SQLite built without dbstat
        return {}
    finally:
        conn.close()
    return {name: sum(sizes.get(t, 0) for t in tables) for name, tables in groups.items()}


def _first_restore_ms(store: SQLiteCheckpointStore, rounds: int, checkpoint_id: int) -> float:
    runner = ReactiveRunner(build(rounds), ReActState, checkpointer=store)
    started = time.perf_counter()
    runner.restore(checkpoint_id)
    return (time.perf_counter() - started) * 1000


def _median_ms(fn, repeat: int = 21) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def main(rounds: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="jianmu-bench-"))
    path = folder / "bench.db"
    store = SQLiteCheckpointStore(path)
    runner = ReactiveRunner(build(rounds), ReActState, checkpointer=store)
    checkpoints = runner.checkpoints
    save_ms: list[float] = []
    tick_ms: list[float] = []
    after_tick = checkpoints.after_tick

    def timed(report):
        started = time.perf_counter()
        after_tick(report)
        save_ms.append((time.perf_counter() - started) * 1000)
        tick_ms.append(report.duration_ms)

    checkpoints.after_tick = timed
    started = time.perf_counter()
    await runner.run(input_data={"messages": [human("Look everything up.")]})
    wall = time.perf_counter() - started
    final = runner.state_manager.snapshot()
    final_bytes = len(json.dumps(final, ensure_ascii=False).encode())
    assert runner.state_manager.get("final_answer") == "done", "the scripted run did not finish"
    run_id = runner.run_id
    store.close()
    stored = sum(os.path.getsize(p) for p in folder.iterdir())
    parts = breakdown(path)

    store = SQLiteCheckpointStore(path)  # restore from a freshly opened file
    again = ReactiveRunner(build(rounds), ReActState, checkpointer=store)
    infos = [c for c in store.list(run_id) if c.status == "RUNNING"]
    points = {"first": infos[0], "middle": infos[len(infos) // 2], "last": infos[-1]}
    quoted_cold = {"first": "1.3 ms", "middle": "5.0 ms", "last": "7.6 ms"}
    restore = {name: _median_ms(lambda c=c: again.restore(c.id)) for name, c in points.items()}
    cold = {name: statistics.median(_first_restore_ms(store, rounds, c.id) for _ in range(5))
            for name, c in points.items()}
    read = {name: _median_ms(lambda c=c: store.get(c.id)) for name, c in points.items()}
    store.close()

    n = len(save_ms)
    print(f"workload: {rounds} ReAct rounds, {n} ticks, {len(final[''].get('messages', []))} messages, "
          f"run {wall:.2f} s")
    print(f"{'':28}{'this store':>14}{'LangGraph (quoted)':>20}")
    print(f"{'stored bytes':28}{stored / 1e3:>11.0f} KB{'84 MB':>20}")
    print(f"{'final state':28}{final_bytes / 1e3:>11.0f} KB{'418 KB':>20}")
    print(f"{'ratio (goal <= 3x)':28}{stored / final_bytes:>13.2f}x{'202x':>20}")
    for name, size in parts.items():
        print(f"{'  ' + name:28}{size / 1e3:>11.0f} KB  ({size / final_bytes:.2f}x the final state)")
    print(f"{'save per tick, mean':28}{statistics.fmean(save_ms):>11.3f} ms{'1.3 ms':>20}")
    print(f"{'save per tick, median/p95':28}{statistics.median(save_ms):>8.3f}/"
          f"{sorted(save_ms)[int(n * 0.95)]:.3f} ms")
    print(f"{'tick own time, mean':28}{statistics.fmean(tick_ms):>11.3f} ms")
    for name, c in points.items():
        print(f"{'restore ' + name + f' (tick {c.tick})':28}{restore[name]:>11.3f} ms"
              f"{'':>20}   (new runner {cold[name]:.3f} ms, LangGraph cold {quoted_cold[name]}; "
              f"store.get alone {read[name]:.3f} ms)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    asyncio.run(main(parser.parse_args().rounds))
