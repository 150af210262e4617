"""Prompt context for LLM nodes: what the model reads before the conversation.

`ContextBuilder.resolve_for_llm` picks the builder of a node, first match wins:

1. an explicit `context_builder` given to the node (its `system_prompt` is then ignored);
2. the run's prompt runtime (`RunContext.prompt_runtime`), which must follow
   `ContextBuilderProtocol`;
3. the default preset: for a ReAct node persona (or `system_prompt`) + ReAct protocol +
   tool descriptions; for a plain LLM node, the `system_prompt` alone.

The protocol relies on structured function calling: the model never formats tool calls
as text, the provider carries them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from .messages import Message, system

PERSONA_DEFAULT_PROMPT = (
    "You are a helpful, careful assistant. You answer precisely and never invent facts or numbers."
)

REACT_PROTOCOL_PROMPT = (
    "Solve the task step by step. When you need information or a computation, use one of the tools. "
    "When you need to use a tool, the system will handle the tool calling automatically. "
    "You do NOT need to format tool calls as text. "
    "Each tool result comes back to you as an observation: read it before deciding the next step. "
    "When you have enough information, reply with the final answer and call no tool."
)

FINAL_ANSWER_PROMPT = (
    "You have run out of steps: no more tools can be called. Using only the evidence gathered so far, "
    "give your best final answer now, and say briefly what remains uncertain."
)

EMPTY_REPLY_NUDGE = (
    "Your last reply was empty. Reply with a tool call, or with your final answer as text."
)


@runtime_checkable
class ContextBuilderProtocol(Protocol):
    """Turns the conversation into the full list of messages sent to the model."""

    def build(self, messages: Sequence[Message], *, tools_description: str = "") -> list[Message]: ...


class ContextBuilder:
    """A system message made of `system_prompt`, an optional protocol and the tool descriptions."""

    def __init__(self, system_prompt: str | None = None, *, protocol: str | None = None,
                 describe_tools: bool = False):
        self.system_prompt = system_prompt
        self.protocol = protocol
        self.describe_tools = describe_tools

    @classmethod
    def react(cls, system_prompt: str | None = None) -> ContextBuilder:
        """The default ReAct preset: persona (or `system_prompt`) + protocol + tool descriptions."""
        return cls(system_prompt or PERSONA_DEFAULT_PROMPT, protocol=REACT_PROTOCOL_PROMPT, describe_tools=True)

    @classmethod
    def resolve_for_llm(cls, explicit: ContextBuilderProtocol | None = None, *, prompt_runtime: object = None,
                        system_prompt: str | None = None, prefer_react: bool = True) -> ContextBuilderProtocol:
        if explicit is not None:
            return explicit
        if prompt_runtime is not None:
            if not isinstance(prompt_runtime, ContextBuilderProtocol):
                raise TypeError(f"RunContext.prompt_runtime ({type(prompt_runtime).__name__}) has no "
                                "build(messages, *, tools_description) method")
            return prompt_runtime
        return cls.react(system_prompt) if prefer_react else cls(system_prompt)

    def build(self, messages: Sequence[Message], *, tools_description: str = "") -> list[Message]:
        tools = f"Available tools:\n{tools_description}" if self.describe_tools and tools_description else None
        prompt = "\n\n".join(part for part in (self.system_prompt, self.protocol, tools) if part)
        return [system(prompt), *messages] if prompt else list(messages)


__all__ = [
    "EMPTY_REPLY_NUDGE",
    "FINAL_ANSWER_PROMPT",
    "PERSONA_DEFAULT_PROMPT",
    "REACT_PROTOCOL_PROMPT",
    "ContextBuilder",
    "ContextBuilderProtocol",
]
