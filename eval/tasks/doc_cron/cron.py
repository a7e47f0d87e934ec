"""A small cron-expression scheduler for periodic maintenance jobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Callable

MONTH_NAMES = {name: i for i, name in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1)}
DAY_NAMES = {name: i for i, name in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}

ALIASES = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
}


def _value(token: str, names: dict[str, int] | None) -> int:
    token = token.lower()
    if names and token in names:
        return names[token]
    return int(token)


def expand_field(spec: str, low: int, high: int, names: dict[str, int] | None = None) -> frozenset[int]:
    values: set[int] = set()
    for part in spec.split(","):
        step = 1
        if "/" in part:
            part, step_text = part.split("/", 1)
            step = int(step_text)
            if step <= 0:
                raise ValueError(f"step must be positive in {spec!r}")
        if part == "*":
            start, end = low, high
        elif "-" in part:
            first, last = part.split("-", 1)
            start, end = _value(first, names), _value(last, names)
        else:
            start = _value(part, names)
            end = high if step != 1 else start
        if not low <= start <= high or not low <= end <= high:
            raise ValueError(f"{part!r} out of range {low}-{high} in {spec!r}")
        if start > end:
            raise ValueError(f"range {part!r} runs backwards in {spec!r}")
        values.update(range(start, end + 1, step))
    return frozenset(values)


@dataclass(frozen=True)
class CronSchedule:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    day_restricted: bool
    weekday_restricted: bool

    @classmethod
    def parse(cls, expression: str) -> CronSchedule:
        """Parse a five-field expression (or an alias such as ``@daily``)."""
        expression = ALIASES.get(expression.strip(), expression)
        fields = expression.split()
        if len(fields) != 5:
            raise ValueError(f"expected 5 fields, got {len(fields)}: {expression!r}")
        minute, hour, day, month, weekday = fields
        weekdays = expand_field(weekday, 0, 7, DAY_NAMES)
        if 7 in weekdays:
            weekdays = (weekdays - {7}) | {0}
        return cls(
            minutes=expand_field(minute, 0, 59),
            hours=expand_field(hour, 0, 23),
            days=expand_field(day, 1, 31),
            months=expand_field(month, 1, 12, MONTH_NAMES),
            weekdays=frozenset(weekdays),
            day_restricted=day != "*",
            weekday_restricted=weekday != "*",
        )

    def matches(self, moment: datetime) -> bool:
        """True if the job should run during the minute ``moment`` falls in.

        As in classic cron, when both day-of-month and day-of-week are
        restricted a day matching either one is enough.
        """
        if moment.minute not in self.minutes or moment.hour not in self.hours:
            return False
        if moment.month not in self.months:
            return False
        day_ok = moment.day in self.days
        weekday_ok = (moment.isoweekday() % 7) in self.weekdays
        if self.day_restricted and self.weekday_restricted:
            return day_ok or weekday_ok
        return day_ok and weekday_ok

    def next_after(self, moment: datetime, limit_days: int = 366 * 5) -> datetime:
        """The first matching minute strictly after ``moment``."""
        candidate = moment.replace(second=0, microsecond=0) + timedelta(minutes=1)
        deadline = candidate + timedelta(days=limit_days)
        while candidate < deadline:
            if candidate.month not in self.months:
                candidate = (candidate.replace(day=1, hour=0, minute=0) + timedelta(days=32)).replace(day=1)
                continue
            if self.matches(candidate):
                return candidate
            candidate += timedelta(minutes=1)
        raise ValueError("no matching time found")


@dataclass
class Job:
    name: str
    schedule: CronSchedule
    action: Callable[[], object]
    last_run: datetime | None = None


@dataclass
class Scheduler:
    jobs: list[Job] = field(default_factory=list)

    def add(self, name: str, expression: str, action: Callable[[], object]) -> Job:
        job = Job(name, CronSchedule.parse(expression), action)
        self.jobs.append(job)
        return job

    def run_due(self, now: datetime) -> list[str]:
        """Run every job due in the current minute (at most once per minute each)."""
        minute = now.replace(second=0, microsecond=0)
        ran = []
        for job in self.jobs:
            if job.last_run == minute or not job.schedule.matches(minute):
                continue
            job.action()
            job.last_run = minute
            ran.append(job.name)
        return ran
