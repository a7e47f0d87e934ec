import pytest

from mdtable import format_table, parse_table


def test_numbers_are_right_aligned_by_default():
    table = format_table(["item", "qty", "price"], [["apple", 3, 1.5], ["kiwi", 12, 0.25]])
    assert table.splitlines() == [
        "| item  | qty | price |",
        "| ----- | --: | ----: |",
        "| apple |   3 |  1.50 |",
        "| kiwi  |  12 |  0.25 |",
    ]


def test_explicit_alignment_and_short_rows():
    table = format_table(["a", "b", "c"], [["x", "y"]], align=["center", "right", "left"])
    assert table.splitlines() == ["|  a  |   b | c   |", "| :-: | --: | :-- |", "|  x  |   y |     |"]


def test_truncation_and_wide_characters():
    table = format_table(["name", "note"], [["日本", "a long note here"]], max_width=8)
    assert table.splitlines()[2] == "| 日本 | a long … |"


def test_too_many_cells_is_an_error():
    with pytest.raises(ValueError):
        format_table(["a"], [[1, 2]])


def test_round_trip_with_pipes_and_newlines():
    headers, rows = parse_table(format_table(["cmd", "meaning"], [["a|b", "pipe\nthen"], ["ls", None]]))
    assert headers == ["cmd", "meaning"]
    assert rows == [["a|b", "pipe then"], ["ls", ""]]
