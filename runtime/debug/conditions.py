"""Safe conditions over state: `rounds >= 2`, `len(messages) > 3 and not done`, `agent.rounds == 1`.

Shared by every debugger front end (the studio's breakpoints, the debug server's condition
breakpoints). An expression is checked by walking its syntax tree against a whitelist:
names read state, nothing can be called but a few pure builtins, and attribute access is
only namespace lookup. A bad expression is a `ConditionError` with a reason, never a
crash, and never `eval`.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any

from .bounded import TooLarge, binary, call, compare, parse_expression


class ConditionError(ValueError):
    """A condition that cannot be compiled or evaluated; the message says why."""


_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b,
            ast.NotIn: lambda a, b: a not in b, ast.Is: operator.is_, ast.IsNot: operator.is_not}
_FUNCTIONS: dict[str, Callable[..., Any]] = {"len": len, "abs": abs, "min": min, "max": max, "bool": bool,
                                             "str": str, "int": int, "float": float}


class _Undefined(Exception):
    """A name the state does not hold (yet)."""


class _Namespace(dict):
    """A namespace's keys, reachable as `ns.key` in an expression."""


def _state_scope(snapshot: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    scope: dict[str, Any] = {}
    for ns, values in snapshot.items():
        if ns:
            head, *rest = ns.split(".")
            target = scope.setdefault(head, _Namespace())
            for part in rest:
                target = target.setdefault(part, _Namespace())
            target.update(values)
    for key, value in snapshot.get("", {}).items():
        scope[key] = value
        if "." in key:  # dotted global keys such as llm.usage
            head, _, tail = key.partition(".")
            if isinstance(scope.get(head, _Namespace()), _Namespace):
                scope.setdefault(head, _Namespace())[tail] = value
    return scope


class Condition:
    """A compiled, safe state condition."""

    def __init__(self, source: str):
        self.source = source.strip()
        if not self.source:
            raise ConditionError("empty condition")
        try:
            self._tree = parse_expression(self.source)
        except TooLarge as exc:
            raise ConditionError(f"condition {self.source[:60]!r}…: {exc}") from None
        except SyntaxError as exc:
            raise ConditionError(f"condition {self.source!r}: syntax error at column {exc.offset}: {exc.msg}") from None
        self._check(self._tree)

    def _check(self, node: ast.AST) -> None:
        allowed = (ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd, ast.BinOp, ast.Compare,
                   ast.Name, ast.Load, ast.Constant, ast.Attribute, ast.Subscript, ast.Call, ast.List, ast.Tuple,
                   *_BINARY, *_COMPARE)
        for child in ast.walk(node):
            if not isinstance(child, allowed):
                raise ConditionError(f"condition {self.source!r}: {type(child).__name__} is not allowed")
            if isinstance(child, ast.Call) and not (isinstance(child.func, ast.Name) and child.func.id in _FUNCTIONS):
                raise ConditionError(f"condition {self.source!r}: only {', '.join(_FUNCTIONS)} may be called")
            if isinstance(child, ast.Attribute) and child.attr.startswith("_"):
                raise ConditionError(f"condition {self.source!r}: private attribute {child.attr!r}")

    def names(self) -> set[str]:
        """The top-level state names the condition reads (for checking them when it is set)."""
        return {n.id for n in ast.walk(self._tree) if isinstance(n, ast.Name) and n.id not in _FUNCTIONS}

    def evaluate(self, snapshot: Mapping[str, Mapping[str, Any]]) -> bool:
        """True or False; a key not written yet makes the condition False, not an error."""
        try:
            return bool(self._eval(self._tree, _state_scope(snapshot)))
        except _Undefined:
            return False
        except ConditionError:
            raise
        except Exception as exc:
            raise ConditionError(f"condition {self.source!r}: {type(exc).__name__}: {exc}") from None

    def _eval(self, node: ast.AST, scope: dict[str, Any]) -> Any:
        match node:
            case ast.Constant(value=value):
                return value
            case ast.Name(id="True" | "False" | "None" as name):
                return {"True": True, "False": False, "None": None}[name]
            case ast.Name(id=name):
                if name in scope:
                    return scope[name]
                raise _Undefined(name)
            case ast.Attribute(value=value, attr=attr):
                base = self._eval(value, scope)
                if isinstance(base, Mapping) and attr in base:
                    return base[attr]
                raise _Undefined(attr)
            case ast.Subscript(value=value, slice=index):
                return self._eval(value, scope)[self._eval(index, scope)]
            case ast.BoolOp(op=ast.And(), values=values):
                return all(self._eval(v, scope) for v in values)
            case ast.BoolOp(op=ast.Or(), values=values):
                return any(self._eval(v, scope) for v in values)
            case ast.UnaryOp(op=ast.Not(), operand=operand):
                return not self._eval(operand, scope)
            case ast.UnaryOp(op=ast.USub(), operand=operand):
                return -self._eval(operand, scope)
            case ast.UnaryOp(op=ast.UAdd(), operand=operand):
                return +self._eval(operand, scope)
            case ast.BinOp(left=left, op=op, right=right):
                return binary(type(op), _BINARY[type(op)], self._eval(left, scope), self._eval(right, scope))
            case ast.Compare(left=left, ops=ops, comparators=comparators):
                current = self._eval(left, scope)
                for op, comparator in zip(ops, comparators, strict=True):
                    other = self._eval(comparator, scope)
                    if not compare(type(op), _COMPARE[type(op)], current, other):
                        return False
                    current = other
                return True
            case ast.Call(func=ast.Name(id=name), args=args):
                return call(name, _FUNCTIONS[name], [self._eval(a, scope) for a in args])
            case ast.List(elts=elts):
                return [self._eval(e, scope) for e in elts]
            case ast.Tuple(elts=elts):  # a tuple stays one: `'%d %d' % (a, b)`, `x in (1, 2)`, `t == (1, 2)`
                return tuple(self._eval(e, scope) for e in elts)
        raise ConditionError(f"condition {self.source!r}: cannot evaluate {type(node).__name__}")


__all__ = ["Condition", "ConditionError"]
