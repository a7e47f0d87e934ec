# Helpers for working with closed numeric intervals given as (start, end)
# pairs. Used by the scheduler to compute busy/free time.


def normalize(intervals):
    out = []
    for a, b in intervals:
        if a > b:
            a, b = b, a
        out.append((a, b))
    return out


def merge(intervals):
    items = sorted(normalize(intervals))
    merged = []
    for start, end in items:
        if merged and start <= merged[-1][1]:
            last_start, last_end = merged[-1]
            merged[-1] = (last_start, end)
        else:
            merged.append((start, end))
    return merged


def total_length(intervals):
    return sum(b - a for a, b in merge(intervals))


def contains(intervals, x):
    for a, b in merge(intervals):
        if a <= x <= b:
            return True
        if a > x:
            break
    return False


def intersect(xs, ys):
    xs, ys = merge(xs), merge(ys)
    i = j = 0
    out = []
    while i < len(xs) and j < len(ys):
        lo = max(xs[i][0], ys[j][0])
        hi = min(xs[i][1], ys[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract(xs, ys):
    """Parts of xs not covered by ys."""
    result = []
    cuts = merge(ys)
    for a, b in merge(xs):
        cur = a
        for c, d in cuts:
            if d < cur or c > b:
                continue
            if c > cur:
                result.append((cur, c))
            cur = max(cur, d)
            if cur >= b:
                break
        if cur < b:
            result.append((cur, b))
    return result


def gaps(intervals, lo=None, hi=None):
    m = merge(intervals)
    if not m:
        return [] if lo is None or hi is None else [(lo, hi)]
    lo = m[0][0] if lo is None else lo
    hi = m[-1][1] if hi is None else hi
    return subtract([(lo, hi)], m)


def bucket(intervals, width):
    # how much of each [k*width, (k+1)*width) slot is covered
    usage = {}
    for a, b in merge(intervals):
        k = int(a // width)
        while k * width < b:
            s, e = max(a, k * width), min(b, (k + 1) * width)
            if e > s:
                usage[k] = usage.get(k, 0) + (e - s)
            k += 1
    return usage
