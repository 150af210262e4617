"""The requests an attached studio's "found bug to verified fix" views make (docs/protocol.md): compare the
run with another run or branch, fork with a recorded answer edited, re-send a recorded model call as
edited, read a tool call's recorded I/O.

The served run's debugger and store do the work, with the code a local studio runs in its own process
(`runtime.debug.compare`, `Debugger.what_if`, `Debugger.resend`); the client shows what comes back
with the same screens. Mixed into `DebugController`, whose `handle` serves `_do_<type>`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..memory.checkpoint import CheckpointError, StoreError
from ..memory.checkpoint.whatif_marks import CallRef
from .compare import compare, comparison_json, differences_json, target_json, target_of, targets, tick_state
from .edits import EditRefused
from .protocol import ProtocolError, whole_number
from .whatif import branch_record

T = TypeVar("T")
KINDS = ("model", "tool")


def told(request: str, work: Callable[[], T]) -> T:
    """`work()`, the store's refusals (a run or checkpoint not there, a damaged record) as one line."""
    try:
        return work()
    except (CheckpointError, StoreError, ValueError) as exc:
        raise ProtocolError("bad_request", f"{request}: {exc}") from None


def call_of(request: str, data: Any) -> CallRef:
    """A recorded call as `request` names it: {run_id, branch, kind, node, round, index}."""
    if not isinstance(data, dict):
        raise ProtocolError("bad_request", f"{request}: 'call' is {{run_id, branch, kind, node, round, index}}, "
                                           f"not {data!r:.60}")
    for name in ("run_id", "branch", "node"):
        if not isinstance(data.get(name), str):
            raise ProtocolError("bad_request", f"{request}: the call needs a string {name!r}")
    if data.get("kind") not in KINDS:
        raise ProtocolError("bad_request", f"{request}: the call's kind is model or tool, not {data.get('kind')!r:.40}")
    where = data.get("round"), data.get("index", 0)
    if not all(map(whole_number, where)):
        raise ProtocolError("bad_request", f"{request}: round and index are whole numbers, not {where!r:.60}")
    return CallRef(data["run_id"], data["branch"], data["kind"], data["node"], *where)


class WhatIfRequests:
    """`DebugController`'s compare, what-if, re-send and tool I/O requests (it provides `past`, `debugger`,
    `branch`, `seal`, `_picture` and `_require_held`)."""

    def _do_compare_targets(self, message):
        store = self.past.store()
        found = told("compare", lambda: targets(store, str(message["run_id"]), str(message["branch"])))
        return {"targets": [target_json(target) for target in found]}

    def _do_compare(self, message):
        store = self.past.store()
        target = told("compare", lambda: target_of(message["target"]))
        comparison = told("compare", lambda: compare(store, str(message["run_id"]), str(message["branch"]), target,
                                                     self.past.shown))
        return {"comparison": comparison_json(comparison)}

    def _do_compare_state(self, message):
        """Every state key whose value differs between two checkpoints (`checkpoints`: [a, b], either null
        for a side that never reached the tick), labelled with the sides' names `a` and `b`."""
        store = self.past.store()
        ids, tick = message["checkpoints"], message["tick"]
        if not (isinstance(ids, list) and len(ids) == 2 and all(i is None or whole_number(i) for i in ids)
                and whole_number(tick)):
            raise ProtocolError("bad_request", "compare_state: 'tick' is a whole number, 'checkpoints' two ids (or null)")
        found = told("compare", lambda: tick_state(store, str(message["a"]), str(message["b"]), tick, *ids))
        return {"differences": differences_json(found)}

    def _do_tool_io(self, message):
        """The recorded request and result (or error) of one tool call, looked up along `branches` (its own
        branch first, then those it forked from)."""
        store = self.past.store()
        where, branches = (message["round"], message["index"]), message["branches"]
        if not all(map(whole_number, where)) or not isinstance(branches, list):
            raise ProtocolError("bad_request", f"tool_io: round and index are whole numbers, branches a list, "
                                               f"not {where!r:.60}")
        record = told("tool call", lambda: branch_record(store, str(message["run_id"]), "tool", str(message["node"]),
                                                          *where, [str(branch) for branch in branches]))
        return {"record": None if record is None else
                {"request": record.request, "response": record.response, "error": record.error}}

    def _do_what_if(self, message):
        """A fork (`whatif-1`, ...) from just before the recorded `call`, serving `answer` in its place; the
        run is held there, as after `fork`. The answer carries the branch and the new picture."""
        call = call_of("what_if", message["call"])
        self._require_held("a what-if")
        self.past.store()
        self.seal()  # what happened so far belongs to the branch it happened on
        self.debugger.what_if(call, message["answer"])
        self.past.forget_whatifs()
        return {"branch": self.branch, "message": self.debugger.message, "picture": self._picture()}

    def _do_resend(self, message):
        """Send a recorded model call again as edited (`messages`, `tools`, `parameters`); the run is not
        touched. Answered once the endpoint has (the server awaits it, the run goes on): `mark`, the
        re-send's what-if mark as the store keeps it, and `rows`, the rows of the tick it landed after,
        which now say so."""
        call = call_of("resend", message["call"])
        store = self.past.store()
        edits = {part: message[part] for part in ("messages", "tools", "parameters") if message.get(part) is not None}

        async def sent() -> dict[str, Any]:
            try:
                mark = await self.debugger.resend(call, **edits)
            except EditRefused as exc:
                raise ProtocolError("bad_request", str(exc)) from None
            self.past.forget_whatifs()
            landed = [info for info in store.list(call.run_id, call.branch) if info.tick == mark.tick]
            return {"mark": mark.to_json(), "rows": [self.past.row(info) for info in landed]}

        return sent()


__all__ = ["WhatIfRequests", "call_of", "told"]
