"""Model calls as a user reads them: what was sent, what was offered, what came back, and how.

A call is put together from two public seams. The events (`reply.*`, `model.call.*`)
give its node, round, tick, attempts and retries, usage and latency; the checkpoint
store's recorded I/O (what makes replays deterministic) gives the request (the messages
and the config with the tools offered) and the response. A call whose I/O was not
recorded (a swarm agent runs its own runner) shows what its events say.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from runtime.engine.events import EventType, RuntimeEvent

MODEL_EVENTS = frozenset({EventType.REPLY_STARTED, EventType.REPLY_COMPLETED, EventType.MODEL_CALL_STARTED,
                          EventType.MODEL_CALL_FAILED, EventType.MODEL_CALL_COMPLETED})


@dataclass
class Attempt:
    number: int
    model: str | None
    error: str | None = None  # None: it answered
    will_retry: bool = False


@dataclass
class ModelCall:
    """One logical model call of one node (one ReAct round), with its attempts."""

    node: str
    round: int | None
    tick: int
    run_id: str | None
    branch: str | None = None  # None: events that carry no branch (a remote run's)
    seqs: list[int] = field(default_factory=list)  # the events it was built from
    model: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    duration_ms: float | None = None
    finish_reason: str | None = None
    empty_retry: bool = False
    done: bool = False
    messages: list[dict[str, Any]] | None = None  # the request, when recorded
    config: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    error: str | None = None

    @property
    def title(self) -> str:
        round_text = f"round {self.round}" if self.round is not None else "call"
        return f"{self.node.rpartition('/')[2]} {round_text} (tick {self.tick})"

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tools offered: each {"name", "description", "parameters"}."""
        offered = (self.config or {}).get("tools") or []
        return [tool.get("function", tool) for tool in offered if isinstance(tool, dict)]

    @property
    def settings(self) -> dict[str, Any]:
        """The call's config without the tools and without unset values."""
        return {key: value for key, value in (self.config or {}).items()
                if key != "tools" and value not in (None, {}, [])}

    @property
    def outcome(self) -> str:
        if self.error:
            return f"failed: {self.error}"
        if not self.done:
            return "in flight"
        return f"{self.finish_reason or 'done'}, {self.usage.get('total_tokens', 0)} tokens"


def collect(events: Sequence[RuntimeEvent]) -> list[ModelCall]:
    """The model calls the events describe, in the order they started (events stamped with a
    branch, such as the studio's, give each call its branch)."""
    calls: list[ModelCall] = []
    open_calls: dict[tuple[str | None, str], ModelCall] = {}
    for event in events:
        if event.type not in MODEL_EVENTS or event.node is None:
            continue
        key, payload = (event.run_id, event.node), event.payload
        call = open_calls.get(key)
        if event.type == EventType.REPLY_STARTED or call is None:
            call = ModelCall(event.node, payload.get("round"), event.tick, event.run_id,
                             getattr(event, "branch", None))
            calls.append(call)
            open_calls[key] = call
        call.seqs.append(event.seq)
        if event.type == EventType.MODEL_CALL_STARTED:
            call.attempts.append(Attempt(int(payload.get("attempt", len(call.attempts) + 1)), payload.get("model")))
        elif event.type == EventType.MODEL_CALL_FAILED:
            attempt = _attempt(call, payload)
            attempt.error, attempt.will_retry = str(payload.get("error")), bool(payload.get("will_retry"))
            if not attempt.will_retry:
                call.error, call.done = attempt.error, True
                open_calls.pop(key, None)
        elif event.type == EventType.MODEL_CALL_COMPLETED:
            _attempt(call, payload).model = payload.get("model")
            call.model, call.usage = payload.get("model"), dict(payload.get("usage") or {})
            call.duration_ms, call.finish_reason = payload.get("duration_ms"), payload.get("finish_reason")
            call.done = True
        elif event.type == EventType.REPLY_COMPLETED:
            call.usage = dict(payload.get("usage") or call.usage)
            call.duration_ms, call.empty_retry = payload.get("duration_ms"), bool(payload.get("empty_retry"))
            call.done = True
            open_calls.pop(key, None)
    return calls


def _attempt(call: ModelCall, payload: dict[str, Any]) -> Attempt:
    number = int(payload.get("attempt", len(call.attempts)))
    found = next((a for a in call.attempts if a.number == number), None)
    if found is None:
        found = Attempt(number, payload.get("model"))
        call.attempts.append(found)
    return found


def fill_from_store(call: ModelCall, store: Any, branches: Sequence[str] = ()) -> ModelCall:
    """Add the recorded request and response (the last attempt of an empty-reply retry): the
    record of the first of `branches` (the call's lineage, its own branch first) that holds one,
    so a fork's call never shows another branch's I/O; without branches, the newest record."""
    if call.round is None or call.messages is not None or call.run_id is None:
        return call
    attempt = 1 if call.empty_retry else 0
    record = None
    for branch in branches:
        found = store.get_io(call.run_id, "model", call.node, call.round, attempt, branch)
        if found is not None and found.branch == branch:
            record = found
            break
    if record is None and not branches:
        record = store.get_io(call.run_id, "model", call.node, call.round, attempt)
    if record is None:
        return call
    ref = record.request.get("messages")
    if isinstance(ref, list) and len(ref) == 3:
        call.messages = list(store.read_list(ref[1], ref[2]))
    elif isinstance(ref, list):
        call.messages = ref
    call.config = record.request.get("config")
    call.response = record.response
    if record.error is not None and call.error is None:
        call.error = f"{record.error.get('type')}: {record.error.get('message')}"
    return call


__all__ = ["Attempt", "ModelCall", "collect", "fill_from_store"]
