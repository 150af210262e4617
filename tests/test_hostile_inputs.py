"""Hostile input on the command line, at `attach` and `serve` and from a protocol peer (#32): every one
is one line naming what is at fault, the right exit status, no traceback, and no wait without a bound."""

from __future__ import annotations

import os

import pytest
from test_cli import cli
from test_reliability_inputs import one_line

LONG_NAME = "a" * 5000


@pytest.mark.parametrize("kind", ["pipe", "folder", "socket"])
def test_a_tree_file_that_is_no_regular_file_is_refused_without_reading_it(tmp_path, kind):
    tree = tmp_path / "tree.py"
    if kind == "pipe":  # opening it would wait for a writer forever
        os.mkfifo(tree)
    elif kind == "folder":
        tree.mkdir()
    else:
        import socket

        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(tree))
    one_line(cli("run", str(tree), "--db", str(tmp_path / "s.db")), f"{tree}: ", "a tree file is a Python module")


@pytest.mark.parametrize("command", ["run", "serve", "open"])
@pytest.mark.parametrize("name", [LONG_NAME, f"/tmp/{LONG_NAME}.py", f"{'x/' * 3000}t.py"])
def test_a_tree_path_the_system_refuses_is_one_line(tmp_path, command, name):
    one_line(cli(command, name, "--db", str(tmp_path / "s.db")), name[:40])
