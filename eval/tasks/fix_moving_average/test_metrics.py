import pytest

from metrics import ewma, histogram, median, moving_average, percentile, variance


def test_median_and_percentile():
    assert median([3, 1, 2]) == 2
    assert median([4, 1, 3, 2]) == 2.5
    assert percentile([10, 20, 30, 40], 50) == 25
    assert percentile([5], 95) == 5


def test_variance():
    assert variance([2, 4, 4, 4, 5, 5, 7, 9], sample=False) == 4
    assert variance([1, 2, 3, 4]) == pytest.approx(5 / 3)
    with pytest.raises(ValueError):
        variance([1])


def test_moving_average_values():
    assert moving_average([1, 2, 3, 4, 5], 2) == [1.5, 2.5, 3.5, 4.5]
    assert moving_average([10, 20, 30, 40], 3) == [20.0, 30.0]


def test_moving_average_window_edge_cases():
    assert moving_average([3, 5, 7], 3) == [5.0]
    assert moving_average([4, 8], 1) == [4.0, 8.0]
    assert moving_average([1, 2], 5) == []
    with pytest.raises(ValueError):
        moving_average([1, 2], 0)


def test_ewma():
    assert ewma([10, 20, 20], alpha=0.5) == [10, 15.0, 17.5]


def test_histogram():
    counts = histogram([0, 0.5, 1, 2.5, 9.9, 10, 11], bins=5, lo=0, hi=10)
    assert counts == {0: 3, 1: 1, 2: 0, 3: 0, 4: 2}
