"""`EvaluationNode`: the model grades an answer, for actor-evaluator loops.

    LoopUntilSuccess   Essay                 retries until an answer is good enough
    └── Sequence       Essay.round           memory=True
        ├── AgentLLMNode   Essay.actor       answers (writes final_answer)
        └── EvaluationNode Essay.evaluator   SUCCESS ends the loop; FAILURE → the actor again

Scores are on a 0-10 scale (models grade more consistently on it than on 0-1). The
model is asked for a JSON object `{"score": 7, "reflection": "..."}`; "Score: 7/10" and
"Reflection: ..." lines are read too. Every round writes `score` and `reflection`;
`highest_score` and `best_answer` change only when the score beats `best_score` (read
from `highest_score` unless bound elsewhere), so a worse later answer never replaces a
better one. Below `threshold` the reflection is appended to `messages` as feedback for
the actor and the node fails, so the loop runs another round. A reply with no usable
score raises `GradeError` (FAILURE, its `last_error` naming the node): never a silent zero.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from py_trees.common import Status

from ..config import ReActConfig
from ..context import ContextBuilderProtocol
from ..messages import human
from ..model import ModelResponseError
from ..state import Ephemeral
from .llm import SimpleLLMNode
from .presets import ReActState

GRADER_PROMPT = (
    "You are a strict, fair reviewer. You grade how well an answer serves the user's request: "
    "correctness first, then completeness and clarity. You never rewrite the answer yourself."
)

GRADING_REQUEST = (
    "Grade the answer below to the request above{criteria}.\n\n"
    "Answer to grade:\n{answer}\n\n"
    'Reply with a JSON object only: {{"score": <a number from 0 to 10>, '
    '"reflection": "<what is wrong or missing, and how to improve it>"}}'
)

FEEDBACK = "A reviewer scored your answer {score:g}/10: {reflection}\nPlease answer again, improving on it."

_SCORE_LINE = re.compile(r"\bscore\b\W{0,3}?(-?\d+(?:\.\d+)?)", re.IGNORECASE)
_REFLECTION_LINE = re.compile(r"\breflection\b\s*[:=-]\s*(.+)", re.IGNORECASE | re.DOTALL)


class GradeError(ModelResponseError):
    """The grader answered, but with no usable score."""


def find_json(text: str) -> Any:
    """The first JSON object or list in a model reply (bare, fenced or amid prose), else None."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", text):
        try:
            return decoder.raw_decode(text, match.start())[0]
        except json.JSONDecodeError:
            continue
    return None


def parse_grade(text: str) -> tuple[float, str]:
    """(score on 0-10, reflection) from a grade reply; `ValueError` says what is wrong with it."""
    data = find_json(text)
    if isinstance(data, dict) and "score" in data:
        raw, reflection = data["score"], data.get("reflection")
    else:
        match = _SCORE_LINE.search(text)
        if match is None:
            raise ValueError("it has no score")
        raw = match.group(1)
        found = _REFLECTION_LINE.search(text)
        reflection = found.group(1) if found else None
    if isinstance(raw, bool):
        raise ValueError(f"its score {raw!r} is not a number")
    try:
        score = float(raw)
    except (TypeError, ValueError):
        raise ValueError(f"its score {raw!r} is not a number") from None
    if not 0 <= score <= 10:  # also rejects NaN
        raise ValueError(f"its score {score:g} is outside 0-10")
    return score, str(reflection or "").strip()


class EvaluationState(ReActState):
    """ReActState plus the evaluator's ports, all run-scoped: a new run grades afresh."""

    score: Annotated[float | None, Ephemeral(scope="run")] = None
    reflection: Annotated[str | None, Ephemeral(scope="run")] = None
    highest_score: Annotated[float | None, Ephemeral(scope="run")] = None
    best_answer: Annotated[str | None, Ephemeral(scope="run")] = None


class EvaluationNode(SimpleLLMNode):
    """Grades `answer` (default key: the config's `final_answer`) in the light of `messages`.

    The model call is the LLM nodes' own (`reply.*` and `model.call.*` events, recording,
    the empty-reply retry) and its tokens are added to `usage`; `evaluation.scored` reports
    each grade. The grading exchange itself is not added to `messages`, only the feedback.
    """

    input_ports = ("messages", "answer", "best_score", "rounds", "usage")
    output_ports = ("score", "reflection", "highest_score", "best_answer", "messages", "usage")

    def __init__(self, name: str | None = None, *, model_client: Any = None, config: ReActConfig | None = None,
                 threshold: float = 8.0, criteria: str | None = None, system_prompt: str = GRADER_PROMPT,
                 context_builder: ContextBuilderProtocol | None = None, namespace: str | None = None):
        if not 0 <= threshold <= 10:
            raise ValueError(f"EvaluationNode {name!r}: threshold must be within 0-10, not {threshold!r}")
        config = (config or ReActConfig()).model_copy(update={"system_prompt": system_prompt})
        super().__init__(name, model_client=model_client, config=config, context_builder=context_builder,
                         namespace=namespace)
        self.threshold = threshold
        self.criteria = criteria

    async def update_async(self) -> Status:
        answer = self.read_port("answer", state_key=self.keys.final_answer)
        if not answer:
            raise ValueError(f"{self.path}: nothing to grade: port 'answer' "
                             f"({self.resolve_input_port('answer', self.keys.final_answer)}) is empty")
        criteria = f", judging {self.criteria}" if self.criteria else ""
        request = human(GRADING_REQUEST.format(criteria=criteria, answer=answer))
        response = await self.reply([*self.build_context(), request], self.model_config(),
                                    round=self.read_key("rounds", 0))
        text = response.message.content or ""
        try:
            score, reflection = parse_grade(text)
        except ValueError as exc:
            self._persist(response, self._usage(), append=[])  # the tokens were spent all the same
            raise GradeError(f"{self.path}: unusable grade, {exc}: {text!r:.120}") from None
        best = self.read_port("best_score", state_key="highest_score")
        improved = best is None or score > best
        accepted = score >= self.threshold
        ports: dict[str, Any] = {"score": score, "reflection": reflection}
        if improved:
            ports.update(highest_score=score, best_answer=answer)
        feedback = [] if accepted else [human(FEEDBACK.format(score=score, reflection=reflection or "no reason given"))]
        self._persist(response, self._usage(), append=feedback, **ports)
        self.emit("evaluation.scored", {"score": score, "threshold": self.threshold, "accepted": accepted,
                                        "improved": improved, "reflection": reflection[:500]})
        return Status.SUCCESS if accepted else Status.FAILURE


__all__ = ["EvaluationNode", "EvaluationState", "GradeError", "find_json", "parse_grade"]
