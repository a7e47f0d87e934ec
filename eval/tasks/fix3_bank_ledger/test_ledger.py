from datetime import date
from decimal import Decimal

import pytest

from ledger import Account, LedgerError, Statement, format_statement, to_money, transfer


def test_deposit_and_withdraw():
    account = Account("ana")
    account.deposit(date(2024, 1, 2), "120.50")
    account.withdraw(date(2024, 1, 3), 20)
    assert account.balance == Decimal("100.50")
    assert [entry.kind for entry in account.entries] == ["deposit", "withdrawal"]
    with pytest.raises(LedgerError):
        to_money("-5")


def test_overdraft_fee_only_below_zero():
    account = Account("bo", overdraft_limit=Decimal("100"))
    account.deposit(date(2024, 1, 2), 50)
    account.withdraw(date(2024, 1, 3), 50)
    assert account.balance == Decimal("0.00")
    account.withdraw(date(2024, 1, 4), 30)
    assert account.balance == Decimal("-55.00")
    assert account.entries[-1].kind == "fee"


def test_overdraft_limit_is_refused():
    account = Account("cy", overdraft_limit=Decimal("100"))
    account.deposit(date(2024, 1, 2), 10)
    with pytest.raises(LedgerError, match="overdraft limit"):
        account.withdraw(date(2024, 1, 3), "110.01")
    assert account.balance == Decimal("10.00")
    with pytest.raises(LedgerError):
        account.deposit(date(2024, 1, 1), 5)


def test_transfer_moves_money():
    alice, bob = Account("alice"), Account("bob")
    alice.deposit(date(2024, 2, 1), 300)
    transfer(alice, bob, date(2024, 2, 2), "75.25")
    assert (alice.balance, bob.balance) == (Decimal("224.75"), Decimal("75.25"))
    with pytest.raises(LedgerError):
        transfer(bob, alice, date(2024, 2, 3), 100)
    assert (alice.balance, bob.balance) == (Decimal("224.75"), Decimal("75.25"))


def test_statements_start_each_month_afresh():
    account = Account("dee", overdraft_limit=Decimal("200"))
    account.deposit(date(2024, 1, 5), 100)
    account.withdraw(date(2024, 1, 20), 150)
    account.deposit(date(2024, 2, 1), 500)
    account.withdraw(date(2024, 2, 14), 25)
    account.deposit(date(2024, 4, 1), 10)
    assert account.statements() == [
        Statement("2024-01", Decimal("0.00"), Decimal("100.00"), Decimal("150.00"), Decimal("25.00"), Decimal("-75.00")),
        Statement("2024-02", Decimal("-75.00"), Decimal("500.00"), Decimal("25.00"), Decimal("0.00"), Decimal("400.00")),
        Statement("2024-04", Decimal("400.00"), Decimal("10.00"), Decimal("0.00"), Decimal("0.00"), Decimal("410.00")),
    ]


def test_single_month_statement_text():
    account = Account("eve")
    assert account.statements() == []
    account.deposit(date(2024, 3, 1), 2500)
    account.withdraw(date(2024, 3, 9), "1200.40")
    (statement,) = account.statements()
    assert statement.fees == 0
    assert format_statement(statement).splitlines() == [
        "Statement 2024-03",
        "  opening balance         0.00",
        "  deposits            2,500.00",
        "  withdrawals        -1,200.40",
        "  fees                    0.00",
        "  closing balance     1,299.60",
    ]
