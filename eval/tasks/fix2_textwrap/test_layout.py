import pytest

from layout import bullet_list, fill, justify_line, wrap_words


def test_wrap_words_packs_greedily():
    assert wrap_words("aaa bbb ccc", 7) == ["aaa bbb", "ccc"]
    assert wrap_words("the quick brown fox jumps", 15) == ["the quick brown", "fox jumps"]


def test_wrap_splits_long_words():
    assert wrap_words("see https://example.org/a/b ok", 10) == ["see", "https://ex", "ample.org/", "a/b ok"]


def test_wrap_rejects_zero_width():
    with pytest.raises(ValueError):
        wrap_words("x", 0)


def test_justify_line_distributes_extra_spaces_left_first():
    assert justify_line("a bb c d", 12) == "a   bb  c  d"
    assert justify_line("one two three", 17) == "one   two   three"
    assert justify_line("word", 6) == "word  "


def test_fill_with_hanging_indent():
    text = "Install the package and run the server"
    assert fill(text, width=20, indent="* ", subsequent_indent="  ") == (
        "* Install the\n  package and run\n  the server"
    )


def test_bullet_list():
    assert bullet_list(["alpha beta gamma", "delta"], width=12) == "- alpha beta\n  gamma\n- delta"
