"""What reaches the user's terminal: one line per problem, no library chatter, nothing a tree, a store
or a model supplied acting on the terminal (escape sequences, bells, forged lines)."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

from runtime.terminal import terminal_line

ROOT = Path(__file__).resolve().parents[1]
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what must never be printed (newlines and tabs aside)


def cli(tmp_path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "studio.cli", *args], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                          errors="surrogateescape")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_failed_model_call_is_one_line_on_stderr(tmp_path):
    result = cli(tmp_path, "run", "react_calculator", "--db", str(tmp_path / "runs.db"),
                 env={"JIANMU_BASE_URL": f"http://127.0.0.1:{closed_port()}/v1", "JIANMU_API_KEY": "k",
                      "JIANMU_MODEL": "m"})
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr  # not a stray `loop … aborted after 0 of 10 iterations` before it
    assert lines[0].startswith("jianmu-studio: failed at Calculator/") and "cannot reach" in lines[0]


LIBRARY_CHATTER = """\
import logging
from pydantic import BaseModel
import py_trees
from runtime import Agent

class S(BaseModel):
    x: int = 0

def build():
    try:
        raise ConnectionResetError("peer went away")
    except ConnectionResetError:
        logging.getLogger("mcp.client.stdio").exception("Error in stdout_reader")
    logging.getLogger("runtime.tools.mcp").error("MCP server x: a detail for debugging")
    return Agent(py_trees.behaviours.Success("ok"), state_schema=S)
"""


def test_library_log_records_reach_stderr_only_with_debug(tmp_path):
    (tmp_path / "chatty.py").write_text(LIBRARY_CHATTER)
    quiet = cli(tmp_path, "run", "chatty.py", "--db", "runs.db")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    shown = cli(tmp_path, "--debug", "run", "chatty.py", "--db", "runs.db")
    assert shown.returncode == 0
    assert "Error in stdout_reader" in shown.stderr and "ConnectionResetError: peer went away" in shown.stderr
    assert "a detail for debugging" in shown.stderr


HOSTILE_NAMES = """\
from pydantic import BaseModel
from py_trees.composites import Sequence
from runtime import Agent
from runtime.engine.behaviour import Behaviour

class S(BaseModel):
    x: int = 0

class Boom(Behaviour):
    def update(self):
        raise RuntimeError("bad \\x1b]0;owned\\x07 \\x1b[2J \\x9b31m thing")

def build():
    root = Sequence("Root\\x1b[31mRed\\x07\\x00\\nFAKE: line\\u202e", memory=True,
                    children=[Boom("Boom\\x1b[4m\\r")])
    return Agent(root, state_schema=S)
"""


def test_control_characters_in_names_and_errors_are_shown_escaped(tmp_path):
    (tmp_path / "names.py").write_text(HOSTILE_NAMES)
    for args in (("run", "names.py", "--db", "runs.db"), ("run", "names.py", "--db", "runs.db", "--max-ticks", "0")):
        result = cli(tmp_path, *args)
        assert not RAW.search(result.stdout + result.stderr), (result.stdout, result.stderr)
        assert "\u202e" not in result.stdout + result.stderr
    assert result.returncode == 1
    out = cli(tmp_path, "run", "names.py", "--db", "runs.db")
    assert not any(line.startswith("FAKE") for line in (out.stdout + out.stderr).splitlines())
    assert out.stderr.splitlines() == [
        "jianmu-studio: failed at Root\\x1b[31mRed\\x07\\x00\\nFAKE: line\\u202e/Boom\\x1b[4m\\r: RuntimeError: "
        "bad \\x1b]0;owned\\x07 \\x1b[2J \\x9b31m thing"]
    listed = subprocess.run([sys.executable, "-m", "runtime.memory.checkpoint", "list", "runs.db"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(ROOT)})
    assert listed.returncode == 0 and not RAW.search(listed.stdout + listed.stderr)


def test_terminal_line_escapes_what_acts_on_a_terminal_and_keeps_the_rest():
    assert terminal_line("a\x1b[31mb\x07c\x00d\ne\rf") == "a\\x1b[31mb\\x07c\\x00d\\ne\\rf"
    assert terminal_line("bidi\u202eevil\u2066 sep\u2028") == "bidi\\u202eevil\\u2066 sep\\u2028"
    assert terminal_line("lone \udc80 surrogate") == "lone \\udc80 surrogate"
    assert terminal_line("plain → ünïcode, 中文, emoji 🙂, tab-free") == "plain → ünïcode, 中文, emoji 🙂, tab-free"
    assert terminal_line(ValueError("x\x1by")) == "x\\x1by"


def test_debug_shows_the_records_each_line_safe(tmp_path):
    (tmp_path / "chatty.py").write_text(LIBRARY_CHATTER.replace("a detail for debugging", "a detail \\x1b[2J for debugging"))
    shown = cli(tmp_path, "--debug", "run", "chatty.py", "--db", "runs.db")
    assert shown.returncode == 0
    assert "ERROR runtime.tools.mcp: MCP server x: a detail \\x1b[2J for debugging" in shown.stderr.splitlines()
    assert not RAW.search(shown.stderr)
