"""`python -m runtime.memory.checkpoint`: look into a checkpoint store.

    list [STORE]                      the runs in a store: how each stands (its end, RUNNING, suspended,
                                      or abandoned when its writer is gone) and the checkpoint ids
                                      `show` takes
    export [STORE] --run ID [-o OUT]  a run's events as JSON Lines (stdout by default; OUT is never
                                      the store, an SQLite file or a source file, and an existing
                                      OUT is replaced only with --force)
    show [STORE] ID                   one checkpoint, as JSON (its tick's returns in order included)

STORE is a file or a `postgresql://` URL, given as the argument or with --db, else taken
from $JIANMU_DB. Bad input (a missing, corrupt, locked or newer store, an unknown run or
checkpoint) gives one line on stderr (never a password) and exit status 2; `--debug`
shows the traceback instead. SIGINT, SIGTERM and SIGHUP end a command with 128 + N (one line
naming the store when they stop its connect).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Sequence

from ...signals import Stopped, exit_status, signals_raise
from ...terminal import terminal_line
from ...urls import masked_traceback
from .liveness import ABANDONED, SUSPENDED, run_liveness, when
from .naming import chosen_store, display_name, open_store
from .output import OutputPathError, check_output_path, replacing
from .sql_store import SQLCheckpointStore
from .store import CheckpointError, StoreError
from .trace import TraceError, export_run


def _list(store: SQLCheckpointStore, args: argparse.Namespace) -> None:
    runs = store.runs()
    if not runs:
        print(terminal_line(f"{store.location}: no runs"))
    for run in runs:
        liveness = run_liveness(run)  # a run whose writer died is no longer RUNNING
        status = str(liveness) if liveness.state in (ABANDONED, SUSPENDED) else run.last_status
        print(terminal_line(f"{run.run_id}  {run.checkpoints:>5} checkpoints  {status:<8}  "
                            f"{when(run.first_time)} .. {when(run.last_time)}  branches: {', '.join(run.branches)}  "
                            f"ids {_ranges([info.id for info in store.list(run.run_id)])}"))
    if runs:
        print(terminal_line(f"(show {store.location} ID prints one checkpoint)"), file=sys.stderr)


def _ranges(ids: list[int]) -> str:
    """`1-6, 9, 12-13`: checkpoint ids, runs of consecutive ones folded."""
    spans: list[list[int]] = []
    for i in sorted(ids):
        if spans and i == spans[-1][1] + 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    return ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in spans)


def _export(store: SQLCheckpointStore, args: argparse.Namespace) -> None:
    if not store.list(args.run):
        raise CheckpointError(f"no run {args.run!r} in {store.location}")
    if args.output in (None, "-"):
        export_run(store, args.run, sys.stdout)
        return
    with replacing(check_output_path(args.output, store=args.store, force=args.force)) as out:
        count = export_run(store, args.run, out)
    print(terminal_line(f"{count} events of run {args.run} written to {args.output}"), file=sys.stderr)


def _show(store: SQLCheckpointStore, args: argparse.Namespace) -> None:
    """One checkpoint; its tick's returns as `[path, status]` pairs, in the order they happened."""
    checkpoint = store.get(args.id)
    shown = dataclasses.asdict(checkpoint)
    shown["returns"] = None if checkpoint.returns is None else [[path, status.value] for path, status in checkpoint.returns]
    print(json.dumps(shown, indent=2, ensure_ascii=False, default=repr))


def _store_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("file", nargs="?", metavar="STORE", help="FILE.db or postgresql://… (default: $JIANMU_DB)")
    command.add_argument("--db", metavar="STORE", help="the same as STORE")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runtime.memory.checkpoint", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    commands = parser.add_subparsers(dest="command", required=True)
    cmd = commands.add_parser("list", help="list the runs in a store")
    _store_arguments(cmd)
    cmd.set_defaults(func=_list)
    cmd = commands.add_parser("export", help="export a run's events as JSON Lines")
    _store_arguments(cmd)
    cmd.add_argument("--run", required=True)
    cmd.add_argument("-o", "--output")
    cmd.add_argument("--force", action="store_true", help="replace an existing OUT")
    cmd.set_defaults(func=_export)
    cmd = commands.add_parser("show", help="print one checkpoint")
    _store_arguments(cmd)
    cmd.add_argument("id", type=int)
    cmd.set_defaults(func=_show)
    args = parser.parse_args(argv)
    try:
        with signals_raise():  # SIGTERM and SIGHUP end a command as Ctrl-C does: 128 + N, no traceback
            return _run(args)
    except Stopped as exc:
        if exc.line() is not None:
            print(f"error: {terminal_line(exc.line())}", file=sys.stderr)
        return exit_status(exc.signum)
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as other tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's own flush at exit must not complain either
        return 1


def _run(args: argparse.Namespace) -> int:
    try:
        if args.file and args.db and args.file != args.db:
            raise StoreError("give the store once (STORE or --db)")
        args.store = chosen_store(args.file or args.db)
        if args.store is None:
            raise StoreError("which store? give FILE.db or postgresql://… (or set $JIANMU_DB)")
        with signals_raise(f"{display_name(args.store)}: connecting"):  # a server that never answers holds it
            store = open_store(args.store, create=False)
        try:
            args.func(store, args)
        finally:
            store.close()
    except BrokenPipeError:
        raise
    except (StoreError, CheckpointError, TraceError, OutputPathError, OSError) as exc:
        if args.debug:
            sys.stderr.write(masked_traceback(exc))
        print(f"error: {terminal_line(exc)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
