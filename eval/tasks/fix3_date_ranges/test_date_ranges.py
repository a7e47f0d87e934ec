from datetime import date

import pytest

from date_ranges import (
    DateRange,
    add_business_days,
    business_days_between,
    merge_ranges,
    parse_range,
    split_by_month,
    subtract,
    total_days,
)


def r(text: str) -> DateRange:
    return parse_range(text)


def test_parse_and_basic_properties():
    week = r("2024-03-04..2024-03-10")
    assert week.days == 7
    assert date(2024, 3, 10) in week and date(2024, 3, 11) not in week
    assert r(" 2024-02-29 ") == DateRange(date(2024, 2, 29), date(2024, 2, 29))
    assert str(week) == "2024-03-04..2024-03-10"
    with pytest.raises(ValueError):
        r("2024-03-10..2024-03-04")


def test_merge_overlapping_and_nested_ranges():
    merged = merge_ranges([r("2024-05-10..2024-05-20"), r("2024-05-01..2024-05-12"), r("2024-05-14..2024-05-15")])
    assert [str(m) for m in merged] == ["2024-05-01..2024-05-20"]
    assert merge_ranges([]) == []
    assert total_days([r("2024-01-01..2024-01-10"), r("2024-01-05..2024-01-12"), r("2024-02-01")]) == 13


def test_merge_joins_ranges_that_touch():
    merged = merge_ranges([r("2024-07-08..2024-07-12"), r("2024-07-01..2024-07-07"), r("2024-07-20..2024-07-21")])
    assert [str(m) for m in merged] == ["2024-07-01..2024-07-12", "2024-07-20..2024-07-21"]


def test_subtract_leaves_the_gaps():
    parts = subtract(r("2024-08-01..2024-08-31"), [r("2024-08-05..2024-08-09"), r("2024-07-25..2024-08-02"), r("2024-09-01")])
    assert [str(p) for p in parts] == ["2024-08-03..2024-08-04", "2024-08-10..2024-08-31"]
    assert subtract(r("2024-08-01..2024-08-03"), [r("2024-07-01..2024-09-01")]) == []


def test_split_by_month_across_year_end():
    parts = split_by_month(r("2023-11-20..2024-01-05"))
    assert [str(p) for p in parts] == ["2023-11-20..2023-11-30", "2023-12-01..2023-12-31", "2024-01-01..2024-01-05"]


def test_business_days_with_holidays():
    holidays = {date(2024, 12, 25), date(2024, 12, 26)}
    assert business_days_between(date(2024, 12, 23), date(2024, 12, 30), holidays) == 3
    assert business_days_between(date(2024, 12, 30), date(2024, 12, 23), holidays) == -3
    assert business_days_between(date(2024, 12, 2), date(2024, 12, 2)) == 0
    assert add_business_days(date(2024, 12, 24), 1, holidays) == date(2024, 12, 27)
    assert add_business_days(date(2024, 12, 27), 1) == date(2024, 12, 30)
    assert add_business_days(date(2024, 12, 27), 0) == date(2024, 12, 27)
