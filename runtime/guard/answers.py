"""`Answers`: approve or deny the calls a run waits for by rule, rather than one request at a time.

A rule names a tool (`send_email`), one request by its approval id (`3f2a9c1e`), or every call
(`all`); for each request the rule naming its id wins, then the one naming its tool, then `all`.
`jianmu-studio run` and `resume` take them as `--approve` / `--deny`, `Agent.resume` as
`approve=` / `deny=`: one reading of the rules wherever a run is answered without a dialog.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from runtime.guard.approval import ApprovalError, ApprovalRequest

ALL = "all"


@dataclass(frozen=True)
class Answers:
    approve: frozenset[str] = frozenset()
    deny: Mapping[str, str] = field(default_factory=dict)  # name -> the reason the model reads

    @classmethod
    def of(cls, approve: str | Iterable[str] = (), deny: str | Iterable[str] | Mapping[str, str] = (), *,
           default_reason: str = "denied", flags: tuple[str, str] = ("approve", "deny")) -> Answers:
        """`approve`: names; `deny`: names, `NAME:REASON` strings, or a {name: reason} mapping. A name
        given empty, or both approved and denied, is an `ApprovalError` (worded with `flags`)."""
        approved = frozenset(name.strip() for name in ([approve] if isinstance(approve, str) else approve))
        specs = deny.items() if isinstance(deny, Mapping) else (
            spec.partition(":")[::2] for spec in ([deny] if isinstance(deny, str) else deny))
        denied = {name.strip(): (reason or "").strip() or default_reason for name, reason in specs}
        if "" in approved or "" in denied:
            raise ApprovalError(f"{flags[0]} and {flags[1]} need a tool name, an approval id or `{ALL}`")
        if clash := approved & denied.keys():
            raise ApprovalError(f"both {flags[0]} and {flags[1]} name {', '.join(sorted(clash))}")
        return cls(approved, denied)

    def answer(self, request: ApprovalRequest) -> tuple[bool, str] | None:
        """(approved, reason) for `request`, or None when no rule covers it."""
        for name in (request.id, request.tool, ALL):
            if name in self.approve:
                return True, ""
            if name in self.deny:
                return False, self.deny[name]
        return None

    def unmatched(self, requests: Iterable[ApprovalRequest]) -> list[str]:
        """The names (other than `all`) that fit none of `requests`: a typo, or a call not waiting."""
        known = {name for request in requests for name in (request.id, request.tool)}
        return sorted((self.approve | self.deny.keys()) - known - {ALL})


__all__ = ["ALL", "Answers"]
