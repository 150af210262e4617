"""The studio in a real terminal: `scripts/tmux_smoke.sh` starts it in tmux, steps, checks the screen."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from tui_fixtures import ROOT

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def test_tmux_smoke():
    result = subprocess.run([str(ROOT / "scripts" / "tmux_smoke.sh")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "tmux smoke: ok" in result.stdout
