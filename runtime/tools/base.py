"""`Tool`: a typed callable the model can ask for, and the `@tool` decorator that builds one.

A tool's arguments are a pydantic model: its JSON schema is what the model sees, and
validating against it is what turns a sloppy tool call into a one-line error observation
instead of a traceback.
"""

from __future__ import annotations

import copy
import enum
import functools
import inspect
import json
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic_core import to_json

from runtime.signals import run_user_code, user_steps
from runtime.tools.bounds import DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_OUTPUT_CHARS, checked_bounds
from runtime.tools.observation import CarryingImages, plain
from runtime.tools.threads import Turns, in_thread, needs_the_loop_thread

_VALID_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what function-calling APIs accept


class Unset(enum.Enum):
    UNSET = "unset"  # a bound not given: the class's (None means no bound)


UNSET = Unset.UNSET


class ToolError(Exception):
    """A tool could not do its job; the message is shown to the model as the observation."""


def error_line(exc: BaseException, limit: int = 300) -> str:
    """`Type: first line of its message`, at most `limit` characters: an observation is one line,
    whatever an exception says (a JSON-schema error quotes the whole schema over many lines)."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return text if len(text) <= limit else text[:limit - 1] + "…"


class ToolArgumentsError(ToolError):
    """The arguments of a call do not fit the tool's args model."""

    def __init__(self, message: str, *, tool: str, field: str | None = None):
        super().__init__(message)
        self.tool = tool
        self.field = field


class ToolNotFoundError(ToolError, LookupError):
    """A call named a tool the tool set does not hold."""


class Tool:
    """A named, described, validated callable.

    Pass a function (sync or async), or subclass and define `name`, `description`,
    optionally `Args` (a pydantic model; otherwise built from `run`'s signature) and
    `run(self, **kwargs)`.

    `parallel_safe`: whether a call may run while other calls of the same round run (seed 003:
    the calls of one round run in parallel by default). A tool that must run alone says so
    with `parallel_safe=False`; one that declares `effect_tags` (side effects the guard
    tracks) runs alone unless it says `parallel_safe=True`. The calls of one synchronous
    function take turns in their threads (one at a time, as on the event loop's thread) unless
    it says `parallel_safe=True`: then they may overlap, and the function must be thread-safe.

    `return_direct`: the tool's result is the agent's answer. When its call succeeds, the ReAct
    loop ends there (`ToolExecutor` writes `done` and `final_answer`), without another model call.

    `timeout` (seconds, 60) and `max_output_chars` (100,000) bound a call: a call still running
    then is answered "gave no answer within …", a longer text is cut with a marker (None: no bound;
    runtime/tools/bounds.py). A synchronous function runs on the event loop's thread, within its
    tick's turn, so a run steps, replays and checks alike every time (a signal stops it there, and the run:
    runtime/signals.py). `blocking=True` says it may take long or never return: it then runs in a thread
    of its own, so that it does not hold the event loop, and its timeout can answer for it (leaving the
    thread behind). There it has no running event loop, nor the objects bound to another thread (a
    sqlite3 connection): such a failure is answered with what to change. runtime/tools/threads.py tells
    why.
    """

    name: str = ""
    description: str = ""
    Args: type[BaseModel] | None = None
    parallel_safe: bool | None = None  # None: True unless the tool declares effect tags
    effect_tags: frozenset[str] = frozenset()
    blocking: bool = False  # True: a synchronous function runs in a thread of its own
    return_direct: bool = False
    timeout: float | None = DEFAULT_CALL_TIMEOUT
    max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS

    def __init__(self, func: Callable[..., Any] | None = None, *, name: str | None = None,
                 description: str | None = None, args_model: type[BaseModel] | None = None,
                 parallel_safe: bool | None = None, effect_tags: Iterable[str] | None = None,
                 blocking: bool | None = None, return_direct: bool | None = None,
                 timeout: float | None | Unset = UNSET, max_output_chars: int | None | Unset = UNSET):
        self.func = func if func is not None else self.run
        self.name = name or self.name or getattr(func, "__name__", "")
        if not _VALID_NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r} must be 1-64 letters, digits, '_' or '-'")
        doc = func.__doc__ if func is not None else type(self).__doc__
        self.description = description or self.description or _first_paragraph(doc)
        self.args_model = args_model or self.Args or _args_model_from_signature(self.func, self.name)
        self.effect_tags = frozenset(self.effect_tags if effect_tags is None else effect_tags)
        declared = self.parallel_safe if parallel_safe is None else parallel_safe
        self.parallel_safe = not self.effect_tags if declared is None else declared
        self._turns = None if declared is True else Turns()  # a synchronous function's calls, in threads
        self.blocking = self.blocking if blocking is None else blocking
        self.return_direct = self.return_direct if return_direct is None else return_direct
        self.timeout = self.timeout if timeout is UNSET else timeout
        self.max_output_chars = self.max_output_chars if max_output_chars is UNSET else max_output_chars
        checked_bounds(f"tool {self.name!r}", self.timeout, self.max_output_chars)

    def run(self, **kwargs: Any) -> Any:
        raise NotImplementedError(f"tool {self.name!r} has neither a function nor a run() method")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly, unvalidated (a decorated function stays usable)."""
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    # -- what the model sees ---------------------------------------------------------
    def parameters(self) -> dict[str, Any]:
        return copy.deepcopy(self.offered_parameters())  # the caller's to change

    def offered_parameters(self) -> dict[str, Any]:
        """The arguments' JSON schema the model is offered, not to be changed (`parameters()` gives a copy):
        a tool with a schema of its own (an MCP server's, a recorded request's) offers that."""
        return _parameters(self.args_model)

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-calling entry for this tool."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description,
                             "parameters": self.parameters()}}

    def describe(self) -> str:
        """One prompt line: `name(arg: type, opt: type = default): description`."""
        params = self.offered_parameters()  # (read only: no copy, ~3% of a ReAct round)
        required = set(params.get("required", ()))
        args = []
        for arg, prop in params.get("properties", {}).items():
            text = f"{arg}: {_type_name(prop)}"
            if arg not in required:
                text += f" = {json.dumps(prop['default'])}" if "default" in prop else " = ..."
            args.append(text)
        return f"{self.name}({', '.join(args)}): {self.description}"

    # -- calling -------------------------------------------------------------------------
    def validate(self, arguments: Mapping[str, Any]) -> BaseModel:
        if not isinstance(arguments, Mapping):
            raise ToolArgumentsError(f"tool '{self.name}': arguments must be an object, "
                                     f"got {type(arguments).__name__}", tool=self.name)
        try:
            return self.args_model.model_validate(arguments)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or None
            more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
            where = f"argument '{field}'" if field else "arguments"
            raise ToolArgumentsError(f"tool '{self.name}': invalid {where}: {first['msg']}{more}",
                                     tool=self.name, field=field) from None

    async def call(self, arguments: Mapping[str, Any]) -> Any:
        """Validate, then run: a synchronous function on the loop's thread (in a thread of its own when
        `blocking`), a coroutine awaited."""
        kwargs = dict(self.validate(arguments))
        if not self.blocking or _is_async(self.func):
            result = await run_user_code(self.func, **kwargs)  # a signal stops it (runtime/signals.py)
        else:
            try:
                result = await in_thread(self.func, kwargs, turns=self._turns)
            except Exception as exc:
                if not needs_the_loop_thread(exc):
                    raise
                raise ToolError(f"tool '{self.name}' failed: {error_line(exc)} (a blocking=True tool runs in a "
                                "thread of its own: declare it blocking=False to run it on the event loop's "
                                "thread, or make it async)") from exc
        if inspect.isawaitable(result):
            result = await user_steps(result)  # its code between awaits: a signal stops it
        return result

    @staticmethod
    def format_result(value: Any) -> str:
        """Observation text: strings as they are (an image mark only where `with_images` put it),
        anything else as JSON."""
        if isinstance(value, CarryingImages):
            return value
        return plain(value) if isinstance(value, str) else to_json(value, fallback=str).decode()


def tool(func: Callable[..., Any] | None = None, /, *, name: str | None = None,
         description: str | None = None, parallel_safe: bool | None = None,
         effect_tags: Iterable[str] = (), blocking: bool | None = None, return_direct: bool = False,
         timeout: float | None = DEFAULT_CALL_TIMEOUT, max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS) -> Any:
    """Turn a typed function into a `Tool`; usable bare (`@tool`) or configured (`@tool(...)`)."""
    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool(f, name=name, description=description, parallel_safe=parallel_safe,
                    effect_tags=effect_tags, blocking=blocking, return_direct=return_direct,
                    timeout=timeout, max_output_chars=max_output_chars)
    return wrap if func is None else wrap(func)


def _is_async(func: Callable[..., Any]) -> bool:
    """Whether calling `func` makes a coroutine (an async function, or an object with an async `__call__`)."""
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(type(func).__call__)


def _args_model_from_signature(func: Callable[..., Any], tool_name: str) -> type[BaseModel]:
    hints = typing.get_type_hints(func, include_extras=True)
    fields: dict[str, Any] = {}
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hints.get(param.name, Any), default)
    model_name = "".join(part.capitalize() for part in re.split(r"[_-]", tool_name)) + "Args"
    return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)


@functools.cache
def _parameters(args_model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of a tool's arguments, built once: every model call sends it (pydantic
    builds it in about a millisecond)."""
    params = args_model.model_json_schema()
    params.pop("title", None)
    return params


def _first_paragraph(doc: str | None) -> str:
    return " ".join(inspect.cleandoc(doc).split("\n\n")[0].split()) if doc else ""


def _type_name(prop: Mapping[str, Any]) -> str:
    """A short human type for a JSON-schema property ("integer", "array[string]", "string | null")."""
    if "enum" in prop:
        return " | ".join(json.dumps(value) for value in prop["enum"])
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[-1]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in prop:
            return " | ".join(_type_name(option) for option in prop[key])
    kind = prop.get("type", "any")
    if kind == "array" and "items" in prop:
        return f"array[{_type_name(prop['items'])}]"
    return " | ".join(kind) if isinstance(kind, list) else kind


__all__ = ["Tool", "ToolArgumentsError", "ToolError", "ToolNotFoundError", "error_line", "tool"]
