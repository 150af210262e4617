"""One way to name a store everywhere: `--db FILE.db`, `--db postgresql://…` or $JIANMU_DB, for
`jianmu-studio run`, `replay` and `python -m runtime.memory.checkpoint`; never a password shown."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from openai_server import FakeServer, completion, json_reply
from postgres_server import PASSWORD

from runtime.memory.checkpoint import StoreError, open_store
from studio.session import DebugSession

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


UNREADABLE_URLS = [  # each one the driver cannot read, and quotes in its error (#32.6)
    "postgresql://alice:Pa55-canary@[::1/db",  # an unclosed IPv6 host
    "postgresql://alice:Pa55%ZZcanary@127.0.0.1:1/db",  # a bad escape in the password itself
    "postgresql://alice@127.0.0.1:1/db?password=Pa55%ZZcanary",  # in a parameter
    "postgresql://alice:Pa55-canary@127.0.0.1:1/db?bogus=1",  # a parameter it does not know
    "postgres://alice:Pa55-canary@no such host/db",  # spaces
    "postgresql://alice:Pa55@canary@127.0.0.1:notaport/db",  # an @ in the password, a port that is no number
]


def test_a_url_the_driver_cannot_read_is_refused_in_one_line_without_its_password():
    for url in UNREADABLE_URLS:
        for result in (checkpoints("list", "--db", url), studio("run", PIPELINE, "--db", url)):
            assert result.returncode == 2, (url, result.stderr)
            assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
            assert "Pa55" not in result.stderr + result.stdout and "canary" not in result.stderr, result.stderr


def test_replay_takes_one_store_and_reads_the_default_one_by_default(tmp_path):
    result = studio("replay", "a.db", "--db", "b.db")
    assert result.returncode == 2 and "replay: give the store once" in result.stderr
    result = studio("replay")  # nothing recorded by default yet: the default store is named
    assert result.returncode == 2
    assert result.stderr.strip() == f"jianmu-studio: {tmp_path / 'data/jianmu-studio/runs.db'}: no such checkpoint store"


async def test_a_production_run_is_stepped_here_offline_from_its_recorded_io(store_name, monkeypatch):
    """A run recorded by another process against a real endpoint (a service in production) is
    replayed here with that endpoint gone: every model answer comes from the store's recorded I/O."""
    server = FakeServer()
    await server.start()
    server.script(json_reply(completion(tool_calls=[{"id": "c1", "type": "function", "function": {
        "name": "calculator", "arguments": json.dumps({"expression": "25 * 4 + 10"})}}])),
        json_reply(completion("25 * 4 + 10 = 110")))
    environment = {k: v for k, v in os.environ.items() if k != "JIANMU_DB"}
    endpoint = {"JIANMU_BASE_URL": server.url, "JIANMU_API_KEY": "k", "JIANMU_MODEL": "m"}
    production = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "studio.cli", "run", CALCULATOR, "--db", store_name, "--json", cwd=ROOT,
        env=environment | endpoint, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(production.communicate(), 120)
    await server.stop()
    assert production.returncode == 0, err.decode()
    assert len(server.requests) == 2  # the run really asked the endpoint
    summary = json.loads(out.decode().splitlines()[-1])["summary"]
    assert summary["final_answer"] == "25 * 4 + 10 = 110"

    monkeypatch.setenv("JIANMU_BASE_URL", f"http://127.0.0.1:{_dead_port()}/v1")  # nothing answers here
    session = DebugSession.open_recorded(store_name, summary["run_id"])
    try:
        await session.replay_from(session.checkpoints()[1].id)
        stop = await session.continue_()
        assert stop.kind == "finished" and session.root_status.value == "SUCCESS"
        assert session.runner.state_manager.get("final_answer") == "25 * 4 + 10 = 110"
        assert session.failure is None
    finally:
        session.store.close()


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_empty_store_name_is_refused_never_read_as_the_default(tmp_path):
    """`--db ''` (a variable that expanded to nothing) recorded into the default store; now one line, exit 2."""
    from studio.places import default_db_path

    for args in (("run", PIPELINE, "--db", ""), ("run", PIPELINE, "--db", "  "), ("replay", ""),
                 ("replay", "--db", ""), ("resume", "", "--approve", "all"), ("check", ""), ("diff", "")):
        result = studio(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert len(result.stderr.splitlines()) == 1, (args, result.stderr)
        assert result.stderr.startswith("jianmu-studio: an empty store name ("), (args, result.stderr)
    assert not default_db_path().exists()
    assert checkpoints("list", "--db", "").returncode == 2
    with pytest.raises(StoreError, match="an empty store name"):
        open_store("")
