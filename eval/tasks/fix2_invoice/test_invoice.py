from decimal import Decimal

import pytest

from invoice import Invoice, to_money, volume_discount


def test_to_money_rounds_half_up():
    assert to_money("2.345") == Decimal("2.35")
    assert to_money(3) == Decimal("3.00")


def test_volume_discount_tier_boundaries():
    assert volume_discount(9) == Decimal("0")
    assert volume_discount(10) == Decimal("0.05")
    assert volume_discount(50) == Decimal("0.10")
    assert volume_discount(100) == Decimal("0.15")


def test_volume_discount_between_tiers():
    assert volume_discount(3) == Decimal("0")
    assert volume_discount(75) == Decimal("0.10")
    assert volume_discount(250) == Decimal("0.15")


def test_volume_discount_rejects_negative():
    with pytest.raises(ValueError):
        volume_discount(-1)


def test_invoice_totals_with_tax_and_shipping():
    inv = Invoice("INV-7", "ACME", shipping=Decimal("12.50"), free_shipping_over=Decimal("500"))
    inv.add("BOLT-M6", "0.40", 50, tax_rate="0.20")
    inv.add("GLUE", "7.99", 2, tax_rate="0.20")
    assert inv.subtotal() == Decimal("33.98")
    assert inv.tax_total() == Decimal("6.80")
    assert inv.shipping_charge() == Decimal("12.50")
    assert inv.total() == Decimal("53.28")


def test_free_shipping_threshold():
    inv = Invoice("INV-8", "ACME", shipping=Decimal("12.50"), free_shipping_over=Decimal("100"))
    inv.add("PANEL", "10.00", 10)
    assert inv.subtotal() == Decimal("95.00")
    assert inv.shipping_charge() == Decimal("12.50")
    inv.add("PANEL-S", "5.00", 1)
    assert inv.shipping_charge() == Decimal("0.00")
