"""Recorded runs as pytest tests: each run file (or store) is checked against the tree offline.

    from pathlib import Path

    import pytest
    from runtime.testing import assert_replays

    RUNS = sorted((Path(__file__).parent / "runs").glob("*.jianmu"))

    @pytest.mark.parametrize("recording", RUNS, ids=lambda path: path.stem)
    def test_replays(recording):
        assert_replays(recording, tree="agent.py")

`assert_replays` re-runs the tree against every run of the recording (or `run`) exactly as
`jianmu-studio check` does, serving each model answer and tool result from it (no network,
no timing), and fails the test with the same message: the run, the tick, the node and what
differed, then an excerpt of it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from .agent import Agent
from .check import CheckReport, check_run
from .check.recording import tree_for_run
from .memory.checkpoint import open_store

Tree = str | Path | Agent | Callable[[], Agent] | None


class ReplayMismatch(AssertionError):
    """A recorded run the tree no longer reproduces (the message says where and what)."""


def assert_replays(recording: str | Path, tree: Tree = None, run: str | None = None, *, branch: str = "main",
                   tools_live: bool = False) -> list[CheckReport]:
    """Check the tree against each recorded run; `ReplayMismatch` names the first divergence of each
    that diverges. `tree`: a tree file (`path.py` or `path.py:function`), a function building an
    `Agent`, an `Agent` (built once: a tick that differs is not tried again), or None for the tree
    the run was recorded with (its file, else the text kept with it)."""
    __tracebackhide__ = True
    store = open_store(str(recording), create=False)
    try:
        runs = [run] if run else [summary.run_id for summary in store.runs()]
        if not runs:
            raise ReplayMismatch(f"{recording}: holds no runs")
        reports = [_run(_check(store, run_id, tree, branch, tools_live)) for run_id in runs]
    finally:
        store.close()
    failed = [line for report in reports if not report.ok for line in report.lines()]
    if failed:
        raise ReplayMismatch("\n".join(failed))
    return reports


async def _check(store: Any, run_id: str, tree: Tree, branch: str, tools_live: bool) -> CheckReport:
    if isinstance(tree, Agent):
        return await check_run(store, run_id, lambda: tree, branch=branch, tools_live=tools_live, rebuild=False)
    build = tree if callable(tree) else tree_for_run(store, run_id, None if tree is None else str(tree)).build
    return await check_run(store, run_id, build, branch=branch, tools_live=tools_live)


def _run(coroutine: Coroutine[Any, Any, CheckReport]) -> CheckReport:
    """The coroutine run to its end, also from inside a running loop (an async test): in a thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


__all__ = ["ReplayMismatch", "assert_replays"]
