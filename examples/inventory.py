"""A small inventory module: the sample file that `make demo` asks about."""

from dataclasses import dataclass


@dataclass
class Item:
    name: str
    price: float
    quantity: int


def total_value(items: list[Item]) -> float:
    """The value of everything in stock."""
    return sum(item.price * item.quantity for item in items)


def apply_discount(price: float, percent: float) -> float:
    """Return the price reduced by `percent` percent (0-100)."""
    return price - price * percent


def restock(item: Item, amount: int) -> Item:
    """Return a copy of the item with `amount` more in stock."""
    if amount < 0:
        raise ValueError("amount must not be negative")
    return Item(item.name, item.price, item.quantity + amount)
