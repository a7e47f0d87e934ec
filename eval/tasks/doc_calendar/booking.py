"""Meeting-room bookings: conflicts, free slots and a daily agenda."""

from datetime import date, datetime, time, timedelta


class BookingConflict(Exception):
    """Raised when a new booking overlaps an existing one in the same room."""


class Booking:
    def __init__(self, room, title, start, end, organizer=""):
        if end <= start:
            raise ValueError("a booking must end after it starts")
        self.room = room
        self.title = title
        self.start = start
        self.end = end
        self.organizer = organizer

    def overlaps(self, start, end):
        """True if this booking shares any time with the half-open span [start, end)."""
        return self.start < end and start < self.end

    def __repr__(self):
        return f"Booking({self.room!r}, {self.title!r}, {self.start:%Y-%m-%d %H:%M}-{self.end:%H:%M})"


class RoomCalendar:
    def __init__(self, opening=time(8, 0), closing=time(18, 0)):
        self.opening = opening
        self.closing = closing
        self._bookings = {}

    def book(self, room, title, start, end, organizer=""):
        """Add a booking, refusing ones that clash or fall outside opening hours."""
        if start.time() < self.opening or end.time() > self.closing or start.date() != end.date():
            raise ValueError(f"{title!r} is outside opening hours")
        for existing in self._bookings.get(room, []):
            if existing.overlaps(start, end):
                raise BookingConflict(f"{title!r} clashes with {existing.title!r}")
        booking = Booking(room, title, start, end, organizer)
        self._bookings.setdefault(room, []).append(booking)
        self._bookings[room].sort(key=lambda b: b.start)
        return booking

    def cancel(self, room, title, day):
        """Remove the booking called ``title`` on ``day``; returns whether one was found."""
        bookings = self._bookings.get(room, [])
        for booking in bookings:
            if booking.title == title and booking.start.date() == day:
                bookings.remove(booking)
                return True
        return False

    def bookings_on(self, room, day):
        return [b for b in self._bookings.get(room, []) if b.start.date() == day]

    def free_slots(self, room, day, min_length=timedelta(minutes=30), buffer=timedelta(0)):
        day_start = datetime.combine(day, self.opening)
        day_end = datetime.combine(day, self.closing)
        busy = []
        for booking in self.bookings_on(room, day):
            start = max(day_start, booking.start - buffer)
            end = min(day_end, booking.end + buffer)
            if busy and start <= busy[-1][1]:
                busy[-1] = (busy[-1][0], max(busy[-1][1], end))
            else:
                busy.append((start, end))
        slots = []
        cursor = day_start
        for start, end in busy:
            if start - cursor >= min_length:
                slots.append((cursor, start))
            cursor = max(cursor, end)
        if day_end - cursor >= min_length:
            slots.append((cursor, day_end))
        return slots

    def first_common_slot(self, rooms, day, length):
        """Earliest span of ``length`` that is free in every room of ``rooms``, or None."""
        candidates = [datetime.combine(day, self.opening)]
        for room in rooms:
            candidates.extend(b.end for b in self.bookings_on(room, day))
        for start in sorted(set(candidates)):
            end = start + length
            if end.time() > self.closing or end.date() != day:
                continue
            if all(not b.overlaps(start, end) for room in rooms for b in self.bookings_on(room, day)):
                return start, end
        return None

    def agenda(self, day):
        """One line per booking on ``day``, across all rooms, in time order."""
        rows = sorted(
            (b for bookings in self._bookings.values() for b in bookings if b.start.date() == day),
            key=lambda b: (b.start, b.room),
        )
        return [f"{b.start:%H:%M}-{b.end:%H:%M}  {b.room:<10} {b.title}" for b in rows]


def parse_span(day, text):
    """Turn ``"09:30-11:00"`` on ``day`` into a (start, end) pair of datetimes."""
    first, last = (part.strip() for part in text.split("-", 1))
    return (datetime.combine(day, time.fromisoformat(first)),
            datetime.combine(day, time.fromisoformat(last)))


def week_days(monday):
    """The five working days starting at ``monday``."""
    if not isinstance(monday, date) or monday.weekday() != 0:
        raise ValueError("expected a Monday")
    return [monday + timedelta(days=i) for i in range(5)]
