"""Load a tree file: `path.py` (calls `build()`) or `path.py:function`.

Every way a tree file can be wrong becomes one `TreeLoadError` line naming the file
and what is wrong with it; the original exception stays attached for `--debug`.
"""

from __future__ import annotations

import atexit
import importlib.util
import inspect
import os
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_core import PydanticSerializationError, to_json

from .agent import Agent
from .config import ConfigError
from .engine.tree import NameHoldsSlash
from .engine.user_code import described
from .extras import MissingExtra
from .memory.checkpoint.tree_source import TreeSource, keep_tree_source
from .signals import Stopped
from .state import StateKeys, StateManager, StateValidationError


class TreeLoadError(Exception):
    """A tree file that cannot be used; `str()` is the one line to show."""


@dataclass
class LoadedTree:
    agent: Agent
    path: Path
    function: str
    input_data: dict[str, Any] = field(default_factory=dict)

    @property
    def target(self) -> str:
        return f"{self.path}:{self.function}"

    def remember_run(self, store: Any, run_id: str) -> None:
        """The store remembers which tree file a run came from, so `replay` reopens it without `--tree`,
        and the file's text as it was then, so `check` and a run file still have it once the file
        has moved or changed."""
        store.set_meta(f"tree:{run_id}", f"{self.path.resolve()}:{self.function}")
        keep_tree_source(store, run_id, self.path, self.function)


def split_target(target: str) -> tuple[Path, str]:
    path, sep, function = target.rpartition(":")
    if not sep or not path or "/" in function or function.endswith(".py") or not function.isidentifier():
        return Path(target), "build"
    return Path(path), function


def load_tree(target: str | Path) -> LoadedTree:
    if isinstance(target, str) and target.endswith(":") and not Path(target).exists():
        raise TreeLoadError(f"{target[:-1]}: no function named after ':' (FILE.py:FUNCTION builds the tree with "
                            f"FUNCTION; FILE.py alone with build)")
    path, function = split_target(str(target))
    _check_regular_file(path)
    if path.suffix != ".py":
        raise TreeLoadError(f"{path}: a tree file must be a Python module (.py)")
    module_name = f"jianmu_tree_{abs(hash(path.resolve()))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise TreeLoadError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        where = f"{path}:{exc.lineno}" if exc.lineno is not None else str(path)  # a NUL byte has no line
        raise TreeLoadError(f"{where}: syntax error: {exc.msg}") from exc
    except Stopped:  # a signal while the import held the thread: the command ends (runtime/signals.py)
        raise
    except BaseException as exc:  # a tree file never ends the studio, whatever it raises (a BaseException of its own)
        raise TreeLoadError(f"{path}: import failed: {_raised(exc)}") from exc
    builder = getattr(module, function, None)
    if builder is None:
        raise TreeLoadError(f"{path}: no function {function}() (a tree file defines build() returning an Agent)")
    if not callable(builder):
        raise TreeLoadError(f"{path}: {function} is not a function")
    try:
        agent = builder()  # Agent() checks the tree's shape and that each node has a path of its own
        if isinstance(agent, Agent):
            agent.check_names()  # (again, when build() renamed a node after Agent(): its run names it so)
    except Stopped:
        raise
    except NameHoldsSlash as exc:
        raise TreeLoadError(f"{path}: {function}(): {exc}") from exc
    except BaseException as exc:
        raise TreeLoadError(f"{path}: {function}() raised {_raised(exc)}") from exc
    if not isinstance(agent, Agent):
        if inspect.iscoroutine(agent):  # closed: never awaited, it would warn on stderr when collected
            agent.close()
            raise TreeLoadError(f"{path}: {function}() is async (returned a coroutine): it must be a plain "
                                "function returning a runtime.Agent")
        raise TreeLoadError(f"{path}: {function}() returned {type(agent).__name__}, expected a runtime.Agent")
    input_data = getattr(module, "INPUT", None) or {}
    if not isinstance(input_data, dict):
        raise TreeLoadError(f"{path}: INPUT must be a dict, not {type(input_data).__name__}")
    try:
        agent.config  # noqa: B018 - reads jianmu.yaml now, not after the run
    except ConfigError as exc:
        raise TreeLoadError(str(exc)) from exc
    return LoadedTree(agent, path, function, _checked_input(path, agent, input_data))


def load_tree_source(source: TreeSource) -> LoadedTree:
    """Build the tree from a kept text (`runtime.memory.checkpoint.tree_source`): written under its
    own name into a folder of its own, kept while this process runs (a restart loads it again).
    Errors name the file as kept."""
    folder = tempfile.mkdtemp(prefix="jianmu-tree-")
    atexit.register(shutil.rmtree, folder, True)
    path = Path(folder) / source.name
    path.write_text(source.text, encoding="utf-8")
    try:
        return load_tree(f"{path}:{source.function}")
    except TreeLoadError as exc:
        raise TreeLoadError(str(exc).replace(str(path), f"{source.name} (as recorded)")) from exc


def _check_regular_file(path: Path) -> None:
    """Only a regular file is read: a named pipe or a device would block the import (or never end),
    and a path the system refuses (too long, a loop of links) is a reason to name, not a traceback."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise TreeLoadError(f"{path}: no such file") from None
    except OSError as exc:
        raise TreeLoadError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:  # a NUL byte in the path
        raise TreeLoadError(f"{path!r}: not a file name ({exc})") from None
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a pipe, socket or device)"
        raise TreeLoadError(f"{path}: {kind}: a tree file is a Python module (.py)")


def _raised(exc: BaseException) -> str:
    if isinstance(exc, MissingExtra):  # the line says which extra to install
        return str(exc)
    return described(exc)


def _checked_input(path: Path, agent: Agent, input_data: dict[str, Any]) -> dict[str, Any]:
    """INPUT as the run will write it: every key a state field, every value one its schema accepts."""
    state = StateManager(agent.state_schema)
    owned = set(StateKeys().model_dump().values())
    for key, value in input_data.items():
        if not isinstance(key, str) or not (state.has_field(key) or key in owned):
            fields = ", ".join(state.schema.model_fields)
            raise TreeLoadError(f"{path}: INPUT key {key!r} is not a field of {state.schema.__name__} "
                                f"(fields: {fields})")
        try:
            to_json(state.validate(key, value), fallback=repr)  # what the run's first checkpoint stores
        except StateValidationError as exc:
            raise TreeLoadError(f"{path}: INPUT: {exc}") from exc
        except PydanticSerializationError as exc:  # no store can keep it: the run could not be recorded
            why = ("holds a text that is not valid Unicode (a lone surrogate)" if "surrogates not allowed" in str(exc)
                   else f"cannot be recorded ({exc})")
            raise TreeLoadError(f"{path}: INPUT key {key!r} {why}") from exc
        except Exception as exc:  # a value that cannot even be copied
            raise TreeLoadError(f"{path}: INPUT key {key!r}: {type(exc).__name__}: {exc}") from exc
    return dict(input_data)


__all__ = ["LoadedTree", "TreeLoadError", "load_tree", "load_tree_source", "split_target"]
