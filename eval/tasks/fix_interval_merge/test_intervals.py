from intervals import contains, gaps, intersect, merge, total_length


def test_merge_overlapping_and_touching():
    assert merge([(5, 8), (1, 3), (2, 4), (8, 9)]) == [(1, 4), (5, 9)]
    assert merge([]) == []
    assert merge([(7, 2)]) == [(2, 7)]


def test_merge_keeps_enclosing_interval():
    assert merge([(1, 10), (2, 3)]) == [(1, 10)]
    assert merge([(0, 100), (10, 20), (30, 40), (99, 101)]) == [(0, 101)]


def test_total_length_counts_overlap_once():
    assert total_length([(0, 5), (3, 7), (10, 12)]) == 9
    assert total_length([(0, 60), (15, 30)]) == 60


def test_contains():
    busy = [(9, 12), (13, 17)]
    assert contains(busy, 9)
    assert contains(busy, 17)
    assert not contains(busy, 12.5)


def test_intersect():
    a = [(0, 4), (6, 10)]
    b = [(3, 7), (9, 20)]
    assert intersect(a, b) == [(3, 4), (6, 7), (9, 10)]


def test_gaps_in_working_day():
    meetings = [(9, 10), (13, 14), (9.5, 11)]
    assert gaps(meetings, 8, 18) == [(8, 9), (11, 13), (14, 18)]
    assert gaps([], 8, 18) == [(8, 18)]
