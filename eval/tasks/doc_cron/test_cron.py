from datetime import datetime

import pytest

from cron import MONTH_NAMES, CronSchedule, Scheduler, expand_field


def test_expand_field_forms():
    assert expand_field("*", 0, 5) == {0, 1, 2, 3, 4, 5}
    assert expand_field("*/15", 0, 59) == {0, 15, 30, 45}
    assert expand_field("1-5,10", 0, 23) == {1, 2, 3, 4, 5, 10}
    assert expand_field("5/20", 0, 59) == {5, 25, 45}
    assert expand_field("jun-aug", 1, 12, MONTH_NAMES) == {6, 7, 8}


def test_expand_field_errors():
    for spec in ["60", "5-1", "*/0", "1-99"]:
        with pytest.raises(ValueError):
            expand_field(spec, 0, 59)


def test_day_or_weekday_rule():
    schedule = CronSchedule.parse("0 12 1 * mon")
    assert schedule.matches(datetime(2024, 5, 1, 12, 0))   # Wednesday the 1st
    assert schedule.matches(datetime(2024, 5, 6, 12, 0))   # a Monday
    assert not schedule.matches(datetime(2024, 5, 7, 12, 0))


def test_next_after():
    schedule = CronSchedule.parse("30 4 * feb sun")
    assert schedule.next_after(datetime(2024, 1, 10, 8, 0)) == datetime(2024, 2, 4, 4, 30)
    assert CronSchedule.parse("@hourly").next_after(datetime(2024, 1, 1, 9, 0)) == datetime(2024, 1, 1, 10, 0)


def test_scheduler_runs_due_jobs_once_per_minute():
    calls = []
    scheduler = Scheduler()
    scheduler.add("rotate-logs", "*/5 * * * *", lambda: calls.append("rotate"))
    scheduler.add("backup", "0 2 * * *", lambda: calls.append("backup"))
    assert scheduler.run_due(datetime(2024, 3, 3, 2, 0, 10)) == ["rotate-logs", "backup"]
    assert scheduler.run_due(datetime(2024, 3, 3, 2, 0, 40)) == []
    assert scheduler.run_due(datetime(2024, 3, 3, 2, 5)) == ["rotate-logs"]
    assert calls == ["rotate", "backup", "rotate"]
