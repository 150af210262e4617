"""Command palette (ctrl+p): jump to a node or a checkpoint, add a conditional or event breakpoint.

The keys of the main screen are added as system commands by `StudioApp`, and Textual's
own system commands bring "change theme".
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.screen import Screen

from .screens.prompt import PromptScreen
from .widgets.timeline import field_of


class StudioCommands(Provider):
    """Commands over what the session holds right now (nodes, checkpoints, breakpoints)."""

    @property
    def main(self) -> Screen:
        """The app's main screen (`studio.app.MainScreen`, which imports this module: named, not imported)."""
        return self.app.main

    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        main = self.main
        session = main.session
        commands = [
            ("Add a conditional breakpoint…", "stop when a state condition becomes true, e.g. words > 5",
             partial(self._prompt, "conditional breakpoint", "a condition over state keys: rounds >= 2, "
                     "len(messages) > 3, all.words == 9", session.add_condition_breakpoint)),
            ("Add an event breakpoint…", "stop after a tick that published an event type, e.g. tool.call.failed",
             partial(self._prompt, "event breakpoint", "an event type: tool.call.failed, approval.requested",
                     session.add_event_breakpoint)),
        ]
        tree = main.query_one("#tree")
        views = session.node_views()
        for path, name in zip(views.paths, views.names, strict=True):
            commands.append((f"Jump to node {name}", path, partial(tree.jump, path)))
        checkpoints = getattr(session, "checkpoints", None)
        for row in checkpoints() if callable(checkpoints) else ():
            row_id = field_of(row, "id")
            commands.append((f"Jump to checkpoint at tick {field_of(row, 'tick')}",
                             f"checkpoint {row_id} on branch {field_of(row, 'branch') or 'main'}",
                             partial(main.view_checkpoint, row_id)))
        return commands

    def _prompt(self, title: str, hint: str, apply: Callable[[str], object]) -> None:
        self.app.push_screen(PromptScreen(title, hint, apply=apply),
                             lambda text: text and self.app.notify(f"{title} set: {text}"))

    async def startup(self) -> None:
        self._cached = self._commands()

    async def discover(self) -> Hits:
        for title, help_text, callback in self._cached[:2]:
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self._cached:
            score = matcher.match(f"{title} {help_text}")
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)
