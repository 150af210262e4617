"""A playground on a real call: a recorded model call sent again, as edited, beside its recorded answer.

The request is the recorded one (its messages, the tools offered, the settings) with the user's
edits, sent to a model endpoint; the new answer comes back beside the recorded one. The run is
not touched: nothing recorded changes, no event is published, no node's model moves. The
re-send is kept as a what-if mark of the run (`whatif_marks`), so the timeline and a run file
show it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from ..memory.checkpoint import CheckpointError, CheckpointStore, IORecord
from ..memory.checkpoint.io import recorded_messages
from ..memory.checkpoint.model import jsonable
from ..memory.checkpoint.positions import positioned
from ..memory.checkpoint.whatif_marks import RESEND, CallRef, Mark, add_mark
from ..messages import Message
from ..model import ModelClient, ModelConfig
from ..model.errors import ModelError
from .whatif import landed_tick, recorded_answer, recorded_call


def endpoint_of(node: Any) -> ModelClient:
    """The model endpoint a re-send of `node`'s call goes to: the node's own client when it calls an
    endpoint, else (a scripted model, whose script a re-send would use up) the one the environment
    configures (`JIANMU_BASE_URL`, ...); `ModelConfigurationError` saying how when there is none."""
    client = getattr(node, "model_client", None)
    if client is not None and positioned(node) is None:
        return client
    return ModelClient.resolve(env_override=True)


def edited_request(store: CheckpointStore, record: IORecord, *, messages: Sequence[Any] | None = None,
                   tools: list[dict[str, Any]] | None = None,
                   parameters: Mapping[str, Any] | None = None) -> tuple[list[Message], ModelConfig]:
    """The request of a recorded model call with the edits made: `messages` in place of its messages,
    `tools` in place of the tools offered, `parameters` (ModelConfig fields: temperature, ...) over its
    settings. `ValueError` in one line naming what does not fit."""
    settings = {**(record.request.get("config") or {}), **(parameters or {})}
    if tools is not None:
        settings["tools"] = list(tools) or None
    try:
        sent = [m if isinstance(m, Message) else Message.model_validate(m)
                for m in (messages if messages is not None else recorded_messages(store, record))]
        return sent, ModelConfig.model_validate(settings)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "it"
        raise ValueError(f"the edited request does not fit: {where}: {error['msg']}") from None


async def resend(store: CheckpointStore, call: CallRef, client: ModelClient, *,
                 messages: Sequence[Any] | None = None, tools: list[dict[str, Any]] | None = None,
                 parameters: Mapping[str, Any] | None = None) -> Mark:
    """Send the recorded model call `call` again, as edited (`edited_request`), to `client`; the mark
    returned (and kept with the run) holds the request sent, the recorded answer and the new one (a
    failure of the endpoint is an answer too: {"error": ...})."""
    if call.kind != "model":
        raise ValueError(f"only a model call can be re-sent, not a {call}")
    record = recorded_call(store, call)
    sent, config = edited_request(store, record, messages=messages, tools=tools, parameters=parameters)
    try:
        tick: int | None = landed_tick(store, call, record)
    except CheckpointError:  # (no event tells: the mark has no tick)
        tick = None
    try:
        answer = (await client.invoke(sent, config)).model_dump(mode="json")
    except ModelError as exc:
        answer = {"error": f"{type(exc).__name__}: {exc}"}
    mark = Mark(RESEND, call, tick, recorded_answer(record),
                {"messages": [jsonable(m) for m in sent], "config": config.model_dump(mode="json")}, answer=answer)
    add_mark(store, mark)
    return mark


__all__ = ["edited_request", "endpoint_of", "resend"]
