"""An in-process publish/subscribe event bus.

Topics are dot-separated (``order.created``).  Subscriptions may use ``*``
for exactly one segment and ``#`` for any number of trailing segments.
"""

import itertools
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

log = logging.getLogger(__name__)

Handler = Callable[[str, Dict[str, Any]], Any]


def topic_matches(pattern: str, topic: str) -> bool:
    """True if ``topic`` is covered by the subscription ``pattern``."""
    pattern_parts = pattern.split(".")
    topic_parts = topic.split(".")
    for i, part in enumerate(pattern_parts):
        if part == "#":
            return True
        if i >= len(topic_parts):
            return False
        if part != "*" and part != topic_parts[i]:
            return False
    return len(pattern_parts) == len(topic_parts)


@dataclass(order=True)
class Subscription:
    sort_key: tuple = field(init=False, repr=False)
    priority: int
    seq: int
    pattern: str = field(compare=False)
    handler: Handler = field(compare=False)
    once: bool = field(default=False, compare=False)

    def __post_init__(self):
        self.sort_key = (-self.priority, self.seq)


@dataclass
class DeliveryReport:
    topic: str
    delivered: int = 0
    results: List[Any] = field(default_factory=list)
    errors: List[BaseException] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


class StopPropagation(Exception):
    """Raise from a handler to keep lower-priority handlers from seeing the event."""


class EventBus:
    def __init__(self, raise_errors: bool = False):
        self.raise_errors = raise_errors
        self._subscriptions: List[Subscription] = []
        self._counter = itertools.count()
        self.history: List[str] = []

    def subscribe(self, pattern: str, handler: Handler, priority: int = 0, once: bool = False) -> Subscription:
        """Register ``handler``; higher ``priority`` runs first, ties in subscription order."""
        sub = Subscription(priority, next(self._counter), pattern, handler, once)
        self._subscriptions.append(sub)
        self._subscriptions.sort()
        return sub

    def unsubscribe(self, sub: Subscription) -> bool:
        try:
            self._subscriptions.remove(sub)
        except ValueError:
            return False
        return True

    def on(self, pattern: str, priority: int = 0) -> Callable[[Handler], Handler]:
        """Decorator form of :meth:`subscribe`."""
        def register(handler: Handler) -> Handler:
            self.subscribe(pattern, handler, priority)
            return handler
        return register

    def publish(self, topic: str, payload: Optional[Dict[str, Any]] = None) -> DeliveryReport:
        if "*" in topic or "#" in topic:
            raise ValueError(f"cannot publish to a wildcard topic: {topic!r}")
        payload = dict(payload or {})
        report = DeliveryReport(topic)
        self.history.append(topic)
        for sub in list(self._subscriptions):
            if not topic_matches(sub.pattern, topic):
                continue
            if sub.once:
                self.unsubscribe(sub)
            try:
                report.results.append(sub.handler(topic, payload))
            except StopPropagation:
                report.delivered += 1
                break
            except Exception as exc:
                if self.raise_errors:
                    raise
                log.exception("handler for %s failed", topic)
                report.errors.append(exc)
            report.delivered += 1
        return report

    def subscribers(self, topic: str) -> List[Subscription]:
        """The subscriptions that would receive ``topic``, in delivery order."""
        return [s for s in self._subscriptions if topic_matches(s.pattern, topic)]
