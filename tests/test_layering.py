"""The runtime is a library of its own: it never imports the studio or textual."""

import pkgutil
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import runtime

ROOT = Path(__file__).resolve().parents[1]


def _runtime_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(runtime.__path__, prefix="runtime."))


def test_runtime_has_subpackages_to_check():
    modules = _runtime_modules()
    for expected in ("runtime.engine.runner", "runtime.state.manager", "runtime.node.composites"):
        assert expected in modules


def test_importing_the_runtime_loads_neither_textual_nor_studio():
    code = textwrap.dedent(f"""
        import importlib, sys
        for name in {["runtime", *_runtime_modules()]!r}:
            importlib.import_module(name)
        leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("textual", "studio"))
        print(",".join(leaked))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"runtime imported: {result.stdout.strip()}"


def test_the_studio_on_a_file_store_loads_no_postgres_driver_no_http_client_no_yaml_no_websockets_never_langgraph(tmp_path):
    """psycopg (~13 MB), httpx (~7 MB) and yaml (~1.5 MB) are imported where a PostgreSQL URL, a
    real model or a jianmu.yaml is used, websockets (~1.7 MB) where a run is served or attached
    to: a studio opening a tree on a file store needs none of them (its resident memory is a goal)."""
    code = textwrap.dedent(f"""
        import sys
        from studio.app import StudioApp
        from studio.loader import load_tree
        from studio.session import DebugSession, open_store
        StudioApp(DebugSession(load_tree("sample_trees/react_calculator.py"), store=open_store({str(tmp_path / "runs.db")!r})))
        print(",".join(sorted({{m.split(".")[0] for m in sys.modules}} & {{"psycopg", "httpx", "yaml", "websockets", "langgraph"}})))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"the studio imported: {result.stdout.strip()}"


def _lint_imports() -> str:
    exe = Path(sys.executable).with_name("lint-imports")
    found = str(exe) if exe.exists() else shutil.which("lint-imports")
    assert found is not None, "import-linter (a test dependency in pyproject.toml) is not installed"
    return found


def test_import_linter_contract_holds(tmp_path):
    """The contract itself, on a config that import-linter accepts whatever exists of the studio."""
    config = tmp_path / "importlinter.ini"
    config.write_text(textwrap.dedent("""
        [importlinter]
        root_packages =
            runtime
        include_external_packages = True

        [importlinter:contract:runtime-is-a-library]
        name = The runtime never imports textual
        type = forbidden
        source_modules =
            runtime
        forbidden_modules =
            textual
    """))
    result = subprocess.run([_lint_imports(), "--no-cache", "--config", str(config)], capture_output=True, text=True,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" in result.stdout and "0 broken" in result.stdout


def test_project_import_linter_config():
    result = subprocess.run([_lint_imports(), "--no-cache"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "0 broken" in output
