"""The state field names the built-in nodes agree on.

Nodes never scatter raw strings: they take a `StateKeys` (usually through
`ReActConfig.keys`) so a host can rename any field without touching a node.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StateKeys(BaseModel):
    model_config = ConfigDict(frozen=True)

    messages: str = "messages"
    actions: str = "actions"
    done: str = "done"
    text_output: str = "text_output"
    final_answer: str = "final_answer"
    skill_result: str = "skill_result"
    rounds: str = "rounds"
    usage: str = "llm.usage"
    streaming_output: str = "streaming_output"
    tool_effects: str = "tool_effects"


class InteractionKeys:
    """Global keys the runtime itself owns (suspension and termination bookkeeping)."""

    TERMINATION = "interaction.termination"
    PENDING = "interaction.pending"
    RESPONSES = "interaction.responses"


__all__ = ["InteractionKeys", "StateKeys"]
