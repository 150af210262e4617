"""A run suspended for an approval survives its process (#30.1): the requests it waits for travel in
its checkpoint, so an agent built afresh from the same tree file (what another process, a web handler
hours later, has) restores it, answers the very request it asked, and the approved tool runs exactly
once, a denied one never."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import resume_tree

from runtime.guard import ApprovalError
from runtime.memory.checkpoint import CheckpointError, open_store
from runtime.memory.checkpoint.waiting import resume_point
from runtime.state import InteractionKeys
from studio.session import DebugSession, EditError


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    """The file `append_line` appends to: one line per time the tool really ran."""
    path = tmp_path / "ledger.txt"
    monkeypatch.setenv(resume_tree.EFFECTS, str(path))
    return path


def lines(path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def suspended_run(name: str) -> tuple[str, dict]:
    """Run the tree into store `name` until it suspends; its run id and what it waits for."""
    store = open_store(name)
    agent = resume_tree.build()
    agent.runner = agent.make_runner(checkpointer=store)
    result = await agent.run(resume_tree.INPUT)
    store.close()
    assert result.termination_reason == "suspended"
    return result.run_id, result.pending


def restored(name: str, run_id: str):
    """A new agent from the tree file on the same store, restored to the run's last checkpoint."""
    store = open_store(name)
    agent = resume_tree.build()
    agent.runner = agent.make_runner(checkpointer=store)
    agent.runner.restore(store.latest(run_id).id)
    return agent, store


async def test_a_restored_run_waits_for_the_request_it_asked_under_the_same_id(store_name, ledger):
    run_id, pending = await suspended_run(store_name)
    agent, store = restored(store_name, run_id)
    manager = agent.context.approval_manager
    assert [request.id for request in manager.pending()] == list(pending)  # known before anything runs
    [request] = manager.pending()
    assert (request.tool, request.arguments) == ("append_line", {"text": "payment 42 sent"})

    result = await agent.run()  # not answered yet: it suspends again on the same request, asks no other
    assert result.termination_reason == "suspended" and list(result.pending) == list(pending)
    assert [r.id for r in manager.pending()] == list(pending)
    assert lines(ledger) == []
    store.close()


@pytest.mark.parametrize("answer", ["approve", "resume"])
async def test_approved_after_a_restore_the_tool_runs_exactly_once(store_name, ledger, answer):
    run_id, pending = await suspended_run(store_name)
    agent, store = restored(store_name, run_id)
    [approval_id] = pending
    if answer == "approve":
        agent.context.approval_manager.approve(approval_id)
    else:  # answered through the runner, as a debugger's protocol does
        agent.runner.resume(approval_id, "approved")
    assert not agent.runner.suspended  # the decision reached the run before its node ran again

    result = await agent.run()
    assert (result.termination_reason, result.final_answer) == ("completed", "Done: payment 42 sent.")
    assert lines(ledger) == ["payment 42 sent"]
    assert agent.context.approval_manager.get(approval_id).status == "approved"
    assert store.latest(run_id).status == "SUCCESS" and store.runs(run_id)[0].ended == "completed"
    store.close()


async def test_denied_after_a_restore_the_tool_never_runs_and_the_model_reads_why(store_name, ledger):
    run_id, pending = await suspended_run(store_name)
    agent, store = restored(store_name, run_id)
    agent.context.approval_manager.deny(next(iter(pending)), "not without a second signature")

    result = await agent.run()
    assert result.termination_reason == "completed"
    assert lines(ledger) == []
    observation = [m.content for m in result.state.messages if m.role == "tool"]
    assert observation == ["Error: tool 'append_line' was not approved: not without a second signature"]
    store.close()


async def test_a_run_stepped_by_a_debugger_records_its_suspension_between_ticks(tmp_path, ledger):
    """A debugger steps tick by tick, and the tool asks for approval after the tick that started it: the
    run's last checkpoint (`suspend`) still holds the request, so another process resumes it."""
    session = DebugSession.load(str(Path(resume_tree.__file__)), db=tmp_path / "runs.db")
    stop = await session.continue_()
    assert stop.kind == "suspended"
    [request] = session.pending_approvals()
    last = session.store.latest(session.run_id)
    assert (last.source, last.tick) == ("suspend", session.tick)
    assert list(session.store.get(last.id).state[""][InteractionKeys.PENDING]) == [request.id]
    run_id = session.run_id
    session.store.close()

    agent, store = restored(str(tmp_path / "runs.db"), run_id)
    assert [r.id for r in agent.context.approval_manager.pending()] == [request.id]
    agent.context.approval_manager.approve(request.id)
    assert (await agent.run()).termination_reason == "completed"
    assert lines(ledger) == ["payment 42 sent"]
    store.close()


async def test_agent_resume_answers_and_goes_on_from_the_store(store_name, ledger):
    """`Agent.resume`, what a web handler calls: the agent is built afresh, the store is all it shares."""
    run_id, _ = await suspended_run(store_name)
    store = open_store(store_name)
    result = await resume_tree.build().resume(store, run_id, approve=["append_line"])
    assert (result.termination_reason, result.run_id) == ("completed", run_id)
    assert lines(ledger) == ["payment 42 sent"]
    events = [(branch, event.seq) for branch, event in store.events(run_id)]
    assert len(events) == len(set(events))  # the resumed run numbers its events on from the recorded ones
    store.close()


async def test_agent_resume_refuses_before_answering_anything(tmp_path, ledger):
    name = str(tmp_path / "runs.db")
    run_id, pending = await suspended_run(name)
    store = open_store(name)
    with pytest.raises(ApprovalError, match=f"run {run_id} has no call of send_email waiting"):
        await resume_tree.build().resume(store, run_id, approve="send_email", deny={"append_line": "no"})
    with pytest.raises(CheckpointError, match="no run 'nope'"):
        await resume_tree.build().resume(store, "nope", approve="all")

    busy = resume_tree.build()  # a run this process still writes (not suspended, not ended)
    busy.runner = busy.make_runner(checkpointer=store)
    await busy.run(resume_tree.INPUT, max_ticks=1)
    with pytest.raises(CheckpointError, match=rf"run {busy.runner.run_id} is still being written \(process {os.getpid()}"):
        await resume_tree.build().resume(store, busy.runner.run_id, approve="all")
    busy.runner.stop()  # its model call in flight is cancelled, not left to the loop's end
    assert lines(ledger) == []
    assert store.runs(run_id)[0].ended == "suspended"  # still waiting
    store.close()


async def test_of_two_processes_that_take_one_waiting_run_at_once_one_does(store_name, ledger):
    """Two clicks on "approve" in two web workers: both find the run waiting, one takes it over."""
    run_id, _ = await suspended_run(store_name)
    first, second = open_store(store_name), open_store(store_name)  # two writers, as two processes have
    seen_first, seen_second = resume_point(first, run_id), resume_point(second, run_id)
    seen_first.take(first)
    with pytest.raises(CheckpointError, match=f"run {run_id} was taken over by another process just now"):
        seen_second.take(second)
    with pytest.raises(CheckpointError, match=f"run {run_id} is still being written"):
        await resume_tree.build().resume(second, run_id, approve="all")
    assert lines(ledger) == []
    first.close()
    second.close()


async def test_a_studio_still_showing_the_run_cannot_answer_it_once_another_process_resumed_it(tmp_path, ledger):
    session = DebugSession.load(str(Path(resume_tree.__file__)), db=tmp_path / "runs.db")
    assert (await session.continue_()).kind == "suspended"
    [request] = session.pending_approvals()
    elsewhere = open_store(tmp_path / "runs.db")
    assert (await resume_tree.build().resume(elsewhere, session.run_id, approve="all")).termination_reason == "completed"
    with pytest.raises(EditError, match=f"run {session.run_id} was resumed by another process meanwhile"):
        session.approve(request.id)
    assert lines(ledger) == ["payment 42 sent"]  # once, by the process that resumed it
    elsewhere.close()
    session.store.close()
