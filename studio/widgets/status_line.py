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
    """What the run is doing (or which past it shows) · why it failed · the session's last message (why
    it stopped, what is shown) · the way back from the past · tick · root status · tokens · branch."""

    def show(self, session: DebugSession) -> None:
        """What must be read first, then tick, root status, tokens and branch of the frame shown. In the
        past the badge names the view, never the live run's state (that is named beside the way back)."""
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
        essential = Text.assemble((f" {badge} ", f"reverse {style}"),
                                  *((sep, (f"✘ {failure.headline}", "bold red")) if failure else ()),
                                  *((sep, (session.message, "italic")) if session.message and not failure else ()),
                                  *((sep, (hint, "yellow")) if hint else ()))
        line = essential + Text.assemble(sep, f"tick {frame.tick}", sep, "root ", status_text(frame.root_status),
                                         sep, f"tokens {tokens}", sep, f"branch {frame.branch}")
        self._essential = essential.cell_len
        self._fit()
        if line != self._shown:  # most redraws restate it; and its size is the stylesheet's (or `_fit`'s),
            self._shown = line   # never the text's, so a new text needs no layout of the whole screen
            self.update(line, layout=False)

    _shown: Text | None = None

    _essential = 0  # cells of what is never cut: the badge, why it failed or stopped, what is shown

    MAX_ROWS = 3

    def _fit(self) -> None:
        """Why it failed or stopped, and which checkpoint is shown, come first and are never cut off:
        when they are wider than the screen the line takes the rows they need (at most three). The
        frame's figures after them are cut instead, so moving between frames keeps the line's height
        (and lays nothing out) unless the reason itself grows."""
        width = max(self.size.width or self.app.size.width, 1)  # (not laid out yet: the screen's width)
        rows = min(self.MAX_ROWS, max(1, -(-self._essential // width)))
        if self.styles.height is None or self.styles.height.value != rows:
            self.styles.height = rows

    def on_resize(self) -> None:
        self._fit()
