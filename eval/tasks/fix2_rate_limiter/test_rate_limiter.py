import pytest

from rate_limiter import RateLimiter, TokenBucket


class FakeClock:
    def __init__(self, start=1000.0):
        self.now = start

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


def test_bucket_starts_full_and_drains():
    clock = FakeClock()
    bucket = TokenBucket(rate=1, capacity=3, clock=clock)
    assert [bucket.try_acquire() for _ in range(4)] == [True, True, True, False]


def test_partial_refill_over_time():
    clock = FakeClock()
    bucket = TokenBucket(rate=2, capacity=10, clock=clock)
    assert bucket.try_acquire(10)
    clock.advance(1.0)
    assert bucket.tokens == pytest.approx(2.0)
    clock.advance(0.25)
    assert bucket.tokens == pytest.approx(2.5)


def test_refill_is_capped_at_capacity():
    clock = FakeClock()
    bucket = TokenBucket(rate=5, capacity=4, clock=clock)
    bucket.try_acquire(4)
    clock.advance(60)
    assert bucket.tokens == pytest.approx(4.0)


def test_cost_above_capacity_is_rejected():
    bucket = TokenBucket(rate=1, capacity=2, clock=FakeClock())
    with pytest.raises(ValueError):
        bucket.try_acquire(3)


def test_limiter_keys_are_independent_and_retry_after():
    clock = FakeClock()
    limiter = RateLimiter(rate=0.5, burst=2, clock=clock)
    assert limiter.allow("alice") and limiter.allow("alice")
    assert not limiter.allow("alice")
    assert limiter.allow("bob")
    assert limiter.retry_after("alice") == 2.0
    clock.advance(1.0)
    assert not limiter.allow("alice")
    assert limiter.retry_after("alice") == 1.0
    clock.advance(1.0)
    assert limiter.allow("alice")
