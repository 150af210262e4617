"""The sample trees that travel with the package, found by name: `jianmu-studio open react_calculator`.

They are the modules of the `sample_trees` package (installed with the wheel, or the folder of a
checkout) that define `build()`; a module without one (`mcp_server.py`, a server a sample starts) is
no sample. Each one's description is the first line of its docstring. Files are read, not imported:
listing them runs nothing.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path

import sample_trees

from .loader import TreeLoadError

FOLDER = Path(sample_trees.__file__).parent


@dataclass(frozen=True)
class Sample:
    name: str
    path: Path
    description: str


def samples() -> list[Sample]:
    """Every sample, by name."""
    found = []
    for path in sorted(FOLDER.glob("*.py")):
        module = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        if any(isinstance(node, ast.FunctionDef) and node.name == "build" for node in module.body):
            docstring = ast.get_docstring(module) or ""
            found.append(Sample(path.stem, path, docstring.strip().partition("\n")[0]))
    return found


def tree_target(given: str) -> str:
    """The tree a command opens: a sample's file when `given` is a bare name and no file here, else `given`
    (a path, or `path.py:function`, which the loader checks)."""
    if not given.isidentifier() or os.path.lexists(given):  # lexists: a path too long to stat is the loader's to name
        return given
    for sample in samples():
        if sample.name == given:
            return str(sample.path)
    raise TreeLoadError(f"{given}: no such tree file or sample (`jianmu-studio samples` lists the samples)")


def listing() -> str:
    """What `jianmu-studio samples` prints: one line per sample."""
    shown = samples()
    width = max(len(sample.name) for sample in shown)
    return "\n".join(f"{sample.name:<{width}}  {sample.description}" for sample in shown)


__all__ = ["FOLDER", "Sample", "listing", "samples", "tree_target"]
