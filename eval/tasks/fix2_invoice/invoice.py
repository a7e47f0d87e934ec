"""Invoice totals with volume discounts, per-line tax and shipping.

Amounts are kept as :class:`decimal.Decimal` and rounded half-up to whole
cents, which is what most accounting packages expect.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
ZERO = Decimal("0.00")

# (minimum quantity, discount rate), checked from the largest tier down.
VOLUME_TIERS = [
    (100, Decimal("0.15")),
    (50, Decimal("0.10")),
    (10, Decimal("0.05")),
]


def to_money(value) -> Decimal:
    """Round ``value`` to whole cents, half-up."""
    return Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_UP)


def volume_discount(quantity: int) -> Decimal:
    """Return the discount rate earned by ordering ``quantity`` units of one SKU."""
    if quantity < 0:
        raise ValueError("quantity must not be negative")
    for minimum, rate in VOLUME_TIERS:
        if quantity > minimum:
            return rate
    return Decimal("0")


@dataclass
class LineItem:
    sku: str
    unit_price: Decimal
    quantity: int
    tax_rate: Decimal = Decimal("0")

    def subtotal(self) -> Decimal:
        """Price of the line after the volume discount, before tax."""
        gross = self.unit_price * self.quantity
        discount = gross * volume_discount(self.quantity)
        return to_money(gross - discount)

    def tax(self) -> Decimal:
        return to_money(self.subtotal() * self.tax_rate)

    def total(self) -> Decimal:
        return self.subtotal() + self.tax()


@dataclass
class Invoice:
    number: str
    customer: str
    lines: list[LineItem] = field(default_factory=list)
    shipping: Decimal = ZERO
    free_shipping_over: Decimal | None = None

    def add(self, sku: str, unit_price, quantity: int, tax_rate="0") -> LineItem:
        """Append a line; prices and rates may be given as str, int or Decimal."""
        if quantity <= 0:
            raise ValueError(f"quantity for {sku} must be positive")
        item = LineItem(sku, Decimal(str(unit_price)), int(quantity), Decimal(str(tax_rate)))
        self.lines.append(item)
        return item

    def subtotal(self) -> Decimal:
        return sum((line.subtotal() for line in self.lines), ZERO)

    def tax_total(self) -> Decimal:
        return sum((line.tax() for line in self.lines), ZERO)

    def shipping_charge(self) -> Decimal:
        """Shipping is waived once the discounted subtotal reaches the threshold."""
        if self.free_shipping_over is not None and self.subtotal() >= self.free_shipping_over:
            return ZERO
        return to_money(self.shipping)

    def total(self) -> Decimal:
        return self.subtotal() + self.tax_total() + self.shipping_charge()

    def summary(self) -> str:
        """A plain-text rendering suitable for an e-mail body."""
        rows = [f"Invoice {self.number} for {self.customer}"]
        for line in self.lines:
            rows.append(f"  {line.sku:<12} {line.quantity:>5} x {line.unit_price:>8}  {line.total():>10}")
        rows.append(f"  {'Subtotal':<30} {self.subtotal():>10}")
        rows.append(f"  {'Tax':<30} {self.tax_total():>10}")
        rows.append(f"  {'Shipping':<30} {self.shipping_charge():>10}")
        rows.append(f"  {'Total':<30} {self.total():>10}")
        return "\n".join(rows)
