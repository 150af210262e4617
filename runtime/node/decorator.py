"""`@node`: turn a function of the state into a node, for prototypes.

    @node(name="double")
    def double(state):
        return {"result": state["input"] * 2}

    tree = double().bind(inputs={"input": "raw"}, outputs={"result": "doubled"})

The function (sync or async) receives a copy of its namespace's values, with each bound
input port filled from its state key; it returns a dict written back as output ports in
one update (None → nothing), optionally a `Status`, or a bool (True SUCCESS / False FAILURE).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from py_trees.common import Status

from ..engine.behaviour import AsyncBehaviour
from ..signals import run_user_code


class FunctionNode(AsyncBehaviour):
    func: ClassVar[Callable[[dict[str, Any]], Any]]
    default_name: ClassVar[str] = "FunctionNode"

    def __init__(self, name: str | None = None, namespace: str | None = None):
        super().__init__(name=name or self.default_name, namespace=namespace)

    async def update_async(self) -> Status:
        state = self._require_state().view(self.namespace)
        for port in self._input_bindings:
            state[port] = self.read_port(port)
        result = await run_user_code(type(self).func, state)  # a sync one: a signal stops it (runtime/signals.py)
        if inspect.isawaitable(result):
            result = await result
        if result is None:
            return Status.SUCCESS
        if isinstance(result, Status):
            return result
        if isinstance(result, bool):
            return Status.SUCCESS if result else Status.FAILURE
        if isinstance(result, Mapping):
            self.write_ports(result)
            return Status.SUCCESS
        raise TypeError(f"@node function {type(self).func.__name__} returned {type(result).__name__}; "
                        "expected a dict, a Status, a bool or None")


def node(func: Callable | None = None, *, name: str | None = None, description: str | None = None):
    """Decorator (with or without arguments) making a `FunctionNode` subclass of `func`."""

    def wrap(fn: Callable) -> type[FunctionNode]:
        doc = description or inspect.getdoc(fn) or ""
        return type(fn.__name__, (FunctionNode,), {
            "func": staticmethod(fn), "default_name": name or fn.__name__, "__doc__": doc,
            "__module__": fn.__module__, "__qualname__": fn.__qualname__})

    return wrap(func) if func is not None else wrap


__all__ = ["FunctionNode", "node"]
