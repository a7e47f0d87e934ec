"""Timesheet arithmetic: shifts, weekly totals and overtime pay."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, time

MINUTES_PER_DAY = 24 * 60


def parse_clock(text: str) -> time:
    """Parse ``"7:05"``, ``"07:05"`` or ``"19:30"`` into a :class:`datetime.time`."""
    hours, _, minutes = text.strip().partition(":")
    return time(int(hours), int(minutes or 0))


@dataclass(frozen=True)
class Shift:
    employee: str
    day: date
    start: time
    end: time
    break_minutes: int = 0

    def minutes(self) -> int:
        """Worked minutes; a shift whose end is not after its start runs past midnight."""
        start = self.start.hour * 60 + self.start.minute
        end = self.end.hour * 60 + self.end.minute
        if end <= start:
            end += MINUTES_PER_DAY
        worked = end - start - self.break_minutes
        if worked < 0:
            raise ValueError(f"break longer than shift for {self.employee} on {self.day}")
        return worked


@dataclass(frozen=True)
class WeekSummary:
    employee: str
    year: int
    week: int
    hours: float
    regular_hours: float
    overtime_hours: float
    pay: float


def read_shifts(text: str) -> list[Shift]:
    """Read CSV rows ``employee,date,start,end[,break_minutes]`` (with a header line)."""
    shifts = []
    for row in csv.DictReader(io.StringIO(text)):
        shifts.append(
            Shift(
                employee=row["employee"].strip(),
                day=date.fromisoformat(row["date"].strip()),
                start=parse_clock(row["start"]),
                end=parse_clock(row["end"]),
                break_minutes=int(row.get("break_minutes") or 0),
            )
        )
    return shifts


def weekly_summary(
    shifts: list[Shift],
    hourly_rate: float,
    overtime_after: float = 40.0,
    overtime_multiplier: float = 1.5,
) -> list[WeekSummary]:
    """Total each employee's ISO week and split it into regular and overtime pay."""
    totals: dict[tuple[str, tuple[int, int]], int] = defaultdict(int)
    for shift in shifts:
        iso = shift.day.isocalendar()
        totals[(shift.employee, (iso[0], iso[1]))] += shift.minutes()

    summaries = []
    for (employee, (year, week)), minutes in sorted(totals.items()):
        hours = minutes / 60
        regular = min(hours, overtime_after)
        overtime = max(0.0, hours - overtime_after)
        pay = regular * hourly_rate + overtime * hourly_rate * overtime_multiplier
        summaries.append(
            WeekSummary(employee, year, week, round(hours, 2), round(regular, 2), round(overtime, 2), round(pay, 2))
        )
    return summaries


def payroll_report(summaries: list[WeekSummary]) -> str:
    """Fixed-width text report, one line per employee-week plus a grand total."""
    lines = [f"{'employee':<12}{'week':>9}{'hours':>8}{'overtime':>10}{'pay':>10}"]
    for s in summaries:
        label = f"{s.year}-W{s.week:02d}"
        lines.append(f"{s.employee:<12}{label:>9}{s.hours:>8.2f}{s.overtime_hours:>10.2f}{s.pay:>10.2f}")
    lines.append(f"{'total':<12}{'':>9}{sum(s.hours for s in summaries):>8.2f}"
                 f"{sum(s.overtime_hours for s in summaries):>10.2f}{sum(s.pay for s in summaries):>10.2f}")
    return "\n".join(lines)
