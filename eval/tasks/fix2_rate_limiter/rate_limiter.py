"""Token-bucket rate limiting, per client key.

The clock is injectable so the limiter can be driven deterministically in
tests and simulations; by default it uses :func:`time.monotonic`.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class TokenBucket:
    """A bucket holding up to ``capacity`` tokens, refilled at ``rate`` tokens per second."""

    def __init__(self, rate: float, capacity: float, clock: Callable[[], float] = time.monotonic):
        if rate <= 0 or capacity <= 0:
            raise ValueError("rate and capacity must be positive")
        self.rate = float(rate)
        self.capacity = float(capacity)
        self._clock = clock
        self._tokens = float(capacity)
        self._updated = clock()

    def _refill(self) -> None:
        now = self._clock()
        elapsed = now - self._updated
        if elapsed > 0:
            self._tokens = min(self.capacity, self._tokens + elapsed * self.capacity)
            self._updated = now

    @property
    def tokens(self) -> float:
        """Tokens available right now."""
        self._refill()
        return self._tokens

    def try_acquire(self, cost: float = 1.0) -> bool:
        """Take ``cost`` tokens if they are available; never blocks."""
        if cost > self.capacity:
            raise ValueError(f"cost {cost} exceeds bucket capacity {self.capacity}")
        self._refill()
        if self._tokens >= cost:
            self._tokens -= cost
            return True
        return False

    def wait_time(self, cost: float = 1.0) -> float:
        """Seconds until ``cost`` tokens will be available (0 if they already are)."""
        self._refill()
        missing = cost - self._tokens
        return max(0.0, missing / self.rate)


class RateLimiter:
    """One token bucket per key (user id, IP address, API token...)."""

    def __init__(self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic,
                 max_keys: int = 10_000):
        self.rate = rate
        self.burst = burst
        self.max_keys = max_keys
        self._clock = clock
        self._buckets: dict[str, TokenBucket] = {}

    def _bucket(self, key: str) -> TokenBucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self.max_keys:
                self._evict_full_buckets()
            bucket = TokenBucket(self.rate, self.burst, self._clock)
            self._buckets[key] = bucket
        return bucket

    def _evict_full_buckets(self) -> None:
        # A full bucket carries no state worth keeping: a fresh one is identical.
        for key in [k for k, b in self._buckets.items() if b.tokens >= b.capacity]:
            del self._buckets[key]

    def allow(self, key: str, cost: float = 1.0) -> bool:
        return self._bucket(key).try_acquire(cost)

    def retry_after(self, key: str, cost: float = 1.0) -> float:
        """Value for an HTTP ``Retry-After`` header, rounded up to whole seconds."""
        wait = self._bucket(key).wait_time(cost)
        return float(int(wait) + (wait > int(wait)))
