"""The built-in calculator: arithmetic the model can trust, parsed by hand.

No `eval` and no `ast`: a tokenizer and a Pratt parser that only know numbers, the
operators `+ - * / ** %` and parentheses, so a hostile expression can at worst produce a
one-line error. Limits on length, nesting and magnitude keep `9**9**9` from eating the CPU.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from runtime.tools.base import Tool, ToolError
from runtime.tools.provider import StaticToolProvider

MAX_LENGTH = 500
MAX_DEPTH = 100
MAX_MAGNITUDE = 10**300  # floats overflow near 1.8e308; ints are held to the same range

Number = int | float

# binding powers (left, right); `**` is right-associative, so its right power is lower
_BINARY = {"+": (10, 11), "-": (10, 11), "*": (20, 21), "/": (20, 21), "%": (20, 21), "**": (40, 39)}
_UNARY = 30  # between `*` and `**`: -2**2 == -4 and 2**-1 == 0.5, as in Python

_TOKEN = re.compile(r"""
    (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<op>\*\*|[-+*/%()])
  | (?P<name>[A-Za-z_]\w*)
  | (?P<space>\s+)
""", re.VERBOSE | re.ASCII)


class _Token(NamedTuple):
    kind: str  # "number", "op" or "end"
    text: str
    pos: int


def _fail(message: str) -> ToolError:
    return ToolError(f"calculator: {message}")


def _tokenize(text: str) -> Iterator[_Token]:
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise _fail(f"unexpected character {text[pos]!r} at position {pos}")
        if match.lastgroup == "name":
            raise _fail(f"names are not allowed ({match.group()!r} at position {pos}); "
                        "use numbers, + - * / ** % and parentheses")
        if match.lastgroup != "space":
            yield _Token(match.lastgroup, match.group(), pos)
        pos = match.end()
    yield _Token("end", "", pos)


class _Parser:
    """Evaluates while it parses: each `_expression(min_bp)` returns a number."""

    def __init__(self, text: str):
        self._tokens = list(_tokenize(text))
        self._index = 0
        self._depth = 0

    def parse(self) -> Number:
        if self._peek().kind == "end":
            raise _fail("empty expression")
        value = self._expression(0)
        token = self._peek()
        if token.text == ")":
            raise _fail(f"unmatched ')' at position {token.pos}")
        if token.kind != "end":
            raise _fail(f"expected an operator before {token.text!r} at position {token.pos}")
        return value

    def _peek(self) -> _Token:
        return self._tokens[self._index]

    def _advance(self) -> _Token:
        token = self._tokens[self._index]
        self._index += 1
        return token

    def _expression(self, min_bp: int) -> Number:
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _fail("expression is nested too deeply")
        value = self._prefix()
        while (token := self._peek()).kind == "op" and token.text in _BINARY:
            left_bp, right_bp = _BINARY[token.text]
            if left_bp < min_bp:
                break
            self._advance()
            value = _apply(token.text, value, self._expression(right_bp))
        self._depth -= 1
        return value

    def _prefix(self) -> Number:
        token = self._advance()
        if token.kind == "number":
            return _checked(float(token.text) if re.search(r"[.eE]", token.text) else int(token.text))
        if token.text in ("+", "-"):
            operand = self._expression(_UNARY)
            return -operand if token.text == "-" else operand
        if token.text == "(":
            value = self._expression(0)
            if self._advance().text != ")":
                raise _fail(f"missing ')' for '(' at position {token.pos}")
            return value
        if token.kind == "end":
            raise _fail("unexpected end of expression")
        raise _fail(f"unexpected {token.text!r} at position {token.pos}")


def _apply(op: str, left: Number, right: Number) -> Number:
    if op in ("/", "%") and right == 0:
        raise _fail("division by zero")
    if op == "+":
        return _checked(left + right)
    if op == "-":
        return _checked(left - right)
    if op == "*":
        return _checked(left * right)
    if op == "/":
        exact = isinstance(left, int) and isinstance(right, int) and left % right == 0
        return left // right if exact else _checked(left / right)
    if op == "%":
        return left % right
    return _power(left, right)


def _power(base: Number, exponent: Number) -> Number:
    if base == 0 and exponent < 0:
        raise _fail("zero cannot be raised to a negative power")
    if base != 0 and exponent * math.log10(abs(base)) > math.log10(MAX_MAGNITUDE):
        raise _fail(f"exponent too large (the result would exceed 1e{math.log10(MAX_MAGNITUDE):.0f})")
    result: Any = base**exponent
    if isinstance(result, complex):
        raise _fail("result is not a real number (fractional power of a negative number)")
    return _checked(result)


def _checked(value: Number) -> Number:
    if not abs(value) <= MAX_MAGNITUDE:  # also catches inf and nan
        raise _fail(f"result too large (limit 1e{math.log10(MAX_MAGNITUDE):.0f})")
    return value


def evaluate(expression: str) -> Number:
    """The value of an arithmetic expression; raises `ToolError` with a one-line reason."""
    if len(expression) > MAX_LENGTH:
        raise _fail(f"expression too long ({len(expression)} characters, limit {MAX_LENGTH})")
    return _Parser(expression).parse()


def format_number(value: Number) -> str:
    """Integers as integers (also integral floats), other floats without binary noise."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        value = int(value)
    return str(value) if isinstance(value, int) else f"{value:.15g}"


class CalculatorTool(Tool):
    """Evaluate an arithmetic expression with + - * / ** % and parentheses, e.g. "25 * 4 + 10"."""

    name = "calculator"
    parallel_safe = True

    def run(self, expression: str) -> str:
        return format_number(evaluate(expression))


class CalculatorToolProvider(StaticToolProvider):
    """The calculator as a provider (the seed's example of mixing static and provided tools)."""

    def __init__(self) -> None:
        super().__init__([CalculatorTool()])


__all__ = ["CalculatorTool", "CalculatorToolProvider", "evaluate", "format_number"]
