"""Retry helper with exponential backoff.

    policy = RetryPolicy(max_attempts=5, base_delay=0.2, max_delay=5.0)
    data = policy.call(fetch_json, url, retry_on=(ConnectionError,))
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence, Tuple, Type


class RetryError(Exception):
    """Raised when every attempt failed; keeps the individual errors."""

    def __init__(self, attempts: int, errors: Sequence[BaseException]):
        super().__init__(f"gave up after {attempts} attempts: {errors[-1]!r}")
        self.attempts = attempts
        self.errors = list(errors)


@dataclass
class RetryPolicy:
    max_attempts: int = 3
    base_delay: float = 0.5
    factor: float = 2.0
    max_delay: float = 30.0
    jitter: str = "none"  # "none", "full" or "equal"
    rng: random.Random = field(default_factory=random.Random, repr=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if self.jitter not in ("none", "full", "equal"):
            raise ValueError(f"unknown jitter mode {self.jitter!r}")

    def backoff(self, retry_number: int) -> float:
        """Delay before retry number `retry_number` (1 = first retry)."""
        raw = self.base_delay * self.factor ** (retry_number - 1)
        delay = min(self.max_delay, raw)
        if self.jitter == "full":
            return self.rng.uniform(0, delay)
        if self.jitter == "equal":
            return delay / 2 + self.rng.uniform(0, delay / 2)
        return delay

    def schedule(self) -> List[float]:
        """All the delays a fully failing call would sleep, in order."""
        return [self.backoff(n) for n in range(1, self.max_attempts)]

    def call(
        self,
        fn: Callable,
        *args,
        retry_on: Tuple[Type[BaseException], ...] = (Exception,),
        sleep: Callable[[float], None] = time.sleep,
        on_retry: Optional[Callable[[int, BaseException, float], None]] = None,
        **kwargs,
    ):
        errors: List[BaseException] = []
        for attempt in range(1, self.max_attempts + 1):
            try:
                return fn(*args, **kwargs)
            except retry_on as exc:
                errors.append(exc)
                if attempt == self.max_attempts:
                    break
                delay = self.backoff(attempt)
                if on_retry is not None:
                    on_retry(attempt, exc, delay)
                sleep(delay)
        raise RetryError(len(errors), errors)


def retrying(policy: Optional[RetryPolicy] = None, **call_options):
    """Decorator form of RetryPolicy.call."""
    policy = policy or RetryPolicy()

    def wrap(fn):
        def inner(*args, **kwargs):
            return policy.call(fn, *args, **call_options, **kwargs)

        inner.__name__ = fn.__name__
        inner.__doc__ = fn.__doc__
        inner.policy = policy
        return inner

    return wrap
