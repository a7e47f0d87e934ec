"""Unit conversion for a recipe and fitness-tracking app.

Every unit is defined by its dimension and how to reach the dimension's base
unit: ``base = value * factor + offset``.  Only temperatures use an offset.
"""

import re

UNITS = {
    # length (base: metre)
    "mm": ("length", 0.001, 0.0),
    "cm": ("length", 0.01, 0.0),
    "m": ("length", 1.0, 0.0),
    "km": ("length", 1000.0, 0.0),
    "in": ("length", 0.0254, 0.0),
    "ft": ("length", 0.3048, 0.0),
    "mi": ("length", 1609.344, 0.0),
    # mass (base: gram)
    "g": ("mass", 1.0, 0.0),
    "kg": ("mass", 1000.0, 0.0),
    "oz": ("mass", 28.349523125, 0.0),
    "lb": ("mass", 453.59237, 0.0),
    # volume (base: millilitre)
    "ml": ("volume", 1.0, 0.0),
    "l": ("volume", 1000.0, 0.0),
    "tsp": ("volume", 4.92892159375, 0.0),
    "tbsp": ("volume", 14.78676478125, 0.0),
    "cup": ("volume", 236.5882365, 0.0),
    # temperature (base: kelvin)
    "K": ("temperature", 1.0, 0.0),
    "C": ("temperature", 1.0, 273.15),
    "F": ("temperature", 5 / 9, 273.15 - 32 * 5 / 9),
}

ALIASES = {
    "meter": "m", "metre": "m", "meters": "m", "metres": "m", "kilometer": "km", "kilometre": "km",
    "inch": "in", "inches": "in", "foot": "ft", "feet": "ft", "mile": "mi", "miles": "mi",
    "gram": "g", "grams": "g", "kilogram": "kg", "kilo": "kg", "ounce": "oz", "pound": "lb", "lbs": "lb",
    "liter": "l", "litre": "l", "cups": "cup", "teaspoon": "tsp", "tablespoon": "tbsp",
    "celsius": "C", "°c": "C", "fahrenheit": "F", "°f": "F", "kelvin": "K",
}


class ConversionError(ValueError):
    pass


def normalize_unit(name):
    """Map a user-typed unit name to its key in :data:`UNITS`."""
    key = name.strip()
    if key in UNITS:
        return key
    lowered = key.lower()
    if lowered in ALIASES:
        return ALIASES[lowered]
    if lowered in UNITS:
        return lowered
    if lowered.upper() in UNITS and len(lowered) == 1:
        return lowered.upper()
    raise ConversionError(f"unknown unit: {name!r}")


def convert(value, from_unit, to_unit, precision=None):
    """Convert ``value`` from ``from_unit`` to ``to_unit`` (names or aliases).

    Raises :class:`ConversionError` for unknown units, mismatched dimensions,
    temperatures below absolute zero and negative lengths, masses or volumes.
    ``precision`` rounds the result to that many decimal places.
    """
    source = normalize_unit(from_unit)
    target = normalize_unit(to_unit)
    src_dim, src_factor, src_offset = UNITS[source]
    dst_dim, dst_factor, dst_offset = UNITS[target]
    if src_dim != dst_dim:
        raise ConversionError(f"cannot convert {src_dim} ({source}) to {dst_dim} ({target})")
    base = value * src_factor + src_offset
    if src_dim == "temperature" and base < 0:
        raise ConversionError(f"{value} {source} is below absolute zero")
    if src_dim != "temperature" and value < 0:
        raise ConversionError(f"a {src_dim} cannot be negative")
    result = (base - dst_offset) / dst_factor
    if precision is not None:
        result = round(result, precision)
        if result == 0:
            result = 0.0
    return result


QUANTITY_RE = re.compile(r"^\s*(-?\d+(?:[.,]\d+)?)\s*([^\d\s].*?)\s*$")


def parse_quantity(text):
    """Split ``"2.5 kg"`` or ``"350°F"`` into ``(2.5, "kg")`` / ``(350.0, "F")``."""
    match = QUANTITY_RE.match(text)
    if not match:
        raise ConversionError(f"not a quantity: {text!r}")
    number, unit = match.groups()
    return float(number.replace(",", ".")), normalize_unit(unit)


def convert_text(text, to_unit, precision=2):
    """Convert a quantity written as text and format the result with its unit."""
    value, unit = parse_quantity(text)
    result = convert(value, unit, to_unit, precision)
    return f"{result:g} {normalize_unit(to_unit)}"
