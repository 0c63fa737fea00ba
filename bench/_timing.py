"""Small timing helpers shared by the benchmark scripts."""

from __future__ import annotations

import math
import time


def best_of(fn, repeat: int = 3) -> float:
    """Best wall time of ``repeat`` calls (seconds); noisy machines favour the minimum."""
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def growth_exponent(sizes: list[int], times: list[float]) -> float:
    """Least-squares slope of log(time) against log(size): 1.0 means linear."""
    xs = [math.log(s) for s in sizes]
    ys = [math.log(max(t, 1e-9)) for t in times]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    num = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    den = sum((x - mx) ** 2 for x in xs)
    return num / den if den else float("nan")
