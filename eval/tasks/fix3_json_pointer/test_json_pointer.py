import pytest

from json_pointer import PointerError, format_pointer, get, leaves, parse_pointer, remove, resolve, set_value

DOC = {
    "name": "build",
    "steps": [
        {"run": "make", "env": {"CC": "gcc"}},
        {"run": "make test", "env": {}},
    ],
    "a/b": 1,
    "m~n": 2,
    "": "empty key",
}


def test_parse_pointer_tokens():
    assert parse_pointer("") == []
    assert parse_pointer("/") == [""]
    assert parse_pointer("/steps/0/run") == ["steps", "0", "run"]
    assert parse_pointer("/a~1b/m~0n") == ["a/b", "m~n"]
    with pytest.raises(PointerError):
        parse_pointer("steps/0")
    with pytest.raises(PointerError):
        parse_pointer("/a~2b")


def test_tokens_round_trip_through_format_pointer():
    for key in ["plain", "a/b", "m~n", "~1", "x~0/y", "~"]:
        assert parse_pointer(format_pointer([key])) == [key]


def test_resolve_nested_values():
    assert resolve(DOC, "") is DOC
    assert resolve(DOC, "/steps/0/env/CC") == "gcc"
    assert resolve(DOC, "/steps/1/run") == "make test"
    assert resolve(DOC, "/a~1b") == 1
    assert resolve(DOC, "/m~0n") == 2
    assert resolve(DOC, "/") == "empty key"


def test_resolve_errors_and_default():
    for pointer in ["/missing", "/steps/2", "/steps/01", "/steps/-", "/name/0", "/steps/x"]:
        with pytest.raises(PointerError):
            resolve(DOC, pointer)
    assert get(DOC, "/steps/5/run", "none") == "none"
    assert get(DOC, "/steps/0/env") == {"CC": "gcc"}


def test_set_value_adds_replaces_and_appends():
    doc = {"items": [1, 2], "meta": {}}
    assert set_value(doc, "/meta/owner", "ana") is doc
    set_value(doc, "/items/0", 10)
    set_value(doc, "/items/-", 3)
    set_value(doc, "/items/3", 4)
    assert doc == {"items": [10, 2, 3, 4], "meta": {"owner": "ana"}}
    assert set_value(doc, "", [1]) == [1]
    with pytest.raises(PointerError):
        set_value(doc, "/items/9", 0)
    with pytest.raises(PointerError):
        set_value(doc, "/missing/key", 0)


def test_remove_returns_the_value():
    doc = {"items": ["a", "b", "c"], "meta": {"owner": "ana"}}
    assert remove(doc, "/items/0") == "a"
    assert remove(doc, "/meta/owner") == "ana"
    assert doc == {"items": ["b", "c"], "meta": {}}
    with pytest.raises(PointerError):
        remove(doc, "/meta/owner")
    with pytest.raises(PointerError):
        remove(doc, "")


def test_leaves_yield_pointers_that_resolve():
    found = dict(leaves(DOC))
    assert found["/steps/0/env/CC"] == "gcc"
    assert found["/a~1b"] == 1
    assert "/steps/1/env" not in found
    assert all(resolve(DOC, pointer) == value for pointer, value in found.items())
