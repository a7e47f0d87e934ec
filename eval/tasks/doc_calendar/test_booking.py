from datetime import date, datetime, time, timedelta

import pytest

from booking import BookingConflict, RoomCalendar, parse_span

DAY = date(2024, 6, 12)


def at(hh, mm=0):
    return datetime.combine(DAY, time(hh, mm))


def make_calendar():
    cal = RoomCalendar()
    cal.book("Orion", "standup", *parse_span(DAY, "09:00-09:15"))
    cal.book("Orion", "planning", *parse_span(DAY, "09:15-10:30"))
    cal.book("Orion", "1:1", *parse_span(DAY, "13:00-13:20"))
    cal.book("Vega", "interview", *parse_span(DAY, "08:00-12:00"))
    return cal


def test_conflicts_and_opening_hours():
    cal = make_calendar()
    with pytest.raises(BookingConflict):
        cal.book("Orion", "retro", at(10), at(11))
    with pytest.raises(ValueError):
        cal.book("Orion", "late", at(17, 30), at(19))


def test_free_slots_merges_adjacent_bookings():
    assert make_calendar().free_slots("Orion", DAY) == [
        (at(8), at(9)), (at(10, 30), at(13)), (at(13, 20), at(18)),
    ]


def test_free_slots_with_buffer_and_min_length():
    slots = make_calendar().free_slots("Orion", DAY, min_length=timedelta(hours=1), buffer=timedelta(minutes=15))
    assert slots == [(at(10, 45), at(12, 45)), (at(13, 35), at(18))]
    assert make_calendar().free_slots("Nova", DAY) == [(at(8), at(18))]


def test_first_common_slot_and_cancel():
    cal = make_calendar()
    assert cal.first_common_slot(["Orion", "Vega"], DAY, timedelta(minutes=45)) == (at(12), at(12, 45))
    assert cal.cancel("Vega", "interview", DAY)
    assert not cal.cancel("Vega", "interview", DAY)
    assert cal.first_common_slot(["Orion", "Vega"], DAY, timedelta(minutes=45)) == (at(8), at(8, 45))


def test_agenda_lists_all_rooms_in_order():
    assert make_calendar().agenda(DAY)[:2] == [
        "08:00-12:00  Vega       interview",
        "09:00-09:15  Orion      standup",
    ]
