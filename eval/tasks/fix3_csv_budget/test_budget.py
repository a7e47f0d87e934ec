from datetime import date
from decimal import Decimal

import pytest

from budget import (
    Overspend,
    format_report,
    monthly_totals,
    over_budget,
    parse_amount,
    read_budget,
    read_expenses,
    unbudgeted,
)

EXPENSES = """date,category,amount,note
2024-02-28,Groceries,95.10,
2024-03-01,Rent,"1,250.00",march rent
2024-03-02,groceries,250.00,
2024-03-09, Groceries ,230.00,big shop
2024-03-10,groceries,-20.00,returned blender
2024-03-12,Dining,120.00,birthday
2024-03-20,dining,$60,
2024-03-22,Transport,70.00,
2024-03-25,Gym,40.00,
"""

BUDGET = """# monthly limits
groceries,400
rent,"1,200"
dining,100
transport,80
"""


def test_parse_amount():
    assert parse_amount("1,250.00") == Decimal("1250.00")
    assert parse_amount(" $8 ") == Decimal("8")
    assert parse_amount("-3.20") == Decimal("-3.20")
    assert parse_amount("3.20-") == Decimal("-3.20")
    with pytest.raises(ValueError):
        parse_amount("twelve")


def test_read_expenses_normalises_categories():
    expenses = read_expenses(EXPENSES)
    assert len(expenses) == 9
    assert expenses[3].category == "groceries"
    assert expenses[3].note == "big shop"
    assert expenses[1].day == date(2024, 3, 1)
    with pytest.raises(ValueError, match="line 2"):
        read_expenses("date,category,amount\n2024-13-01,rent,10\n")


def test_read_budget_skips_comments():
    assert read_budget(BUDGET) == {
        "groceries": Decimal("400"),
        "rent": Decimal("1200"),
        "dining": Decimal("100"),
        "transport": Decimal("80"),
    }


def test_monthly_totals_subtract_refunds():
    totals = monthly_totals(read_expenses(EXPENSES))
    assert list(totals) == ["2024-02", "2024-03"]
    assert totals["2024-02"] == {"groceries": Decimal("95.10")}
    assert totals["2024-03"]["groceries"] == Decimal("460.00")
    assert totals["2024-03"]["dining"] == Decimal("180.00")


def test_over_budget_lists_the_largest_overspend_first():
    report = over_budget(read_expenses(EXPENSES), read_budget(BUDGET), "2024-03")
    assert [(item.category, item.over) for item in report] == [
        ("dining", Decimal("80.00")),
        ("groceries", Decimal("60.00")),
        ("rent", Decimal("50.00")),
    ]


def test_over_budget_tolerance_and_other_months():
    expenses, budget = read_expenses(EXPENSES), read_budget(BUDGET)
    assert [item.category for item in over_budget(expenses, budget, "2024-03", Decimal("60"))] == ["dining"]
    assert over_budget(expenses, budget, "2024-02") == []
    assert over_budget(expenses, budget, "2024-04") == []


def test_unbudgeted_categories():
    assert unbudgeted(read_expenses(EXPENSES), read_budget(BUDGET)) == ["gym"]


def test_format_report():
    assert format_report([]) == "All categories within budget."
    text = format_report([Overspend("dining", Decimal("100"), Decimal("180"))])
    assert text.splitlines()[1].split() == ["dining", "100.00", "180.00", "80.00", "180"]
