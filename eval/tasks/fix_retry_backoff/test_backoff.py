import random

import pytest

from backoff import RetryError, RetryPolicy, retrying


class Flaky:
    def __init__(self, failures, exc=ConnectionError):
        self.failures = failures
        self.exc = exc
        self.calls = 0

    def __call__(self, value="ok"):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.exc(f"failure {self.calls}")
        return value


def test_schedule_is_exponential_and_capped():
    p = RetryPolicy(max_attempts=5, base_delay=0.5, factor=2, max_delay=3)
    assert p.schedule() == [0.5, 1.0, 2.0, 3.0]


def test_full_jitter_stays_in_bounds():
    p = RetryPolicy(max_attempts=6, base_delay=1, jitter="full", rng=random.Random(7))
    for n, d in enumerate(p.schedule(), start=1):
        assert 0 <= d <= 2 ** (n - 1)


def test_succeeds_on_last_allowed_attempt():
    sleeps = []
    fn = Flaky(failures=2)
    p = RetryPolicy(max_attempts=3, base_delay=0.1)
    assert p.call(fn, "done", sleep=sleeps.append) == "done"
    assert fn.calls == 3
    assert sleeps == pytest.approx([0.1, 0.2])


def test_gives_up_after_max_attempts():
    sleeps = []
    fn = Flaky(failures=99)
    p = RetryPolicy(max_attempts=4, base_delay=1, factor=3)
    with pytest.raises(RetryError) as info:
        p.call(fn, sleep=sleeps.append)
    assert fn.calls == 4
    assert info.value.attempts == 4
    assert sleeps == [1, 3, 9]


def test_non_retryable_error_propagates():
    fn = Flaky(failures=1, exc=KeyError)
    p = RetryPolicy(max_attempts=3)
    with pytest.raises(KeyError):
        p.call(fn, retry_on=(ConnectionError,), sleep=lambda s: None)
    assert fn.calls == 1


def test_decorator_with_single_attempt():
    calls = []

    @retrying(RetryPolicy(max_attempts=1), sleep=lambda s: None)
    def load(name):
        """Load a thing."""
        calls.append(name)
        return name.upper()

    assert load("x") == "X"
    assert calls == ["x"]
    assert load.__name__ == "load"
