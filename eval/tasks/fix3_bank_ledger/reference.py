"""A bank account ledger: deposits, withdrawals, overdraft fees, transfers and monthly statements."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

CENT = Decimal("0.01")
ZERO = Decimal("0.00")


class LedgerError(ValueError):
    pass


@dataclass(frozen=True)
class Entry:
    day: date
    kind: str  # "deposit", "withdrawal" or "fee"
    amount: Decimal  # money in is positive, money out negative
    memo: str = ""


@dataclass(frozen=True)
class Statement:
    month: str
    opening: Decimal
    deposits: Decimal
    withdrawals: Decimal
    fees: Decimal
    closing: Decimal


def to_money(value: Decimal | int | str) -> Decimal:
    amount = Decimal(value).quantize(CENT)
    if amount <= 0:
        raise LedgerError(f"amount must be positive, got {value}")
    return amount


@dataclass
class Account:
    owner: str
    overdraft_limit: Decimal = ZERO
    overdraft_fee: Decimal = Decimal("25.00")
    entries: list[Entry] = field(default_factory=list)

    @property
    def balance(self) -> Decimal:
        return sum((entry.amount for entry in self.entries), ZERO)

    def deposit(self, day: date, amount: Decimal | int | str, memo: str = "") -> Entry:
        entry = Entry(day, "deposit", to_money(amount), memo)
        self._record(entry)
        return entry

    def withdraw(self, day: date, amount: Decimal | int | str, memo: str = "") -> Entry:
        """Withdraw ``amount``; ending below zero costs the overdraft fee, going past the limit is refused."""
        money = to_money(amount)
        after = self.balance - money
        if after < -self.overdraft_limit:
            raise LedgerError(f"{self.owner}: withdrawing {money} would exceed the overdraft limit")
        entry = Entry(day, "withdrawal", -money, memo)
        self._record(entry)
        if after < 0:
            self._record(Entry(day, "fee", -self.overdraft_fee, "overdraft fee"))
        return entry

    def _record(self, entry: Entry) -> None:
        if self.entries and entry.day < self.entries[-1].day:
            raise LedgerError(f"{self.owner}: entry dated {entry.day} is older than the last one")
        self.entries.append(entry)

    def statements(self) -> list[Statement]:
        """One statement per calendar month with entries, oldest first; fees are not withdrawals."""
        statements = []
        balance = opening = ZERO
        deposits = withdrawals = fees = ZERO
        current: str | None = None
        for entry in self.entries:
            month = f"{entry.day.year}-{entry.day.month:02d}"
            if current is not None and month != current:
                statements.append(Statement(current, opening, deposits, withdrawals, fees, balance))
                opening = balance
                deposits = withdrawals = fees = ZERO
            current = month
            if entry.kind == "deposit":
                deposits += entry.amount
            elif entry.kind == "withdrawal":
                withdrawals -= entry.amount
            else:
                fees -= entry.amount
            balance += entry.amount
        if current is not None:
            statements.append(Statement(current, opening, deposits, withdrawals, fees, balance))
        return statements


def transfer(source: Account, target: Account, day: date, amount: Decimal | int | str) -> None:
    """Move ``amount`` between accounts; a refused withdrawal leaves both accounts unchanged."""
    source.withdraw(day, amount, f"transfer to {target.owner}")
    target.deposit(day, amount, f"transfer from {source.owner}")


def format_statement(statement: Statement) -> str:
    rows = [
        ("opening balance", statement.opening),
        ("deposits", statement.deposits),
        ("withdrawals", -statement.withdrawals),
        ("fees", -statement.fees),
        ("closing balance", statement.closing),
    ]
    lines = [f"Statement {statement.month}"]
    lines += [f"  {label:<16}{amount:>12,.2f}" for label, amount in rows]
    return "\n".join(lines)
