"""Small descriptive-statistics helpers for metric dashboards.

Everything works on plain sequences of numbers; no numpy required.
"""

import math
from typing import Dict, List, Optional, Sequence


def mean(xs: Sequence[float]) -> float:
    if not xs:
        raise ValueError("mean of empty data")
    return sum(xs) / len(xs)


def median(xs: Sequence[float]) -> float:
    if not xs:
        raise ValueError("median of empty data")
    s = sorted(xs)
    mid = len(s) // 2
    if len(s) % 2:
        return s[mid]
    return (s[mid - 1] + s[mid]) / 2


def variance(xs: Sequence[float], sample: bool = True) -> float:
    n = len(xs)
    if n < (2 if sample else 1):
        raise ValueError("not enough data points")
    m = mean(xs)
    ss = sum((x - m) ** 2 for x in xs)
    return ss / (n - 1 if sample else n)


def stdev(xs: Sequence[float], sample: bool = True) -> float:
    return math.sqrt(variance(xs, sample))


def percentile(xs: Sequence[float], p: float) -> float:
    """Linear-interpolated percentile, p in [0, 100]."""
    if not xs:
        raise ValueError("percentile of empty data")
    if not 0 <= p <= 100:
        raise ValueError("p must be within [0, 100]")
    s = sorted(xs)
    pos = (len(s) - 1) * p / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def zscores(xs: Sequence[float]) -> List[float]:
    m, sd = mean(xs), stdev(xs)
    if sd == 0:
        return [0.0] * len(xs)
    return [(x - m) / sd for x in xs]


def moving_average(xs: Sequence[float], window: int) -> List[float]:
    """Simple moving average over each full window of `window` points.

    Returns len(xs) - window + 1 values (empty if xs is shorter than window).
    """
    if window < 1:
        raise ValueError("window must be >= 1")
    out: List[float] = []
    total = 0.0
    for i, x in enumerate(xs):
        total += x
        if i >= window:
            total -= xs[i - window]
        if i >= window - 1:
            out.append(total / window)
    return out


def ewma(xs: Sequence[float], alpha: float, start: Optional[float] = None) -> List[float]:
    """Exponentially weighted moving average."""
    if not 0 < alpha <= 1:
        raise ValueError("alpha must be in (0, 1]")
    out = []
    level = start
    for x in xs:
        level = x if level is None else alpha * x + (1 - alpha) * level
        out.append(level)
    return out


def histogram(xs: Sequence[float], bins: int, lo: float, hi: float) -> Dict[int, int]:
    """Count values per bin; values outside [lo, hi] are ignored."""
    if bins < 1 or hi <= lo:
        raise ValueError("bad histogram range")
    width = (hi - lo) / bins
    counts = {b: 0 for b in range(bins)}
    for x in xs:
        if lo <= x <= hi:
            b = min(int((x - lo) / width), bins - 1)
            counts[b] += 1
    return counts


def summary(xs: Sequence[float]) -> Dict[str, float]:
    return {
        "count": len(xs),
        "mean": mean(xs),
        "min": min(xs),
        "p50": median(xs),
        "p95": percentile(xs, 95),
        "max": max(xs),
    }
