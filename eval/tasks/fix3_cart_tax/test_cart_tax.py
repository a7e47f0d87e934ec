from decimal import Decimal as D

import pytest

from cart_tax import Cart, Discount, Totals, to_money


def make_cart() -> Cart:
    cart = Cart(tax_rate=D("0.08"))
    cart.add("MUG", "Mug", D("8.99"), 2)
    cart.add("TEA", "Green tea", D("4.25"), 3, taxable=False)
    cart.add("PEN", "Pen", D("1.15"))
    return cart


def test_to_money_rounds_half_up():
    assert to_money(D("2.345")) == D("2.35")
    assert to_money(D("2.344")) == D("2.34")
    assert to_money(3) == D("3.00")


def test_add_merges_quantities_and_remove():
    cart = make_cart()
    cart.add("PEN", "Pen", D("1.15"), 2)
    assert cart.items["PEN"].quantity == 3
    cart.remove("PEN", 1)
    assert cart.items["PEN"].quantity == 2
    cart.remove("MUG")
    assert "MUG" not in cart.items
    with pytest.raises(ValueError):
        cart.add("MUG", "Mug", D("8.99"), 0)


def test_totals_without_discount_tax_only_taxable_items():
    assert make_cart().totals() == Totals(D("31.88"), D("0"), D("1.53"), D("33.41"))


def test_discount_amounts():
    assert Discount("TEN", "percent", D("10")).amount_off(D("31.88")) == D("3.19")
    assert Discount("FIVE", "fixed", D("5")).amount_off(D("3.50")) == D("3.50")
    assert Discount("BIG", "fixed", D("5"), min_subtotal=D("50")).amount_off(D("31.88")) == D("0")


def test_apply_rejects_codes_the_cart_does_not_qualify_for():
    cart = make_cart()
    assert not cart.apply(Discount("BIG", "fixed", D("5"), min_subtotal=D("50")))
    assert cart.discount is None
    assert cart.apply(Discount("TEN", "percent", D("10")))
    assert cart.discount is not None and cart.discount.code == "TEN"


def test_tax_is_charged_on_the_discounted_price():
    cart = make_cart()
    cart.apply(Discount("TEN", "percent", D("10")))
    totals = cart.totals()
    assert totals.discount == D("3.19")
    assert totals.tax == D("1.38")
    assert totals.total == D("30.07")


def test_receipt_without_discount():
    lines = make_cart().receipt().splitlines()
    assert lines[0].split() == ["3", "x", "Green", "tea", "12.75"]
    assert lines[-3:] == [
        "Subtotal                       31.88",
        "Tax                             1.53",
        "Total                          33.41",
    ]
