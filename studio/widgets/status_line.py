"""One line saying what the run is doing now, so nobody has to guess why nothing moves."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ..session import DebugSession, RunState
from .marks import status_text
from .timeline import field_of

STATE_STYLES = {
    RunState.READY: "bold cyan", RunState.PAUSED: "bold cyan", RunState.RUNNING: "bold yellow",
    RunState.WAITING: "bold yellow", RunState.SUSPENDED: "bold magenta", RunState.FINISHED: "bold green",
}


def run_state_text(session: DebugSession) -> str:
    state = session.run_state
    if state == RunState.WAITING:
        names = [path.rpartition("/")[2] for path in session.waiting_on()]
        return f"waiting for {', '.join(names) or 'a wake'}"
    if state == RunState.SUSPENDED:
        return "suspended for approval" if session.pending_approvals() else "suspended"
    return state.value


class StatusLine(Static):
    """Run state · why it failed · tick · root status · tokens · branch · the session's last message."""

    def show(self, session: DebugSession) -> None:
        sep = (" │ ", "dim")
        failure = getattr(session, "failure", None)  # first, so a narrow screen keeps it
        line = Text.assemble((f" {run_state_text(session)} ", f"reverse {STATE_STYLES[session.run_state]}"),
                             *((sep, (f"✘ {failure.headline}", "bold red")) if failure else ()),
                             sep, f"tick {session.tick}", sep, "root ", status_text(session.root_status),
                             sep, f"tokens {session.tokens}", sep,
                             f"branch {getattr(session, 'branch', None) or 'main'}")
        viewing = getattr(session, "viewing", None)
        if viewing is not None:
            line.append_text(Text.assemble(sep, (f" PAST: tick {field_of(viewing, 'tick')} (read-only) · "
                                                 "esc: back to live ", "reverse bold yellow")))
        if session.message and not failure:
            line.append_text(Text.assemble(sep, (session.message, "italic")))
        self.update(line)
