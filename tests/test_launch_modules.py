"""What the studio's launch imports: only what its first frame needs (bench/launch.py times it).

The command line parses every command's flags at each launch, so a command's own work (`check`,
`diff`, `resume`, a comparison of runs) is imported by the command, not with its module."""

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOT_AT_LAUNCH = ("runtime.check", "runtime.debug.compare")


def test_opening_a_tree_imports_no_module_of_another_command(tmp_path):
    code = textwrap.dedent(f"""
        import sys
        import studio.cli
        from studio.app import StudioApp
        from studio.loader import load_tree
        from studio.session import DebugSession, open_store
        StudioApp(DebugSession(load_tree("sample_trees/react_calculator.py"), store=open_store({str(tmp_path / "runs.db")!r})))
        print(",".join(sorted(m for m in sys.modules if m.startswith({NOT_AT_LAUNCH!r}))))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"the launch imported: {result.stdout.strip()}"
