"""Parse web-server access logs in the "combined" format.

Example line:
    203.0.113.9 - alice [10/Oct/2023:13:55:36 -0700] "GET /a?x=1 HTTP/1.1" 200 2326 "-" "curl/8.0"

Timestamps are converted to naive UTC datetimes so that logs written by
servers in different time zones can be merged and compared directly.
"""

import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Iterable, Iterator, List, Optional, Tuple

LINE_RE = re.compile(
    r'(?P<host>\S+) \S+ (?P<user>\S+) \[(?P<time>[^\]]+)\] '
    r'"(?P<method>[A-Z]+) (?P<target>\S+) (?P<proto>[^"]+)" '
    r'(?P<status>\d{3}) (?P<size>\d+|-)'
    r'(?: "(?P<referer>[^"]*)" "(?P<agent>[^"]*)")?\s*$'
)

MONTHS = {name: i for i, name in enumerate(
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun",
     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], start=1)}


@dataclass(frozen=True)
class LogEntry:
    host: str
    user: Optional[str]
    time: datetime  # UTC
    method: str
    path: str
    query: str
    status: int
    size: int
    referer: Optional[str] = None
    agent: Optional[str] = None

    @property
    def is_error(self) -> bool:
        return self.status >= 400


def parse_timestamp(text: str) -> datetime:
    """'10/Oct/2023:13:55:36 -0700' -> datetime(2023, 10, 10, 20, 55, 36)"""
    stamp, _, zone = text.partition(" ")
    day, mon, rest = stamp.split("/")
    year, hh, mm, ss = rest.split(":")
    local = datetime(int(year), MONTHS[mon], int(day), int(hh), int(mm), int(ss))
    if not zone:
        return local
    sign = -1 if zone[0] == "-" else 1
    offset = timedelta(hours=int(zone[1:3]), minutes=int(zone[3:5]))
    return local - sign * offset


def _dash(value: Optional[str]) -> Optional[str]:
    return None if value in (None, "-") else value


def parse_line(line: str) -> Optional[LogEntry]:
    m = LINE_RE.match(line.strip())
    if not m:
        return None
    path, _, query = m.group("target").partition("?")
    size = m.group("size")
    return LogEntry(
        host=m.group("host"),
        user=_dash(m.group("user")),
        time=parse_timestamp(m.group("time")),
        method=m.group("method"),
        path=path,
        query=query,
        status=int(m.group("status")),
        size=0 if size == "-" else int(size),
        referer=_dash(m.group("referer")),
        agent=_dash(m.group("agent")),
    )


def parse_lines(lines: Iterable[str]) -> Tuple[List[LogEntry], int]:
    """Parse many lines; returns (entries, number_of_unparseable_lines)."""
    entries, bad = [], 0
    for line in lines:
        if not line.strip():
            continue
        entry = parse_line(line)
        if entry is None:
            bad += 1
        else:
            entries.append(entry)
    return entries, bad


def between(entries: Iterable[LogEntry], start: datetime, end: datetime) -> Iterator[LogEntry]:
    """Entries with start <= time < end (UTC)."""
    return (e for e in entries if start <= e.time < end)


def top_paths(entries: Iterable[LogEntry], n: int = 10) -> List[Tuple[str, int]]:
    counts = Counter(e.path for e in entries)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def error_rate(entries: List[LogEntry]) -> float:
    if not entries:
        return 0.0
    return sum(e.is_error for e in entries) / len(entries)


def bytes_by_host(entries: Iterable[LogEntry]) -> Counter:
    total: Counter = Counter()
    for e in entries:
        total[e.host] += e.size
    return total
