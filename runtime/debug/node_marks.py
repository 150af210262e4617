"""What `b` does on a node, written once for the debugger and for a studio attached to one.

The attached session mirrors the served debugger's breakpoints so a mark shows at once, and sends
each change to the server; both decide the same way what a toggle means and which moments a node
breakpoint may take.
"""

from __future__ import annotations

from typing import Protocol

from .breakpoints import NODE_MOMENTS, Breakpoint, BreakpointError, marked_nodes
from .children import refused_moment, split_child_path


class HoldsBreakpoints(Protocol):
    breakpoints: list[Breakpoint]

    def add_node_breakpoint(self, path: str, on: str = "before") -> Breakpoint: ...
    def set_breakpoint(self, bp: Breakpoint, *, enabled: bool | None = None, on: str | None = None) -> None: ...
    def remove_breakpoint(self, bp: Breakpoint) -> None: ...


def toggle_node_breakpoint(holder: HoldsBreakpoints, path: str, on: str = "before") -> bool:
    """Add or remove a node breakpoint, as its mark in the tree shows (`marked_nodes`: a disabled one is
    enabled again); True when one is now set (a swarm agent's node: after, the only moment it has)."""
    existing = [bp for bp in holder.breakpoints if bp.kind == "node" and bp.node == path]
    if path in marked_nodes(existing):
        for bp in existing:
            holder.remove_breakpoint(bp)
        return False
    if existing:  # disabled only, so not marked: b marks it again, as it was set
        for bp in existing:
            holder.set_breakpoint(bp, enabled=True)
        return True
    holder.add_node_breakpoint(path, "after" if split_child_path(path) is not None else on)
    return True


def check_moment(bp: Breakpoint, on: str | None) -> None:
    """`BreakpointError` when `bp` cannot be switched to stop `on` (before / after; None: no switch)."""
    if on is None:
        return
    if bp.kind != "node" or on not in NODE_MOMENTS:
        raise BreakpointError(f"only a node breakpoint stops before or after, not {bp.label}")
    if (refused := refused_moment(bp.node, on)) is not None:
        raise BreakpointError(refused)


__all__ = ["check_moment", "toggle_node_breakpoint"]
