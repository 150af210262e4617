"""The studio in a real terminal (tmux) stopped by SIGTERM or SIGHUP mid-call (#30.2): it exits with
128 + N, the terminal is given back as it was (main screen, cursor shown, mouse reporting off, echo and
line editing on), the run's last checkpoint says INTERRUPTED and the MCP server's process group is gone.
Quitting while the run goes on (the studio's Ctrl-C) records and stops it the same way. So does a signal
while the tree's own synchronous code holds the loop's thread (#32). A run that waits for an approval is
left waiting instead, for another process to answer."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import mcp_hold_tree
import pytest
import resume_tree
import user_code_hold_tree
from stopping_fixtures import (
    BOUND,
    TREE,
    all_gone,
    interrupted_run,
    no_node_failed,
    server_processes,
    use_place,
    wait_for,
)
from tui_fixtures import SIZE, until

from runtime.memory.checkpoint import open_store
from studio.app import StudioApp
from studio.session import DebugSession
from studio.stopping import interrupt_session

ROOT = Path(__file__).resolve().parents[1]
in_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def place(tmp_path, monkeypatch) -> Path:
    return use_place(tmp_path, monkeypatch)


@pytest.fixture
def tmux():
    """A tmux server of this test's own (nobody else's sessions), killed at the end."""
    socket = f"jianmu-stop-{uuid.uuid4().hex[:8]}"

    def run(*args: str) -> str:
        return subprocess.run(["tmux", "-L", socket, "-f", "/dev/null", *args], capture_output=True, text=True,
                              timeout=BOUND).stdout

    yield run
    run("kill-server")
    Path(os.environ.get("TMUX_TMPDIR", "/tmp"), f"tmux-{os.getuid()}", socket).unlink(missing_ok=True)


def studio_in(tmux, place: Path, tree: str = TREE) -> None:
    """The studio on `tree` in a 140x40 terminal; what its shell sees after it: `code`, `stty`."""
    script = place / "studio.sh"
    script.write_text(f"cd {ROOT}\n"
                      f"env -u JIANMU_BASE_URL -u OPENAI_BASE_URL {sys.executable} -m studio.cli {tree} "
                      f"--db {place / 'runs.db'}\n"
                      f"echo $? > {place / 'code'}\nstty -a > {place / 'stty.part'}\n"
                      f"mv {place / 'stty.part'} {place / 'stty'}\nsleep {BOUND:g}\n")  # (whole once it exists)
    tmux("new-session", "-d", "-s", "s", "-x", "140", "-y", "40", f"sh {script}")
    wait_for(lambda: " ready " in tmux("capture-pane", "-p", "-t", "s"), "the studio on the screen")


def children_of(pid: int) -> list[int]:
    """The processes whose parent is `pid` (read from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def pane(tmux, what: str) -> str:
    return tmux("display", "-p", "-t", "s", what).strip()


@in_tmux
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_the_studio_stopped_mid_call_gives_the_terminal_back(tmux, place, signum):
    studio_in(tmux, place)
    tmux("send-keys", "-t", "s", "c")  # continue: the run calls `hold`, which never answers
    wait_for(lambda: (place / "holding").exists(), "the run calling `hold`")
    assert pane(tmux, "#{alternate_on} #{mouse_any_flag}") == "1 1"  # the studio has the screen
    shell = int(pane(tmux, "#{pane_pid}"))
    [studio] = children_of(shell)
    pids = server_processes(place)

    subprocess.run(["kill", f"-{signal.Signals(signum).name[3:]}", str(studio)], check=True)
    wait_for(lambda: (place / "stty").exists(), "the studio to exit")
    assert (place / "code").read_text().strip() == str(128 + signum)
    assert pane(tmux, "#{alternate_on} #{cursor_flag} #{mouse_any_flag}") == "0 1 0"
    modes = (place / "stty").read_text().split()
    assert "echo" in modes and "icanon" in modes and "-echo" not in modes
    assert "Traceback" not in tmux("capture-pane", "-p", "-t", "s")
    wait_for(lambda: all_gone(pids), "the MCP server and its helper gone")
    status, source, listed, ended = interrupted_run(str(place / "runs.db"))
    assert (status, source, ended) == ("INTERRUPTED", "interrupt", "failed") and " INTERRUPTED " in listed


@in_tmux
@pytest.mark.parametrize("hold", ["tool", "node"])
def test_the_studio_stopped_by_sighup_while_the_trees_sync_code_holds_the_loop(tmux, tmp_path, monkeypatch, hold):
    """The studio's own way: the run recorded as interrupted, the terminal given back, exit 129."""
    monkeypatch.setenv(user_code_hold_tree.HOLD, hold)  # (the tmux server, started next, passes them on)
    monkeypatch.setenv(user_code_hold_tree.FLAG, str(tmp_path / "holding"))
    studio_in(tmux, tmp_path, user_code_hold_tree.__file__)
    tmux("send-keys", "-t", "s", "c")  # continue: the tree's code loops
    wait_for(lambda: (tmp_path / "holding").exists(), "the tree's code looping")
    [studio] = children_of(int(pane(tmux, "#{pane_pid}")))
    os.kill(studio, signal.SIGHUP)
    wait_for(lambda: (tmp_path / "stty").exists(), "the studio to exit")
    assert (tmp_path / "code").read_text().strip() == "129"
    assert pane(tmux, "#{alternate_on} #{cursor_flag} #{mouse_any_flag}") == "0 1 0"
    assert "Traceback" not in tmux("capture-pane", "-p", "-t", "s")
    assert interrupted_run(str(tmp_path / "runs.db"))[:2] == ("INTERRUPTED", "interrupt")
    assert no_node_failed(str(tmp_path / "runs.db")) == ["interrupted by SIGHUP"]


async def test_quitting_mid_call_records_the_run_as_interrupted_and_stops_its_server_group(place):
    session = DebugSession.load(mcp_hold_tree.__file__, db=place / "runs.db")
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("c")  # continue: the run calls `hold`, which never answers
        await until(lambda: (place / "holding").exists())
        pids = server_processes(place)
        await pilot.press("q")
    assert all_gone(pids)  # stopped before the studio was gone
    last = session.store.latest(session.run_id)
    assert (last.status, last.source) == ("INTERRUPTED", "interrupt")
    failed = [event for _, event in session.store.events(session.run_id) if event.type == "run.failed"]
    assert [event.payload["error"] for event in failed] == ["interrupted: the studio quit"]
    session.store.close()


async def test_a_run_waiting_for_an_approval_is_left_waiting_when_the_studio_stops(tmp_path, monkeypatch):
    monkeypatch.setenv(resume_tree.EFFECTS, str(tmp_path / "ledger.txt"))
    session = DebugSession.load(resume_tree.__file__, db=tmp_path / "runs.db")
    assert (await session.continue_()).kind == "suspended"
    await interrupt_session(session, "interrupted by SIGHUP")
    run_id = session.run_id
    session.store.close()
    store = open_store(tmp_path / "runs.db")
    assert (store.runs(run_id)[0].ended, store.latest(run_id).source) == ("suspended", "suspend")
    result = await resume_tree.build().resume(store, run_id, approve="all")  # another process answers it
    assert result.termination_reason == "completed"
    assert (tmp_path / "ledger.txt").read_text() == "payment 42 sent\n"
    store.close()
