"""The ReAct state contract (seed 000): which keys must be `Ephemeral`, and of which scope.

`rounds` must be run-scoped: `tool_choice` and the usage count restart at `rounds == 0`,
so a `rounds` that survives a fresh run silently drops the first-round `tool_choice`.
`done`, `final_answer`, `usage` and `streaming_output` are run-scoped too, `actions`
step-scoped (stale calls must never run twice). A ReAct loop whose schema breaks this
warns once per schema and key (`StateContractWarning`), naming the key; it still runs.
"""

from __future__ import annotations

import warnings

from ..state import Scope, StateKeys, StateManager

REQUIRED_SCOPES: dict[str, Scope] = {"rounds": "run", "done": "run", "final_answer": "run", "usage": "run",
                                     "streaming_output": "run", "actions": "step"}
_warned: set[tuple[str, str]] = set()


class StateContractWarning(UserWarning):
    """A state schema that does not keep the ReAct state contract."""


def check_react_contract(state: StateManager, keys: StateKeys) -> None:
    """Warn (once per schema and key) about contract keys of the wrong scope, or an undeclared `rounds`."""
    schema = f"{state.schema.__module__}.{state.schema.__qualname__}"
    for port, scope in REQUIRED_SCOPES.items():
        key = getattr(keys, port)
        spec = state.field(key)
        if spec is None and port != "rounds" or spec is not None and spec.scope == scope:
            continue
        if (schema, key) in _warned:
            continue
        _warned.add((schema, key))
        found = "is not declared" if spec is None else (
            f"is Ephemeral(scope={spec.scope!r})" if spec.scope else "is not Ephemeral")
        warnings.warn(f"state schema {state.schema.__qualname__}: ReAct key '{key}' {found}; declare it as "
                      f"Annotated[..., Ephemeral(scope={scope!r})] (seed 000's state contract)",
                      StateContractWarning, stacklevel=2)


__all__ = ["REQUIRED_SCOPES", "StateContractWarning", "check_react_contract"]
