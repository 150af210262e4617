"""An agent's model and tool calls, recorded (or served on replay) by its host's I/O recorder.

A spawned agent runs in a runner of its own, which records nothing; its calls go through
the recorder its host's context holds at the time of the call (the host's checkpointer
installs one, a replay swaps in a replayer), under the agent's node paths (`@agent/path`):
a replay of the host serves the agents their recorded answers too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..engine.deps import RunContext
from .naming import agent_path


class AgentCalls:
    """What an agent's `RunContext.io_recorder` holds: its host's recorder, reached through the host's context."""

    def __init__(self, host: RunContext, agent_id: str):
        self.host = host
        self.agent_id = agent_id

    async def model_call(self, node: str, round: int, attempt: int, messages: list[Any], config: Any,
                         call: Callable[[], Awaitable[Any]]) -> Any:
        recorder = self.host.io_recorder
        if recorder is None:
            return await call()
        return await recorder.model_call(agent_path(self.agent_id, node), round, attempt, messages, config, call)

    async def tool_call(self, node: str, round: int, index: int, name: str, arguments: dict,
                        call: Callable[[], Awaitable[str]]) -> str:
        recorder = self.host.io_recorder
        if recorder is None:
            return await call()
        return await recorder.tool_call(agent_path(self.agent_id, node), round, index, name, arguments, call)


__all__ = ["AgentCalls"]
