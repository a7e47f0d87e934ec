import difflib

from difflines import change_counts, diff_ops, group_hunks, similarity, unified_diff

LINES = [f"line {n}" for n in range(1, 21)]


def edited(changes: dict[int, str]) -> str:
    return "\n".join(changes.get(n, line) for n, line in enumerate(LINES, start=1)) + "\n"


def test_diff_ops_replace_a_line():
    ops = diff_ops(["a", "b", "c"], ["a", "x", "c"])
    assert [op.tag + op.line for op in ops] == [" a", "-b", "+x", " c"]
    assert change_counts(ops) == (1, 1)


def test_diff_ops_of_empty_sides():
    assert [op.tag + op.line for op in diff_ops([], ["x", "y"])] == ["+x", "+y"]
    assert [op.tag + op.line for op in diff_ops(["x"], [])] == ["-x"]
    assert diff_ops([], []) == []


def test_unified_diff_single_hunk():
    old = "def f():\n    return 1\n\nprint(f())\n"
    new = "def f():\n    return 2\n\nprint(f())\n"
    assert unified_diff(old, new, "f.py", "f.py") == (
        "--- f.py\n+++ f.py\n@@ -1,4 +1,4 @@\n def f():\n-    return 1\n+    return 2\n \n print(f())\n"
    )
    assert unified_diff(old, old) == ""


def test_insertion_into_an_empty_file():
    assert unified_diff("", "hello\n") == "--- a\n+++ b\n@@ -0,0 +1 @@\n+hello\n"


def test_nearby_changes_share_a_hunk():
    hunks = group_hunks(diff_ops(LINES, edited({3: "THREE", 10: "TEN"}).splitlines()), context=3)
    assert [hunk.header() for hunk in hunks] == ["@@ -1,13 +1,13 @@"]


def test_distant_changes_get_their_own_hunks():
    new = edited({3: "THREE", 11: "ELEVEN"})
    hunks = group_hunks(diff_ops(LINES, new.splitlines()), context=3)
    assert [hunk.header() for hunk in hunks] == ["@@ -1,6 +1,6 @@", "@@ -8,7 +8,7 @@"]
    expected = difflib.unified_diff(LINES, new.splitlines(), "a", "b", n=3, lineterm="")
    assert unified_diff("\n".join(LINES), new).splitlines() == list(expected)


def test_similarity():
    assert similarity(["a", "b"], ["a", "b"]) == 1.0
    assert similarity(["a", "b", "c", "d"], ["a", "x", "c", "y"]) == 0.5
    assert similarity(["a"], ["b"]) == 0.0
    assert similarity([], []) == 1.0
