import math

import pytest

from shortest_path import NoRoute, Route, cheapest_route, distances_from, fewest_hops, parse_edges

ROADS = """
# from to minutes
A B 1
A C 4
A E 2.5
B C 1
B D 5
C D 1
E D 10
"""


def test_parse_edges():
    graph = parse_edges("x y 2\ny z  # weight defaults to 1\n\n", undirected=True)
    assert graph == {"x": {"y": 2.0}, "y": {"x": 2.0, "z": 1.0}, "z": {"y": 1.0}}
    with pytest.raises(ValueError, match="line 2"):
        parse_edges("a b\na b c d")
    with pytest.raises(ValueError, match="negative"):
        parse_edges("a b -1")


def test_fewest_hops_ignores_weights():
    graph = parse_edges(ROADS)
    assert fewest_hops(graph, "A", "D") == ["A", "B", "D"]
    assert fewest_hops(graph, "A", "A") == ["A"]


def test_cheapest_route_to_a_neighbour():
    graph = parse_edges(ROADS)
    assert cheapest_route(graph, "A", "B") == Route(1.0, ["A", "B"])
    assert cheapest_route(graph, "A", "A") == Route(0.0, ["A"])


def test_cheapest_route_follows_the_cheapest_edges():
    route = cheapest_route(parse_edges(ROADS), "A", "D")
    assert route.cost == 3.0
    assert route.path == ["A", "B", "C", "D"]
    assert route.hops == 3


def test_no_route():
    graph = parse_edges(ROADS)
    with pytest.raises(NoRoute):
        cheapest_route(graph, "D", "A")
    with pytest.raises(NoRoute):
        fewest_hops(graph, "C", "E")


def test_distances_from():
    assert distances_from(parse_edges(ROADS), "B") == {
        "A": math.inf,
        "B": 0.0,
        "C": 1.0,
        "D": 2.0,
        "E": math.inf,
    }
