"""One line saying what the run is doing now, so nobody has to guess why nothing moves."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ..session import DebugSession, RunState
from .marks import status_text

STATE_STYLES = {
    RunState.READY: "bold cyan", RunState.PAUSED: "bold cyan", RunState.RUNNING: "bold yellow",
    RunState.WAITING: "bold yellow", RunState.SUSPENDED: "bold magenta", RunState.FINISHED: "bold green",
    RunState.RECORDED: "bold blue",
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
        """The run state, then tick, root status, tokens and branch of the frame shown."""
        sep = (" │ ", "dim")
        frame = session.frame
        viewing = session.viewing
        failure = getattr(session, "failure", None)  # first, so a narrow screen keeps it
        tokens = session.tokens if viewing is None else frame.tokens  # live: every model call counted
        line = Text.assemble((f" {run_state_text(session)} ", f"reverse {STATE_STYLES[session.run_state]}"),
                             *((sep, (f"✘ {failure.headline}", "bold red")) if failure else ()),
                             sep, f"tick {frame.tick}", sep, "root ", status_text(frame.root_status),
                             sep, f"tokens {tokens}", sep, f"branch {frame.branch}")
        if viewing is not None:
            what = "RECORDING" if session.recorded_run is not None else "PAST"
            line.append_text(Text.assemble(sep, (f" {what}: tick {frame.tick} (read-only) · "
                                                 + ("f: replay/fork " if what == "RECORDING" else "esc: back to live "),
                                                 "reverse bold yellow")))
        if session.message and not failure:
            line.append_text(Text.assemble(sep, (session.message, "italic")))
        self.update(line)
