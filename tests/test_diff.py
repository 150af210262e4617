"""`diff`: two recorded runs, or two branches of one, compared tick by tick."""

from __future__ import annotations

from check_fixtures import LLM, TOOLS, cli, export, offline, record, record_with_fork, write_tree  # noqa: F401

from runtime.check.diff import Side, diff_runs
from runtime.memory.checkpoint import open_store


async def test_two_runs_of_the_same_tree_are_the_same_times_and_ids_aside(tmp_path):
    tree = write_tree(tmp_path)
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    await record(tree, first)
    await record(tree, second)
    result = cli("diff", str(first), str(second))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "same: every tick matches (times and ids aside)"


async def test_diverging_runs_name_the_first_divergence_then_each_tick(tmp_path):
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    run_a = await record(write_tree(tmp_path), a)
    run_b = await record(write_tree(tmp_path, "other.py", "tool arguments"), b)
    store_a, store_b = open_store(a, create=False), open_store(b, create=False)
    try:
        report = diff_runs(Side(store_a, run_a, label="A"), Side(store_b, run_b, label="B"))
    finally:
        store_a.close()
        store_b.close()
    first = report.first
    assert (first.tick, first.node, first.what) == (5, LLM, "model answer")
    assert first.detail == ("- tool_calls[0].arguments.expression A '6 * 7'",
                            "+ tool_calls[0].arguments.expression B '7 * 6'")
    later = [(tick, d.what, d.node) for tick, found in report.ticks.items() for d in found if tick > 5]
    assert (6, "tool call", TOOLS) in later  # the calculator called with the other expression
    result = cli("diff", str(a), str(b))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[:3] == [f"A: {a} run {run_a} (main)", f"B: {b} run {run_b} (main)",
                         f"first divergence: {first.line}"]
    assert lines[3] == "tick 5"


async def test_two_branches_of_one_run_and_a_run_file(tmp_path):
    db = tmp_path / "runs.db"
    run_id = await record_with_fork(write_tree(tmp_path), db)
    result = cli("diff", str(db), "--branch", "main", "--branch", "fork-1")
    assert result.returncode == 1
    assert result.stdout.splitlines()[2] == ("first divergence: tick 0: state key 'topic' differs: "
                                            "A '  Bees ', B 'wasps'")
    out = tmp_path / "run.jianmu"
    export(db, run_id, out)
    same = cli("diff", str(db), str(out), "--branch", "fork-1")
    assert same.returncode == 0, same.stdout + same.stderr


async def test_bad_input_to_diff_is_one_line(tmp_path):
    db = tmp_path / "runs.db"
    run_id = await record(write_tree(tmp_path), db)
    await record(write_tree(tmp_path), db)
    cases = [
        (["diff", str(db)], f"{db}: holds 2 runs: say which with --run"),
        (["diff", str(db), "--run", run_id], "diff: A and B are the same run and branch"),
        (["diff", str(db), "--run", run_id, "--run", "nope"], f"{db}: no run 'nope'"),
        (["diff", str(db), "--run", run_id, "--branch", "main", "--branch", "fork-9"],
         f"{db}: run {run_id} has no branch 'fork-9' (branches: main)"),
    ]
    for args, expected in cases:
        result = cli(*args)
        assert result.returncode == 2 and result.stderr.startswith(f"jianmu-studio: {expected}"), (args, result.stderr)
        assert len(result.stderr.splitlines()) == 1
