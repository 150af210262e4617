"""One model call, readable: the conversation sent, the tools offered, the config, the
response, usage, latency and attempts. Enter on any item opens it whole (`ValueScreen`).

`ModelCallsScreen` lists the calls of a node (or of the run) and opens one with Enter.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from ..model_calls import ModelCall
from ..session.api import answered
from ..whatifs import model_call_ref
from .messages import message_block
from .value import ValueScreen
from .whatif import ask_resend, ask_what_if


def items(call: ModelCall) -> list[tuple[str, Any, Any]]:
    """(title, what the list shows, the full value Enter opens) for each part of a call."""
    facts = Table.grid(padding=(0, 1))  # one fact a line: nothing runs into its neighbour when it wraps
    facts.add_column(style="dim", no_wrap=True)
    facts.add_column()
    facts.add_row("node", Text(call.node))  # (a str cell is read as markup; the model is the endpoint's word)
    facts.add_row("round", f"{call.round}   tick {call.tick}")
    facts.add_row("model", Text(str(call.model or "-")))
    facts.add_row("latency", f"{call.duration_ms} ms" if call.duration_ms is not None else "-")
    facts.add_row("usage", Text(", ".join(f"{k.removesuffix('_tokens')} {v}" for k, v in call.usage.items()) or "-"))
    facts.add_row("outcome", Text(call.outcome, "red" if call.error else "green"))
    out: list[tuple[str, Any, Any]] = [("call", facts, _summary(call))]
    attempts = Text()
    for attempt in call.attempts:
        attempts.append(f"attempt {attempt.number}  {attempt.model or '-'}  ")
        attempts.append(f"✘ {attempt.error}{' (retried)' if attempt.will_retry else ''}\n" if attempt.error
                        else "✔ answered\n", "red" if attempt.error else "green")
    if call.empty_retry:
        attempts.append("the first reply was empty: asked again with a nudge\n", "yellow")
    attempts.rstrip()
    out.append(("attempts", attempts or Text("no attempt seen", "dim"), [vars(a) for a in call.attempts]))
    if call.messages is None:
        out.append(("messages sent", Text("not recorded (only a run recorded into a store keeps the request; "
                                          "a swarm agent's own runner records nothing)", "dim"), None))
    else:
        out += [(f"message {i}: {m.get('role')}", message_block(m), m) for i, m in enumerate(call.messages)]
    for tool in call.tools:
        out.append((f"tool offered: {tool.get('name')}",
                    Text.assemble(("tool offered ", "dim"), (str(tool.get("name")), "bold"), "  ",
                                  str(tool.get("description") or "")), tool))
    if call.settings:
        out.append(("config", Text.assemble(("config ", "dim"), ", ".join(f"{k}={v}" for k, v in call.settings.items())),
                    call.settings))
    if call.response is not None:
        reply = dict(call.response.get("message") or {})
        out.append(("response", Group(Text("response", "bold underline"), message_block(reply)), call.response))
    return out


def _summary(call: ModelCall) -> dict[str, Any]:
    return {"node": call.node, "round": call.round, "tick": call.tick, "model": call.model, "usage": call.usage,
            "duration_ms": call.duration_ms, "finish_reason": call.finish_reason, "error": call.error}


class ModelCallScreen(ModalScreen[None]):
    """The parts of one call as a list; Enter opens the highlighted part in full. With a session that
    offers them, a recorded call can be forked from with its answer edited (w) and re-sent as edited (r)."""

    BINDINGS = [Binding("escape", "dismiss", "Close", id="model-call-close"),
                Binding("w", "what_if", "What if", id="model-call-what-if",
                        tooltip="Fork from just before this call with its answer edited"),
                Binding("r", "resend", "Re-send", id="model-call-resend",
                        tooltip="Send this call again as edited, the new answer beside the recorded one")]

    def __init__(self, call: ModelCall, session: Any = None) -> None:
        super().__init__()
        self.call, self.session = call, session
        self._items = items(call)
        self._ref = model_call_ref(call) if call.messages is not None else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("what_if", "resend"):
            return self._ref is not None and callable(getattr(self.session, action, None))
        return True

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide tall") as dialog:
            dialog.border_title = Content(f"model call: {self.call.title}")
            offers = " · w: what if (fork, answer edited) · r: re-send as edited" \
                if self.check_action("what_if", ()) else ""
            dialog.border_subtitle = f"enter: the whole item{offers} · esc: close"
            options: list[Option | None] = []
            for i, (_, shown, _) in enumerate(self._items):
                options += [Option(shown, id=str(i)), None]  # None: a separator line
            yield OptionList(*options[:-1], id="model-call-items")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        title, _, value = self._items[int(event.option.id)]
        if value is not None:
            self.app.push_screen(ValueScreen(f"{self.call.title}: {title}", value))

    def action_what_if(self) -> None:
        call = self.call
        answer = dict((call.response or {}).get("message") or {"role": "assistant", "content": ""})
        ask_what_if(self, self.session, self._ref, answer, call.title)

    def action_resend(self) -> None:
        call = self.call
        request = {"messages": call.messages, "tools": (call.config or {}).get("tools"), "parameters": call.settings}
        ask_resend(self, self.session, self._ref, request, call.title)


class ModelCallsScreen(ModalScreen[None]):
    """The model calls of a node (or of the whole run); Enter opens one."""

    BINDINGS = [Binding("escape", "dismiss", "Close", id="model-calls-close")]

    def __init__(self, title: str, calls: list[ModelCall], open_call, session: Any = None) -> None:
        super().__init__()
        self._title, self.calls, self._open, self.session = title, calls, open_call, session

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide") as dialog:
            dialog.border_title = Content(self._title)
            dialog.border_subtitle = "enter: open the call · esc: close"
            if not self.calls:
                yield Label("no model call yet: step or continue the run first", classes="hint")
            yield OptionList(*(Option(Text.assemble((call.title, "bold"), "  ", (call.outcome, "dim")), id=str(i))
                               for i, call in enumerate(self.calls)), id="model-calls-list")

    async def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.app.push_screen(ModelCallScreen(await answered(self._open, self.calls[int(event.option.id)]),
                                             self.session))


__all__ = ["ModelCallScreen", "ModelCallsScreen", "items"]
