"""The headless CLI, through a real subprocess: output, exit codes, and every bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "studio.cli", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def test_run_prints_one_line_per_tick_and_a_summary():
    result = cli("run", str(ROOT / "sample_trees/text_pipeline.py"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    ticks = [line for line in lines if line.startswith("tick")]
    assert ticks[0].split()[:3] == ["tick", "1", "RUNNING"]
    assert "Normalize:INVALID→RUNNING" in ticks[0]
    assert ticks[-1].split()[2] == "SUCCESS"
    assert lines[-1].startswith(f"SUCCESS after {len(ticks)} ticks")


def test_run_json_gives_machine_readable_ticks_and_summary():
    result = cli("run", str(ROOT / "sample_trees/text_pipeline.py"), "--json")
    assert result.returncode == 0, result.stderr
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    assert objects[0]["tick"] == 1 and objects[0]["changed"]["TextPipeline"] == ["INVALID", "RUNNING"]
    summary = objects[-1]["summary"]
    assert summary["status"] == "SUCCESS" and summary["ticks"] == len(objects) - 1 and summary["run_id"]


def test_max_ticks_stops_an_unfinished_run_with_exit_1():
    result = cli("run", str(ROOT / "sample_trees/text_pipeline.py"), "--max-ticks", "2")
    assert result.returncode == 1
    assert [line.split()[1] for line in result.stdout.splitlines() if line.startswith("tick")] == ["1", "2"]
    assert "RUNNING after 2 ticks" in result.stdout


def test_a_failed_run_exits_1(tmp_path):
    tree = tmp_path / "fails.py"
    tree.write_text(
        "from pydantic import BaseModel\nimport py_trees\nfrom runtime import Agent\n"
        "class S(BaseModel):\n    x: int = 0\n"
        "def build():\n    return Agent(py_trees.behaviours.Failure('nope'), state_schema=S)\n")
    result = cli("run", str(tree))
    assert result.returncode == 1
    assert "FAILURE after 1 ticks" in result.stdout


BAD_TREES = {
    "syntax.py": ("def build(:\n", "syntax.py:1: syntax error"),
    "nobuild.py": ("x = 1\n", "no function build()"),
    "wrongtype.py": ("def build():\n    return 42\n", "build() returned int, expected a runtime.Agent"),
    "raises.py": ("def build():\n    raise RuntimeError('boom')\n", "build() raised RuntimeError: boom"),
    "badimport.py": ("import no_such_module_here\n", "import failed: ModuleNotFoundError"),
}


@pytest.mark.parametrize("name", BAD_TREES)
def test_bad_tree_files_give_one_line_and_exit_2(tmp_path, name):
    source, expected = BAD_TREES[name]
    (tmp_path / name).write_text(source)
    result = cli("run", str(tmp_path / name))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert expected in result.stderr and name in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", [(), ("open",), ("studio",)])  # `./dev studio TREE` taught the last
def test_every_way_to_open_the_studio_checks_the_tree_file_first(command):
    result = cli(*command, "sample_trees/nope.py")
    assert result.returncode == 2 and result.stderr == "jianmu-studio: sample_trees/nope.py: no such file\n"


def test_debug_shows_the_traceback(tmp_path):
    (tmp_path / "raises.py").write_text("def build():\n    raise RuntimeError('boom')\n")
    result = cli("--debug", "run", str(tmp_path / "raises.py"))
    assert result.returncode == 2
    assert "Traceback" in result.stderr and "RuntimeError: boom" in result.stderr


def test_missing_file_and_missing_function():
    missing = cli("run", "sample_trees/nope.py")
    assert missing.returncode == 2 and "sample_trees/nope.py: no such file" in missing.stderr
    no_function = cli("run", "sample_trees/text_pipeline.py:nothing_here")
    assert no_function.returncode == 2 and "no function nothing_here()" in no_function.stderr


def test_path_colon_function_selects_the_builder(tmp_path):
    tree = tmp_path / "two.py"
    tree.write_text(
        "from pydantic import BaseModel\nimport py_trees\nfrom runtime import Agent\n"
        "class S(BaseModel):\n    x: int = 0\n"
        "def build():\n    return Agent(py_trees.behaviours.Failure('f'), state_schema=S)\n"
        "def other():\n    return Agent(py_trees.behaviours.Success('s'), state_schema=S)\n")
    assert cli("run", f"{tree}:other").returncode == 0
    assert cli("run", str(tree)).returncode == 1


def test_run_records_into_a_store_and_writes_a_trace(tmp_path):
    db, trace = tmp_path / "runs.db", tmp_path / "run.jsonl"
    result = cli("run", str(ROOT / "sample_trees/react_calculator.py"), "--db", str(db), "--trace", str(trace))
    assert result.returncode == 0, result.stderr
    assert "final answer: 25 * 4 + 10 = 110" in result.stdout
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert lines and all(line["schema_version"] == 1 for line in lines)
    assert {"tool.call.completed", "model.call.completed", "run.completed"} <= {line["type"] for line in lines}
    listing = subprocess.run([sys.executable, "-m", "runtime.memory.checkpoint", "list", str(db)],
                             capture_output=True, text=True, timeout=60)
    assert "7 checkpoints" in listing.stdout  # the input (tick 0) and six ticks and "SUCCESS" in listing.stdout


def test_a_corrupt_store_is_one_line_and_left_untouched(tmp_path):
    db = tmp_path / "notes.db"
    db.write_text("my notes, not a database\n")
    result = cli("run", str(ROOT / "sample_trees/text_pipeline.py"), "--db", str(db))
    assert result.returncode == 2
    assert result.stderr.strip() == f"jianmu-studio: {db}: not a checkpoint store (not an SQLite database)"
    assert db.read_text() == "my notes, not a database\n"


def test_replay_bad_inputs_are_one_line(tmp_path):
    missing = cli("replay", str(tmp_path / "none.db"))
    assert missing.returncode == 2 and missing.stderr.strip().endswith("none.db: no such checkpoint store")
    db = tmp_path / "runs.db"
    assert cli("run", str(ROOT / "sample_trees/text_pipeline.py"), "--db", str(db)).returncode == 0
    unknown = cli("replay", str(db), "--run", "nope")
    assert unknown.returncode == 2 and "no run 'nope'" in unknown.stderr and "Traceback" not in unknown.stderr


APPROVAL_GUARD = str(ROOT / "sample_trees/approval_guard.py")


def trace_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("rule", ["send_email", "all"])
def test_approve_lets_the_waiting_tool_run(tmp_path, rule):
    trace = tmp_path / "run.jsonl"
    result = cli("run", APPROVAL_GUARD, "--approve", rule, "--trace", str(trace))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    approved = next(i for i, line in enumerate(lines) if line.startswith("approved send_email("))
    assert lines[approved - 1].startswith("tick    2") and lines[approved + 1].startswith("tick    3")
    assert 'to="ops@example.com"' in lines[approved]
    assert lines[-2].startswith("SUCCESS after")
    completed = [e for e in trace_of(trace) if e["type"] == "tool.call.completed"]
    assert completed[0]["payload"]["observation"].startswith("email to ops@example.com queued")


def test_deny_gives_the_model_the_refusal_and_the_run_goes_on(tmp_path):
    trace = tmp_path / "run.jsonl"
    result = cli("run", APPROVAL_GUARD, "--deny", "send_email:not from CI", "--trace", str(trace))
    assert result.returncode == 0, result.stderr
    assert any(line.startswith("denied send_email(") and line.endswith(": not from CI")
               for line in result.stdout.splitlines())
    events = trace_of(trace)
    types = [e["type"] for e in events]
    failed = events[types.index("tool.call.failed")]
    assert failed["payload"]["error"] == "tool 'send_email' was not approved: not from CI"
    assert "tool.call.completed" not in types
    assert "model.call.started" in types[types.index("tool.call.failed"):]  # the model reads the refusal
    assert types[-1] == "run.completed"


def test_a_rule_naming_the_tool_wins_over_all():
    result = cli("run", APPROVAL_GUARD, "--approve", "all", "--deny", "send_email", "--json")
    assert result.returncode == 0, result.stderr
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    decisions = [o["approval"] for o in objects if "approval" in o]
    assert [(d["tool"], d["decision"], d["reason"]) for d in decisions] == [("send_email", "denied", "denied by --deny")]
    assert objects[-1]["summary"]["status"] == "SUCCESS"


@pytest.mark.parametrize("flags", [[], ["--approve", "calculator"]])
def test_an_unanswered_approval_stops_the_run_and_says_how_to_answer(flags):
    result = cli("run", APPROVAL_GUARD, *flags)
    assert result.returncode == 1
    assert "RUNNING after 2 ticks" in result.stdout
    hint = result.stderr.strip()
    assert hint.startswith("jianmu-studio: send_email(") and "\n" not in hint
    assert hint.endswith("waits for approval: answer with --approve send_email or --deny send_email:REASON")


def test_json_summary_lists_the_calls_waiting_for_approval():
    result = cli("run", APPROVAL_GUARD, "--json")
    assert result.returncode == 1
    summary = json.loads(result.stdout.splitlines()[-1])["summary"]
    assert summary["stopped"] == "suspended"
    assert [(w["tool"], w["arguments"]["to"]) for w in summary["waiting_for_approval"]] == [
        ("send_email", "ops@example.com")]


def test_contradictory_approval_flags_are_bad_input():
    result = cli("run", APPROVAL_GUARD, "--approve", "send_email", "--deny", "send_email:no")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == "jianmu-studio: both --approve and --deny name send_email"


@pytest.mark.parametrize("escdelay, seconds", [(None, 0.05), ("300", 0.3)])
def test_a_lone_escape_is_read_after_50_ms_unless_escdelay_says_otherwise(escdelay, seconds):
    """esc leaves the past view: Textual's default wait (100 ms) to tell it from a sequence was felt."""
    env = {k: v for k, v in os.environ.items() if k != "ESCDELAY"} | ({"ESCDELAY": escdelay} if escdelay else {})
    code = ("from studio import cli\ncli.main(['run', '/nonexistent/tree.py'])\n"
            "import textual.constants\nprint(textual.constants.ESCAPE_DELAY)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                            timeout=120)
    assert float(result.stdout.split()[-1]) == seconds, result.stdout + result.stderr


async def test_serve_runs_a_tree_for_a_studio_to_attach_and_prints_its_outcome(tmp_path):
    """`jianmu-studio serve` is the other end of `attach`: the run waits for the studio, which drives it."""
    import asyncio
    import re

    from tui_fixtures import until

    from studio.session import RunState
    from studio.session.attached import RemoteSession

    env = dict(os.environ, JIANMU_DEBUG_TOKEN="t0ken-for-serve")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "studio.cli", "serve", "sample_trees/react_calculator.py", "--at", "127.0.0.1:0",
        "--db", str(tmp_path / "served.db"), cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        first = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
        address = re.search(r"ws://(127\.0\.0\.1:\d+)", first).group(1)
        assert "t0ken-for-serve" not in first  # a token given is not printed
        session = await RemoteSession.connect(address, "t0ken-for-serve")
        try:
            await until(lambda: session.run_state == RunState.READY)
            assert session.tick == 0  # it waited for the studio before its first tick
            assert (await session.continue_()).kind == "finished"
        finally:
            await session.close()
        out = (await asyncio.wait_for(process.stdout.read(), 60)).decode()
        assert await asyncio.wait_for(process.wait(), 60) == 0
    finally:
        if process.returncode is None:
            process.kill()
    assert out.startswith("SUCCESS (completed); recorded in ") and "final answer: 25 * 4 + 10 = 110" in out
    from studio.session import DebugSession  # the store names the served tree: replay needs no --tree
    recorded = DebugSession.open_recorded(tmp_path / "served.db")
    assert recorded.loaded.path.resolve() == (ROOT / "sample_trees/react_calculator.py").resolve()
    assert recorded.frame.root_status.name == "SUCCESS"


def test_serve_at_a_bad_address_is_one_line(tmp_path):
    result = cli("serve", "sample_trees/react_calculator.py", "--at", "nowhere", "--db", str(tmp_path / "s.db"))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("jianmu-studio: --at nowhere: ") and len(result.stderr.splitlines()) == 1
