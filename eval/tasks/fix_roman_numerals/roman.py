"""Conversion between integers and Roman numerals.

Only the standard subtractive notation is supported, which limits the
range to 1..3999. Parsing is strict: a numeral is accepted only if it is
the canonical spelling of its value ("IIII" and "IC" are rejected).
"""

import re

MIN_VALUE = 1
MAX_VALUE = 3999

_SYMBOLS = [
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
]

_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}

_CANONICAL = re.compile(
    r"^M{0,3}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})$"
)


def to_roman(n):
    """Return the Roman numeral for ``n``.

    >>> to_roman(1994)
    'MCMXCIV'
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError("expected an int, got %r" % (n,))
    if not MIN_VALUE <= n < MAX_VALUE:
        raise ValueError("%d is out of range (%d..%d)" % (n, MIN_VALUE, MAX_VALUE))
    parts = []
    for value, symbol in _SYMBOLS:
        count, n = divmod(n, value)
        parts.append(symbol * count)
    return "".join(parts)


def from_roman(text):
    """Parse a canonical Roman numeral (case-insensitive) into an int.

    >>> from_roman("mmxxiv")
    2024
    """
    s = text.strip().upper()
    if not s or not _CANONICAL.match(s):
        raise ValueError("not a valid Roman numeral: %r" % (text,))
    total = 0
    for i, ch in enumerate(s):
        value = _VALUES[ch]
        if i + 1 < len(s) and value < _VALUES[s[i + 1]]:
            total -= value
        else:
            total += value
    return total


def is_roman(text):
    """True if ``text`` is a canonical Roman numeral."""
    try:
        from_roman(text)
    except (ValueError, AttributeError):
        return False
    return True


def roman_range(start, stop, step=1):
    """Like range(), but yields Roman numerals. Bounds are ints."""
    for n in range(start, stop, step):
        yield to_roman(n)


def add(a, b):
    """Add two numerals and return the result as a numeral."""
    return to_roman(from_roman(a) + from_roman(b))


def format_year(year, lowercase=False):
    """Format a year for a copyright line or a film credit."""
    numeral = to_roman(year)
    return numeral.lower() if lowercase else numeral
