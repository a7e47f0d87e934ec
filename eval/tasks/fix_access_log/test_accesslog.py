from datetime import datetime

from accesslog import between, error_rate, parse_line, parse_lines, parse_timestamp, top_paths

LOG = """\
203.0.113.9 - alice [10/Oct/2023:13:55:36 -0700] "GET /index.html?ref=mail HTTP/1.1" 200 2326 "-" "curl/8.0"
198.51.100.4 - - [10/Oct/2023:22:01:02 +0200] "POST /api/login HTTP/1.1" 401 - "https://example.org/" "Mozilla/5.0"
203.0.113.9 - - [11/Oct/2023:02:10:00 +0000] "GET /index.html HTTP/2.0" 304 0
garbage line that is not a log entry
192.0.2.77 - bob [10/Oct/2023:20:59:59 +0000] "GET /api/items HTTP/1.1" 500 17 "-" "python-requests/2.31"
"""


def test_parse_line_fields():
    e = parse_line(LOG.splitlines()[0])
    assert (e.host, e.user, e.method) == ("203.0.113.9", "alice", "GET")
    assert (e.path, e.query, e.status, e.size) == ("/index.html", "ref=mail", 200, 2326)
    assert e.referer is None and e.agent == "curl/8.0"


def test_timestamps_converted_to_utc():
    assert parse_timestamp("10/Oct/2023:13:55:36 -0700") == datetime(2023, 10, 10, 20, 55, 36)
    assert parse_timestamp("01/Jan/2024:03:15:00 +0530") == datetime(2023, 12, 31, 21, 45, 0)
    assert parse_timestamp("29/Feb/2024:12:00:00 +0000") == datetime(2024, 2, 29, 12, 0, 0)


def test_same_instant_from_different_zones():
    a = parse_timestamp("05/Mar/2023:09:00:00 -0500")
    b = parse_timestamp("05/Mar/2023:15:00:00 +0100")
    assert a == b


def test_parse_lines_counts_bad_lines_and_errors():
    entries, bad = parse_lines(LOG.splitlines())
    assert bad == 1
    assert len(entries) == 4
    assert error_rate(entries) == 0.5
    assert entries[1].size == 0 and entries[1].user is None


def test_top_paths_and_time_window():
    entries, _ = parse_lines(LOG.splitlines())
    assert top_paths(entries, 2) == [("/index.html", 2), ("/api/items", 1)]
    window = list(between(entries, datetime(2023, 10, 10, 20, 0), datetime(2023, 10, 10, 21, 0)))
    assert [e.path for e in window] == ["/index.html", "/api/login", "/api/items"]
