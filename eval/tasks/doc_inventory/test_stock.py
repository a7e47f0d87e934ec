from datetime import date

import pytest

from stock import InsufficientStock, Inventory


def make_inventory():
    inv = Inventory()
    inv.receive("WIDGET", 10, 2.00, day=date(2024, 1, 5), reference="PO-1")
    inv.receive("WIDGET", 5, 3.00, day=date(2024, 2, 1), reference="PO-2")
    inv.receive("GADGET", 4, 10.00, day=date(2024, 1, 20), reference="PO-3")
    return inv


def test_issue_consumes_oldest_lots_first():
    inv = make_inventory()
    assert inv.issue("WIDGET", 12, day=date(2024, 3, 1)) == (12, 26.0)
    assert inv.on_hand("WIDGET") == 3
    assert inv.value("WIDGET") == 9.0
    assert inv.oldest_lot_age("WIDGET", date(2024, 3, 1)) == 29


def test_issue_exact_lot_then_next():
    inv = make_inventory()
    assert inv.issue("WIDGET", 10) == (10, 20.0)
    assert inv.issue("WIDGET", 2) == (2, 6.0)
    assert inv.average_cost("WIDGET") == 3.0


def test_insufficient_and_partial_issue():
    inv = make_inventory()
    with pytest.raises(InsufficientStock) as info:
        inv.issue("GADGET", 6)
    assert info.value.available == 4
    assert inv.issue("GADGET", 6, allow_partial=True) == (4, 40.0)
    with pytest.raises(InsufficientStock):
        inv.issue("GADGET", 1, allow_partial=True)


def test_movements_and_report():
    inv = make_inventory()
    inv.issue("GADGET", 1, day=date(2024, 4, 2), reference="SO-9")
    assert inv.movements[-1] == (date(2024, 4, 2), "GADGET", -1, -10.0, "SO-9")
    assert inv.stock_report() == [("GADGET", 3, 30.0), ("WIDGET", 15, 35.0)]
    assert inv.value() == 65.0
