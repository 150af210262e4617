"""A swarm of three: a coordinator hires a researcher and a writer and waits for their draft.

    coordinator ──spawn──> researcher (ReAct + calculator)  ──notes──> writer ──draft──> coordinator
                └─spawn──> writer            coordinator ──"team" group note──> researcher, writer

The coordinator (this file's tree) spawns both agents at once into the group "team", tells the
group the deadline, and waits for the writer's draft. The researcher is a ReAct agent
with a scripted model: it works out the question with the calculator, then sends its
answer to the writer. The writer waits for the researcher's notes (the coordinator's
group note stays queued in its mailbox), turns them into a draft and sends it back.
Every spawn, message and finish shows in the events pane as a `swarm.*` event, and the
agents' own model and tool events appear tagged `@researcher/…`.

Offline by default (scripted model); with `JIANMU_BASE_URL` (and a key and model) set,
the researcher asks that endpoint instead.

    jianmu-studio sample_trees/swarm_chat.py
"""

from __future__ import annotations

from py_trees.common import ParallelPolicy
from pydantic import BaseModel

from runtime import (
    Agent,
    CalculatorTool,
    ModelClient,
    ReActState,
    RunContext,
    ScriptedProvider,
    create_react_node,
)
from runtime.node import Parallel, Sequence, node
from runtime.swarm import SendMessage, SpawnAgent, SwarmAgent, SwarmRuntime, WaitMessage

SCRIPT = [
    {"tool_calls": [{"name": "calculator", "arguments": {"expression": "3 * 40000"}}]},
    "3 hives of 40,000 bees hold 120000 bees.",
]

INPUT = {"question": "Three hives hold 40,000 bees each. How many bees is that?"}


class CoordinatorState(BaseModel):
    question: str = ""
    researcher_id: str = ""
    writer_id: str = ""
    final_answer: str | None = None
    drafted_by: str = ""


class WriterState(BaseModel):
    notes: str = ""
    draft: str = ""


def researcher(agent: SwarmAgent) -> Agent:
    """ReAct on its task, then hand the answer to the writer."""
    client = ModelClient.resolve(ScriptedProvider(SCRIPT), env_override=True)
    root = Sequence("Researcher", memory=True, children=[
        create_react_node(name="Research", model_client=client, tools=[CalculatorTool()]),
        SendMessage("Send notes", to_agent_id="writer").bind(inputs={"message": "final_answer"}),
    ])
    return Agent(root, state_schema=ReActState)


@node(name="Draft")
def draft(state: dict) -> dict:
    """Deterministic writing: the notes, framed for the coordinator."""
    return {"draft": f"Draft: {state['notes']} (checked by the calculator)"}


def writer(agent: SwarmAgent) -> Agent:
    """Wait for the researcher's notes, write the draft, return it to whoever hired us."""
    root = Sequence("Writer", memory=True, children=[
        WaitMessage("Wait for notes", from_agent_id="researcher", timeout=30).bind(outputs={"message": "notes"}),
        draft(),
        SendMessage("Send draft", to_agent_id=agent.parent).bind(inputs={"message": "draft"}),
    ])
    return Agent(root, state_schema=WriterState)


def build() -> Agent:
    swarm = SwarmRuntime(host_id="coordinator", roles={"researcher": researcher, "writer": writer})
    # reuse_if_present: a restored checkpoint that spawns again finds the same agents
    root = Sequence("Coordinator", memory=True, children=[
        # both in one tick: each agent exists before the other can speak to it, however long the
        # studio holds the coordinator between ticks (the agents run on while it is held)
        Parallel("Hire", policy=ParallelPolicy.SuccessOnAll(), children=[
            SpawnAgent("Hire researcher", role="researcher", agent_id="researcher", groups=["team"],
                       reuse_if_present=True).bind(inputs={"task": "question"},
                                                   outputs={"spawned_agent_id": "researcher_id"}),
            SpawnAgent("Hire writer", role="writer", agent_id="writer", task="Write up the researcher's notes",
                       groups=["team"], reuse_if_present=True).bind(outputs={"spawned_agent_id": "writer_id"}),
        ]),
        SendMessage("Brief team", group="team", message="Deadline: a draft within 30 seconds."),
        WaitMessage("Wait for draft", from_agent_id="writer", timeout=30).bind(
            outputs={"message": "final_answer", "sender": "drafted_by"}),
    ])
    return Agent(root, state_schema=CoordinatorState, context=RunContext(runtime=swarm))
