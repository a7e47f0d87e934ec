"""Route finding on a small weighted, directed graph kept as an adjacency dict."""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass

Graph = dict[str, dict[str, float]]


class NoRoute(LookupError):
    """Raised when the goal cannot be reached from the start."""


@dataclass(frozen=True)
class Route:
    cost: float
    path: list[str]

    @property
    def hops(self) -> int:
        return len(self.path) - 1


def parse_edges(text: str, undirected: bool = False) -> Graph:
    """Read ``A B 4`` lines (weight optional, default 1); ``#`` starts a comment."""
    graph: Graph = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) not in (2, 3):
            raise ValueError(f"line {number}: expected 'FROM TO [WEIGHT]'")
        source, target = parts[0], parts[1]
        weight = float(parts[2]) if len(parts) == 3 else 1.0
        if weight < 0:
            raise ValueError(f"line {number}: negative weight")
        graph.setdefault(source, {})[target] = weight
        graph.setdefault(target, {})
        if undirected:
            graph[target][source] = weight
    return graph


def _walk_back(previous: dict[str, str], start: str, goal: str) -> list[str]:
    path = [goal]
    while path[-1] != start:
        path.append(previous[path[-1]])
    path.reverse()
    return path


def fewest_hops(graph: Graph, start: str, goal: str) -> list[str]:
    """Breadth-first search: the path with the fewest edges, ignoring weights."""
    previous: dict[str, str] = {}
    seen = {start}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            return _walk_back(previous, start, goal)
        for neighbour in graph.get(node, {}):
            if neighbour not in seen:
                seen.add(neighbour)
                previous[neighbour] = node
                queue.append(neighbour)
    raise NoRoute(f"no route from {start} to {goal}")


def cheapest_route(graph: Graph, start: str, goal: str) -> Route:
    """Dijkstra's algorithm: the route with the lowest total weight."""
    best: dict[str, float] = {start: 0.0}
    previous: dict[str, str] = {}
    done: set[str] = set()
    heap = [(0.0, start)]
    while heap:
        cost, node = heapq.heappop(heap)
        if node in done:
            continue
        if node == goal:
            return Route(cost, _walk_back(previous, start, goal))
        done.add(node)
        for neighbour, weight in graph.get(node, {}).items():
            new_cost = cost + weight
            previous[neighbour] = node
            if new_cost < best.get(neighbour, math.inf):
                best[neighbour] = new_cost
                heapq.heappush(heap, (new_cost, neighbour))
    raise NoRoute(f"no route from {start} to {goal}")


def distances_from(graph: Graph, start: str) -> dict[str, float]:
    """Lowest cost from ``start`` to every node; unreachable nodes map to infinity."""
    result = {node: math.inf for node in graph}
    for node in graph:
        try:
            result[node] = cheapest_route(graph, start, node).cost
        except NoRoute:
            pass
    return result
