"""An agent in its own process with the debug server on a free loopback port, for the tests that attach.

`agent_process()` starts `tests/debug_target.py` on a tree file (optionally recording into a
store), reads the address the server prints, and kills the process at the end if it is
still there; `until()` reads a client's messages up to one of a type (bounded).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from runtime.debug import DebugClient

ROOT = Path(__file__).resolve().parent.parent
LLM = "Calculator/Calculator.loop/Calculator.llm"
TOKEN = "s3cret-token-for-tests"
WAIT = 60  # seconds any one wait in these tests may take before it fails


@dataclass
class Target:
    process: asyncio.subprocess.Process
    address: str
    stderr: list[str]

    async def result(self) -> dict:
        out = await asyncio.wait_for(self.process.stdout.read(), WAIT)
        await self.process.wait()
        return json.loads(out.decode().strip().splitlines()[-1])


async def _drain(stream: asyncio.StreamReader, lines: list[str]) -> None:
    while line := await stream.readline():
        lines.append(line.decode())


@contextlib.asynccontextmanager
async def agent_process(tree: str = "sample_trees/react_calculator.py", *, heartbeat: float = 30.0,
                        wait: float = 30.0, token: str | None = TOKEN, db: Path | None = None):
    """The tree (`path.py` or `path.py:function`, relative to the repository) run in a subprocess, served."""
    env = dict(os.environ, JIANMU_DEBUG_WAIT=str(wait), JIANMU_DEBUG_HEARTBEAT=str(heartbeat), PYTHONPATH=str(ROOT))
    env.pop("JIANMU_DEBUG_TOKEN", None)
    if token is not None:
        env["JIANMU_DEBUG_TOKEN"] = token
    store = [str(db)] if db is not None else []
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "tests" / "debug_target.py"), str(ROOT / tree), "127.0.0.1:0", *store, env=env,
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        first = (await asyncio.wait_for(process.stderr.readline(), WAIT)).decode()
        where = re.search(r"ws://(127\.0\.0\.1:\d+)", first)
        assert where, first
        stderr = [first]
        drain = asyncio.create_task(_drain(process.stderr, stderr))
        try:
            yield Target(process, where[1], stderr)
        finally:
            if process.returncode is None:
                process.kill()
            await process.wait()
            await drain
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def until(client: DebugClient, message_type: str) -> dict:
    while (message := await asyncio.wait_for(client.next_message(), WAIT)) is not None:
        if message["type"] == message_type:
            return message
    raise AssertionError(f"the connection closed before a {message_type!r} message")
