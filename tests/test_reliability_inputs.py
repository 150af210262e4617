"""Issue #13 point 4: every bad input is one line on stderr, exit status 2, no traceback.

The CLI runs in a subprocess each time; what was on disk before (a store, a tree file) is
checked to be still there afterwards.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli import ROOT, cli

TREE = str(ROOT / "sample_trees/text_pipeline.py")
REACT = (ROOT / "sample_trees/react_calculator.py").read_text()


def checkpoint_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runtime.memory.checkpoint", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def one_line(result: subprocess.CompletedProcess, *expected: str) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, result.stderr
    for text in expected:
        assert text in result.stderr, result.stderr
    return result.stderr


def react_with_input(tmp_path: Path, name: str, input_source: str) -> Path:
    tree = tmp_path / name
    tree.write_text(REACT.replace('INPUT = {"messages": [human("What is 25 * 4 + 10?")]}', f"INPUT = {input_source}"))
    return tree


@pytest.mark.parametrize(("input_source", "expected"), [
    ('{"messages": 12345}', "INPUT: state key 'messages': Input should be a valid list"),
    ('{"messages": [{"role": "wizard", "content": "hi"}]}', "INPUT: state key 'messages': 0.role"),
    ('{"messages": [object()]}', "INPUT: state key 'messages'"),
    ('{"mesages": []}', "INPUT key 'mesages' is not a field of ReActState"),
])
def test_bad_input_values_and_unknown_input_keys_are_one_line(tmp_path, input_source, expected):
    tree = react_with_input(tmp_path, "tree.py", input_source)
    one_line(cli("run", str(tree), "--db", str(tmp_path / "s.db")), "tree.py", expected)
    assert not (tmp_path / "s.db").exists() or "checkpoints" not in checkpoint_cli("list", str(tmp_path / "s.db")).stdout


@pytest.mark.parametrize(("source", "expected"), [
    ("import sys\nsys.exit(3)\n", "import failed: SystemExit (sys.exit(3))"),
    ("raise KeyboardInterrupt\n", "import failed: KeyboardInterrupt"),
    ("def build():\n    raise SystemExit(0)\n", "build() raised SystemExit (sys.exit(0))"),
    ("def build():\n    raise KeyboardInterrupt\n", "build() raised KeyboardInterrupt"),
    ("x = 1\0\n", "binary.py: syntax error: source code string cannot contain null bytes"),
])
def test_a_tree_file_that_exits_interrupts_or_holds_a_nul_byte_is_one_line(tmp_path, source, expected):
    tree = tmp_path / "binary.py"
    tree.write_text(source)
    assert ":None:" not in one_line(cli("run", str(tree)), expected)


def test_a_bad_jianmu_yaml_is_one_line_even_for_a_tree_without_a_model(tmp_path):
    (tmp_path / "jianmu.yaml").write_text("model: [1, 2\n  bad: : yaml\n")
    one_line(cli("run", TREE, cwd=tmp_path), "jianmu.yaml: invalid YAML at line 2")
    (tmp_path / "jianmu.yaml").write_text("model: 5\n")
    one_line(cli("run", TREE, cwd=tmp_path), "jianmu.yaml: invalid setting model")


@pytest.mark.parametrize("args", [["--max-ticks", "-1"], ["--max-ticks", "many"], ["--no-such-flag"]])
def test_bad_flags_are_one_line(args):
    one_line(cli("run", TREE, *args), "(see --help)")


def test_a_store_that_is_a_pipe_is_one_line_without_waiting_for_a_writer(tmp_path):
    pipe = tmp_path / "S.db"
    os.mkfifo(pipe)
    one_line(cli("run", TREE, "--db", str(pipe)), "not a regular file")
    one_line(checkpoint_cli("list", str(pipe)), "not a regular file")


def test_a_db_whose_folder_cannot_be_created_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    one_line(cli("run", TREE, "--db", str(tmp_path / "file/sub/s.db")), "cannot create the store")


def test_a_malformed_bindings_file_is_a_warning_and_the_tree_still_opens(tmp_path):
    from studio.session import DebugSession

    tree = tmp_path / "pipeline.py"
    shutil.copy(TREE, tree)
    for content in ("[1, 2]", '{"TextPipeline/Normalize": 5}', '{"TextPipeline/Normalize": {"inputs": [1]}}',
                    '{"TextPipeline/Normalize": {"inputs": {"source_text": 7}}}', "{not json", "\udcff", "null"):
        session = DebugSession.load(str(tree), db=tmp_path / "s.db")
        session.bindings_file.parent.mkdir(exist_ok=True)  # kept beside the store (issue 11)
        session.bindings_file.write_bytes(content.encode("utf-8", "surrogateescape"))
        warnings = session.apply_bindings_file()
        assert len(warnings) == 1 and session.bindings_file.name in warnings[0], (content, warnings)
        assert "\n" not in warnings[0]
        assert session.node_views()  # the tree is open


# -- stores -------------------------------------------------------------------------------

@pytest.fixture
def store(tmp_path) -> Path:
    db = tmp_path / "S.db"
    assert cli("run", str(ROOT / "sample_trees/react_calculator.py"), "--db", str(db)).returncode == 0
    return db


def _damaged(store: Path, sql: str, params: tuple = ()) -> Path:
    conn = sqlite3.connect(store)
    conn.execute(sql, params)
    conn.commit()
    conn.close()
    return store


def _run_id(store: Path) -> str:
    return checkpoint_cli("list", str(store)).stdout.split()[0]


@pytest.mark.parametrize(("sql", "params"), [
    ("UPDATE meta SET value = 'x' WHERE key = 'schema_version'", ()),  # ValueError from metadata
    ("UPDATE checkpoints SET data = ?", (b"\x00\xff\x00\xff",)),  # a damaged delta stream (zlib.error)
    ("UPDATE checkpoints SET data = ?, stream = NULL", (b"\xab\x00",)),
    ("UPDATE events SET data = ?", (b"\x00\xff",)),
])
def test_damaged_pages_and_items_are_one_line(store, sql, params):
    run_id = _run_id(store)
    _damaged(store, sql, params)
    results = [checkpoint_cli("list", str(store)), checkpoint_cli("export", str(store), "--run", run_id),
               *(checkpoint_cli("show", str(store), str(i)) for i in range(1, 7))]
    failures = [r for r in results if r.returncode != 0]
    assert failures, "the damage was not noticed at all"
    for result in failures:
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.count("\n") == 1 and str(store) in result.stderr


def test_a_damaged_schema_is_one_line_though_sqlite_quotes_it_with_newlines(store):
    conn = sqlite3.connect(store)
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("UPDATE sqlite_master SET sql = 'CREATE TABLE checkpoints(' || char(10) || '`j NULL' "
                 "WHERE name = 'checkpoints'")
    conn.commit()
    conn.close()
    one_line(checkpoint_cli("list", str(store)), f"{store}: corrupt checkpoint store", "`j NULL")
    one_line(cli("run", TREE, "--db", str(store)), f"{store}: corrupt checkpoint store")


@pytest.mark.parametrize("time", [1e300, "'yesterday'", "-1e20"])
def test_a_damaged_time_is_listed_as_it_is(store, time):
    _damaged(store, f"UPDATE checkpoints SET time = {time}")
    listed = checkpoint_cli("list", str(store))
    assert listed.returncode == 0 and "(time " in listed.stdout, listed.stdout + listed.stderr


def test_a_damaged_or_recorded_error_status_still_replays(store):
    from studio.session import DebugSession

    run_id = _run_id(store)
    _damaged(store, "UPDATE checkpoints SET status = 'RUN\x1bdZv' WHERE id = 3")
    _damaged(store, "UPDATE checkpoints SET status = 'ERROR' WHERE id = (SELECT max(id) FROM checkpoints)")
    session = DebugSession.open_recorded(store, run_id)
    assert session.frame.root_status.value == "FAILURE"  # the recorded end of a run whose save failed
    session.select_checkpoint(3)
    assert session.frame.root_status.value == "INVALID" and session.state_snapshot()
    session.store.close()


def test_damaged_pages_are_one_line(store):
    """Bytes overwritten across every page of the file: each command reads it or says so in one line."""
    import contextlib
    import io

    from runtime.memory.checkpoint.__main__ import main

    run_id = _run_id(store)
    _damaged(store, "PRAGMA wal_checkpoint(TRUNCATE)")
    data = store.read_bytes()
    damaged = store.with_name("damaged.db")
    for offset in range(100, len(data), 1024):
        damaged.write_bytes(data[:offset] + b"\xde\xad\xbe\xef" * 16 + data[offset + 64:])
        for command in (["list"], ["export", "--run", run_id], *(["show", str(i)] for i in (1, 3, 6))):
            err = io.StringIO()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                code = main([command[0], str(damaged), *command[1:]])  # an exception here is a traceback
            assert code == 0 or (code == 2 and err.getvalue().count("\n") == 1), (offset, command, err.getvalue())


@pytest.mark.parametrize(("sql", "params"), [
    ("UPDATE items SET data = ? WHERE typeof(data) = 'blob'", (b"\x00\xff",)),  # a zlib.error before
    ("UPDATE items SET data = '[1,' WHERE typeof(data) = 'text'", ()),
    ("UPDATE chunks SET items = 'zz'", ()),
    ("UPDATE chunks SET items = '[999999]'", ()),  # an item that is gone
])
def test_damaged_recorded_items_are_a_store_error_naming_the_store(store, sql, params):
    """Recorded calls and stored lists are read by a replay, not by the CLI: every reader is asked."""
    from runtime.memory.checkpoint import SQLiteCheckpointStore, StoreError

    run_id = _run_id(store)
    _damaged(store, sql, params)
    conn = sqlite3.connect(store)
    calls = conn.execute("SELECT kind, node, round, idx FROM io").fetchall()
    lists = conn.execute("SELECT list_id, count(*) FROM chunks GROUP BY list_id").fetchall()
    conn.close()
    opened = SQLiteCheckpointStore(store, create=False)
    reads = [lambda call=call: opened.get_io(run_id, *call) for call in calls]
    reads += [lambda list_id=list_id, n=n: opened.read_list(list_id, n) for list_id, n in lists]
    errors = []
    for read in reads:
        try:
            read()
        except StoreError as exc:
            errors.append(str(exc))
    opened.close()
    assert errors and all(e.startswith(f"{store}: ") and "\n" not in e for e in errors), errors


def test_a_huge_checkpoint_id_is_an_unknown_id(store):
    one_line(checkpoint_cli("show", str(store), "99999999999999999999999"), "unknown checkpoint id")


def _holding_the_lock(store: Path) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time\n"
        f"conn = sqlite3.connect({str(store)!r}, isolation_level=None)\n"
        "conn.execute('BEGIN EXCLUSIVE')\nprint('locked', flush=True)\nsys.stdin.read()\n")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "locked\n"
    return holder


def test_a_store_locked_when_the_run_starts_is_one_line(store):
    holder = _holding_the_lock(store)
    try:  # the CLI itself, with a short lock wait so the test does not wait the default one out
        result = subprocess.run([sys.executable, "-c", (
            "import sys\nimport runtime.memory.checkpoint.sqlite_store as s\ns.LOCK_TIMEOUT = 0.5\n"
            "from studio.cli import main\nsys.exit(main(sys.argv[1:]))\n"), "run", TREE, "--db", str(store)],
            capture_output=True, text=True, cwd=ROOT, timeout=120)
    finally:
        holder.communicate("")
    one_line(result, "locked by another process")
    assert len(checkpoint_cli("list", str(store)).stdout.splitlines()) == 1  # the earlier run is still there


def _read_only(*command: str) -> list[str]:
    """The command as a process that may not write what it does not own (root ignores file modes)."""
    if os.geteuid() != 0:
        return list(command)
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file modes cannot be enforced")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", *command]


def test_a_read_only_store_opens_for_viewing_and_refuses_a_run(store, tmp_path):
    run_id = _run_id(store)
    store.chmod(0o444)
    store.parent.chmod(0o555)
    try:
        def run(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run(_read_only(sys.executable, *args), capture_output=True, text=True, cwd=ROOT,
                                  timeout=120)

        listed = run("-m", "runtime.memory.checkpoint", "list", str(store))
        assert listed.returncode == 0 and run_id in listed.stdout, listed.stderr
        shown = run("-m", "runtime.memory.checkpoint", "show", str(store), "2")
        assert shown.returncode == 0 and '"id": 2' in shown.stdout, shown.stderr
        replayed = run("-c", "from pathlib import Path\nfrom studio.session import DebugSession\n"
                             f"s = DebugSession.open_recorded(Path({str(store)!r}))\n"
                             "print(s.viewing.tick, s.state_snapshot()['']['final_answer'])\n")
        assert replayed.returncode == 0 and replayed.stdout.strip() == "6 25 * 4 + 10 = 110", replayed.stderr
        one_line(run("-m", "studio.cli", "run", TREE, "--db", str(store)), "read-only")
    finally:
        store.parent.chmod(0o755)
        store.chmod(0o644)
