"""The project documents itself: every python snippet in README.md and docs/ runs and prints what it says,
and the README and docs link only to files inside the repository."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SNIPPET = re.compile(r"```python\n(.*?)```", re.S)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def snippets() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for i, code in enumerate(SNIPPET.findall(page.read_text()), start=1):
            found.append((f"{page.relative_to(ROOT)}#{i}", code))
    return found


def expected_output(code: str) -> list[str]:
    """The `# …` comments after print() calls: what the snippet promises to print."""
    return [line.split("#", 1)[1].strip() for line in code.splitlines()
            if line.strip().startswith("print(") and "#" in line]


@pytest.mark.parametrize("name, code", snippets(), ids=[name for name, _ in snippets()])
def test_snippet_runs_and_prints_what_it_says(name, code, tmp_path):
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)})
    assert result.returncode == 0, f"{name}:\n{result.stderr}"
    assert result.stdout.splitlines() == expected_output(code), name


def test_docs_cover_the_runtime_and_the_studio():
    concepts = (ROOT / "docs/concepts.md").read_text()
    for topic in ("## Nodes", "## Ports and bindings", "## Namespaces", "## Ephemeral scopes",
                  "## The runner and its wake rules", "## The record of a tick", "## Checkpoints and replay", "## The ReAct preset"):
        assert topic in concepts
    studio = (ROOT / "docs/studio.md").read_text()
    for topic in ("## Panes", "## Keys", "## Breakpoints", "## Time travel", "## Headless"):
        assert topic in studio


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_links_point_inside_the_repository(page):
    text = page.read_text()
    assert "../shared" not in text and not re.search(r"https?://(?!127\.0\.0\.1[:/])", text)  # loopback only
    for target in LINK.findall(text):
        assert (page.parent / target).resolve().is_relative_to(ROOT), target
        assert (page.parent / target).exists(), f"{page.name}: {target} does not exist"
