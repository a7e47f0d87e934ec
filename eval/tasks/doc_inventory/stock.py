"""Warehouse stock ledger with FIFO (first in, first out) costing.

Every receipt creates a *lot* with its own unit cost; issuing stock consumes
the oldest lots first, so the cost of goods sold reflects what was actually
paid for the units that left the shelf.
"""

from collections import deque, namedtuple
from datetime import date

Lot = namedtuple("Lot", "received quantity unit_cost reference")
Movement = namedtuple("Movement", "day sku quantity value reference")


class InsufficientStock(Exception):
    def __init__(self, sku, wanted, available):
        super().__init__(f"{sku}: wanted {wanted}, only {available} on hand")
        self.sku = sku
        self.wanted = wanted
        self.available = available


class Inventory:
    def __init__(self):
        self._lots = {}
        self.movements = []

    def receive(self, sku, quantity, unit_cost, day=None, reference=""):
        """Book ``quantity`` units bought at ``unit_cost`` each as a new lot."""
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        if unit_cost < 0:
            raise ValueError("unit cost cannot be negative")
        day = day or date.today()
        self._lots.setdefault(sku, deque()).append(Lot(day, quantity, unit_cost, reference))
        self.movements.append(Movement(day, sku, quantity, round(quantity * unit_cost, 2), reference))

    def on_hand(self, sku):
        return sum(lot.quantity for lot in self._lots.get(sku, ()))

    def value(self, sku=None):
        """Book value of one SKU, or of the whole warehouse when ``sku`` is None."""
        skus = [sku] if sku is not None else list(self._lots)
        total = sum(lot.quantity * lot.unit_cost for s in skus for lot in self._lots.get(s, ()))
        return round(total, 2)

    def issue(self, sku, quantity, day=None, reference="", allow_partial=False):
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        lots = self._lots.get(sku, deque())
        available = sum(lot.quantity for lot in lots)
        if available < quantity:
            if not allow_partial or available == 0:
                raise InsufficientStock(sku, quantity, available)
            quantity = available
        remaining = quantity
        cost = 0.0
        while remaining:
            lot = lots[0]
            take = min(remaining, lot.quantity)
            cost += take * lot.unit_cost
            remaining -= take
            if take == lot.quantity:
                lots.popleft()
            else:
                lots[0] = lot._replace(quantity=lot.quantity - take)
        cost = round(cost, 2)
        self.movements.append(Movement(day or date.today(), sku, -quantity, -cost, reference))
        return quantity, cost

    def average_cost(self, sku):
        """Weighted average unit cost of the units still on hand (None if there are none)."""
        qty = self.on_hand(sku)
        if not qty:
            return None
        return round(self.value(sku) / qty, 4)

    def oldest_lot_age(self, sku, today):
        """Days the oldest remaining unit of ``sku`` has been in stock."""
        lots = self._lots.get(sku)
        if not lots:
            return None
        return (today - lots[0].received).days

    def stock_report(self):
        """Rows of (sku, on hand, book value), sorted by SKU, skipping empty SKUs."""
        return [(sku, self.on_hand(sku), self.value(sku)) for sku in sorted(self._lots) if self.on_hand(sku)]
