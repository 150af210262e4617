"""Budgets for what a user types: breakpoint conditions and state values (studio or debug client).

A condition is checked after every tick, so `len('a' * 3000000000)` or
`len(str([[0]*20000]*20000))` would freeze the studio for seconds and take gigabytes, and
`"1+"*5000+"1"` or a 3,000-deep JSON value would end in a `RecursionError`. Here every such
input is refused before the work is done: expressions and values have a length and a nesting
limit, and the operations that build new values (`*`, `+`, `%` on text and lists, `str()`,
big integers) first check the size of what they would build.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Mapping
from typing import Any

MAX_SOURCE = 2_000  # characters of a condition
MAX_DEPTH = 100  # nesting of a condition's syntax tree, or of a JSON value
MAX_VALUE_TEXT = 2_000_000  # characters of a typed state value
MAX_ITEMS = 1_000_000  # characters or elements a condition may build
MAX_INT_BITS = 100_000


class TooLarge(ValueError):
    """An input, or a value it would build, over the budget; the message says which limit."""


def _depth(node: ast.AST) -> int:
    deepest, stack = 0, [(node, 1)]
    while stack:
        current, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            break
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(current))
    return deepest


def parse_expression(source: str) -> ast.expr:
    """The syntax tree of an expression; `SyntaxError` or `TooLarge` when it cannot be used."""
    if len(source) > MAX_SOURCE:
        raise TooLarge(f"expression of {len(source):,} characters (at most {MAX_SOURCE:,})")
    try:
        tree = ast.parse(source, mode="eval").body
    except (RecursionError, MemoryError):
        raise TooLarge(f"expression nested too deeply (at most {MAX_DEPTH} levels)") from None
    if _depth(tree) > MAX_DEPTH:
        raise TooLarge(f"expression nested too deeply (at most {MAX_DEPTH} levels)")
    return tree


def size(value: Any, budget: int = MAX_ITEMS) -> int:
    """Characters and elements in `value`, counted only up to `budget` (so counting stays cheap)."""
    total, stack = 0, [value]
    while stack and total <= budget:
        item = stack.pop()
        if isinstance(item, str | bytes):
            total += len(item)
        elif isinstance(item, Mapping):
            total += len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            total += len(item)
            stack.extend(item)
        elif isinstance(item, int):
            total += item.bit_length() // 3 + 1
        else:
            total += 1
    return total


def _check_size(result_size: int, what: str) -> None:
    if result_size > MAX_ITEMS:
        raise TooLarge(f"{what} would build more than {MAX_ITEMS:,} items")


def _sequence(value: Any) -> bool:
    return isinstance(value, str | bytes | list | tuple)


def _check_operands(op: type, left: Any, right: Any) -> None:
    if op is ast.Mult:
        for seq, times in ((left, right), (right, left)):
            if _sequence(seq) and isinstance(times, int):
                _check_size(len(seq) * times, "'*'")
        if isinstance(left, int) and isinstance(right, int) and left.bit_length() + right.bit_length() > MAX_INT_BITS:
            raise TooLarge(f"'*' would build an integer of over {MAX_INT_BITS:,} bits")
    elif op is ast.Add and _sequence(left) and _sequence(right):
        _check_size(len(left) + len(right), "'+'")
    elif op is ast.Mod and isinstance(left, str | bytes):
        _check_size(len(left) + size(right), "'%'")


def binary(op: type, function: Callable[[Any, Any], Any], left: Any, right: Any) -> Any:
    """`function(left, right)` for the operator class `op`, once what it builds is known to fit."""
    _check_operands(op, left, right)
    return function(left, right)


_BUILDS_TEXT = frozenset({"str"})


def call(name: str, function: Callable[..., Any], args: list[Any]) -> Any:
    """A whitelisted builtin, refusing `str()` of a value whose text would be over the budget."""
    if name in _BUILDS_TEXT:
        for arg in args:
            _check_size(size(arg), f"{name}()")
    return function(*args)


def parse_value(text: str) -> Any:
    """A typed state value: JSON when it parses (`3`, `true`, `["a"]`), otherwise the text itself;
    `TooLarge` for text over the budget or JSON nested deeper than `MAX_DEPTH`."""
    if len(text) > MAX_VALUE_TEXT:
        raise TooLarge(f"value of {len(text):,} characters (at most {MAX_VALUE_TEXT:,})")
    if ("[" in text or "{" in text) and _json_depth(text) > MAX_DEPTH:
        raise TooLarge(f"value nested too deeply (at most {MAX_DEPTH} levels)")
    try:
        return json.loads(text)
    except ValueError:  # not JSON, or a number past Python's 4,300 digits
        return text


def _json_depth(text: str) -> int:
    """How deep JSON brackets nest in `text`, ignoring brackets inside strings."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


__all__ = ["MAX_DEPTH", "MAX_ITEMS", "MAX_SOURCE", "TooLarge", "binary", "call", "parse_expression",
           "parse_value", "size"]
