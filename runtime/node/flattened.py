"""`FlattenedAgentNode`: a decorator whose subtree is built when it first runs.

The base of `SkillNode` and `SwarmNode`. A subclass only says what to build:

    class MyAgent(FlattenedAgentNode):
        def build_subtree(self) -> py_trees.behaviour.Behaviour:
            return create_react_node(name="inner", tools=[...])

On its first `initialise()` the node compiles (`_compile_subtree()`): it calls
`build_subtree()` once, gives every compiled Jianmu node its own namespace
`skill_runtime.<name>_<struct_id>` (a node that had a namespace keeps it, nested under that
one), puts the subtree in place of the placeholder child, injects the runtime services it
received into the new nodes, and tells the runner the tree changed shape, so paths,
statuses, checkpoints and the studio see the new nodes from that tick on.

`struct_id` hashes the node's path in the tree: two instances never share a namespace, and
the same tree gets the same namespaces in every process, which is what lets a checkpoint
taken inside a compiled subtree restore in a fresh process (the checkpoint loader compiles
the subtree again from the checkpoint's state, then puts back its nodes' statuses).

A node compiles once. Re-entering it (a loop's next iteration, the next run, a restore to
a checkpoint taken before the compile) reuses the subtree, reset to INVALID, with an empty
namespace: `terminate()` clears it whenever the node stops (twice is harmless, pitfall 5).
So the tree keeps one shape for paths, breakpoints and checkpoints, and `build_subtree()`
should not depend on state that differs between entries.
"""

from __future__ import annotations

import hashlib
import re

import py_trees
from py_trees.common import Status

from ..engine.behaviour import Behaviour, Decorator, JianmuNodeMixin
from ..engine.deps import InjectPayload, inject_runtime_deps
from ..state import StateManager

_UNSAFE = re.compile(r"[^0-9A-Za-z_-]+")


class SubtreeBuildError(RuntimeError):
    """`build_subtree()` failed or returned something that cannot be installed."""


def subtree_namespace(name: str, path: str) -> str:
    """`skill_runtime.<name>_<struct_id>`, with `struct_id` a stable hash of the node's path."""
    struct_id = hashlib.blake2b(path.encode(), digest_size=4).hexdigest()
    return f"skill_runtime.{_UNSAFE.sub('_', name).strip('_') or 'node'}_{struct_id}"


class Deferred(Behaviour):
    """The placeholder child of a node that has not compiled its subtree yet."""

    def __init__(self) -> None:
        super().__init__(name="(not compiled)")

    def update(self) -> Status:
        raise RuntimeError(f"{self.path}: the subtree was never compiled (initialise() did not run)")


class FlattenedAgentNode(Decorator):
    """A decorator that compiles its subtree on first entry; override `build_subtree()`."""

    def __init__(self, name: str, namespace: str | None = None):
        super().__init__(name=name, child=Deferred(), namespace=namespace)
        self._is_compiled = False
        self._ns: str | None = None  # the compiled subtree's namespace
        self._payload: InjectPayload | None = None

    def build_subtree(self) -> py_trees.behaviour.Behaviour:
        """The subtree to run: a fresh one, called once, at compile time (may `read_port`)."""
        raise NotImplementedError(f"{type(self).__name__} must implement build_subtree()")

    # -- compiling -------------------------------------------------------------------
    def inject(self, payload: InjectPayload) -> None:
        super().inject(payload)
        self._payload = payload  # handed on as it is to the nodes this one compiles

    def _compile_subtree(self) -> bool:
        """Build and install the subtree unless it is there already; True when it compiled now."""
        if self._is_compiled:
            return False
        try:
            subtree = self.build_subtree()
        except Exception as exc:
            raise SubtreeBuildError(f"building the subtree failed: {type(exc).__name__}: {exc}") from exc
        if not isinstance(subtree, py_trees.behaviour.Behaviour):
            raise SubtreeBuildError(f"build_subtree() returned {type(subtree).__name__}, not a py_trees behaviour")
        if subtree.parent is not None:
            raise SubtreeBuildError(f"build_subtree() returned {subtree.name!r}, which already belongs to "
                                    f"{subtree.parent.name!r}: build a fresh subtree on every call")
        self._ns = subtree_namespace(self.name, self.path)
        for node in subtree.iterate():
            if isinstance(node, JianmuNodeMixin):
                node.namespace = f"{self._ns}.{node.namespace}" if node.namespace else self._ns
        subtree.parent = self
        self.decorated = subtree
        self.children = [subtree]
        self._is_compiled = True
        self._inject_dependencies_to_pipeline(subtree)
        if self._payload is not None and self._payload.tree_changed is not None:
            self._payload.tree_changed()
        return True

    def _inject_dependencies_to_pipeline(self, pipeline: py_trees.behaviour.Behaviour) -> None:
        """The compiled nodes did not exist when the runner injected the tree: hand them what this node got."""
        if self._payload is not None:
            for node in pipeline.iterate():
                inject_runtime_deps(node, self._payload)

    def compile_from(self, state: StateManager) -> None:
        """Compile as a checkpoint had it: `build_subtree()` reads `state` (the checkpoint's), not the live one."""
        live, self.state_manager = self.state_manager, state
        try:
            self._compile_subtree()
        finally:
            self.state_manager = live

    # -- running ---------------------------------------------------------------------
    def initialise(self) -> None:
        if self._compile_subtree():
            self.emit("subtree.compiled", {"namespace": self._ns,
                                           "nodes": sum(1 for _ in self.decorated.iterate())})

    def update(self) -> Status:
        return self.decorated.status

    def terminate(self, new_status: Status) -> None:
        """Drop the subtree's namespace and those nested in it (idempotent: it may run twice)."""
        sm = self.state_manager
        if self._ns is None or sm is None:
            return
        for ns in sm.namespaces():
            if ns is not None and (ns == self._ns or ns.startswith(self._ns + ".")):
                sm.clear(ns)

    # -- checkpoints -----------------------------------------------------------------
    def dump_resume_state(self) -> dict[str, bool]:
        """`compiled` tells the checkpoint loader to compile the subtree before matching node paths."""
        return {"compiled": self._is_compiled}

    def restore_resume_state(self, data: dict[str, bool]) -> None:
        """Nothing else to put back: the loader compiled the subtree (`compile_from`) before restoring."""


__all__ = ["Deferred", "FlattenedAgentNode", "SubtreeBuildError", "subtree_namespace"]
