"""Budgets for what a user types: breakpoint conditions and state values (studio or debug client).

A condition is checked after every tick, so `len('a' * 3000000000)` or
`len(str([[0]*20000]*20000))` would freeze the studio for seconds and take gigabytes, and
`"1+"*5000+"1"` or a 3,000-deep JSON value would end in a `RecursionError`. Here every such
input is refused before the work is done: expressions and values have a length and a nesting
limit, every operator first checks the size of what it would build (`*`, `+`, `%` on text
and lists with every width and precision a format asks for, big integers; an operand of any
other type than the builtins' is refused), `str()` the size of what it would write, and those
that walk values (comparisons and `in` of lists, `min()`, `max()`) the size of what they would walk:
`[[0]*999999]*999999 == [[0]*999999]*999999` is two cheap lists of shared rows, yet
comparing them is 10^12 steps no signal can interrupt.
"""

from __future__ import annotations

import ast
import json
import re
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
    except UnicodeEncodeError as exc:  # the parser reads UTF-8: a lone surrogate (from JSON's \ud800) is none
        raise SyntaxError("a character that is not valid Unicode (a lone surrogate)",
                          ("<condition>", 1, exc.start + 1, None)) from None
    except (RecursionError, MemoryError):
        raise TooLarge(f"expression nested too deeply (at most {MAX_DEPTH} levels)") from None
    if _depth(tree) > MAX_DEPTH:
        raise TooLarge(f"expression nested too deeply (at most {MAX_DEPTH} levels)")
    return tree


_SCALAR = int | float | complex | None


def size(value: Any, budget: int = MAX_ITEMS) -> int:
    """Characters and elements in `value`, counted only up to `budget` (so counting stays cheap).

    A row shared many times (`[[0]*1000]*1000`) counts each time, as walking it would, but a
    row of scalars is scanned once."""
    total, stack = 0, [value]
    rows: dict[int, int] = {}  # id -> length of a container of scalars only, already scanned
    while stack and total <= budget:
        item = stack.pop()
        if isinstance(item, str | bytes):
            total += len(item)
        elif isinstance(item, int):
            total += item.bit_length() // 3 + 1
        elif isinstance(item, Mapping | list | tuple | set | frozenset):
            known = rows.get(id(item))
            if known is not None:
                total += known
                continue
            total += len(item)
            nested = [x for x in ([*item.keys(), *item.values()] if isinstance(item, Mapping) else item)
                      if not isinstance(x, _SCALAR)]
            if nested:
                stack.extend(nested)
            else:
                rows[id(item)] = len(item)
        else:
            total += 1
            fields = getattr(item, "__dict__", None)  # an object's text shows its fields (a pydantic model's)
            if isinstance(fields, dict):
                stack.extend(fields.values())
    return total


def _check_size(result_size: int, what: str, verb: str = "build") -> None:
    if result_size > MAX_ITEMS:
        raise TooLarge(f"{what} would {verb} more than {MAX_ITEMS:,} items")


def _sequence(value: Any) -> bool:
    return isinstance(value, str | bytes | list | tuple)


# The operand types whose every operator is bounded here (bool, a subclass of int, included): an
# operator of any other type (a state value of the tree's own class) runs code no budget can see.
_BOUNDED_TYPES = frozenset({str, bytes, list, tuple, dict, set, frozenset, int, float, complex, bool, type(None)})
_SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%"}


def _check_operands(op: type, left: Any, right: Any) -> None:
    """Every operator on every operand a condition can give it: what `*`, `+` and `%` would build
    is measured first; the others build numbers no larger than their operands (or raise
    `TypeError` at once), and operands of other types are refused."""
    symbol = _SYMBOLS.get(op, op.__name__)
    for operand in (left, right):
        if type(operand) not in _BOUNDED_TYPES:
            raise TooLarge(f"'{symbol}' of a {type(operand).__name__}: what it would build cannot be bounded")
    if op is ast.Mult:
        for seq, times in ((left, right), (right, left)):
            if _sequence(seq) and isinstance(times, int):
                _check_size(len(seq) * times, "'*'")
        if isinstance(left, int) and isinstance(right, int) and left.bit_length() + right.bit_length() > MAX_INT_BITS:
            raise TooLarge(f"'*' would build an integer of over {MAX_INT_BITS:,} bits")
    elif op is ast.Add and _sequence(left) and _sequence(right):
        _check_size(len(left) + len(right), "'+'")
    elif op is ast.Mod and isinstance(left, str | bytes):
        _check_size(_formatted_size(left, right), "'%'")


_CONVERSION = re.compile(r"%(?:\([^)]*\))?[#0 +-]*(\*|\d+)?(?:\.(\*|\d*))?[hlL]?(.?)", re.DOTALL)
_CONVERTED_NUMBER = 400  # characters a conversion of a number gives at most, beside width and precision


def _formatted_size(template: str | bytes, args: Any) -> int:
    """An upper bound of the length of `template % args`: the template, every argument as text, and
    each conversion's width and precision, written or taken from the arguments (`*`):
    `'%99999999d' % 1` is a hundred million spaces."""
    text = template.decode("latin-1") if isinstance(template, bytes) else template
    positional = list(args) if isinstance(args, tuple) else [args]
    total, taken = len(text) + size(args), 0
    for found in _CONVERSION.finditer(text):
        for written in found.group(1, 2):
            if written == "*":
                star = positional[taken] if taken < len(positional) else 0
                taken += 1
                total += abs(star) if isinstance(star, int) else 0
            elif written:
                total += int(written)
        if found.group(3) != "%":
            taken += 1
            total += _CONVERTED_NUMBER
        if total > MAX_ITEMS:
            break
    return total


def binary(op: type, function: Callable[[Any, Any], Any], left: Any, right: Any) -> Any:
    """`function(left, right)` for the operator class `op`, once what it builds is known to fit."""
    _check_operands(op, left, right)
    return function(left, right)


_CONTAINER = list | tuple | set | frozenset | Mapping


def compare(op: type, function: Callable[[Any, Any], bool], left: Any, right: Any) -> bool:
    """`function(left, right)` for the comparison class `op`, once what it walks is known to fit:
    `in` walks the list it searches, `==` or `<` of two containers at most the smaller one."""
    if op in (ast.In, ast.NotIn):
        if isinstance(right, list | tuple):
            _check_size(size(right), f"'{'in' if op is ast.In else 'not in'}'", "walk")
    elif isinstance(left, _CONTAINER) and isinstance(right, _CONTAINER) and size(left) > MAX_ITEMS:
        _check_size(size(right), "comparing", "walk")  # walks the smaller of the two
    return function(left, right)


_WALKS_ARGUMENTS = frozenset({"str", "min", "max"})  # str() builds text of them, min/max compare them


def call(name: str, function: Callable[..., Any], args: list[Any]) -> Any:
    """A whitelisted builtin, refusing `str()`, `min()` or `max()` of values over the budget."""
    if name in _WALKS_ARGUMENTS:
        _check_size(sum(size(arg) for arg in args), f"{name}()", "build" if name == "str" else "walk")
    return function(*args)


def loads(text: str) -> Any:
    """Typed JSON (approved tool arguments, a state value): `TooLarge` for text over the budget or
    nested deeper than `MAX_DEPTH` (before `json` recurses into it), else what `json.loads` gives."""
    if len(text) > MAX_VALUE_TEXT:
        raise TooLarge(f"value of {len(text):,} characters (at most {MAX_VALUE_TEXT:,})")
    if ("[" in text or "{" in text) and _json_depth(text) > MAX_DEPTH:
        raise TooLarge(f"value nested too deeply (at most {MAX_DEPTH} levels)")
    return json.loads(text)


def parse_value(text: str) -> Any:
    """A typed state value: JSON when it parses (`3`, `true`, `["a"]`), otherwise the text itself;
    `TooLarge` as `loads` says."""
    try:
        return loads(text)
    except TooLarge:
        raise
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


__all__ = ["MAX_DEPTH", "MAX_ITEMS", "MAX_SOURCE", "TooLarge", "binary", "call", "compare", "loads",
           "parse_expression", "parse_value", "size"]
