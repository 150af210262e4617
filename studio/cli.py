"""`jianmu-studio`: the studio, a headless runner and a recorded-run viewer.

    jianmu-studio TREE [--db STORE]            open the TUI on a tree file
    jianmu-studio run TREE [--max-ticks N] [--db STORE] [--trace FILE.jsonl [--force]] [--json]
                           [--approve TOOL|ID|all ...] [--deny TOOL|ID|all[:REASON] ...]
    jianmu-studio replay [STORE] [--run ID]    pick a recorded run of a store (default: the
                                               studio's own) and open it (nothing executes)
    jianmu-studio resume [STORE] [--run ID] --approve TOOL|ID|all ... --deny TOOL|ID|all[:REASON] ...
                                               answer a run that waits for an approval and go on
                                               with it here (studio/cli_resume.py)
    jianmu-studio attach HOST:PORT [--token T] open the studio on an agent in another process
    jianmu-studio check RECORDING [--run ID]   re-run a tree against a recorded run, offline
                                               (studio/cli_check.py: check, diff, export, import;
                                               export --otlp: an OpenTelemetry trace, the [otel] extra)
    jianmu-studio samples                      list the sample trees (open one by name: `open react_calculator`)
    jianmu-studio web TREE [--at HOST:PORT]    serve the studio to a browser (the [web] extra)

A TREE is a file (`path.py`, `path.py:function`) or the name of a sample.

A STORE is a file (`runs.db`) or a PostgreSQL URL (`postgresql://user:pass@host/db`), given
with --db (or as replay's argument) or in $JIANMU_DB; messages never show a password.

Exit status: 0 success, 1 the run failed (or stopped unfinished), 2 bad input, 128 + N a
signal (130 SIGINT, 143 SIGTERM, 129 SIGHUP, 141 SIGPIPE when the output's reader has gone: the run
recorded as interrupted, studio/stopping.py).
Bad input is one line on stderr; `--debug` shows the traceback as well.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from runtime.agent import settled, stopped_by
from runtime.config import user_config_file
from runtime.engine.events import EventType
from runtime.engine.user_code import described
from runtime.extras import MissingExtra
from runtime.guard import Answers, ApprovalError
from runtime.memory.checkpoint import Source, StoreError, chosen_store, export_run, open_store
from runtime.memory.checkpoint.naming import close_store_async, is_postgres_url, open_store_async
from runtime.memory.checkpoint.output import OutputPathError, check_output_path, replacing
from runtime.memory.checkpoint.store import CheckpointError, CheckpointStore
from runtime.signals import signals_raise
from runtime.telemetry.otel import TelemetryError
from runtime.terminal import terminal_line
from runtime.urls import masked_traceback, masked_url

from . import cli_check, cli_resume, headless, leaving, logs, samples, startup, stopping, web
from .loader import LoadedTree, TreeLoadError, load_tree
from .places import default_db_path, default_store
from .session import DebugSession, EditError
from .session import open_store as open_session_store

STORE_HELP = "checkpoint store: FILE.db or postgresql://user:password@host/db"


class UsageError(Exception):
    """Bad input that is not a tree file problem (a flag, a store, a run id)."""


class _Parser(argparse.ArgumentParser):
    """A bad flag is one line too (argparse would print the whole usage first). Its message quotes the
    arguments as given (`unrecognized arguments: …`): shown, never obeyed, and no URL's password."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {terminal_line(masked_url(message))} (see --help)\n")


def _tick_count(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of ticks: {text!r}") from None
    if count < 0:
        raise argparse.ArgumentTypeError(f"a number of ticks is 0 or more, not {count}")
    return count


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not seconds >= 0:  # NaN too
        raise argparse.ArgumentTypeError(f"a number of seconds is 0 or more, not {text}")
    return seconds


def _where_things_live() -> str:
    """--help's epilog: the variables a user sets, and the real paths of what the studio keeps."""
    return f"""\
environment:
  JIANMU_BASE_URL, JIANMU_API_KEY, JIANMU_MODEL
                   an OpenAI-compatible model endpoint, its key and model: the samples call it
                   instead of their scripted model (or OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL)
  JIANMU_DB        the checkpoint store (--db wins)
  JIANMU_CONFIG    a jianmu.yaml read over the user's and ./jianmu.yaml (a later one wins, key by key)
  JIANMU_DEBUG_TOKEN  the token of `serve` and `attach`

files:
  {default_db_path()}
                   the default store; breakpoints and saved bindings beside it, in {default_db_path().with_suffix(".studio").name}/
  {user_config_file()}
                   the user's settings (then ./jianmu.yaml, then $JIANMU_CONFIG)
"""


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="jianmu-studio", description="Debug behaviour-tree LLM agents.",
                     epilog=_where_things_live(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    # --debug after the subcommand too; SUPPRESS keeps a subcommand from resetting one given before it
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks")
    sub = parser.add_subparsers(dest="command")
    studio = sub.add_parser("open", aliases=["studio"], parents=[debug],
                            help="open the studio on a tree file (the default command; `studio` is the same)")
    studio.add_argument("tree", help="path.py or path.py:function")
    studio.add_argument("--db", metavar="STORE", help=f"{STORE_HELP} (default: $JIANMU_DB, else {default_db_path()})")
    run = sub.add_parser("run", help="run a tree without a UI, one line per tick", epilog=headless.APPROVALS_HELP,
                         parents=[debug],
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("tree", help="path.py or path.py:function")
    run.add_argument("--max-ticks", type=_tick_count, default=None)
    run.add_argument("--db", metavar="STORE", help=f"record checkpoints into this {STORE_HELP} "
                     "(default: $JIANMU_DB, else the studio's default file)")
    run.add_argument("--trace", type=Path, help="write every event of the run as JSON Lines")
    run.add_argument("--force", action="store_true", help="overwrite an existing --trace file")
    run.add_argument("--json", action="store_true", help="print JSON objects instead of text")
    run.add_argument("--bindings", type=Path, metavar="FILE",
                     help="apply a bindings file first (the studio's \"apply and save\" writes one beside the store)")
    headless.add_approval_flags(run)
    replay = sub.add_parser("replay", help="open a recorded run from a store, without executing anything",
                            parents=[debug])
    replay.add_argument("store", nargs="?", metavar="STORE",
                        help=f"{STORE_HELP} (or --db; default: $JIANMU_DB, else the studio's default file)")
    replay.add_argument("--db", metavar="STORE", help="the same as STORE")
    replay.add_argument("--run", dest="run_id", type=headless.run_id, help="run id (default: pick one from the store's runs)")
    replay.add_argument("--tree", help="the run's tree file, when the store has none recorded for it "
                                       "(a run written by a service, not by jianmu-studio)")
    serve = sub.add_parser("serve", help="run a tree with the debug server on, for `attach` from elsewhere",
                           parents=[debug])
    serve.add_argument("tree", help="path.py or path.py:function")
    serve.add_argument("--at", default="127.0.0.1:7777", metavar="HOST:PORT",
                       help="where the debug server listens (default 127.0.0.1:7777; port 0: any free one)")
    serve.add_argument("--db", metavar="STORE", help=f"record checkpoints into this {STORE_HELP} "
                       "(default: $JIANMU_DB, else the studio's default file): the attached timeline")
    serve.add_argument("--wait", type=_seconds, default=300.0, metavar="SECONDS",
                       help="wait this long for a studio to attach before the run starts (default 300)")
    attach = sub.add_parser("attach", help="open the studio on an agent running in another process")
    attach.add_argument("address", help="host:port of the agent's debug server (Agent.run(debug=...))")
    attach.add_argument("--token", help="the server's token (default $JIANMU_DEBUG_TOKEN)")
    cli_resume.add_parser(sub, [debug], STORE_HELP)
    cli_check.add_parsers(sub, [debug])
    sub.add_parser("samples", help="list the sample trees that come with the package (open one by name)")
    web.add_command(sub, [debug], STORE_HELP)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("jianmu-studio")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


def _argv_with_default_command(argv: list[str]) -> list[str]:
    """`jianmu-studio TREE` means `jianmu-studio open TREE`."""
    for i, arg in enumerate(argv):
        if arg.startswith("-"):
            continue
        if arg not in ("open", "studio", "run", "replay", "attach", "serve", "samples", "web", cli_resume.COMMAND,
                       *cli_check.COMMANDS):
            return [*argv[:i], "open", *argv[i:]]
        break
    return argv


ESCAPE_DELAY_MS = "50"
"""How long a lone escape byte waits to be told from an escape sequence (Textual's default, 100 ms,
made esc back to live feel slow; 50 ms is neovim's ttimeoutlen). $ESCDELAY, if set, wins."""


def main(argv: list[str] | None = None) -> int:
    """The command line (`argv`, else the process's own: then the process ends with the command, whatever
    threads the tree left running: studio/leaving.py)."""
    status = _main(argv)
    return status if argv is not None else leaving.leave(status)


def _main(argv: list[str] | None) -> int:
    os.environ.setdefault("ESCDELAY", ESCAPE_DELAY_MS)  # read when textual is first imported, below
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(_argv_with_default_command(argv))
    if args.command is None:
        _parser().print_help()
        return 2
    logs.configure(args.debug)
    try:
        with signals_raise():  # a signal ends the command's synchronous work at once (its event loop's: the loop)
            return _command(args)
    except (TreeLoadError, UsageError, OutputPathError, StoreError, CheckpointError, MissingExtra,
            TelemetryError, ApprovalError) as exc:
        return _said(args, exc, str(exc), 2)
    except stopping.Stopped as exc:  # a signal while a tree loaded or a store connected, outside stopping.run
        return stopping.stopped(exc)
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        if exc.filename is None:
            return _said(args, exc, f"unexpected {described(exc)} (--debug shows the traceback)", 1)
        # a path given that the system refuses (a name too long, no permission): bad input
        return _said(args, exc, f"{exc.filename}: {exc.strerror or exc}", 2)
    except Exception as exc:  # a failure no check foresaw (a bug): still one line, the traceback with --debug
        return _said(args, exc, f"unexpected {described(exc)} (--debug shows the traceback)", 1)


def _command(args: argparse.Namespace) -> int:
    if args.command == "samples":
        stopping.say(samples.listing())
        return 0
    if getattr(args, "tree", None) and args.command != "replay":  # a sample by name, e.g. `run react_calculator`
        args.tree = samples.tree_target(args.tree)
    args.db = _store_of(args)
    if args.command == "run":
        return stopping.run(run_headless(args))
    if args.command == "replay":
        return open_recorded(args)
    if args.command == cli_resume.COMMAND:
        return stopping.run(cli_resume.resume(args))
    if args.command == "attach":
        return asyncio.run(attach(args))
    if args.command == "serve":
        return stopping.run(serve(args))
    if args.command == "web":
        return web.serve(args, UsageError)
    if args.command in cli_check.COMMANDS:
        return cli_check.run(args)
    return open_studio(args)


def _said(args: argparse.Namespace, exc: BaseException, line: str, status: int) -> int:
    """Say why the command failed in one line (after the traceback, with --debug); its exit status. The
    line may quote what was given (an address, a URL): no password shows (`attach ws://u:pw@…`)."""
    if args.debug:
        sys.stderr.write(masked_traceback(exc))
    stopping.complain(masked_url(line))
    return status


def _store_of(args: argparse.Namespace) -> str | None:
    """The store a command names (--db, replay's STORE, else $JIANMU_DB); None: the default file
    (which replay reads: the runs the studio recorded by default)."""
    given = getattr(args, "db", None)
    if args.command == "replay":
        if args.store and args.db and args.store != args.db:
            raise UsageError("replay: give the store once (STORE or --db)")
        given = args.store if args.store is not None else args.db
    name = chosen_store(given)
    return str(default_store()) if name is None and args.command == "replay" else name


def _answer_approvals(session: DebugSession, rules: Answers, as_json: bool) -> bool:
    """Answer every pending call the rules cover, one line each; False if none was covered."""
    answered = False
    for request in session.pending_approvals():
        decision = rules.answer(request)
        if decision is None:
            continue
        approved, reason = decision
        if approved:
            session.approve(request.id)
        else:
            session.deny(request.id, reason)
        answered = True
        stopping.say(headless.decision_line(request, approved, reason, as_json))
    return answered


def _load(args: argparse.Namespace) -> DebugSession:
    """The session the studio records into: its store must be writable."""
    with _loading(args):
        loaded = _tree(args)
        db = args.db or default_store()
        with stopping.connecting(db):  # a PostgreSQL server that never answers: a Ctrl-C ends the wait
            store = open_session_store(db)
        return _session(loaded, store)


async def _load_running(args: argparse.Namespace) -> DebugSession:
    """The session a headless run records into, from its event loop: a PostgreSQL store is the asyncio
    one (its saves never hold the loop), opened without holding the loop either."""
    with _loading(args):
        loaded = _tree(args)
        db = args.db or default_store()
        if is_postgres_url(str(db)):
            async with stopping.connecting_async(db):  # a server that never answers: a signal ends the wait
                store = await open_store_async(db)
        else:
            store = open_session_store(db)
        return _session(loaded, store)


@contextlib.contextmanager
def _loading(args: argparse.Namespace) -> Iterator[None]:
    """A tree or a store that cannot be opened is bad input, said in one line."""
    try:
        yield
    except StoreError as exc:
        raise UsageError(str(exc)) from exc
    except OSError as exc:  # the store's folder cannot be created
        raise UsageError(f"{args.db}: cannot create the store ({exc.strerror}: {exc.filename})") from exc


def _tree(args: argparse.Namespace) -> LoadedTree:
    with stopping.user_code():  # the tree's import and build(): a Ctrl-C there ends the command
        return load_tree(args.tree)


def _session(loaded: LoadedTree, store: CheckpointStore) -> DebugSession:
    with stopping.user_code():
        session = DebugSession(loaded, store=store)
    if getattr(session.store, "read_only", False):
        raise UsageError(f"{session.store.location}: read-only: a run records into its store; "
                         "view this one with `jianmu-studio replay`, or pass another --db")
    return session


async def run_headless(args: argparse.Namespace) -> int:
    rules = headless.answers(args)
    if args.trace is not None:  # before anything runs: a trace never lands on the store or a source file
        check_output_path(args.trace, store=args.db or default_db_path(), force=args.force)
    session = await _load_running(args)
    for warning in session.breakpoint_warnings:
        stopping.complain(warning)
    if args.bindings is not None:
        if not args.bindings.is_file():
            what = "not a regular file" if os.path.lexists(args.bindings) else "no such bindings file"
            raise UsageError(f"{args.bindings}: {what}")
        problems = session.apply_bindings_file(args.bindings)
        if problems:
            raise UsageError(problems[0])
    session.add_listener(lambda kind, data: stopping.say(headless.tick_line(data, args.json)) if kind == "tick" else None)
    try:
        stop = await session.continue_(max_ticks=args.max_ticks)
        while stop.kind == "suspended" and _answer_approvals(session, rules, args.json):
            left = None if args.max_ticks is None else args.max_ticks - session.tick
            stop = await session.continue_(max_ticks=left)
    except asyncio.CancelledError as exc:  # a signal (studio/stopping.py): recorded, stopped, then exit 128+N
        await stopping.interrupt_session(session, stopped_by(exc))
        raise
    unrecorded = stop.message if stop.kind == "error" else await _unwritten_events(session)
    if unrecorded is not None:  # a run that could not be recorded is no success, whatever its tree says
        session.runner.stop()  # work in flight would write into the store that refused (and fail unseen)
        stopping.complain(f"the run stopped: {unrecorded}")
        stopping.complain(await _record_end(session, unrecorded))
    if stop.kind == "breakpoint":  # saved by the studio for this tree: a headless run holds there too
        stopping.complain(f"stopped at a breakpoint saved by the studio ({stop.message}, kept in "
                          f"{session.breakpoints_file}): remove it in the studio to run through")
    waiting = session.pending_approvals() if stop.kind == "suspended" else []
    result = session.agent.result_from(session.runner)
    failure = session.failure
    error = failure.line if failure else (stop.message if stop.kind == "error" else None)
    status = "ERROR" if unrecorded is not None else session.root_status.value  # as recorded, not the stopped INVALID
    summary = {"status": status, "stopped": stop.kind, "message": stop.message,
               "termination_reason": result.termination_reason, "final_answer": result.final_answer,
               "error": error, "ticks": session.tick, "tokens": _tokens(session), "run_id": session.run_id,
               "waiting_for_approval": [{"id": r.id, "tool": r.tool, "arguments": r.arguments} for r in waiting]}
    if args.json:
        stopping.say(json.dumps({"summary": summary}))
    else:
        tokens = "?" if summary["tokens"] is None else summary["tokens"]
        stopping.say(terminal_line(f"{summary['status']} after {summary['ticks']} ticks, {tokens} tokens "
                                   f"({stop.message}; {result.termination_reason})"))
        if result.final_answer:
            stopping.say(f"final answer: {terminal_line(result.final_answer)}")
    if error and error != unrecorded:  # a stop that could not be recorded has said so already
        stopping.complain(failure.headline if failure else error)
    for request in waiting:
        print(headless.waiting_line(request), file=sys.stderr)
    trace_failed = args.trace is not None and not _write_trace(session, args.trace)
    succeeded = session.root_status.value == "SUCCESS" and failure is None and unrecorded is None
    return 0 if succeeded and not trace_failed else 1


def _write_trace(session: DebugSession, path: Path) -> bool:
    """Export the run to `path` (whole, or an earlier file stays); False, said in one line, if it cannot."""
    try:
        with replacing(path) as out_file:
            count = export_run(session.store, session.run_id, out_file)
    except (OSError, StoreError) as exc:  # a full disk, the store gone
        reason = exc if isinstance(exc, StoreError) else (exc.strerror or exc)
        stopping.complain(f"trace not written to {path}: {reason} (the run's events are in "
                          f"{session.store.location}: python -m runtime.memory.checkpoint export)")
        return False
    print(terminal_line(f"trace: {count} events written to {path}"), file=sys.stderr)
    return True


def _tokens(session: DebugSession) -> int | None:
    """The run's tokens (counted along its lineage in the store); None when the store is gone,
    as when the run stopped because it was (that has been said)."""
    try:
        return session.tokens
    except StoreError:
        return None


async def _unwritten_events(session: DebugSession) -> str | None:
    """Why the run's last checkpoints and events are not in its store, or None once they are (an asyncio
    store's writes in flight awaited: how the run ended may be among them)."""
    checkpoints = session.runner.checkpoints
    try:
        if (settling := checkpoints.settle()) is not None:
            await settling
        checkpoints.flush()
    except StoreError as exc:
        return f"its last events were not written: {exc}"
    return None


async def _record_end(session: DebugSession, reason: str) -> str:
    """Write how a stopped run ended into its store (a last checkpoint with status ERROR, after a
    `run.failed` event and whatever was not written): the line that says whether it could."""
    session.bus.publish(EventType.RUN_FAILED, {"status": "ERROR", "error": reason})
    await settled(session.runner)  # (an asyncio store writes the event behind the writes in flight)
    try:
        session.runner.checkpoints.save(Source.UPDATE, status="ERROR")
    except StoreError as exc:
        return f"its end could not be recorded either: {exc}"
    return f"its end is recorded in {session.store.location} (status ERROR)"


def open_studio(args: argparse.Namespace) -> int:
    with startup.paused():  # no collections until the first frame (studio/startup.py)
        session = _load(args)
        for warning in [*session.breakpoint_warnings, *(f"{problem}; ignored" for problem in session.apply_bindings_file())]:
            stopping.complain(warning)
        from .app import StudioApp

        app = StudioApp(session)
        app.run()
    return app.return_code or 0  # 128 + N when a signal stopped it


def open_recorded(args: argparse.Namespace) -> int:
    """The run given with --run, else the one chosen in the run picker (a store of many runs)."""
    try:
        run_id = args.run_id or _pick_run(args.db)
        if run_id is None:
            return 0
        with stopping.connecting(args.db):
            store = open_store(args.db, create=False)
        session = DebugSession.open_recorded(store, run_id, tree=args.tree)
    except (StoreError, EditError) as exc:
        raise UsageError(str(exc)) from exc
    from .app import StudioApp

    app = StudioApp(session)
    app.run()
    return app.return_code or 0  # 128 + N when a signal stopped it


def _pick_run(name: str) -> str | None:
    """The only run of a store, or the one picked from its runs (None: none picked)."""
    with stopping.connecting(name):
        store = open_store(name, create=False)
    try:
        runs = store.runs()
        if not runs:
            raise StoreError(f"{store.location}: holds no runs")
        if len(runs) == 1:
            return runs[0].run_id
        from .screens.run_picker import RunPickerApp

        return RunPickerApp(store).run()
    finally:
        store.close()


async def serve(args: argparse.Namespace) -> int:
    """The tree run as a service would run it (`Agent.run(debug=...)`), recording into the store: what
    `attach` connects to. The server prints its address and token on stderr; the outcome is one line."""
    from runtime.engine import EventType

    with stopping.user_code():
        loaded = load_tree(args.tree)
    name = args.db or str(default_store())
    async with stopping.connecting_async(name):  # a PostgreSQL store: the asyncio one, opened in the loop
        store = await open_store_async(name)
    agent = loaded.agent
    agent.runner = agent.make_runner(checkpointer=store)
    agent.runner.event_bus.subscribe(lambda event: loaded.remember_run(store, event.run_id),
                                     types=[EventType.RUN_STARTED])
    os.environ["JIANMU_DEBUG_WAIT"] = str(args.wait)  # read by the server the run starts
    try:
        result = await agent.run(loaded.input_data, debug=args.at)
    except StoreError as exc:  # (an OSError) the run's store refused a write: the run stopped, as `run` says it
        stopping.complain(f"the run stopped: {type(exc).__name__}: {exc}")
        return 1
    except ValueError as exc:  # a malformed address
        raise UsageError(f"--at {args.at}: {exc}") from exc
    except OSError as exc:
        raise UsageError(f"--at {args.at}: cannot listen there ({exc.strerror or exc})") from exc
    finally:
        await close_store_async(store)
    stopping.say(terminal_line(f"{result.status.value} ({result.termination_reason}); recorded in {store.location}"))
    if result.final_answer:
        stopping.say(f"final answer: {terminal_line(result.final_answer)}")
    return 0 if result.ok else 1


async def attach(args: argparse.Namespace) -> int:
    """The TUI on a remote run: connected here, in the loop the app then runs in."""
    from runtime.debug import DebugError

    from .app import StudioApp
    from .session.attached import RemoteSession

    token = args.token or os.environ.get("JIANMU_DEBUG_TOKEN") or ""
    try:
        session = await RemoteSession.connect(args.address, token)
    except ValueError as exc:  # a malformed address
        raise UsageError(str(exc)) from exc
    except DebugError as exc:
        raise UsageError(f"{args.address}: {exc.message}") from exc
    except OSError as exc:
        raise UsageError(f"{args.address}: no debug server there ({exc.strerror or exc})") from exc
    app = StudioApp(session)
    try:
        await app.run_async()
    finally:
        await session.close()
    return app.return_code or 0  # 128 + N when a signal stopped it


if __name__ == "__main__":
    sys.exit(main())
