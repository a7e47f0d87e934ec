from datetime import date, time

import pytest

from timesheet import Shift, parse_clock, payroll_report, read_shifts, weekly_summary

CSV = """employee,date,start,end,break_minutes
ana,2024-03-04,9:00,17:30,30
ana,2024-03-05,9:00,17:30,30
ana,2024-03-06,8:45,17:30,30
bo,2024-03-04,22:00,6:00,0
bo,2024-03-11,22:00,6:15,
"""


def test_parse_clock():
    assert parse_clock("7:05") == time(7, 5)
    assert parse_clock(" 19 ") == time(19, 0)


def test_shift_minutes_across_midnight():
    shift = Shift("bo", date(2024, 3, 4), time(22, 0), time(6, 15))
    assert shift.minutes() == 495
    with pytest.raises(ValueError):
        Shift("bo", date(2024, 3, 4), time(9, 0), time(9, 30), break_minutes=45).minutes()


def test_weekly_summary_per_employee_week():
    rows = weekly_summary(read_shifts(CSV), hourly_rate=20.0)
    assert [(r.employee, r.week, r.hours, r.pay) for r in rows] == [
        ("ana", 10, 24.25, 485.0),
        ("bo", 10, 8.0, 160.0),
        ("bo", 11, 8.25, 165.0),
    ]


def test_overtime_split():
    shifts = [Shift("cy", date(2024, 1, d), time(7, 0), time(17, 45), 30) for d in range(8, 12)]
    (row,) = weekly_summary(shifts, hourly_rate=10.0, overtime_after=40.0)
    assert row.hours == 41.0
    assert row.regular_hours == 40.0
    assert row.overtime_hours == 1.0
    assert row.pay == 415.0


def test_payroll_report_total_line():
    report = payroll_report(weekly_summary(read_shifts(CSV), hourly_rate=20.0))
    assert report.splitlines()[1].split() == ["ana", "2024-W10", "24.25", "0.00", "485.00"]
    assert report.splitlines()[-1].split() == ["total", "40.50", "0.00", "810.00"]
