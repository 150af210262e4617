"""A skill used twice: a "research" ReAct sub-agent looks up two cities, a writer compares them.

    TripBrief                 Sequence
    ├── ResearchParis         SkillNode  city_a → research → notes_a
    ├── ResearchKyoto         SkillNode  city_b → research → notes_b
    ├── brief                 @node      question + notes → the writer's prompt
    └── Writer                SimpleLLMNode → final_answer

The research skill (its own guidebook tool and a ReAct loop) is compiled by each SkillNode
on its first tick, in a namespace of its own (`skill_runtime.ResearchParis_<id>`): in the
studio the subtree appears under the node with that namespace on every line, and the two
researchers' messages never mix. Offline by default (a scripted model, in tick order);
with `JIANMU_BASE_URL` (and a key and model) in the environment it runs live.

    jianmu-studio sample_trees/skill_subagent.py
"""

from typing import Any

from runtime import (
    Agent,
    ModelClient,
    ReActState,
    RunContext,
    ScriptedProvider,
    create_react_node,
    human,
    system,
    tool,
)
from runtime.node import Sequence, SimpleLLMNode, Skill, SkillNode, node

GUIDEBOOK = {
    "Paris": "April: 8-16 °C, frequent showers; museums, cafés, the Seine at dusk.",
    "Kyoto": "April: 9-20 °C, mostly dry; cherry blossom peaks early in the month.",
}


@tool
def guidebook(city: str) -> str:
    """The guidebook's spring entry for a city."""
    return GUIDEBOOK.get(city, f"no entry for {city}")


@node(name="frame")
def frame(state: dict[str, Any]) -> dict[str, Any]:
    """Turn the skill's input into the researcher's conversation."""
    return {"messages": [system("You research one city for a traveller; use the guidebook."),
                         human(f"What is {state['city']} like in spring?")]}


def research_agent():
    return Sequence("research", memory=True, children=[
        frame(), create_react_node(name="researcher", tools=[guidebook])])


# a researcher with a guidebook: one city in, notes out
RESEARCH = Skill("research", build=research_agent, inputs=("city",), outputs=("final_answer",))


@node(name="brief")
def brief(state: dict[str, Any]) -> dict[str, Any]:
    """Hand the writer both sets of notes."""
    return {"messages": [human(f"{state['question']}\n\n{state['city_a']}: {state['notes_a']}\n"
                               f"{state['city_b']}: {state['notes_b']}")]}


class TripState(ReActState):
    question: str = ""
    city_a: str = ""
    city_b: str = ""
    notes_a: str | None = None
    notes_b: str | None = None


SCRIPT = [
    {"tool_calls": [{"name": "guidebook", "arguments": {"city": "Paris"}}]},
    "Paris in April: 8-16 °C with frequent showers; best indoors (museums, cafés).",
    {"tool_calls": [{"name": "guidebook", "arguments": {"city": "Kyoto"}}]},
    "Kyoto in April: 9-20 °C, mostly dry, cherry blossom early in the month.",
    "Kyoto: warmer, drier, and the cherry blossom is out; Paris is the rainy-day choice.",
]

INPUT = {"question": "Paris or Kyoto for a spring weekend?", "city_a": "Paris", "city_b": "Kyoto"}


def build() -> Agent:
    client = ModelClient.resolve(ScriptedProvider(SCRIPT), env_override=True)
    root = Sequence("TripBrief", memory=True, children=[
        SkillNode("ResearchParis", RESEARCH, inputs={"city": "city_a"}, outputs={"skill_result": "notes_a"}),
        SkillNode("ResearchKyoto", RESEARCH, inputs={"city": "city_b"}, outputs={"skill_result": "notes_b"}),
        brief(),
        SimpleLLMNode("Writer").bind(outputs={"text_output": "final_answer"}),
    ])
    return Agent(root, state_schema=TripState, context=RunContext(model_client=client))
