"""Writers for the liveness tests (#28.5): `python writer_process.py STORE` records a run into STORE
whose one node never finishes, prints the run's id once its first checkpoint is stored, and goes
on until it is killed (a test sends SIGKILL to see a dead writer); `start_writer` starts one, and
`suspended_run` records a run that ends suspended for an approval, its process exiting cleanly."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from py_trees.common import Status
from pydantic import BaseModel

from runtime import Agent
from runtime.engine import ReactiveRunner
from runtime.memory.checkpoint import open_store
from runtime.node import AsyncNode

ROOT = Path(__file__).resolve().parents[1]


def start_writer(store_name: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    """A writer process recording a run that stays open; returns it and its run's id."""
    proc = subprocess.Popen([sys.executable, __file__, store_name], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, **(env or {})})
    run_id = proc.stdout.readline().strip()
    assert run_id, f"the writer process ended before recording a run (exit status {proc.wait()})"
    return proc, run_id


def studio_run(*args: str) -> subprocess.CompletedProcess:
    """`jianmu-studio run ARGS --json`."""
    return subprocess.run([sys.executable, "-m", "studio.cli", "run", *args, "--json"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def run_id_of(done: subprocess.CompletedProcess) -> str:
    return json.loads(done.stdout.splitlines()[-1])["summary"]["run_id"]


def suspended_run(store_name: str) -> str:
    """The id of a run of approval_guard.py that waits for an approval, its process gone (cleanly)."""
    done = studio_run(str(ROOT / "sample_trees/approval_guard.py"), "--db", store_name)
    assert done.returncode == 1, done.stderr  # stopped, waiting for the approval nobody gave
    return run_id_of(done)


class Nothing(BaseModel):
    pass


class Forever(AsyncNode):
    """Sets `started` (the run's input checkpoint is stored by then), then waits for ever."""

    def __init__(self, name: str, started: asyncio.Event):
        super().__init__(name)
        self.started = started

    async def update_async(self) -> Status:
        self.started.set()
        await asyncio.Event().wait()
        return Status.SUCCESS


def build() -> Agent:
    """The tree a studio shows for the run (the store names this file as the run's tree)."""
    return Agent(Forever("Forever", asyncio.Event()), Nothing)


async def write_for_ever(store_name: str) -> None:
    started = asyncio.Event()
    store = open_store(store_name)
    runner = ReactiveRunner(Forever("Forever", started), Nothing(), checkpointer=store)
    running = asyncio.ensure_future(runner.run())
    await started.wait()
    store.set_meta(f"tree:{runner.run_id}", f"{Path(__file__).resolve()}:build")
    print(runner.run_id, flush=True)
    await running


if __name__ == "__main__":
    asyncio.run(write_for_ever(sys.argv[1]))
