"""`jianmu-studio check`, `diff`, `export -o`, `import`: recordings as test cases, runs as files.

    jianmu-studio check RECORDING [--run ID] [--branch B] [--tree TREE] [--tools live]
    jianmu-studio diff A [B] [--run ID] [--run ID] [--branch X --branch Y]
    jianmu-studio export STORE --run ID -o FILE.jianmu [--force]
    jianmu-studio import FILE.jianmu [--into STORE]

RECORDING, A and B are stores (FILE.db, postgresql://…) or run files (FILE.jianmu): a run
file is a store of its own. `check` exits 0 when every run checked matches its recording,
1 at the first divergence of any (one line: tick, node, what differed; then an excerpt);
`diff` 0 when the two runs match (times and ids aside), 1 otherwise; 2 is bad input.
"""

from __future__ import annotations

import argparse
import asyncio

from runtime.check import check_run
from runtime.check.recording import tree_for_run
from runtime.memory.checkpoint import StoreError, chosen_store, display_name, open_store
from runtime.memory.checkpoint.runfile import SUFFIX, export_run_file, import_run_file
from runtime.treefile import TreeLoadError

COMMANDS = ("check", "export", "import")
RECORDING_HELP = "a store (FILE.db or postgresql://…) or a run file (FILE.jianmu)"


def add_parsers(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    check = sub.add_parser("check", parents=parents,
                           help="re-run a tree against a recorded run, offline: exit 1 where it parts from it")
    check.add_argument("recording", metavar="RECORDING", help=RECORDING_HELP)
    check.add_argument("--run", dest="run_id", help="the run to check (default: every run in RECORDING)")
    check.add_argument("--branch", default="main", help="the branch to check (default main)")
    check.add_argument("--tree", help="check this tree file instead of the one the run was recorded with")
    check.add_argument("--tools", choices=("recorded", "live"), default="recorded",
                       help="live: run the tools for real and serve only the model's answers")
    export = sub.add_parser("export", parents=parents, help=f"write one run into a run file (FILE{SUFFIX}): "
                            "its branches, events and recorded I/O, and its tree file's text")
    export.add_argument("store", metavar="STORE", help="FILE.db or postgresql://…")
    export.add_argument("--run", dest="run_id", required=True)
    export.add_argument("-o", "--output", required=True, metavar=f"FILE{SUFFIX}")
    export.add_argument("--force", action="store_true", help="overwrite an earlier run file")
    into = sub.add_parser("import", parents=parents, help="put the runs of a run file into a store")
    into.add_argument("runfile", metavar=f"FILE{SUFFIX}")
    into.add_argument("--into", metavar="STORE", help="FILE.db or postgresql://… (default: $JIANMU_DB, else the "
                      "studio's default store)")


def run(args: argparse.Namespace) -> int:
    if args.command == "export":
        return export(args)
    if args.command == "import":
        return import_(args)
    return asyncio.run(check(args))


def export(args: argparse.Namespace) -> int:
    store = open_store(args.store, create=False)
    try:
        count = export_run_file(store, args.run_id, args.output, force=args.force)
        branches = ", ".join(store.branches(args.run_id))
    finally:
        store.close()
    print(f"run {args.run_id} ({count} checkpoints; branches {branches}) written to {args.output}")
    return 0


def import_(args: argparse.Namespace) -> int:
    from .session import default_db_path
    from .session import open_store as open_or_create

    store = open_or_create(chosen_store(args.into, default_db_path()))
    try:
        runs = import_run_file(args.runfile, store)
    finally:
        store.close()
    print(f"{', '.join(f'run {run}' for run in runs)} imported into {display_name(store.location)}")
    return 0


async def check(args: argparse.Namespace) -> int:
    store = open_store(args.recording, create=False)
    try:
        runs = [args.run_id] if args.run_id else [run.run_id for run in store.runs()]
        if not runs:
            raise StoreError(f"{store.location}: holds no runs")
        live = args.tools == "live"
        if live:
            print("tools run live: the model's answers are served from the recording, every tool is called "
                  "for real")
        worst = 0
        for run_id in runs:
            worst = max(worst, await _check_one(store, run_id, args, live))
        return worst
    finally:
        store.close()


async def _check_one(store, run_id: str, args: argparse.Namespace, live: bool) -> int:
    try:
        choice = tree_for_run(store, run_id, args.tree)
    except (TreeLoadError, StoreError) as exc:
        if args.run_id:
            raise
        print(f"run {run_id}: not checked: {exc}")
        return 2
    for note in choice.notes:
        print(note)
    report = await check_run(store, run_id, choice.build, branch=args.branch, tools_live=live)
    ran = f"; {report.tools_run} tool calls made for real" if live else ""
    if report.ok:
        print(f"run {run_id}: ok, {report.ticks} ticks match the recording ({choice.name}{ran})")
        return 0
    print(f"run {run_id}: {report.divergence.line}")
    for line in report.divergence.detail:
        print(f"  {line}")
    if report.also:
        print(f"  (also differing at tick {report.divergence.tick}: {', '.join(report.also)})")
    if ran:
        print(f"  ({ran[2:]})")
    return 1


__all__ = ["COMMANDS", "add_parsers", "run"]
