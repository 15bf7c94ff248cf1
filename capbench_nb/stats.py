"""Interval estimates for proportions."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtri

__all__ = ["Z_95", "wilson_interval", "wilson_interval_array"]

#: The two-sided 95% normal quantile fixed by the run format (spec section 6).
Z_95 = 1.959963984540054


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    if confidence == 0.95:
        return Z_95
    return float(ndtri(0.5 + 0.5 * confidence))


def wilson_interval(successes: int, n: int, *, confidence: float = 0.95) -> tuple[float | None, float | None]:
    r"""Wilson score interval for a binomial proportion.

    With :math:`\hat p = x/n` and :math:`z` the two-sided normal quantile,

    .. math::

        \frac{2n\hat p + z^2 \pm z\sqrt{4n\hat p(1-\hat p) + z^2}}{2(n + z^2)}

    The lower bound is exactly 0 when :math:`x = 0` and the upper bound exactly
    1 when :math:`x = n`, as in :func:`scipy.stats.binomtest` ``proportion_ci``.

    Parameters
    ----------
    successes : int
        Number of successes :math:`x`, ``0 <= x <= n``.
    n : int
        Number of trials.
    confidence : float, default 0.95
        Two-sided confidence level; 0.95 uses the spec's
        :math:`z = 1.959963984540054`.

    Returns
    -------
    (ci_low, ci_high) : tuple of float or None
        ``(None, None)`` when ``n == 0``: an empty denominator has no interval.

    References
    ----------
    E. B. Wilson, "Probable inference, the law of succession, and statistical
    inference", JASA 22 (1927) 209-212.
    R. G. Newcombe, "Two-sided confidence intervals for the single proportion:
    comparison of seven methods", Stat. Med. 17 (1998) 857-872.
    """
    successes, n = int(successes), int(n)
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return None, None
    z = _z(confidence)
    p = successes / n
    denom = 2 * (n + z * z)
    center = (2 * n * p + z * z) / denom
    delta = z / denom * math.sqrt(4 * n * p * (1 - p) + z * z)
    low = 0.0 if successes == 0 else center - delta
    high = 1.0 if successes == n else center + delta
    return low, high


def wilson_interval_array(successes, n, *, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised :func:`wilson_interval`; NaN where ``n == 0``.

    Parameters
    ----------
    successes, n : array_like of int
        Same shape.

    Returns
    -------
    (ci_low, ci_high) : tuple of ndarray of float
    """
    x = np.asarray(successes, dtype="float64")
    m = np.asarray(n, dtype="float64")
    z = _z(confidence)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = x / m
        denom = 2 * (m + z * z)
        center = (2 * m * p + z * z) / denom
        delta = z / denom * np.sqrt(4 * m * p * (1 - p) + z * z)
        low = np.where(x == 0, 0.0, center - delta)
        high = np.where(x == m, 1.0, center + delta)
    empty = m == 0
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)
