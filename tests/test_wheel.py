"""The package as a pip user meets it: the wheel built, then installed into fresh venvs outside the
repository, without extras and with them (pip may use its cache and the package registry: slow)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
INSTALL_LIMIT = 900  # s


def run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(part) for part in command], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=INSTALL_LIMIT)


def fresh_venv(folder: Path, requirement: str, env: dict[str, str]) -> Path:
    """A venv in `folder` with `requirement` installed; its bin directory."""
    made = run(sys.executable, "-m", "venv", folder, cwd=folder.parent, env=env)
    assert made.returncode == 0, made.stderr
    installed = run(folder / "bin" / "python", "-m", "pip", "install", "--quiet", requirement, cwd=folder.parent,
                    env=env)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return folder / "bin"


def test_the_wheel_installs_runs_its_samples_and_names_each_missing_extra(tmp_path):
    source = tmp_path / "source"  # a copy: building writes build/ and *.egg-info beside the sources
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.db", "build",
                                                                 "*.egg-info", ".*_cache", "__snapshots__"))
    built = run(sys.executable, "-m", "build", "--wheel", "--outdir", tmp_path / "dist", source, cwd=tmp_path)
    assert built.returncode == 0, built.stderr[-3000:]
    wheel = next((tmp_path / "dist").glob("jianmu_studio-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert {"runtime/py.typed", "studio/studio.tcss", "sample_trees/react_calculator.py",
            "sample_trees/mcp_server.py"} <= set(names)
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: MIT" in metadata
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert not any("==" in line.partition(";")[0] for line in requires)  # ranges, never exact pins
    base = [line for line in requires if "extra ==" not in line]
    assert not any(name in line for line in base for name in ("mcp", "psycopg", "opentelemetry", "textual-serve"))

    home = tmp_path / "user"  # outside the repository: nothing of it on the path
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHONPATH", "OTEL_", "JIANMU_", "VIRTUAL_ENV"))}
    env["XDG_CACHE_HOME"] = str(home / "cache")
    plain = fresh_venv(home / "plain", str(wheel), env)
    studio = plain / "jianmu-studio"

    version = run(studio, "--version", cwd=home, env=env)
    assert version.stdout.strip() == "jianmu-studio 0.1.0", version.stderr
    listed = run(studio, "samples", cwd=home, env=env)
    assert any(line.startswith("react_calculator  ReAct with a calculator") for line in listed.stdout.splitlines())
    assert "mcp_server" not in [line.split()[0] for line in listed.stdout.splitlines()]  # a server, no tree
    answered = run(studio, "run", "react_calculator", "--db", "runs.db", "--json", cwd=home, env=env)
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout.splitlines()[-1])["summary"]["final_answer"] == "25 * 4 + 10 = 110"
    alone = run(plain / "python", "-c", "import runtime, sys; print('textual' in sys.modules, 'mcp' in sys.modules)",
                cwd=home, env=env)
    assert alone.stdout.split() == ["False", "False"]

    run_id = json.loads(answered.stdout.splitlines()[-1])["summary"]["run_id"]
    missing = {
        ("run", "mcp_tools"): "mcp",
        ("run", "react_calculator", "--db", "postgresql://jianmu@127.0.0.1/runs"): "postgres",
        ("web", "react_calculator"): "web",
        ("export", "runs.db", "--run", run_id, "--otlp"): "otel",
    }
    for args, extra in missing.items():
        result = run(studio, *args, cwd=home, env={**env, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert result.stderr.count("\n") == 1, (args, result.stderr)
        assert f"the [{extra}] extra is not installed" in result.stderr, (args, result.stderr)
        assert result.stderr.rstrip().endswith(f"pip install 'jianmu-studio[{extra}]'"), (args, result.stderr)
    traced = run(studio, "run", "text_pipeline", "--db", "runs.db", cwd=home,
                 env={**env, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
    assert traced.returncode == 0  # asked for traces without [otel]: said once, the run goes on
    assert traced.stderr.splitlines() == ["no OpenTelemetry traces: the [otel] extra is not installed (opentelemetry "
                                          "is missing), needed for OpenTelemetry traces: pip install 'jianmu-studio[otel]'"]

    every = fresh_venv(home / "all", f"jianmu-studio[all] @ {wheel.as_uri()}", env)
    tools = run(every / "jianmu-studio", "run", "mcp_tools", "--db", "runs.db", cwd=home, env=env)
    assert tools.returncode == 0, tools.stderr
    assert "final answer" in tools.stdout
    served = run(every / "jianmu-studio", "web", "--help", cwd=home, env=env)
    assert served.returncode == 0 and "--at HOST:PORT" in served.stdout
