"""`jianmu-studio resume` (#30.1): a run that `run` left waiting for an approval is answered by another
process, on SQLite and on PostgreSQL, and goes on there; the tool's side effect is counted: an approved
call ran exactly once, a denied one never. Every process here is a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import resume_tree

from runtime.memory.checkpoint import open_store
from runtime.state import InteractionKeys

ROOT = Path(__file__).resolve().parents[1]
TREE = str(Path(resume_tree.__file__))


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    path = tmp_path / "ledger.txt"
    monkeypatch.setenv(resume_tree.EFFECTS, str(path))  # the subprocesses inherit it
    return path


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "studio.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, env=os.environ.copy())


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def suspended(store: str) -> str:
    """`run` the tree into `store` until it waits for approval (process A); the run's id."""
    result = cli("run", TREE, "--db", store, "--json")
    assert result.returncode == 1, result.stderr
    summary = json.loads(result.stdout.splitlines()[-1])["summary"]
    assert summary["stopped"] == "suspended" and summary["waiting_for_approval"][0]["tool"] == "append_line"
    return summary["run_id"]


def facts(store_name: str, run_id: str) -> tuple[str | None, str, list]:
    """How the store says the run ended, its last checkpoint's status, and the tool messages it holds."""
    store = open_store(store_name, create=False)
    try:
        last = store.get(store.latest(run_id).id)
        messages = last.state[""]["messages"]
        return store.runs(run_id)[0].ended, last.status, [m["content"] for m in messages if m["role"] == "tool"]
    finally:
        store.close()


def test_approved_in_another_process_the_run_goes_on_and_the_tool_runs_exactly_once(store_name, ledger):
    run_id = suspended(store_name)
    assert lines(ledger) == []

    result = cli("resume", store_name, "--approve", "append_line")  # process B: the only waiting run
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[0] == 'approved append_line(text="payment 42 sent")'
    assert out[-2].startswith("SUCCESS at tick ") and f"(completed); run {run_id} recorded in" in out[-2]
    assert out[-1] == "final answer: Done: payment 42 sent."
    assert lines(ledger) == ["payment 42 sent"]
    assert facts(store_name, run_id) == ("completed", "SUCCESS", ["appended 'payment 42 sent'"])

    again = cli("resume", store_name, "--run", run_id, "--approve", "all")  # nothing waits any more
    assert again.returncode == 2 and again.stdout == ""
    assert again.stderr.strip() == f"jianmu-studio: run {run_id} has ended (SUCCESS): nothing waits"
    assert lines(ledger) == ["payment 42 sent"]


def test_denied_in_another_process_the_tool_never_runs_and_the_model_reads_why(store_name, ledger):
    run_id = suspended(store_name)
    result = cli("resume", store_name, "--run", run_id, "--deny", "append_line:needs a second signature", "--json")
    assert result.returncode == 0, result.stderr
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    assert objects[0]["approval"]["decision"] == "denied"
    assert objects[0]["approval"]["reason"] == "needs a second signature"
    assert objects[-1]["summary"]["status"] == "SUCCESS" and objects[-1]["summary"]["run_id"] == run_id
    assert lines(ledger) == []
    assert facts(store_name, run_id)[2] == ["Error: tool 'append_line' was not approved: needs a second signature"]


def test_an_answer_by_approval_id_from_the_first_process_output(tmp_path, ledger):
    store = str(tmp_path / "runs.db")
    first = cli("run", TREE, "--db", store, "--json")
    [waiting] = json.loads(first.stdout.splitlines()[-1])["summary"]["waiting_for_approval"]
    result = cli("resume", store, "--approve", waiting["id"])
    assert result.returncode == 0, result.stderr
    assert lines(ledger) == ["payment 42 sent"]


def test_an_answer_that_fits_no_waiting_call_changes_nothing(tmp_path, ledger):
    store = str(tmp_path / "runs.db")
    run_id = suspended(store)
    result = cli("resume", store, "--approve", "send_email")
    assert result.returncode == 2 and result.stdout == ""
    line = result.stderr.strip()
    assert line.startswith(f"jianmu-studio: run {run_id} has no call of send_email waiting (it waits for append_line (")
    assert "\n" not in line
    assert lines(ledger) == []
    assert facts(store, run_id)[0] == "suspended"  # still waiting, for a right answer
    assert cli("resume", store, "--approve", "append_line").returncode == 0
    assert lines(ledger) == ["payment 42 sent"]


@pytest.mark.parametrize("args, message", [
    ([], "resume: answer the waiting calls with --approve or --deny (see --help)"),
    (["--approve", "x", "--deny", "x"], "both --approve and --deny name x"),
])
def test_bad_answers_are_one_line(tmp_path, args, message):
    result = cli("resume", str(tmp_path / "runs.db"), *args)
    assert (result.returncode, result.stdout, result.stderr.strip()) == (2, "", f"jianmu-studio: {message}")


def test_which_run_when_none_or_several_wait(tmp_path, ledger):
    store = str(tmp_path / "runs.db")
    cli("run", str(ROOT / "sample_trees/text_pipeline.py"), "--db", store)  # ends: it waits for nothing
    none = cli("resume", store, "--approve", "all")
    assert (none.returncode, none.stderr.strip()) == (2, f"jianmu-studio: {store}: no run waits for an approval")
    first, second = suspended(store), suspended(store)
    several = cli("resume", store, "--approve", "all")
    assert several.returncode == 2
    assert several.stderr.strip() == (f"jianmu-studio: {store}: 2 runs wait for an approval ({first}, {second}): "
                                      "say which with --run ID")
    assert cli("resume", store, "--run", second, "--approve", "all").returncode == 0
    assert lines(ledger) == ["payment 42 sent"]
    assert facts(store, first)[0] == "suspended"


def test_the_suspension_is_the_last_checkpoint_of_the_run_left_waiting(tmp_path, ledger):
    store_name = str(tmp_path / "runs.db")
    run_id = suspended(store_name)
    store = open_store(store_name, create=False)
    last = store.get(store.latest(run_id).id)
    assert last.source == "suspend"
    [(approval_id, entry)] = last.state[""][InteractionKeys.PENDING].items()
    assert entry["payload"]["tool"] == "append_line"
    carried = [data for data in (r.get("data") or {} for r in last.resume.values()) if "approvals" in data]
    assert [a["id"] for a in carried[0]["approvals"]] == [approval_id]
    store.close()
