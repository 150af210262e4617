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
    """What the run is doing (or which past it shows) · why it failed · tick · root status · tokens ·
    branch · the session's last message."""

    def show(self, session: DebugSession) -> None:
        """The badge, then tick, root status, tokens and branch of the frame shown. In the past the
        badge names the view, never the live run's state (that is named beside the way back)."""
        sep = (" │ ", "dim")
        frame = session.frame
        viewing = session.viewing
        failure = session.failure  # first, so a narrow screen keeps it
        tokens = session.tokens if viewing is None else frame.tokens  # live: every model call counted
        if viewing is None:
            badge, style, hint = run_state_text(session), STATE_STYLES[session.run_state], None
        elif session.recorded_run is not None:
            badge, style, hint = "RECORDING (read-only)", "bold blue", "f: replay/fork"
        else:
            badge, style = "PAST (read-only)", "bold yellow"
            hint = f"esc: back to live ({run_state_text(session)}, tick {session.tick})"
        line = Text.assemble((f" {badge} ", f"reverse {style}"),
                             *((sep, (f"✘ {failure.headline}", "bold red")) if failure else ()),
                             sep, f"tick {frame.tick}", sep, "root ", status_text(frame.root_status),
                             sep, f"tokens {tokens}", sep, f"branch {frame.branch}")
        if hint:
            line.append_text(Text.assemble(sep, (hint, "yellow")))
        if session.message and not failure:
            line.append_text(Text.assemble(sep, (session.message, "italic")))
        self._line = line
        self._fit()
        if line != self._shown:  # most redraws restate it; and its size is the stylesheet's (or `_fit`'s),
            self._shown = line   # never the text's, so a new text needs no layout of the whole screen
            self.update(line, layout=False)

    _shown: Text | None = None

    _line: Text | None = None

    MAX_ROWS = 3

    def _fit(self) -> None:
        """Why it failed or stopped, and which checkpoint is shown, are never cut off: a line wider
        than the screen takes the rows it needs (at most three)."""
        width = max(self.size.width, 1)
        length = self._line.cell_len if self._line is not None else 0
        rows = min(self.MAX_ROWS, max(1, -(-length // width)))
        if self.styles.height is None or self.styles.height.value != rows:
            self.styles.height = rows

    def on_resize(self) -> None:
        self._fit()
