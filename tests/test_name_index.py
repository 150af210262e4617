"""The tree search's name index (issue #14: a search key is one `str.find`, not a Python loop over
every name) finds what the plain loop over the names in line order finds: the first name holding
the text after the given node, wrapping round."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from studio.widgets.tree_pane import NameIndex

NAMES = st.lists(st.text(alphabet="abAB1.\n ", max_size=6), max_size=30)


def first_holding(names: list[str], text: str, after: int | None) -> int | None:
    start = after + 1 if after is not None else 0
    order = [*range(start, len(names)), *range(start)]
    return next((i for i in order if text in names[i].lower()), None)


@given(NAMES, st.text(alphabet="abAB1.", min_size=1, max_size=3), st.data())
def test_the_index_finds_what_a_loop_over_the_names_finds(names, text, data):
    after = data.draw(st.none() | st.integers(0, len(names) - 1)) if names else None
    index = NameIndex([f"path{i}" for i in range(len(names))], names)
    expected = first_holding(names, text.lower(), after)
    found = index.find(text.lower(), None if after is None else f"path{after}")
    assert found == (None if expected is None else f"path{expected}")


def test_a_match_never_spans_two_names():
    index = NameIndex(["a", "b"], ["ab", "cd"])
    assert index.find("bc") is None
    assert index.find("b\nc") is None
    assert index.find("cd", after="b") == "b"  # wrapped round to the node itself
