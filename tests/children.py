"""Which child processes of this test process run a given script (read from /proc): a test that
starts servers checks that none is left running."""

from __future__ import annotations

import os
from pathlib import Path


def children_running(script: Path) -> set[int]:
    """Live (not zombie) processes started by this test process whose command line names `script`."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, ppid = stat.read_text().rsplit(")", 1)[1].split()[:2]
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(ppid) == os.getpid() and state != "Z" and script.name.encode() in cmdline:
            found.add(int(stat.parent.name))
    return found
