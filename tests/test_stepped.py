"""A step's message says what the tick changed (the status line already names the tick)."""

from py_trees.common import Status

from runtime.debug.stepped import stepped
from runtime.engine.runner import TickReport


def test_a_step_names_how_many_nodes_changed_and_the_keys_it_wrote():
    report = TickReport(3, Status.RUNNING, changed={"a": (Status.INVALID, Status.RUNNING)},
                        state_changes={f"ns.k{i}": (None, i) for i in range(5)})
    assert stepped(report) == "stepped: 1 node changed, wrote ns.k0, ns.k1, ns.k2 and 2 more"


def test_a_step_that_changed_nothing_says_so():
    assert stepped(TickReport(4, Status.RUNNING)) == "stepped: nothing changed"
    two = TickReport(5, Status.SUCCESS, changed={p: (Status.RUNNING, Status.SUCCESS) for p in "ab"})
    assert stepped(two) == "stepped: 2 nodes changed"
    many = TickReport(6, Status.RUNNING, changed={str(n): (Status.RUNNING, Status.SUCCESS) for n in range(1001)})
    assert stepped(many) == "stepped: 1,001 nodes changed"


def test_a_node_that_returned_a_status_its_tick_did_not_end_with_counts_as_changed():
    """A ReAct round's check returns FAILURE and its loop resets it in the same tick: it ends as it
    began, yet it moved (the tick's record); a node counts once, however often it returned, and
    whether its end changed too."""
    report = TickReport(3, Status.RUNNING, changed={"loop/tools": (Status.RUNNING, Status.INVALID)},
                        ticked=["loop/tools", "loop/done", "loop/done"],
                        returned=[Status.SUCCESS, Status.FAILURE, Status.FAILURE],
                        unseen=[(0, Status.INVALID), (1, Status.INVALID), (2, Status.INVALID)])
    assert report.transient == {"loop/tools", "loop/done"}
    assert stepped(report) == "stepped: 2 nodes changed"
