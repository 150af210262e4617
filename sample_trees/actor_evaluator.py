"""Actor and evaluator: an answer is graded, improved on the reviewer's feedback, accepted.

The actor's first definition is vague: the evaluator scores it 4/10 and its reflection
goes back to the actor as feedback; the second one scores 9/10, reaching the threshold
(8), and the loop ends. `highest_score` / `best_answer` keep the best graded answer.
Offline by default (a scripted model plays both roles); with `JIANMU_BASE_URL` (and a key
and model) in the environment, the same tree runs against that endpoint instead.

    jianmu-studio sample_trees/actor_evaluator.py
"""

import json

from runtime import Agent, ModelClient, ScriptedProvider, human
from runtime.node import AgentLLMNode, EvaluationNode, EvaluationState, LoopUntilSuccess, Sequence

VAGUE = "A behaviour tree is a way to organise what an AI does."
PRECISE = (
    "A behaviour tree is a tree of tasks ticked from the root: leaves act or check conditions, "
    "sequences run their children until one fails, selectors until one succeeds, and each node "
    "reports success, failure or running back to its parent."
)
SCRIPT = [
    VAGUE,
    json.dumps({"score": 4, "reflection": "Too vague: name the node kinds and say how a tick flows."}),
    PRECISE,
    json.dumps({"score": 9, "reflection": "Accurate and complete for a newcomer."}),
]

INPUT = {"messages": [human("In one or two sentences, explain to a game-AI newcomer what a behaviour tree is.")]}


def build() -> Agent:
    client = ModelClient.resolve(ScriptedProvider(SCRIPT), env_override=True)
    actor = AgentLLMNode("Explain.actor", model_client=client)
    evaluator = EvaluationNode("Explain.evaluator", model_client=client, threshold=8,
                               criteria="accuracy and whether a newcomer would understand it")
    root = LoopUntilSuccess("Explain", Sequence("Explain.round", memory=True, children=[actor, evaluator]),
                            max_iterations=4)
    return Agent(root, state_schema=EvaluationState)
