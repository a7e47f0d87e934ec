import pytest

from run_length import FormatError, compression_ratio, decode_text, encode_text, expand, longest_run, runs


def test_runs_and_expand_lists():
    data = [1, 1, 2, 1, 1, 1]
    assert runs(data) == [(1, 2), (2, 1), (1, 3)]
    assert expand(runs(data)) == data
    assert runs([]) == []
    with pytest.raises(ValueError):
        expand([("x", 0)])


def test_encode_text():
    assert encode_text("aaabcc") == "3ab2c"
    assert encode_text("wwwwwwwwwwwwx") == "12wx"
    assert encode_text("7775\\") == "3\\7\\5\\\\"
    assert encode_text("") == ""


def test_decode_text_without_counts():
    assert decode_text("abc") == "abc"
    assert decode_text("\\1\\\\") == "1\\"


def test_decode_text_with_counts():
    assert decode_text("3ab2c") == "aaabcc"
    assert decode_text("12wx") == "w" * 12 + "x"


def test_round_trip():
    for text in ["", "a", "aabbbbbbbbbbbbbc", "2024-01-01  ok", "\\\\\\n"]:
        assert decode_text(encode_text(text)) == text


@pytest.mark.parametrize("bad", ["ab3", "0a", "\\"])
def test_decode_text_rejects_malformed_input(bad):
    with pytest.raises(FormatError):
        decode_text(bad)


def test_longest_run_and_ratio():
    assert longest_run("abbbccc") == ("b", 3)
    assert longest_run([]) is None
    assert compression_ratio("aaaaaaaaaa") == 0.3
    assert compression_ratio("") == 1.0
