import pytest

from lru_cache import LRUCache, lru_memoize


def test_put_and_get():
    c = LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    assert c.get("a") == 1
    assert c.get("missing", "dflt") == "dflt"
    assert len(c) == 2


def test_evicts_oldest_when_nothing_read():
    c = LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    c.put("c", 3)
    assert "a" not in c
    assert list(c) == ["b", "c"]


def test_get_marks_entry_as_recently_used():
    evicted = []
    c = LRUCache(3, on_evict=lambda k, v: evicted.append(k))
    for k in "abc":
        c.put(k, k.upper())
    c.get("a")
    c.put("d", "D")
    c.get("c")
    c.put("e", "E")
    assert evicted == ["b", "a"]
    assert sorted(c) == ["c", "d", "e"]


def test_peek_does_not_refresh():
    c = LRUCache(2)
    c.put(1, "x")
    c.put(2, "y")
    assert c.peek(1) == "x"
    c.put(3, "z")
    assert 1 not in c and 2 in c


def test_hit_rate_and_resize():
    c = LRUCache(4)
    for i in range(4):
        c.put(i, i * i)
    c.get(0)
    c.get(9)
    assert c.hit_rate == 0.5
    c.resize(2)
    assert len(c) == 2
    with pytest.raises(ValueError):
        LRUCache(0)


def test_memoize_keeps_hot_keys():
    calls = []

    @lru_memoize(capacity=2)
    def square(x):
        calls.append(x)
        return x * x

    square(2)
    square(3)
    square(2)
    square(4)
    square(2)
    assert calls == [2, 3, 4]
