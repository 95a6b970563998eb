"""The lab's statistics, each defined once: percentiles and bootstrap intervals.

numpy's default ("linear"): the q-th percentile interpolates linearly between
the two nearest order statistics, at position q/100 x (n - 1) of the sorted
values (Hyndman and Fan's definition 7, also R's and Excel's PERCENTILE.INC).
A nearest-rank p95 of 20 values would be the 19th; this one lies between the
19th and the 20th. Said once here so that "p95" means one thing everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def percentile(values: Sequence[float], q: float) -> float | None:
    """The `q`-th percentile (0-100) by linear interpolation; None for no values."""
    if len(values) == 0:
        return None
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def latency_summary(values_ms: Sequence[float], digits: int = 3) -> dict[str, float]:
    """n, p50, p95, mean and max of a list of milliseconds; just n=0 when empty."""
    if len(values_ms) == 0:
        return {"n": 0}
    values = np.asarray(values_ms, dtype=np.float64)
    return {
        "n": int(values.size),
        "p50_ms": round(float(np.percentile(values, 50)), digits),
        "p95_ms": round(float(np.percentile(values, 95)), digits),
        "mean_ms": round(float(values.mean()), digits),
        "max_ms": round(float(values.max()), digits),
    }


def bootstrap_interval(values: Sequence[float], *, resamples: int = 2000, seed: int = 20261203,
                       confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `values`, resampling them with replacement.

    For a paired comparison pass the per-task differences: resampling the pairs keeps
    each task's two verdicts together. Quantiles of the resampled means use
    `percentile`'s definition. Seeded, so a rerun gives the same interval.
    """
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        raise ValueError("a bootstrap interval needs at least one value")
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return float(low), float(high)
