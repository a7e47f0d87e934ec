import pytest

from roman import add, from_roman, is_roman, to_roman


def test_known_values():
    assert to_roman(4) == "IV"
    assert to_roman(1994) == "MCMXCIV"
    assert to_roman(2024) == "MMXXIV"
    assert from_roman(" mcmxciv ") == 1994


def test_largest_representable_value():
    assert to_roman(3999) == "MMMCMXCIX"
    assert add("MMM", "CMXCIX") == "MMMCMXCIX"


def test_roundtrip_whole_range():
    for n in range(1, 4000):
        assert from_roman(to_roman(n)) == n


def test_out_of_range_and_bad_types():
    for bad in (0, -7, 4000):
        with pytest.raises(ValueError):
            to_roman(bad)
    with pytest.raises(TypeError):
        to_roman(2.0)


def test_non_canonical_rejected():
    assert not is_roman("IIII")
    assert not is_roman("IC")
    assert not is_roman("")
    assert is_roman("xlii")
