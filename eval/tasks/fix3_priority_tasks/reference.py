"""A task queue on heapq: higher priority first, first-in first-out among equal priorities."""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from typing import Any, Iterator


class QueueEmpty(Exception):
    """Raised by pop() and peek() when no live task is queued."""


@dataclass(frozen=True)
class Task:
    name: str
    priority: int = 0
    payload: Any = None


class TaskQueue:
    """Tasks keyed by name. Cancelled tasks stay in the heap, marked dead, until they reach the top."""

    def __init__(self) -> None:
        self._heap: list[list[Any]] = []
        self._entries: dict[str, list[Any]] = {}
        self._counter = itertools.count()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def push(self, name: str, priority: int = 0, payload: Any = None) -> Task:
        """Queue a task. Pushing a name that is already queued replaces that task.

        The replacement goes behind the tasks already queued at its priority.
        """
        if not name:
            raise ValueError("a task needs a name")
        if name in self._entries:
            self.cancel(name)
        task = Task(name, priority, payload)
        entry = [-priority, next(self._counter), task]
        self._entries[name] = entry
        heapq.heappush(self._heap, entry)
        return task

    def cancel(self, name: str) -> Task:
        """Remove a queued task and return it; KeyError if it is not queued."""
        entry = self._entries.pop(name)
        task = entry[2]
        entry[2] = None
        return task

    def _drop_dead(self) -> None:
        while self._heap and self._heap[0][2] is None:
            heapq.heappop(self._heap)

    def peek(self) -> Task:
        """The task pop() would return, left in the queue."""
        self._drop_dead()
        if not self._heap:
            raise QueueEmpty("peek at an empty task queue")
        return self._heap[0][2]

    def pop(self) -> Task:
        """Remove and return the task with the highest priority (the oldest among equals)."""
        self._drop_dead()
        if not self._heap:
            raise QueueEmpty("pop from an empty task queue")
        task = heapq.heappop(self._heap)[2]
        del self._entries[task.name]
        return task

    def pop_many(self, limit: int) -> list[Task]:
        """Up to ``limit`` tasks, in the order pop() would return them."""
        batch = []
        while len(batch) < limit and self._entries:
            batch.append(self.pop())
        return batch

    def reprioritize(self, name: str, priority: int) -> Task:
        """Give a queued task a new priority, keeping its payload."""
        old = self.cancel(name)
        return self.push(name, priority, old.payload)

    def drain(self) -> Iterator[Task]:
        """Pop tasks until the queue is empty, including tasks pushed while draining."""
        while self._entries:
            yield self.pop()

    def names(self) -> list[str]:
        """The queued task names, in no particular order."""
        return list(self._entries)
