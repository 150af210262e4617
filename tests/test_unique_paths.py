"""Every node has a path of its own (#32.7): a checkpoint entry, a breakpoint and a row in the views.

Siblings that share a name are numbered (`#2`, `#3`…), a number skipped where a sibling is
literally named so; a name holding `/` (which would make `X/Y` beside `X` holding `Y` one path)
is refused in one line naming the node, by the runner and when a tree file loads.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from py_trees.behaviours import Success
from py_trees.common import Status
from pydantic import BaseModel

from runtime.engine import ReactiveRunner
from runtime.engine.tree import TreeShapeError
from runtime.node import Sequence

ROOT = Path(__file__).resolve().parents[1]


class State(BaseModel):
    x: int = 0


def root_of(*children) -> Sequence:
    return Sequence("Root", memory=True, children=list(children))


@pytest.mark.parametrize("names", [
    ["Same", "Same", "Same#2"],
    ["Same#2", "Same", "Same"],
    ["A", "A#2", "A", "A#3", "A", "A#2"],
    ["#2", "", "", "#2"],
])
async def test_siblings_whatever_their_names_each_get_a_path_of_their_own(names):
    leaves = [Success(name) for name in names]
    runner = ReactiveRunner(root_of(*leaves), State)
    assert await runner.run() == Status.SUCCESS
    paths = [runner.path_of(leaf) for leaf in leaves]
    assert len(set(paths)) == len(leaves) and all(runner.nodes[p] is leaf for p, leaf in zip(paths, leaves, strict=True))
    assert len(runner.nodes) == len(leaves) + 1


def test_the_first_of_a_name_keeps_its_plain_path_and_later_ones_skip_a_taken_number():
    runner = ReactiveRunner(root_of(Success("Same"), Success("Same"), Success("Same#2")), State)
    assert list(runner.nodes) == ["Root", "Root/Same", "Root/Same#3", "Root/Same#2"]


def test_a_name_holding_a_slash_is_refused_naming_the_node():
    tree = root_of(Sequence("X", memory=True, children=[Success("Y")]), Success("X/Y"))
    with pytest.raises(TreeShapeError, match=r"^node 'X/Y' under 'Root': a name may not hold '/'"):
        ReactiveRunner(tree, State)


def test_a_tree_file_with_such_a_name_is_refused_in_one_line(tmp_path):
    tree = tmp_path / "slash.py"
    tree.write_text(
        "from py_trees.behaviours import Success\n"
        "from pydantic import BaseModel\n"
        "from runtime import Agent\n"
        "from runtime.node import Sequence\n"
        "class S(BaseModel):\n    x: int = 0\n"
        "def build():\n"
        "    return Agent(Sequence('Root', memory=True, children=[\n"
        "        Sequence('X', memory=True, children=[Success('Y')]), Success('X/Y')]), state_schema=S)\n")
    ran = subprocess.run([sys.executable, "-m", "studio.cli", "run", str(tree), "--db", str(tmp_path / "r.db")],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert ran.returncode == 2 and "Traceback" not in ran.stderr
    assert ran.stderr.strip().splitlines() == [
        f"jianmu-studio: {tree}: build(): node 'X/Y' under 'Root': a name may not hold '/' (it separates the "
        "names of a path); rename it"]
