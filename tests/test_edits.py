"""Text replacements: exact matching, clear refusals, and keeping the indentation of the place replaced."""

from __future__ import annotations

import pytest

from lsp_server.assistant.edits import (
    EditError,
    absorb_restated_lines,
    apply_replacement,
    apply_replacement_keeping_omitted,
    apply_replacement_loosely,
    apply_replacement_reindented,
    unified_diff,
)

SOURCE = "def f(x):\n    if x:\n        return 1\n    return 2\n"


def test_replacement_needs_one_exact_occurrence():
    assert apply_replacement(SOURCE, "return 2", "return 3").endswith("    return 3\n")
    with pytest.raises(EditError, match="does not occur"):
        apply_replacement(SOURCE, "return 9", "x")
    with pytest.raises(EditError, match="2 times"):
        apply_replacement(SOURCE, "return", "x")
    with pytest.raises(EditError, match="empty"):
        apply_replacement(SOURCE, "", "x")


def test_an_indented_new_text_for_an_unindented_quote_keeps_the_place_indentation():
    after = apply_replacement_reindented(SOURCE, "return 1", "        return 10")
    assert after == "def f(x):\n    if x:\n        return 10\n    return 2\n"


def test_an_unindented_block_is_indented_like_the_block_it_replaces():
    after = apply_replacement_reindented(SOURCE, "    if x:\n        return 1", "if x is None:\n    return 0")
    assert after == "def f(x):\n    if x is None:\n        return 0\n    return 2\n"
    compile(after, "f.py", "exec")


def test_a_mid_line_match_is_replaced_as_is():
    assert apply_replacement_reindented(SOURCE, "x:", "y:") == SOURCE.replace("if x:", "if y:")


def test_unified_diff_names_both_sides():
    diff = unified_diff("f.py", SOURCE, SOURCE.replace("2", "3"))
    assert diff.startswith("--- a/f.py\n+++ b/f.py\n") and "-    return 2\n+    return 3\n" in diff


def test_a_missing_quote_is_answered_with_the_closest_text_to_copy():
    with pytest.raises(EditError) as error:
        apply_replacement(SOURCE, "def f(x):\n    if x:\n        return 1\n    return 3", "x")
    assert "def f(x):\n    if x:\n        return 1\n    return 2" in str(error.value)


def test_lines_left_out_of_the_quote_are_kept():
    source = 'def f(x):\n    """Doc."""\n    return x\n\nprint(f(1))\n'
    after = apply_replacement_keeping_omitted(
        source, "def f(x):\n    return x", "def f(x):\n    return x + 1"
    )
    assert after == 'def f(x):\n    """Doc."""\n    return x + 1\n\nprint(f(1))\n'


METHOD = (
    "class Cart:\n    def total(self):\n        return sum(self.prices)+1\n\n"
    "    def clear(self):\n        pass\n"
)


def test_a_quote_with_other_whitespace_matches_its_lines_and_the_new_text_moves_to_their_indentation():
    # Quoted from column 0, with the spacing retouched; the new text is indented as the quote was.
    after = apply_replacement_loosely(
        METHOD,
        "def total(self):\n    return sum(self.prices) + 1",
        "def total(self):\n    return sum(self.prices)",
    )
    assert after == METHOD.replace("sum(self.prices)+1", "sum(self.prices)")
    # Tabs for the file's spaces, and a blank line more in the quote: the same lines.
    after = apply_replacement_loosely(
        METHOD, "\tdef clear(self):\n\n\t\tpass", "\tdef clear(self):\n\t\treturn"
    )
    assert after is not None and after.endswith("    def clear(self):\n        return\n")


def test_a_quote_in_other_quotes_matches_too():
    source = 'def issue(self, sku, reference="", partial=False):\n    return sku\n'
    after = apply_replacement_loosely(
        source,
        "def issue(self, sku, reference='', partial=False):",
        "def issue(self, sku, reference='', partial=True):",
    )
    assert after == "def issue(self, sku, reference='', partial=True):\n    return sku\n"


def test_whitespace_is_ignored_only_for_one_whole_run_of_lines():
    assert apply_replacement_loosely(METHOD + METHOD, "def clear(self):\n pass", "x") is None
    assert apply_replacement_loosely(METHOD, "def clear(self):\n    return", "x") is None
    assert apply_replacement_loosely(METHOD, "  \n", "x") is None


def test_a_quote_that_does_not_follow_the_file_is_not_forced():
    source = "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\ng = 7\n"
    assert apply_replacement_keeping_omitted(source, "a = 1\ng = 7", "x = 0") is None  # 5 lines left out
    assert apply_replacement_keeping_omitted(source, "a = 1\nz = 9", "x = 0") is None
    assert (
        apply_replacement_keeping_omitted(source + "a = 1\n", "a = 1\nb = 2", "x") is None
    )  # start not unique


def test_a_quoted_signature_followed_by_the_whole_block_replaces_the_block():
    source = "def f(x):\n    y = x + 1\n    return y\n\nz = 1\n"
    new_text = 'def f(x):\n    """Add one."""\n    y = x + 1\n    return y'
    old_text = absorb_restated_lines(source, "def f(x):", new_text)
    assert old_text == "def f(x):\n    y = x + 1\n    return y"
    assert apply_replacement(source, old_text, new_text) == (
        'def f(x):\n    """Add one."""\n    y = x + 1\n    return y\n\nz = 1\n'
    )
    # With trailing newlines on both sides, the blank line after the block stays single.
    old_text = absorb_restated_lines(source, "def f(x):\n", new_text + "\n")
    assert apply_replacement(source, old_text, new_text + "\n").endswith("    return y\n\nz = 1\n")


def test_lines_not_restated_are_left_alone():
    source = "def f(x):\n    return x\n"
    assert absorb_restated_lines(source, "def f(x):", "def f(x: int):") == "def f(x):"
    assert absorb_restated_lines(source, "def f", "def g") == "def f"  # the quote ends mid-line
    assert absorb_restated_lines(source, "nowhere", "x\n    return x") == "nowhere"
    blank = "a = 1\n\n\nb = 2\n"
    assert absorb_restated_lines(blank, "a = 1", "a = 2\n") == "a = 1"  # only blank lines restated
