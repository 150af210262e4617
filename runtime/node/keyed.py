"""`KeyedPorts`: ports named after `StateKeys` fields, defaulting to the node's keys.

The ReAct nodes read and write the agreed fields (`messages`, `actions`, `rounds`...)
through ports of the same names, so a host renames a field once in `ReActConfig.keys`
and `bind()` can still reroute a single port of a single node.
"""

from __future__ import annotations

from typing import Any

from ..state import StateKeys


class KeyedPorts:
    keys: StateKeys

    def read_key(self, port: str, default: Any = None) -> Any:
        value = self.read_port(port, state_key=getattr(self.keys, port))
        return default if value is None else value

    def key_for(self, port: str) -> str:
        """The state key an output port writes to."""
        return self.resolve_output_port(port, getattr(self.keys, port))

    def appended(self, port: str, messages: list[Any]) -> tuple[str, list[Any]]:
        """(key, value) that appends `messages` to a list port within a larger update.

        A field with a reducer (`operator.add`) takes the new items; one without takes
        the whole list.
        """
        key = self.key_for(port)
        spec = self._require_state().field(key)
        if spec is not None and spec.reducer is not None:
            return key, list(messages)
        return key, [*(self.read_state(key) or []), *messages]


__all__ = ["KeyedPorts"]
