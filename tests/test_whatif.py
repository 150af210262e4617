"""What if: a fork from just before a recorded call with its answer edited, and a recorded model call
re-sent as edited to an endpoint (the playground) (#29.5)."""

from __future__ import annotations

import pytest
from check_fixtures import LLM, ROOT, TOOLS, export, offline, write_tree  # noqa: F401 (offline: an autouse fixture)
from openai_server import completion, json_reply
from py_trees.common import Status

from runtime import ModelClient
from runtime.debug.resend import resend
from runtime.debug.whatif import fork_with_answer
from runtime.memory.checkpoint import CheckpointError, InMemoryCheckpointStore, open_store
from runtime.memory.checkpoint.io import LANDED
from runtime.memory.checkpoint.whatif_marks import FORK, RESEND, CallRef, marks
from runtime.treefile import load_tree

CALCULATOR_LLM = "Calculator/Calculator.loop/Calculator.llm"


async def recorded(tree, store):
    """Run the tree file to its end recording into `store`; its agent (its runner holds the run)."""
    loaded = load_tree(str(tree))
    agent = loaded.agent
    agent.runner = agent.make_runner(checkpointer=store)
    await agent.run(loaded.input_data)
    return agent


def calls_on(store, run_id, branch):
    return [(r.kind, r.round) for r in store.io_records(run_id) if r.branch == branch]


async def test_an_edited_model_answer_is_served_in_a_fork_from_just_before_the_call():
    store = InMemoryCheckpointStore()
    agent = await recorded(ROOT / "sample_trees/react_calculator.py", store)
    runner, run_id = agent.runner, agent.runner.run_id
    call = CallRef(run_id, "main", "model", CALCULATOR_LLM, 0)

    branch = fork_with_answer(runner, call, "About 110, I would say.")
    assert branch == "whatif-1"
    assert await runner.run() == Status.SUCCESS
    assert runner.state_manager.get("final_answer") == "About 110, I would say."
    # the fork began just before the call (its node still waiting for it), and made no tool call
    first = store.list(run_id, "whatif-1")[0]
    assert first.tick == 1 and store.get(first.id).statuses[CALCULATOR_LLM] == "RUNNING"
    assert calls_on(store, run_id, "whatif-1") == [("model", 0)]  # the edited answer, recorded on the fork
    [mark] = marks(store, run_id)
    assert (mark.kind, mark.branch, mark.tick, mark.call) == (FORK, "whatif-1", 1, call)
    assert mark.recorded["message"]["tool_calls"][0]["name"] == "calculator"
    assert mark.edited["message"]["content"] == "About 110, I would say."


async def test_an_edited_tool_result_is_served_and_the_fork_goes_on_offline_where_the_recording_covers_it(tmp_path):
    store = InMemoryCheckpointStore()
    agent = await recorded(write_tree(tmp_path), store)
    runner, run_id = agent.runner, agent.runner.run_id
    assert (tmp_path / "appended.log").read_text() == "bees\n"

    fork_with_answer(runner, CallRef(run_id, "main", "tool", TOOLS, 1), "the log is full")
    assert await runner.run() == Status.SUCCESS
    assert (tmp_path / "appended.log").read_text() == "bees\n"  # the side-effecting tool was not run again
    # recorded on the fork: the edited result, then the model's next request (it differs now: made live,
    # to the model); the calculator call that follows matched the recording and was served from it
    assert calls_on(store, run_id, "whatif-1") == [("tool", 1), ("model", 1), ("model", 2)]
    asked = store.get_io(run_id, "model", LLM, 1, 0, "whatif-1")
    assert "the log is full" in str(store.read_list(*asked.request["messages"][1:]))
    assert runner.state_manager.get("final_answer") == "Noted, and 6 * 7 = 42."


async def test_what_ifs_travel_in_a_run_file(tmp_path):
    db, out = tmp_path / "runs.db", tmp_path / "bug.jianmu"
    store = open_store(db)
    agent = await recorded(ROOT / "sample_trees/react_calculator.py", store)
    run_id = agent.runner.run_id
    fork_with_answer(agent.runner, CallRef(run_id, "main", "model", CALCULATOR_LLM, 0), "110.")
    await agent.runner.run()
    kept = marks(store, run_id)
    store.close()
    export(db, run_id, out)
    copy = open_store(out, create=False)
    try:
        assert marks(copy, run_id) == kept
        assert copy.get_io(run_id, "model", CALCULATOR_LLM, 0, 0, "whatif-1").response["message"]["content"] == "110."
    finally:
        copy.close()


async def test_a_call_the_run_never_made_and_an_answer_that_is_none_are_refused_before_anything_changes():
    store = InMemoryCheckpointStore()
    agent = await recorded(ROOT / "sample_trees/react_calculator.py", store)
    runner, run_id = agent.runner, agent.runner.run_id
    with pytest.raises(CheckpointError, match=r"holds no recorded model call of .*Calculator.llm round 7"):
        fork_with_answer(runner, CallRef(run_id, "main", "model", CALCULATOR_LLM, 7), "x")
    with pytest.raises(ValueError, match=r"^the edited answer is not a model answer: role: "):
        fork_with_answer(runner, CallRef(run_id, "main", "model", CALCULATOR_LLM, 0), {"role": "wizard"})
    assert store.branches(run_id) == ["main"] and marks(store, run_id) == []


async def test_a_model_call_re_sent_as_edited_answers_beside_the_recorded_one_and_leaves_the_run_alone(server):
    store = InMemoryCheckpointStore()
    agent = await recorded(ROOT / "sample_trees/react_calculator.py", store)
    run_id = agent.runner.run_id
    before = (store.list(run_id), store.io_records(run_id), store.events(run_id))
    server.script(json_reply(completion("110")))
    client = ModelClient.resolve(base_url=server.url, api_key="k", model="m")
    call = CallRef(run_id, "main", "model", CALCULATOR_LLM, 0)

    mark = await resend(store, call, client, messages=[{"role": "user", "content": "What is 25 * 4 + 10? Just the number."}],
                        tools=[], parameters={"temperature": 0.2})
    [sent] = server.requests
    assert sent.body["messages"] == [{"role": "user", "content": "What is 25 * 4 + 10? Just the number."}]
    assert sent.body["temperature"] == 0.2 and "tools" not in sent.body
    assert mark.answer["message"]["content"] == "110"
    assert mark.recorded["message"]["tool_calls"][0]["name"] == "calculator"  # beside the recorded answer
    assert (store.list(run_id), store.io_records(run_id), store.events(run_id)) == before  # the run untouched
    assert [(m.kind, m.call, m.tick) for m in marks(store, run_id)] == [(RESEND, call, 1)]


async def test_a_re_send_the_endpoint_refuses_answers_with_its_error(server):
    store = InMemoryCheckpointStore()
    agent = await recorded(ROOT / "sample_trees/react_calculator.py", store)
    server.script(json_reply({"error": {"message": "no such model"}}, status=404))
    client = ModelClient.resolve(base_url=server.url, api_key="k", model="m")
    mark = await resend(store, CallRef(agent.runner.run_id, "main", "model", CALCULATOR_LLM, 1), client)
    assert "404" in mark.answer["error"] and mark.recorded["message"]["content"] == "25 * 4 + 10 = 110"
    assert server.requests[0].body["messages"][-1]["role"] == "tool"  # the recorded request, as it was


async def test_a_run_recorded_before_calls_kept_their_tick_forks_from_the_tick_that_made_the_call(monkeypatch,
                                                                                                  tmp_path):
    monkeypatch.setattr("runtime.memory.checkpoint.io.IORecorder._landed", lambda self, request: None)
    store = InMemoryCheckpointStore()
    agent = await recorded(write_tree(tmp_path), store)
    runner, run_id = agent.runner, agent.runner.run_id
    assert all(LANDED not in r.request for r in store.io_records(run_id))
    fork_with_answer(runner, CallRef(run_id, "main", "tool", TOOLS, 2), "41")
    first = store.list(run_id, "whatif-1")[0]
    assert first.tick == 6 and store.get(first.id).statuses[TOOLS] == "RUNNING"  # (as LANDED says: 6)
    fork_with_answer(runner, CallRef(run_id, "main", "model", LLM, 1), "done")
    first = store.list(run_id, "whatif-2")[0]
    assert first.tick == 5 and store.get(first.id).statuses[LLM] == "RUNNING"


async def test_a_tool_result_edited_as_json_is_served_as_its_json_text():
    store = InMemoryCheckpointStore()
    agent = await recorded(ROOT / "sample_trees/react_calculator.py", store)
    runner = agent.runner
    fork_with_answer(runner, CallRef(runner.run_id, "main", "tool", "Calculator/Calculator.loop/Calculator.tools", 1),
                     {"value": 110})
    assert await runner.run() == Status.SUCCESS
    assert [m.content for m in runner.state_manager.get("messages") if m.role == "tool"] == ['{"value":110}']
