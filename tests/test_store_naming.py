"""One way to name a store everywhere: `--db FILE.db`, `--db postgresql://…` or $JIANMU_DB, for
`jianmu-studio run`, `replay` and `python -m runtime.memory.checkpoint`; never a password shown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from postgres_server import PASSWORD

from runtime.memory.checkpoint import open_store

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = str(ROOT / "sample_trees/text_pipeline.py")
CALCULATOR = str(ROOT / "sample_trees/react_calculator.py")


def command(*argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "JIANMU_DB"} | (env or {})
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env=environment)


def studio(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return command("-m", "studio.cli", *args, env=env)


def checkpoints(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return command("-m", "runtime.memory.checkpoint", *args, env=env)


def test_run_records_where_db_or_the_environment_says(store_name, tmp_path):
    given = studio("run", PIPELINE, "--db", store_name, "--json")
    assert given.returncode == 0, given.stderr
    from_env = studio("run", PIPELINE, "--json", env={"JIANMU_DB": store_name})
    assert from_env.returncode == 0, from_env.stderr
    run_ids = [json.loads(r.stdout.splitlines()[-1])["summary"]["run_id"] for r in (given, from_env)]
    store = open_store(store_name)
    assert [run.run_id for run in store.runs()] == run_ids
    assert all(run.ended == "completed" and run.tree.endswith("text_pipeline.py:build") for run in store.runs())
    store.close()
    listing = checkpoints("list", env={"JIANMU_DB": store_name})
    assert listing.returncode == 0 and all(run_id in listing.stdout for run_id in run_ids)
    assert checkpoints("list", "--db", store_name).stdout == listing.stdout == checkpoints("list", store_name).stdout


def test_a_password_never_shows_in_output_events_or_errors(postgres_url, tmp_path):
    trace = tmp_path / "run.jsonl"
    ran = studio("run", CALCULATOR, "--db", postgres_url, "--trace", str(trace))
    assert ran.returncode == 0, ran.stderr
    listed = checkpoints("list", "--db", postgres_url)
    store = open_store(postgres_url)
    (run,) = store.runs()
    events = json.dumps([event.payload for _, event in store.events(run.run_id)])
    store.close()
    exported = checkpoints("export", "--db", postgres_url, "--run", run.run_id)
    bad_run = studio("replay", "--db", postgres_url, "--run", "nope")
    wrong = postgres_url.replace(PASSWORD, PASSWORD + "-wrong")
    refused = [studio("run", PIPELINE, "--db", wrong), checkpoints("list", wrong),
               studio("replay", wrong, "--run", "x"), studio("run", PIPELINE, env={"JIANMU_DB": wrong})]
    assert bad_run.returncode == 2 and "no run 'nope'" in bad_run.stderr
    for result in refused:
        assert result.returncode == 2 and "cannot connect" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    everything = [ran.stdout, ran.stderr, listed.stdout, listed.stderr, exported.stdout, events,
                  trace.read_text(), bad_run.stderr, *(r.stderr + r.stdout for r in refused)]
    assert all(PASSWORD not in text for text in everything)
    assert "postgresql://jianmu@127.0.0.1:" in listed.stdout + bad_run.stderr


@pytest.mark.parametrize("argv, message", [
    (("replay",), "replay: which store?"),
    (("replay", "a.db", "--db", "b.db"), "replay: give the store once"),
])
def test_replay_needs_one_store(argv, message):
    result = studio(*argv)
    assert result.returncode == 2 and message in result.stderr


def test_replaying_a_run_recorded_elsewhere_serves_its_recorded_io_offline(store_name):
    """A run recorded by another process (a service) is stepped here with a model that has
    nothing to say: every answer comes from the store's recorded I/O."""
    recorded = studio("run", CALCULATOR, "--db", store_name, "--json")
    assert recorded.returncode == 0, recorded.stderr
    run_id = json.loads(recorded.stdout.splitlines()[-1])["summary"]["run_id"]

    import asyncio

    from runtime.model import ModelClient, ScriptedProvider
    from studio.session import DebugSession

    async def replay() -> str | None:
        session = DebugSession.open_recorded(store_name, run_id)
        for node in session.agent.root.iterate():
            if getattr(node, "model_client", None) is not None:
                node.model_client = ModelClient.resolve(ScriptedProvider([]))  # offline: nothing to answer
        first = session.checkpoints()[1]
        await session.replay_from(first.id)
        await session.continue_()
        answer = session.runner.state_manager.get("final_answer")
        session.store.close()
        return answer

    assert asyncio.run(replay()) == "25 * 4 + 10 = 110"
