"""Inclusive date ranges: parsing, merging, splitting by month, and business days with holidays."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Collection, Iterable, Iterator

ONE_DAY = timedelta(days=1)


@dataclass(frozen=True, order=True)
class DateRange:
    """The days from ``start`` to ``end``, both included."""

    start: date
    end: date

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"range ends before it starts: {self.start} > {self.end}")

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1

    def __contains__(self, day: object) -> bool:
        return isinstance(day, date) and self.start <= day <= self.end

    def overlaps(self, other: DateRange) -> bool:
        return self.start <= other.end and other.start <= self.end

    def dates(self) -> Iterator[date]:
        day = self.start
        while day <= self.end:
            yield day
            day += ONE_DAY

    def __str__(self) -> str:
        return f"{self.start.isoformat()}..{self.end.isoformat()}"


def parse_range(text: str) -> DateRange:
    """Parse ``"2024-03-01..2024-03-05"``, or a single day ``"2024-03-01"``."""
    first, separator, last = text.strip().partition("..")
    start = date.fromisoformat(first.strip())
    end = date.fromisoformat(last.strip()) if separator else start
    return DateRange(start, end)


def merge_ranges(ranges: Iterable[DateRange]) -> list[DateRange]:
    """Merge ranges that overlap or touch (one ends the day before the next one starts).

    The result is sorted, and no two of its ranges overlap or touch.
    """
    merged: list[DateRange] = []
    for current in sorted(ranges):
        if not merged:
            merged.append(current)
            continue
        last = merged[-1]
        if current.start <= last.end + ONE_DAY:
            if current.end > last.end:
                merged[-1] = DateRange(last.start, current.end)
        else:
            merged.append(current)
    return merged


def total_days(ranges: Iterable[DateRange]) -> int:
    """How many distinct days the ranges cover together."""
    return sum(r.days for r in merge_ranges(ranges))


def subtract(whole: DateRange, excluded: Iterable[DateRange]) -> list[DateRange]:
    """The parts of ``whole`` that none of the ``excluded`` ranges covers."""
    parts = []
    cursor = whole.start
    for hole in merge_ranges(r for r in excluded if r.overlaps(whole)):
        if hole.start > cursor:
            parts.append(DateRange(cursor, hole.start - ONE_DAY))
        cursor = max(cursor, hole.end + ONE_DAY)
    if cursor <= whole.end:
        parts.append(DateRange(cursor, whole.end))
    return parts


def split_by_month(whole: DateRange) -> list[DateRange]:
    """Cut a range at month boundaries."""
    parts = []
    start = whole.start
    while start <= whole.end:
        next_month = date(start.year + start.month // 12, start.month % 12 + 1, 1)
        end = min(whole.end, next_month - ONE_DAY)
        parts.append(DateRange(start, end))
        start = next_month
    return parts


def is_business_day(day: date, holidays: Collection[date] = ()) -> bool:
    return day.weekday() < 5 and day not in holidays


def business_days_between(start: date, end: date, holidays: Collection[date] = ()) -> int:
    """Business days from ``start`` (included) to ``end`` (excluded); negative if ``end`` comes first."""
    if end < start:
        return -business_days_between(end, start, holidays)
    return sum(1 for day in DateRange(start, end).dates() if day != end and is_business_day(day, holidays))


def add_business_days(start: date, count: int, holidays: Collection[date] = ()) -> date:
    """The business day ``count`` business days after ``start`` (``count`` >= 0)."""
    if count < 0:
        raise ValueError("count must not be negative")
    day = start
    while count > 0:
        day += ONE_DAY
        if is_business_day(day, holidays):
            count -= 1
    return day
