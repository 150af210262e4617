import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.tools import CalculatorTool, ToolError
from runtime.tools.calculator import evaluate


@pytest.fixture
def calculator():
    return CalculatorTool()


def test_calculator_metadata(calculator):
    assert calculator.name == "calculator"
    assert calculator.parallel_safe is True
    params = calculator.schema()["function"]["parameters"]
    assert params["properties"]["expression"]["type"] == "string"
    assert params["required"] == ["expression"]


@pytest.mark.parametrize(("expression", "result"), [
    ("25 * 4 + 10", "110"),
    ("7/2", "3.5"),
    ("6 / 3", "2"),
    ("2 + 3 * 4", "14"),
    ("(2 + 3) * 4", "20"),
    ("10 - 4 - 3", "3"),
    ("2 ** 3 ** 2", "512"),
    ("-2 ** 2", "-4"),
    ("2 ** -1", "0.5"),
    ("-(3 - 5)", "2"),
    ("+4 - -2", "6"),
    ("--3", "3"),
    ("1.5 * 2", "3"),
    ("0.1 + 0.2", "0.3"),
    (".5 + 1.", "1.5"),
    ("1e3 / 8", "125"),
    ("10 % 3", "1"),
    ("-7 % 3", "2"),
    ("5.5 % 2", "1.5"),
    ("  ( ( 1 ) )  ", "1"),
    ("2 ** 100", str(2**100)),
])
async def test_arithmetic(calculator, expression, result):
    assert await calculator.call({"expression": expression}) == result


@pytest.mark.parametrize(("expression", "message"), [
    ("", "calculator: empty expression"),
    ("   ", "calculator: empty expression"),
    ("2 * x", "calculator: names are not allowed ('x' at position 4)"),
    ("sqrt(2)", "calculator: names are not allowed ('sqrt' at position 0)"),
    ("__import__('os')", "calculator: names are not allowed ('__import__' at position 0)"),
    ("2 $ 3", "calculator: unexpected character '$' at position 2"),
    ("1 / 0", "calculator: division by zero"),
    ("1 % 0.0", "calculator: division by zero"),
    ("0 ** -1", "calculator: zero cannot be raised to a negative power"),
    ("(2 + 3", "calculator: missing ')' for '(' at position 0"),
    ("2 + 3)", "calculator: unmatched ')' at position 5"),
    ("()", "calculator: unexpected ')' at position 1"),
    ("2 +", "calculator: unexpected end of expression"),
    ("* 2", "calculator: unexpected '*' at position 0"),
    ("2 3", "calculator: expected an operator before '3' at position 2"),
    ("9 ** 9 ** 9", "calculator: exponent too large"),
    ("0.5 ** -5000", "calculator: exponent too large"),
    ("1e400", "calculator: result too large"),
    ("(-8) ** 0.5", "calculator: result is not a real number"),
    ("1" + "+1" * 300, "calculator: expression too long (601 characters, limit 500)"),
    ("(" * 150 + "1" + ")" * 150, "calculator: expression is nested too deeply"),
    ("-" * 200 + "1", "calculator: expression is nested too deeply"),
])
async def test_errors_are_one_line_tool_errors(calculator, expression, message):
    with pytest.raises(ToolError) as info:
        await calculator.call({"expression": expression})
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def _integer_expressions():
    leaves = st.integers(min_value=0, max_value=50).map(str)

    def extend(children):
        binary = st.tuples(children, st.sampled_from(["+", "-", "*"]), children).map(" ".join)
        return binary | children.map(lambda e: f"({e})") | children.map(lambda e: f"-{e}")

    return st.recursive(leaves, extend, max_leaves=12)


@given(_integer_expressions())
def test_agrees_with_python_arithmetic(expression):
    # the oracle: Python itself, on strings made only of digits, + - * and parentheses
    assert evaluate(expression) == eval(expression, {"__builtins__": {}})
