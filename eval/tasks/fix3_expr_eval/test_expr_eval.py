import pytest

from expr_eval import ExpressionError, evaluate, evaluate_all, tokenize


def test_tokenize_numbers_names_and_operators():
    tokens = tokenize("3.5*(rate + 12)")
    assert [(t.kind, t.text) for t in tokens] == [
        ("num", "3.5"),
        ("op", "*"),
        ("op", "("),
        ("name", "rate"),
        ("op", "+"),
        ("num", "12"),
        ("op", ")"),
        ("end", ""),
    ]
    assert tokens[3].position == 5


def test_precedence_and_parentheses():
    assert evaluate("2 + 3 * 4") == 14
    assert evaluate("(2 + 3) * 4") == 20
    assert evaluate("7 / 2") == 3.5


def test_operators_of_equal_precedence_group_left_to_right():
    assert evaluate("10 - 4 - 3") == 3
    assert evaluate("1 - 2 + 3") == 2
    assert evaluate("100 / 10 / 5") == 2


def test_unary_minus():
    assert evaluate("-3 * 2") == -6
    assert evaluate("4 * -(1 + 1)") == -8
    assert evaluate("--5") == 5


def test_variables():
    assert evaluate("2 * (x - 1) / 4", {"x": 9}) == 4
    with pytest.raises(ExpressionError, match="unknown name 'y'"):
        evaluate("y + 1")


@pytest.mark.parametrize("source", ["2 +", "(1 + 2", "1 2", "3 $ 4", "1.2.3", "4 / (2 - 2)"])
def test_malformed_expressions_raise(source):
    with pytest.raises(ExpressionError):
        evaluate(source)


def test_evaluate_all_uses_earlier_results():
    lines = ["# prices", "net = 120", "tax = net * 0.25", "", "gross = net + tax"]
    assert evaluate_all(lines) == {"net": 120, "tax": 30, "gross": 150}
    with pytest.raises(ExpressionError, match="line 1"):
        evaluate_all(["just an expression"])
