import pytest

from rational import Rational, total


def test_normalised_to_lowest_terms():
    assert repr(Rational(6, -8)) == "Rational(-3, 4)"
    assert repr(Rational(0, 5)) == "Rational(0, 1)"
    assert Rational(10, 5) == 2
    with pytest.raises(ZeroDivisionError):
        Rational(1, 0)


def test_arithmetic():
    assert Rational(1, 2) + Rational(1, 3) == Rational(5, 6)
    assert 1 - Rational(1, 4) == Rational(3, 4)
    assert Rational(2, 3) * 3 == 2
    assert Rational(1, 2) / Rational(3, 4) == Rational(2, 3)
    assert 1 / Rational(1, 3) == 3
    assert abs(Rational(-5, 2)) == Rational(5, 2)
    assert float(Rational(3, 8)) == 0.375


def test_comparison_and_hashing():
    assert Rational(1, 3) < Rational(1, 2)
    assert Rational(-1, 2) < 0 <= Rational(0, 7)
    assert sorted([Rational(3, 4), Rational(-1, 2), Rational(2, 3)]) == [
        Rational(-1, 2), Rational(2, 3), Rational(3, 4)
    ]
    assert len({2, Rational(4, 2), Rational(1, 2), Rational(2, 4)}) == 2


def test_parse_plain_and_decimal():
    assert Rational.parse("3/4") == Rational(3, 4)
    assert Rational.parse(" -2 ") == -2
    assert Rational.parse("0.125") == Rational(1, 8)
    assert Rational.parse("-0.5") == Rational(-1, 2)
    assert Rational.parse("6/-8") == Rational(-3, 4)


def test_parse_mixed_numbers():
    assert Rational.parse("1 1/2") == Rational(3, 2)
    assert Rational.parse("2  3/4") == Rational(11, 4)


def test_parse_negative_mixed_numbers():
    assert Rational.parse("-1 1/2") == Rational(-3, 2)
    assert Rational.parse("-2 3/4") == Rational(-11, 4)


@pytest.mark.parametrize("text", ["", "abc", "1 3/2", "1 -1/2", "1/2/3", "1.2.3"])
def test_parse_rejects(text):
    with pytest.raises(ValueError):
        Rational.parse(text)


def test_str_mixed_and_total():
    assert str(Rational(3, 2)) == "3/2"
    assert Rational(3, 2).mixed() == "1 1/2"
    assert Rational(-7, 4).mixed() == "-1 3/4"
    assert Rational(-1, 2).mixed() == "-1/2"
    assert Rational(4).mixed() == "4"
    assert total(["1/2", 1, Rational(1, 4), "0.25", "1 1/2"]) == Rational(7, 2)
