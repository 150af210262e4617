"""What the headless commands (`run`, `resume`) take and print: the approval flags, one line per
tick, one line per answered call, one line per call left waiting."""

from __future__ import annotations

import argparse
import json
from typing import Any

from runtime.engine.runner import TickReport
from runtime.guard import Answers, ApprovalRequest
from runtime.terminal import terminal_line

MAX_SHOWN = 8  # changed nodes listed per tick line (--json lists them all)
APPROVALS_HELP = """\
approvals: a tool call that needs approval suspends the run. Without an answer the run
stops (exit 1) with a line naming the tool that waits; `jianmu-studio resume` answers it
later, from any process. Answer from the command line:
  --approve all                      approve every call
  --approve send_email               approve calls of one tool (repeat for more)
  --deny send_email:not in CI        deny one tool, with the reason the model reads
  --approve 3f2a9c1e                 approve one call by its approval id
  --approve all --deny rm            a rule naming the call or its tool wins over `all`
"""


def run_id(text: str) -> str:
    """A `--run` value: an empty one (a variable that expanded to nothing) is refused, never read as "no
    run given" (which picks a run: the only one waiting, every run, the picker)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"an empty run id ({text!r})")
    return text


def add_approval_flags(command: argparse.ArgumentParser) -> None:
    command.add_argument("--approve", action="append", default=[], metavar="TOOL|ID|all",
                         help="approve pending calls of TOOL, the call ID, or every call (repeatable)")
    command.add_argument("--deny", action="append", default=[], metavar="TOOL|ID|all[:REASON]",
                         help="deny pending calls of TOOL, the call ID, or every call; the model reads REASON "
                              "(repeatable)")


def answers(args: argparse.Namespace) -> Answers:
    """The rules --approve and --deny give; a bad one raises `ApprovalError` (one line)."""
    return Answers.of(args.approve, args.deny, default_reason="denied by --deny", flags=("--approve", "--deny"))


def tick_line(report: TickReport, as_json: bool) -> str:
    if as_json:
        return json.dumps({"tick": report.tick, "status": report.status.value,
                           "changed": {p: [o.value, n.value] for p, (o, n) in report.changed.items()},
                           "state_keys": report.state_keys})
    shown = [f"{p.rpartition('/')[2]}:{o.value}→{n.value}" for p, (o, n) in list(report.changed.items())[:MAX_SHOWN]]
    more = len(report.changed) - MAX_SHOWN
    changed = ", ".join(shown) + (f", … {more} more" if more > 0 else "")
    return f"tick {report.tick:>4}  {report.status.value:<8} {terminal_line(changed)}"


def decision_line(request: ApprovalRequest, approved: bool, reason: str, as_json: bool) -> str:
    verdict = "approved" if approved else "denied"
    if as_json:
        return json.dumps({"approval": {"id": request.id, "tool": request.tool, "arguments": request.arguments,
                                        "decision": verdict, "reason": reason or None}})
    return terminal_line(f"{verdict} {request.tool}({arguments_text(request.arguments)})" + (f": {reason}" if reason else ""))


def waiting_line(request: ApprovalRequest) -> str:
    return terminal_line(f"jianmu-studio: {request.tool}({arguments_text(request.arguments)}) waits for approval: "
                         f"answer with --approve {request.tool} or --deny {request.tool}:REASON")


def arguments_text(arguments: dict[str, Any], limit: int = 80) -> str:
    text = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in arguments.items())
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["APPROVALS_HELP", "add_approval_flags", "answers", "arguments_text", "decision_line", "run_id",
           "tick_line", "waiting_line"]
