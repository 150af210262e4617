"""`jianmu-studio check`, `diff`, `export`, `import`: recordings as test cases, runs as files.

    jianmu-studio check RECORDING [--run ID] [--branch B] [--tree TREE] [--tools live]
    jianmu-studio diff A [B] [--run ID] [--run ID] [--branch X --branch Y]
    jianmu-studio export STORE --run ID -o FILE.jianmu [--force] | --otlp
    jianmu-studio import FILE.jianmu [--into STORE]

RECORDING, A and B are stores (FILE.db, postgresql://…) or run files (FILE.jianmu): a run
file is a store of its own. `check` exits 0 when every run checked matches its recording,
1 at the first divergence of any (one line: tick, node, what differed; then an excerpt);
`diff` 0 when the two runs match (times and ids aside), 1 otherwise; 2 is bad input.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
from typing import TYPE_CHECKING

from runtime.memory.checkpoint import StoreError, chosen_store, display_name, open_store
from runtime.memory.checkpoint.runfile import SUFFIX, export_run_file, import_run_file
from runtime.terminal import terminal_line
from runtime.treefile import TreeLoadError

from . import headless, stopping

if TYPE_CHECKING:  # (runtime.check is imported by the commands that use it: the studio's launch never does)
    from runtime.agent import Agent
    from runtime.check.recording import TreeChoice

COMMANDS = ("check", "diff", "export", "import")
SHOWN_PER_TICK = 6  # differences a diff lists per tick (the count of the rest is said)
RECORDING_HELP = "a store (FILE.db or postgresql://…) or a run file (FILE.jianmu)"


def add_parsers(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    check = sub.add_parser("check", parents=parents,
                           help="re-run a tree against a recorded run, offline: exit 1 where it parts from it")
    check.add_argument("recording", metavar="RECORDING", help=RECORDING_HELP)
    check.add_argument("--run", dest="run_id", type=headless.run_id, help="the run to check (default: every run in RECORDING)")
    check.add_argument("--branch", default="main", help="the branch to check (default main)")
    check.add_argument("--tree", help="check this tree file instead of the one the run was recorded with")
    check.add_argument("--tools", choices=("recorded", "live"), default="recorded",
                       help="live: run the tools for real and serve only the model's answers")
    diff = sub.add_parser("diff", parents=parents, help="compare two recorded runs, or two branches of one, "
                          "tick by tick: exit 1 when they differ (times and ids aside)")
    diff.add_argument("a", metavar="A", help=RECORDING_HELP)
    diff.add_argument("b", metavar="B", nargs="?", help="another one (default: A again, for two runs or branches of it)")
    diff.add_argument("--run", dest="runs", type=headless.run_id, action="append", default=[], metavar="ID",
                      help="the run (once: on both sides; twice: A's, then B's; default: each store's only run)")
    diff.add_argument("--branch", dest="branches", action="append", default=[], metavar="BRANCH",
                      help="the branch (once: on both sides; twice: A's, then B's; default main)")
    export = sub.add_parser("export", parents=parents, help=f"write one run into a run file (FILE{SUFFIX}): "
                            "its branches, events and recorded I/O, and its tree file's text; or send it "
                            "as an OpenTelemetry trace (--otlp)")
    export.add_argument("store", metavar="STORE", help="FILE.db or postgresql://…")
    export.add_argument("--run", dest="run_id", type=headless.run_id, required=True)
    where = export.add_mutually_exclusive_group(required=True)
    where.add_argument("-o", "--output", metavar=f"FILE{SUFFIX}")
    where.add_argument("--otlp", action="store_true",
                       help="send it to $OTEL_EXPORTER_OTLP_ENDPOINT (http/protobuf) as OpenTelemetry GenAI spans "
                            "at its recorded times (the [otel] extra)")
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
    if args.command == "diff":
        return diff(args)
    return asyncio.run(check(args))


def export(args: argparse.Namespace) -> int:
    if args.otlp:
        from .export_otlp import export_otlp

        return export_otlp(args)
    with stopping.connecting(args.store):
        store = open_store(args.store, create=False)
    try:
        count = export_run_file(store, args.run_id, args.output, force=args.force)
        branches = ", ".join(store.branches(args.run_id))
    finally:
        store.close()
    print(terminal_line(f"run {args.run_id} ({count} checkpoints; branches {branches}) written to {args.output}"))
    return 0


def diff(args: argparse.Namespace) -> int:
    from runtime.check.diff import Side, diff_runs

    names = [args.a, args.b or args.a]
    for given, what in ((args.runs, "--run"), (args.branches, "--branch")):
        if len(given) > 2:
            raise StoreError(f"diff: {what} names A's then B's: give it once or twice, not {len(given)} times")
    with stopping.connecting(names[0]):
        stores = [open_store(names[0], create=False)]
    try:
        with stopping.connecting(names[1]):
            stores.append(stores[0] if names[1] == names[0] else open_store(names[1], create=False))
        sides = [Side(store, _run_of(store, args.runs, i), _pick(args.branches, i, "main"), label)
                 for i, (store, label) in enumerate(zip(stores, ("A", "B"), strict=True))]
        if (names[0], sides[0].run_id, sides[0].branch) == (names[1], sides[1].run_id, sides[1].branch):
            raise StoreError("diff: A and B are the same run and branch: give two runs (--run X --run Y) or "
                             "two branches (--branch X --branch Y)")
        report = diff_runs(*sides)
        for side, name in zip(sides, names, strict=True):
            print(terminal_line(f"{side.label}: {display_name(name)} run {side.run_id} ({side.branch})"))
        if report.same:
            print("same: every tick matches (times and ids aside)")
            return 0
        print(f"first divergence: {terminal_line(report.first.line)}")
        for tick, found in report.ticks.items():
            print(f"tick {tick}")
            for difference in found[:SHOWN_PER_TICK]:
                print("  " + terminal_line(difference.line.partition(": ")[2]
                                           + (f" ({difference.node})" if difference.node else "")))
                for line in difference.detail[:4]:
                    print(f"    {terminal_line(line)}")
            if len(found) > SHOWN_PER_TICK:
                print(f"  … and {len(found) - SHOWN_PER_TICK} more")
        return 1
    finally:
        for store in dict.fromkeys(stores):
            store.close()


def _pick(given: list[str], side: int, default: str | None = None) -> str | None:
    return given[side] if len(given) == 2 else given[0] if given else default


def _run_of(store, runs: list[str], side: int) -> str:
    """The run named for this side, else the store's only run."""
    run_id = _pick(runs, side)
    if run_id is not None:
        return run_id
    found = [run.run_id for run in store.runs()]
    if len(found) != 1:
        raise StoreError(f"{display_name(store.location)}: holds {len(found)} runs: say which with --run "
                         f"({', '.join(found[-5:])})" if found else f"{display_name(store.location)}: holds no runs")
    return found[0]


def import_(args: argparse.Namespace) -> int:
    from .session import default_db_path
    from .session import open_store as open_or_create

    name = chosen_store(args.into, default_db_path())
    with stopping.connecting(name):
        store = open_or_create(name)
    try:
        runs = import_run_file(args.runfile, store)
    finally:
        store.close()
    print(terminal_line(f"{', '.join(f'run {run}' for run in runs)} imported into {display_name(store.location)}"))
    return 0


async def check(args: argparse.Namespace) -> int:
    with stopping.connecting(args.recording):
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


def _built(choice: TreeChoice) -> Agent:
    with stopping.user_code():  # the tree's import and build(): a Ctrl-C there ends the command
        return choice.build()


async def _check_one(store, run_id: str, args: argparse.Namespace, live: bool) -> int:
    from runtime.check import check_run
    from runtime.check.recording import tree_for_run

    try:
        with stopping.user_code():  # the tree's first build, made when chosen
            choice = tree_for_run(store, run_id, args.tree)
    except (TreeLoadError, StoreError) as exc:
        if args.run_id:
            raise
        print(terminal_line(f"run {run_id}: not checked: {exc}"))
        return 2
    for note in choice.notes:
        print(terminal_line(note))
    report = await check_run(store, run_id, functools.partial(_built, choice), branch=args.branch, tools_live=live)
    ran = f"; {report.tools_run} tool calls made for real" if live else ""
    if report.ok:
        print(terminal_line(f"run {run_id}: ok, {report.ticks} ticks match the recording ({choice.name}{ran})"))
        return 0
    print("\n".join(map(terminal_line, report.lines())))
    if ran:
        print(f"  ({ran[2:]})")
    return 1


__all__ = ["COMMANDS", "add_parsers", "run"]
