"""The samples by name, `--version`, and a missing extra named in one line, through the real CLI. An
extra is taken away with an import hook in the child process (the slow tests/test_wheel.py does it
with a real install)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from studio.samples import samples, tree_target

ROOT = Path(__file__).resolve().parents[1]
WITHOUT = """
import importlib.abc, sys
class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Missing())
from studio.cli import main
sys.exit(main(sys.argv[1:]))
"""


def cli(tmp_path: Path, *args: str, without: frozenset[str] = frozenset(), **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache"), **env}
    environment = {k: v for k, v in environment.items() if not (k.startswith("OTEL_") and k not in env)}
    return subprocess.run([sys.executable, "-c", WITHOUT.format(blocked=set(without)), *args], capture_output=True,
                          text=True, cwd=tmp_path, env=environment, timeout=120)


def test_samples_lists_every_tree_with_its_description_and_no_helper_module():
    found = {sample.name: sample for sample in samples()}
    assert "mcp_server" not in found  # a server a sample starts, not a tree
    assert {"react_calculator", "text_pipeline", "mcp_tools", "large_tree"} <= found.keys()
    assert found["react_calculator"].description == 'ReAct with a calculator: "What is 25 * 4 + 10?" answered in two rounds.'
    assert tree_target("react_calculator") == str(ROOT / "sample_trees" / "react_calculator.py")
    assert tree_target("sample_trees/text_pipeline.py") == "sample_trees/text_pipeline.py"  # a path stays a path



def test_the_large_sample_opens_at_100k_nodes_by_its_function_name():
    """Issue #34: a user opens a 100,000-node tree (`large_tree.py:build_100k`) to feel the scale."""
    from runtime.treefile import load_tree

    loaded = load_tree(f"{ROOT / 'sample_trees' / 'large_tree.py'}:build_100k")
    assert sum(1 for _ in loaded.agent.root.iterate()) == 100_000
    assert loaded.target.endswith("large_tree.py:build_100k")

def test_the_cli_lists_the_samples_and_runs_one_by_name(tmp_path):
    listed = cli(tmp_path, "samples")
    assert listed.returncode == 0
    lines = listed.stdout.splitlines()
    assert len(lines) == len(samples()) and lines[0].startswith("actor_evaluator   Actor and evaluator")
    ran = cli(tmp_path, "run", "text_pipeline", "--db", "runs.db")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines()[-1].startswith("SUCCESS after")
    bare = cli(tmp_path, "no_such_sample")
    assert bare.returncode == 2
    assert bare.stderr == "jianmu-studio: no_such_sample: no such tree file or sample (`jianmu-studio samples` lists the samples)\n"


def test_version(tmp_path):
    result = cli(tmp_path, "--version")
    assert result.returncode == 0 and result.stdout.startswith("jianmu-studio ")


@pytest.mark.parametrize("args, blocked, extra", [
    (["run", "mcp_tools", "--db", "runs.db"], {"mcp"}, "mcp"),
    (["run", "text_pipeline", "--db", "postgresql://jianmu@127.0.0.1/runs"], {"psycopg"}, "postgres"),
    (["web", "text_pipeline"], {"textual_serve"}, "web"),
    (["export", "runs.db", "--run", "any", "--otlp"], {"opentelemetry"}, "otel"),
])
def test_a_missing_extra_is_one_line_naming_it(tmp_path, args, blocked, extra):
    result = cli(tmp_path, *args, without=frozenset(blocked), OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and f"the [{extra}] extra is not installed" in lines[0], lines
    assert lines[0].endswith(f"pip install 'jianmu-studio[{extra}]'")


def test_a_password_in_a_postgres_url_stays_hidden_without_the_driver(tmp_path):
    result = cli(tmp_path, "replay", "postgresql://jianmu:s3cret@127.0.0.1:5/runs", without=frozenset({"psycopg"}))
    assert result.returncode == 2 and "s3cret" not in result.stderr and "[postgres]" in result.stderr
