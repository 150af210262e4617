"""`StateCondition`: SUCCESS when a condition over state holds, FAILURE otherwise.

Two forms:
- a predicate over the live state model: `StateCondition(predicate=lambda s: s.done)`;
- declarative, through an input port named after `key`, so `bind()` can reroute it:
  `StateCondition(key="score", op=">=", value=0.8).bind(inputs={"score": "eval_score"})`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from py_trees.common import Status
from pydantic import BaseModel

from ..engine.behaviour import Behaviour

OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "in": lambda actual, expected: actual in expected,
    "not in": lambda actual, expected: actual not in expected,
    "contains": lambda actual, expected: actual is not None and expected in actual,
    "truthy": lambda actual, _: bool(actual),
    "falsy": lambda actual, _: not actual,
}


class StateCondition(Behaviour):
    def __init__(self, name: str = "StateCondition", predicate: Callable[[BaseModel], bool] | None = None, *,
                 key: str | None = None, op: str = "==", value: Any = True, namespace: str | None = None):
        super().__init__(name=name, namespace=namespace)
        if (predicate is None) == (key is None):
            raise ValueError(f"StateCondition {name!r}: give either a predicate or a key, not both or neither")
        if op not in OPERATORS:
            raise ValueError(f"StateCondition {name!r}: unknown op {op!r} (one of {', '.join(OPERATORS)})")
        self.predicate = predicate
        self.key = key
        self.op = op
        self.value = value
        if key is not None:
            self.input_ports = (key,)

    def update(self) -> Status:
        if self.predicate is not None:
            holds = self.predicate(self._require_state().model)
        else:
            holds = OPERATORS[self.op](self.read_port(self.key), self.value)
        return Status.SUCCESS if holds else Status.FAILURE


__all__ = ["OPERATORS", "StateCondition"]
