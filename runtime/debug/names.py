"""One name per state value, the same in the studio and over the debug protocol.

A schema field with an alias (`usage`, alias `llm.usage`) is stored under its attribute but
written by either name: shown and sent always by its alias, so a view never lists one value
twice and a diff never reports a rename as a change. The schema's fields come first, in
their order, then the other keys by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

State = dict[str, dict[str, Any]]


class StateNames:
    def __init__(self, schema: type[BaseModel]):
        self._names = {}
        for attr, info in schema.model_fields.items():
            if info.alias and info.alias != attr:
                self._names[attr] = info.alias
        self._order = {self.key(attr): i for i, attr in enumerate(schema.model_fields)}

    @property
    def aliases(self) -> dict[str, str]:
        """`{attribute: alias}` of the fields with an alias: the name each is shown by."""
        return dict(self._names)

    def key(self, key: str) -> str:
        return self._names.get(key, key)

    def qualified(self, namespace: str | None, key: str) -> str:
        """`key` (global, by its one name) or `ns.key`: how a mark or a condition names it."""
        return f"{namespace}.{key}" if namespace else self.key(key)

    def state(self, state: Mapping[str, Mapping[str, Any]], *, parsed: bool = False) -> State:
        """JSON-able, every key by its one name (a later entry of two names for one value wins),
        in one order whatever order they were saved in: the schema's fields first, then by name.
        `parsed`: the values were parsed from JSON (a checkpoint read back), so are JSON already:
        converting them again costs ~0.4 ms for a 400-message history and changes nothing."""
        out: State = {}
        last = len(self._order)
        for ns in sorted(state, key=lambda ns: (ns != "", ns)):
            names = self._names if not ns else {}
            values = {names.get(key, key): value if parsed else to_jsonable_python(value, fallback=repr)
                      for key, value in state[ns].items()}
            out[ns] = dict(sorted(values.items(), key=lambda item: (self._order.get(item[0], last), item[0])))
        return out


__all__ = ["State", "StateNames"]
