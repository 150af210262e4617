"""The two what-ifs a recorded call offers: fork with its answer edited, and (a model call) re-send it
as edited. Each opens the `AnswerEditor`; a fork then goes back to the main screen, held on the new
branch; a re-send shows the two answers side by side (`ResentScreen`)."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen

from runtime.memory.checkpoint.whatif_marks import CallRef

from .answer_editor import AnswerEditor

FORK_HINT = ("The fork starts just before this call, on a new branch, and gets this answer instead; the calls "
             "after it are served from the recording while their requests match, and made live after.")
MODEL_ANSWER = "The answer, as a message in JSON (or plain text for an answer that is only text). "
TOOL_RESULT = "The tool's result, as text. "
RESEND_HINT = ("The request as JSON: edit its messages, the tools offered or the parameters (temperature, "
               "max_tokens, …). It goes to the node's endpoint, else the one $JIANMU_BASE_URL names; the run is "
               "not touched.")
REQUEST_PARTS = ("messages", "tools", "parameters")


def ask_what_if(screen: Screen, session: Any, ref: CallRef, answer: Any, title: str) -> None:
    """Edit `answer`, then fork from just before the call with it; back on the main screen, held there."""
    def forked(branch: str | None) -> None:
        if branch is None:
            return
        app = screen.app
        while len(app.screen_stack) > 1:
            app.pop_screen()
        app.notify(f"on {branch}: held before the call, which gets the edited answer (n steps, c continues)",
                   title="what if")

    hint = (MODEL_ANSWER if ref.kind == "model" else TOOL_RESULT) + FORK_HINT
    screen.app.push_screen(AnswerEditor(f"what if: {title}", hint, answer, lambda value: session.what_if(ref, value),
                                        "Fork"), forked)


def request_edits(value: Any) -> dict[str, Any]:
    """The editor's request as `resend`'s edits; `ValueError` when it is not {messages, tools, parameters}."""
    if not isinstance(value, dict) or set(value) - set(REQUEST_PARTS):
        raise ValueError(f"the request is a JSON object with {', '.join(REQUEST_PARTS)}")
    return {part: value[part] for part in REQUEST_PARTS if value.get(part) is not None}


def ask_resend(screen: Screen, session: Any, ref: CallRef, request: dict[str, Any], title: str) -> None:
    """Edit the request, send it, and show the new answer beside the recorded one."""
    from .resent import ResentScreen

    def answered(mark: Any) -> None:
        if mark is not None:
            screen.app.push_screen(ResentScreen(title, mark))

    async def send(value: Any) -> Any:
        return await session.resend(ref, **request_edits(value))

    screen.app.push_screen(AnswerEditor(f"re-send: {title}", RESEND_HINT, request, send, "Send"), answered)


__all__ = ["ask_resend", "ask_what_if", "request_edits"]
