"""What a debugger's edits must satisfy before they touch a served run.

The rules are the studio's local session's (`studio.edits`): a state key is edited only
when the schema declares it, the runtime owns it (`StateKeys`) or the state holds it, in
a namespace the tree or the state knows; a port is rebound only to such a key, or to
`<namespace>.<field>` for a known namespace. Each refusal is one line naming the node,
port, key or namespace at fault (`EditRefused`), sent back to the client as `bad_request`.
"""

from __future__ import annotations

from typing import Any

from ..engine.behaviour import JianmuNodeMixin
from ..engine.runner import ReactiveRunner
from ..state import StateKeys, normalize_namespace

RUNTIME_KEYS = frozenset(StateKeys().model_dump().values())


class EditRefused(ValueError):
    """An edit that does not fit the run; the message is the reason."""


def known_namespaces(runner: ReactiveRunner) -> set[str]:
    """Namespaces of the tree's nodes and of the state."""
    from_tree = {ns for node in runner.nodes.values() if (ns := getattr(node, "namespace", None))}
    return from_tree | {ns for ns in runner.state_manager.namespaces() if ns}


def check_state_key(runner: ReactiveRunner, namespace: Any, key: Any) -> str | None:
    """The normalised namespace of an edit to `key`; `EditRefused` when the key or namespace is unknown."""
    if not isinstance(key, str) or not key:
        raise EditRefused(f"a state key is non-empty text, not {key!r:.40}")
    try:
        namespace = normalize_namespace(namespace)
    except ValueError as exc:
        raise EditRefused(str(exc)) from None
    known = known_namespaces(runner)
    if namespace is not None and namespace not in known:
        raise EditRefused(f"no namespace {namespace!r} (namespaces: {', '.join(sorted(known))})")
    sm = runner.state_manager
    if not (sm.has_field(key) or key in RUNTIME_KEYS or sm.contains(key, namespace)):
        where = f"{namespace}.{key}" if namespace else key
        raise EditRefused(f"no state key {where!r} (fields of {sm.schema.__name__}: {', '.join(sm.schema.model_fields)})")
    return namespace


def check_binding(runner: ReactiveRunner, path: str, direction: Any, port: Any, key: Any) -> tuple[JianmuNodeMixin, str]:
    """The node and the normalised state key of a rebinding; `EditRefused` saying what does not fit."""
    node = runner.nodes.get(path)
    if node is None:
        raise EditRefused(f"no node at path {path!r}")
    if not isinstance(node, JianmuNodeMixin):
        raise EditRefused(f"{path} is a plain py_trees node: it has no ports")
    if direction not in ("in", "out"):
        raise EditRefused(f"direction must be 'in' or 'out', not {direction!r}")
    declared = node.input_ports if direction == "in" else node.output_ports
    bound = node.input_bindings if direction == "in" else node.output_bindings
    if port not in (*declared, *bound):
        raise EditRefused(f"{path} has no {direction}put port {port!r} (ports: {', '.join(declared) or 'none'})")
    if not isinstance(key, str):
        raise EditRefused(f"a state key is text, not {type(key).__name__} ({key!r:.40})")
    key = key.strip().removeprefix("state.")
    if not key:
        raise EditRefused("a binding needs a state key")
    sm = runner.state_manager
    qualified = any(key.startswith(ns + ".") and sm.has_field(key[len(ns) + 1:]) for ns in known_namespaces(runner))
    if not (qualified or sm.has_field(key) or key in RUNTIME_KEYS
            or sm.contains(key, getattr(node, "namespace", None)) or sm.contains(key)):
        fields = ", ".join(sm.schema.model_fields)
        raise EditRefused(f"no state field {key!r} in {sm.schema.__name__} (fields: {fields})")
    return node, key


__all__ = ["EditRefused", "check_binding", "check_state_key", "known_namespaces"]
