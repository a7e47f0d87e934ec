"""Exact rational numbers for recipe and measurement arithmetic: ``Rational.parse("1 1/2") * 3``."""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import total_ordering


@total_ordering
class Rational:
    """A fraction kept in lowest terms with a positive denominator."""

    __slots__ = ("den", "num")

    def __init__(self, num: int, den: int = 1) -> None:
        if den == 0:
            raise ZeroDivisionError("denominator is zero")
        if den < 0:
            num, den = -num, -den
        common = math.gcd(num, den)
        self.num = num // common
        self.den = den // common

    @classmethod
    def parse(cls, text: str) -> Rational:
        """Parse ``"3/4"``, ``"-2"``, ``"0.125"`` or a mixed number such as ``"1 1/2"`` or ``"-2 3/4"``."""
        cleaned = " ".join(text.split())
        whole_text, _, rest = cleaned.rpartition(" ")
        try:
            if "/" in rest:
                num_text, den_text = rest.split("/")
                value = cls(int(num_text), int(den_text))
            elif "." in rest:
                int_text, frac_text = rest.split(".")
                value = cls(int(int_text + frac_text), 10 ** len(frac_text))
            else:
                value = cls(int(rest))
            if whole_text:
                if not 0 < value < 1:
                    raise ValueError
                whole = cls(int(whole_text))
                value = whole - value if whole_text.startswith("-") else whole + value
        except ValueError:
            raise ValueError(f"not a fraction: {text!r}") from None
        return value

    @staticmethod
    def _coerce(other: object) -> Rational | None:
        if isinstance(other, Rational):
            return other
        if isinstance(other, int):
            return Rational(other)
        return None

    def __add__(self, other: object) -> Rational:
        o = self._coerce(other)
        if o is None:
            return NotImplemented
        return Rational(self.num * o.den + o.num * self.den, self.den * o.den)

    __radd__ = __add__

    def __neg__(self) -> Rational:
        return Rational(-self.num, self.den)

    def __sub__(self, other: object) -> Rational:
        o = self._coerce(other)
        if o is None:
            return NotImplemented
        return self + -o

    def __rsub__(self, other: object) -> Rational:
        return -self + other

    def __mul__(self, other: object) -> Rational:
        o = self._coerce(other)
        if o is None:
            return NotImplemented
        return Rational(self.num * o.num, self.den * o.den)

    __rmul__ = __mul__

    def __truediv__(self, other: object) -> Rational:
        o = self._coerce(other)
        if o is None:
            return NotImplemented
        return Rational(self.num * o.den, self.den * o.num)

    def __rtruediv__(self, other: object) -> Rational:
        o = self._coerce(other)
        if o is None:
            return NotImplemented
        return o / self

    def __abs__(self) -> Rational:
        return Rational(abs(self.num), self.den)

    def __eq__(self, other: object) -> bool:
        o = self._coerce(other)
        if o is None:
            return NotImplemented
        return (self.num, self.den) == (o.num, o.den)

    def __lt__(self, other: object) -> bool:
        o = self._coerce(other)
        if o is None:
            return NotImplemented
        return self.num * o.den < o.num * self.den

    def __hash__(self) -> int:
        return hash(self.num) if self.den == 1 else hash((self.num, self.den))

    def __float__(self) -> float:
        return self.num / self.den

    def __repr__(self) -> str:
        return f"Rational({self.num}, {self.den})"

    def __str__(self) -> str:
        return str(self.num) if self.den == 1 else f"{self.num}/{self.den}"

    def mixed(self) -> str:
        """``"-1 1/2"`` for -3/2; whole numbers and proper fractions print without the other part."""
        whole, rest = divmod(abs(self.num), self.den)
        sign = "-" if self.num < 0 else ""
        if rest == 0:
            return f"{sign}{whole}"
        if whole == 0:
            return f"{sign}{rest}/{self.den}"
        return f"{sign}{whole} {rest}/{self.den}"


def total(values: Iterable[str | int | Rational]) -> Rational:
    """Sum numbers given as Rational, int or text (see :meth:`Rational.parse`)."""
    result = Rational(0)
    for value in values:
        result += Rational.parse(value) if isinstance(value, str) else value
    return result
