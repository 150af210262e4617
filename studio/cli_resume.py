"""`jianmu-studio resume`: answer a run that waits for an approval, and go on with it here.

    jianmu-studio resume [STORE] [--run ID] [--tree TREE] --approve TOOL|ID|all ... --deny TOOL|ID|all[:REASON] ...
                         [--json]

The run may have suspended in any process, any time before (a `run` that stopped for an
approval, a service's worker): its tree file is built again (the file the store names for the
run, else the text kept with it, or --tree), its last checkpoint restored, the calls that wait
answered, and the run goes on in this process, recording into the same store, one line per
tick, until it ends or waits again. The approved call runs here, once; a denied one never runs.
This is `Agent.resume` (docs/resume.md) on the command line.

STORE defaults to $JIANMU_DB, else the studio's default store; --run to the store's only run
that waits for an approval. Exit status as `run`: 0 the run succeeded, 1 it failed or waits
again, 2 bad input (no such run, one that waits for nothing or that a live process still
writes, an answer that fits no waiting call, a tree that does not load or fit).
"""

from __future__ import annotations

import argparse
import json
import sys

from py_trees.common import Status

from runtime.guard import ApprovalError, ApprovalRequest, ApprovalStatus
from runtime.memory.checkpoint import CheckpointError, close_store_async, display_name, open_store_async
from runtime.memory.checkpoint.waiting import waiting_runs
from runtime.terminal import terminal_line

from . import headless, stopping
from .places import default_store

COMMAND = "resume"


def add_parser(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser], store_help: str) -> None:
    resume = sub.add_parser(COMMAND, parents=parents, epilog=headless.APPROVALS_HELP,
                            formatter_class=argparse.RawDescriptionHelpFormatter,
                            help="answer a run that waits for an approval (suspended by any process, any time "
                                 "before) and go on with it here")
    resume.add_argument("store", nargs="?", metavar="STORE",
                        help=f"{store_help} (default: $JIANMU_DB, else the studio's default file)")
    resume.add_argument("--run", dest="run_id", type=headless.run_id, help="the run (default: the store's only run that waits)")
    resume.add_argument("--tree", help="the run's tree file, when the store has none recorded for it")
    resume.add_argument("--json", action="store_true", help="print JSON objects instead of text")
    headless.add_approval_flags(resume)


async def resume(args: argparse.Namespace) -> int:
    # (imported here, not with the module: every launch of the studio parses this command's flags)
    from runtime.check.recording import tree_for_run

    rules = headless.answers(args)
    if not rules.approve and not rules.deny:
        raise ApprovalError("resume: answer the waiting calls with --approve or --deny (see --help)")
    name = args.store if args.store is not None else args.db or default_store()
    async with stopping.connecting_async(name):  # a PostgreSQL store: the asyncio one, opened in the loop
        store = await open_store_async(name, create=False)
    try:
        run_id = args.run_id or _only_waiting(store)
        with stopping.user_code():  # the tree's import and build() (tree_for_run builds it once): a Ctrl-C there
            tree = tree_for_run(store, run_id, args.tree)  # ends the command
            agent = tree.build()
        for note in tree.notes:
            stopping.complain(note)
        agent.runner = agent.make_runner(checkpointer=store)
        agent.runner.add_tick_hook(after=lambda _, report: stopping.say(headless.tick_line(report, args.json)))
        agent.context.approval_manager.on_change(lambda request: _say_decided(request, args.json))
        result = await agent.resume(store, run_id, approve=rules.approve, deny=rules.deny)
        failure = agent.failure(agent.runner)
        waiting = [request for request in agent.context.approval_manager.pending() if request.id in result.pending]
        summary = {"status": result.status.value, "termination_reason": result.termination_reason,
                   "final_answer": result.final_answer, "error": failure.line if failure else None,
                   "ticks": agent.runner.tick_count, "run_id": run_id,
                   "waiting_for_approval": [{"id": r.id, "tool": r.tool, "arguments": r.arguments} for r in waiting]}
        if args.json:
            stopping.say(json.dumps({"summary": summary}))
        else:
            stopping.say(terminal_line(f"{summary['status']} at tick {summary['ticks']} ({result.termination_reason}); "
                                       f"run {run_id} recorded in {display_name(store.location)}"))
            if result.final_answer:
                stopping.say(f"final answer: {terminal_line(result.final_answer)}")
        if failure is not None:
            stopping.complain(failure.headline)
        for request in waiting:
            print(headless.waiting_line(request), file=sys.stderr)
        return 0 if result.status == Status.SUCCESS and failure is None else 1
    finally:
        await close_store_async(store)


def _only_waiting(store) -> str:
    """The store's one run that waits for an approval; `CheckpointError` when there is none, or several."""
    runs = waiting_runs(store)
    if len(runs) == 1:
        return runs[0]
    where = display_name(store.location)
    if not runs:
        raise CheckpointError(f"{where}: no run waits for an approval")
    raise CheckpointError(f"{where}: {len(runs)} runs wait for an approval ({', '.join(runs[-5:])}): "
                          "say which with --run ID")


def _say_decided(request: ApprovalRequest, as_json: bool) -> None:
    if request.resolved:
        approved = request.status is ApprovalStatus.APPROVED
        stopping.say(headless.decision_line(request, approved, "" if approved else request.decision_reason or "",
                                            as_json))


__all__ = ["COMMAND", "add_parser", "resume"]
