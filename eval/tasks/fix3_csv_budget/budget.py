"""Household budget: read expenses from CSV, total them per month and category, report overspending."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation


@dataclass(frozen=True)
class Expense:
    day: date
    category: str
    amount: Decimal
    note: str = ""


@dataclass(frozen=True)
class Overspend:
    category: str
    budget: Decimal
    spent: Decimal

    @property
    def over(self) -> Decimal:
        return self.spent - self.budget

    @property
    def percent(self) -> float:
        return float(self.spent / self.budget * 100) if self.budget else float("inf")


def parse_amount(text: str) -> Decimal:
    """Parse ``"12.50"``, ``"1,250.00"`` or ``"$8"``; a leading or trailing minus marks a refund."""
    cleaned = text.strip().replace(",", "").replace("$", "")
    negative = cleaned.startswith("-") or cleaned.endswith("-")
    try:
        value = Decimal(cleaned.strip("-"))
    except InvalidOperation:
        raise ValueError(f"not an amount: {text!r}") from None
    return -value if negative else value


def normalise_category(name: str) -> str:
    return " ".join(name.split()).lower()


def read_expenses(text: str) -> list[Expense]:
    """Read CSV rows ``date,category,amount[,note]`` after a header line."""
    reader = csv.DictReader(io.StringIO(text))
    expenses = []
    for row in reader:
        if not any((value or "").strip() for value in row.values()):
            continue
        try:
            expenses.append(
                Expense(
                    day=date.fromisoformat(row["date"].strip()),
                    category=normalise_category(row["category"]),
                    amount=parse_amount(row["amount"]),
                    note=(row.get("note") or "").strip(),
                )
            )
        except (KeyError, ValueError, AttributeError) as error:
            raise ValueError(f"line {reader.line_num}: {error}") from None
    return expenses


def read_budget(text: str) -> dict[str, Decimal]:
    """Read ``category,monthly limit`` lines without a header; ``#`` starts a comment line."""
    budget: dict[str, Decimal] = {}
    for row in csv.reader(io.StringIO(text)):
        if not row or row[0].lstrip().startswith("#"):
            continue
        if len(row) != 2:
            raise ValueError(f"expected 'category,limit', got {row!r}")
        budget[normalise_category(row[0])] = parse_amount(row[1])
    return budget


def monthly_totals(expenses: list[Expense]) -> dict[str, dict[str, Decimal]]:
    """``{"2024-03": {"dining": Decimal(...), ...}, ...}`` with months and categories in order."""
    totals: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for expense in expenses:
        totals[expense.day.strftime("%Y-%m")][expense.category] += expense.amount
    return {month: dict(sorted(totals[month].items())) for month in sorted(totals)}


def over_budget(
    expenses: list[Expense],
    budget: dict[str, Decimal],
    month: str,
    tolerance: Decimal = Decimal("0"),
) -> list[Overspend]:
    """Categories whose spending in ``month`` (``"YYYY-MM"``) exceeds their limit by more than ``tolerance``.

    The largest overspend comes first; ties are broken by category name. Categories without a
    limit are not reported here (see :func:`unbudgeted`).
    """
    spent = monthly_totals(expenses).get(month, {})
    report = []
    for category, amount in spent.items():
        limit = budget.get(category)
        if limit is None:
            continue
        if amount - limit > tolerance:
            report.append(Overspend(category, limit, amount))
    report.sort(key=lambda item: (-item.spent, item.category))
    return report


def unbudgeted(expenses: list[Expense], budget: dict[str, Decimal]) -> list[str]:
    return sorted({expense.category for expense in expenses} - budget.keys())


def format_report(report: list[Overspend]) -> str:
    if not report:
        return "All categories within budget."
    width = max(len("category"), *(len(item.category) for item in report))
    lines = [f"{'category':<{width}}  {'budget':>9}  {'spent':>9}  {'over':>9}  {'%':>5}"]
    for item in report:
        lines.append(
            f"{item.category:<{width}}  {item.budget:>9.2f}  {item.spent:>9.2f}  {item.over:>9.2f}  {item.percent:>5.0f}"
        )
    return "\n".join(lines)
