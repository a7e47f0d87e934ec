from urlquery import build_query, canonical, get_all, get_param, parse_query, remove_params, set_params


def test_parse_query_is_independent_between_calls():
    assert parse_query("a=1&b=x+y&a=2") == {"a": ["1", "2"], "b": ["x y"]}
    assert parse_query("?q=caf%C3%A9") == {"q": ["café"]}
    assert parse_query("") == {}


def test_parse_query_merges_into_given_dict():
    target = {"page": ["1"]}
    result = parse_query("page=2&size=50", into=target)
    assert result is target
    assert target == {"page": ["1", "2"], "size": ["50"]}


def test_build_query():
    q = build_query({"tag": ["a b", "c&d"], "draft": False, "skip": None, "n": 3})
    assert q == "tag=a%20b&tag=c%26d&draft=false&n=3"


def test_set_and_remove_params():
    url = "https://shop.example/search?q=lamp&page=3#results"
    assert set_params(url, page=4) == "https://shop.example/search?q=lamp&page=4#results"
    assert set_params("http://x.test/list?sort=asc", limit=10) == "http://x.test/list?sort=asc&limit=10"
    assert remove_params(url, "page") == "https://shop.example/search?q=lamp#results"


def test_getters():
    url = "http://x.test/?tag=red&tag=blue&id=7"
    assert get_param(url, "id") == "7"
    assert get_all(url, "tag") == ["red", "blue"]
    assert get_param("http://y.test/", "id", "none") == "none"


def test_canonical():
    assert canonical("HTTP://Example.COM?b=2&a=1#top") == "http://example.com/?a=1&b=2"
