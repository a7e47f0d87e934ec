"""Shopping cart arithmetic with Decimal money: line items, discount codes and sales tax."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
ZERO = Decimal("0")


def to_money(value: Decimal | int | str) -> Decimal:
    """Round to whole cents, halves away from zero (the way a till does)."""
    return Decimal(value).quantize(CENT, rounding=ROUND_HALF_UP)


@dataclass
class LineItem:
    sku: str
    name: str
    unit_price: Decimal
    quantity: int = 1
    taxable: bool = True

    @property
    def line_total(self) -> Decimal:
        return to_money(self.unit_price * self.quantity)


@dataclass(frozen=True)
class Discount:
    code: str
    kind: str  # "percent" or "fixed"
    value: Decimal
    min_subtotal: Decimal = ZERO

    def amount_off(self, subtotal: Decimal) -> Decimal:
        """What this code takes off ``subtotal``; never more than the subtotal itself."""
        if subtotal < self.min_subtotal:
            return ZERO
        if self.kind == "percent":
            amount = to_money(subtotal * self.value / 100)
        elif self.kind == "fixed":
            amount = to_money(self.value)
        else:
            raise ValueError(f"unknown discount kind {self.kind!r}")
        return min(amount, subtotal)


@dataclass(frozen=True)
class Totals:
    subtotal: Decimal
    discount: Decimal
    tax: Decimal
    total: Decimal


class Cart:
    def __init__(self, tax_rate: Decimal) -> None:
        self.tax_rate = tax_rate
        self.items: dict[str, LineItem] = {}
        self.discount: Discount | None = None

    def add(self, sku: str, name: str, unit_price: Decimal, quantity: int = 1, taxable: bool = True) -> None:
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        if sku in self.items:
            self.items[sku].quantity += quantity
        else:
            self.items[sku] = LineItem(sku, name, Decimal(unit_price), quantity, taxable)

    def remove(self, sku: str, quantity: int | None = None) -> None:
        """Take ``quantity`` units of ``sku`` out of the cart (all of them when None)."""
        item = self.items[sku]
        if quantity is None or quantity >= item.quantity:
            del self.items[sku]
        else:
            item.quantity -= quantity

    def apply(self, discount: Discount) -> bool:
        """Use ``discount`` if the cart qualifies for it; a later code replaces an earlier one."""
        if discount.amount_off(self.subtotal()) == ZERO:
            return False
        self.discount = discount
        return True

    def subtotal(self) -> Decimal:
        return sum((item.line_total for item in self.items.values()), ZERO)

    def totals(self) -> Totals:
        """Discount first, then tax on what is left of the taxable items."""
        subtotal = self.subtotal()
        discount = self.discount.amount_off(subtotal) if self.discount else ZERO
        taxable = sum((item.line_total for item in self.items.values() if item.taxable), ZERO)
        if subtotal:
            taxable_after_discount = taxable - discount * taxable / subtotal
        else:
            taxable_after_discount = ZERO
        tax = to_money(taxable * self.tax_rate)
        return Totals(subtotal, discount, tax, subtotal - discount + tax)

    def receipt(self) -> str:
        lines = [
            f"{item.quantity:>3} x {item.name:<20}{item.line_total:>10}"
            for item in sorted(self.items.values(), key=lambda i: i.name)
        ]
        totals = self.totals()
        lines.append(f"{'Subtotal':<26}{totals.subtotal:>10}")
        if totals.discount:
            code = self.discount.code if self.discount else ""
            lines.append(f"{'Discount ' + code:<26}{-totals.discount:>10}")
        lines.append(f"{'Tax':<26}{totals.tax:>10}")
        lines.append(f"{'Total':<26}{totals.total:>10}")
        return "\n".join(lines)
