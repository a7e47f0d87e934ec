"""Task dependency graph: run order, parallel levels, rebuild sets and cycle detection."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable


class CycleError(ValueError):
    def __init__(self, cycle: list[str]) -> None:
        super().__init__("dependency cycle: " + " -> ".join(cycle))
        self.cycle = cycle


class TaskGraph:
    """Tasks and what each depends on; ``add("test", ["build"])`` means test runs after build."""

    def __init__(self) -> None:
        self._deps: dict[str, set[str]] = {}

    def add(self, task: str, depends_on: Iterable[str] = ()) -> None:
        deps = self._deps.setdefault(task, set())
        for dep in depends_on:
            if dep == task:
                raise CycleError([task, task])
            deps.add(dep)
            self._deps.setdefault(dep, set())

    @property
    def tasks(self) -> list[str]:
        return sorted(self._deps)

    def dependencies(self, task: str) -> list[str]:
        return sorted(self._deps[task])

    def order(self) -> list[str]:
        """Every task after all of its dependencies, visiting tasks and dependencies alphabetically.

        A cycle raises CycleError whose ``cycle`` starts and ends with the same task, following the
        dependencies: ``["a", "b", "a"]`` when a depends on b and b on a.
        """
        done: set[str] = set()
        path: list[str] = []
        order: list[str] = []

        def visit(task: str) -> None:
            if task in done:
                return
            if task in path:
                start = path.index(task)
                raise CycleError(path[start + 1:] + [task])
            path.append(task)
            for dep in sorted(self._deps[task]):
                visit(dep)
            path.pop()
            done.add(task)
            order.append(task)

        for task in self.tasks:
            visit(task)
        return order

    def levels(self) -> list[list[str]]:
        """Groups of tasks that can run in parallel: each task depends only on earlier groups."""
        level_of: dict[str, int] = {}
        for task in self.order():
            level_of[task] = max((level_of[dep] + 1 for dep in self._deps[task]), default=0)
        groups: dict[int, list[str]] = defaultdict(list)
        for task, level in level_of.items():
            groups[level].append(task)
        return [sorted(groups[level]) for level in sorted(groups)]

    def dependents(self, task: str) -> list[str]:
        """Every task that depends on ``task``, directly or not: what to redo when it changes."""
        if task not in self._deps:
            raise KeyError(task)
        reverse: dict[str, set[str]] = defaultdict(set)
        for name, deps in self._deps.items():
            for dep in deps:
                reverse[dep].add(name)
        seen: set[str] = set()
        stack = [task]
        while stack:
            for parent in reverse[stack.pop()]:
                if parent not in seen:
                    seen.add(parent)
                    stack.append(parent)
        return sorted(seen)


def parse_graph(text: str) -> TaskGraph:
    """Read lines such as ``test: build lint``; ``#`` starts a comment, a task may have no dependencies."""
    graph = TaskGraph()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        task, colon, deps = line.partition(":")
        if not colon or not task.strip():
            raise ValueError(f"line {number}: expected 'task: dependencies', got {raw!r}")
        graph.add(task.strip(), deps.split())
    return graph
