"""Recordings as test cases: check a tree against a recorded run offline, compare two runs.

`check_run` re-runs a tree with every model answer and tool result served from a recorded
run and reports the first tick, node and item where the two part; `diff_runs` compares two
recorded runs (or two branches of one) tick by tick. Both speak in `Difference`s.
"""

from .compare import Difference
from .rerun import CheckReport, check_run, lineage

__all__ = ["CheckReport", "Difference", "check_run", "lineage"]
