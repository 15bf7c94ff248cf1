"""Interval estimates for proportions, and tests and intervals for paired proportions.

Single proportions: the Wilson score interval (:func:`wilson_interval`).
A mean with a standard error on few degrees of freedom (the clustered standard error of
spec section 11): Student's t interval (:func:`t_interval`).
Two runs on the same tasks (paired binary outcomes): the exact McNemar test
(:func:`mcnemar_exact`) and Newcombe's hybrid score interval for the
difference of the paired proportions (:func:`paired_difference_interval`).
"""

from __future__ import annotations

import numpy as np

# scipy is imported where it is used: scipy.stats alone costs ~0.5 s, which a report
# kernel (Wilson intervals only, z fixed) would otherwise pay on every run.

__all__ = ["Z_95", "wilson_interval", "wilson_interval_array", "t_interval", "t_interval_array", "mcnemar_exact",
           "paired_difference_interval", "paired_difference_interval_array"]

#: The two-sided 95% normal quantile fixed by the run format (spec section 6).
Z_95 = 1.959963984540054


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    if confidence == 0.95:
        return Z_95
    from scipy.special import ndtri

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
    low, high = wilson_interval_array(successes, n, confidence=confidence)
    return float(low), float(high)


def wilson_interval_array(successes, n, *, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval of :func:`wilson_interval`, element by element; NaN where ``n == 0``.

    The one implementation of the formula: :func:`wilson_interval` is this function on one
    element.  Every operation is an IEEE float64 operation (correctly rounded division and
    square root), so a scalar and an array element give the same bits.  Counts are not
    checked here (the scalar checks them).

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


def t_interval(value: float | None, se: float | None, df: int | None, *, confidence: float = 0.95,
               bounds: tuple[float, float] = (0.0, 1.0)) -> tuple[float | None, float | None]:
    r"""Student's t interval of a mean from its standard error, clipped to ``bounds``.

    .. math:: \bar x \pm t_{(1+c)/2,\ \nu} \cdot \mathrm{SE}, \quad\text{clipped to } [a, b]

    with :math:`t_{q, \nu}` the q-quantile of Student's t with :math:`\nu` degrees of freedom
    (:func:`scipy.stats.t.ppf`).  Spec section 11 uses it for the clustered standard error of
    ``all_attempts_pass_rate`` with :math:`\nu = G - 1`, G the number of groups, and clips to [0, 1].

    Parameters
    ----------
    value, se : float or None
        The estimate and its standard error.
    df : int or None
        Degrees of freedom, >= 1.
    confidence : float, default 0.95
    bounds : (float, float), default (0, 1)
        The range the quantity lives in (a share).

    Returns
    -------
    (ci_low, ci_high) : tuple of float or None
        ``(None, None)`` when ``value``, ``se`` or ``df`` is None, or ``df < 1``.

    References
    ----------
    A. C. Cameron, D. L. Miller, "A practitioner's guide to cluster-robust inference", J. Human
    Resources 50 (2015) 317-372, section VI (few clusters: t with G - 1 degrees of freedom).
    E. Miller, "Adding error bars to evals", arXiv:2411.00640 (2024).
    """
    if value is None or se is None or df is None or int(df) < 1:
        return None, None
    low, high = t_interval_array(value, se, int(df), confidence=confidence, bounds=bounds)
    return float(low), float(high)


def t_interval_array(value, se, df, *, confidence: float = 0.95,
                     bounds: tuple[float, float] = (0.0, 1.0)) -> tuple[np.ndarray, np.ndarray]:
    """The interval of :func:`t_interval`, element by element; NaN where ``se`` is NaN or ``df < 1``.

    The one implementation: :func:`t_interval` is this function on one element.

    Parameters
    ----------
    value, se, df : array_like
        Broadcast against each other.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    from scipy.stats import t as student_t

    x = np.asarray(value, dtype="float64")
    s = np.asarray(se, dtype="float64")
    nu = np.asarray(df, dtype="float64")
    valid = (nu >= 1) & ~np.isnan(s) & ~np.isnan(x)
    q = student_t.ppf(0.5 + 0.5 * confidence, np.where(valid, nu, 1.0))
    half = q * s
    low = np.clip(x - half, bounds[0], bounds[1])
    high = np.clip(x + half, bounds[0], bounds[1])
    return np.where(valid, low, np.nan), np.where(valid, high, np.nan)


# --------------------------------------------------------------------------- paired proportions


def mcnemar_exact(b: int, c: int) -> float:
    r"""Two-sided exact McNemar test of marginal homogeneity in a paired 2x2 table.

    Only the discordant pairs carry information: under the null hypothesis
    (both runs have the same success probability) each of the
    :math:`m = b + c` discordant pairs is "A only" or "B only" with
    probability 1/2, so conditionally on :math:`m`,
    :math:`b \sim \mathrm{Binomial}(m, 1/2)`.  The two-sided p-value doubles
    the smaller tail,

    .. math:: p = \min\bigl(1,\ 2\,F(\min(b, c);\ m, 1/2)\bigr),

    with :math:`F` the binomial distribution function.  For the symmetric
    binomial this equals :func:`scipy.stats.binomtest` ``(min(b, c), m, 0.5)``
    ``.pvalue``.

    Parameters
    ----------
    b, c : int
        The two discordant counts (tasks where only A succeeded, tasks where
        only B succeeded; the order does not matter).

    Returns
    -------
    float
        The p-value; 1.0 when there is no discordant pair (``b + c == 0``).

    References
    ----------
    Q. McNemar, "Note on the sampling error of the difference between
    correlated proportions or percentages", Psychometrika 12 (1947) 153-157.
    A. Agresti, *Categorical Data Analysis*, 3rd ed., Wiley 2013, chapter 11
    (comparing dependent proportions; the exact conditional small-sample test).
    """
    b, c = int(b), int(c)
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    m = b + c
    if m == 0:
        return 1.0
    from scipy.stats import binom

    return float(min(1.0, 2.0 * binom.cdf(min(b, c), m, 0.5)))


def _newcombe_phi(both, a_only, b_only, neither) -> np.ndarray:
    """The phi correlation of Newcombe's method 10, with its continuity correction (see below),
    element by element (int64 counts; float64 operations in the scalar's order)."""
    n = both + a_only + b_only + neither
    margins = (both + b_only, a_only + neither, both + a_only, b_only + neither)  # B+, B-, A+, A-
    cross = both * neither - a_only * b_only
    numerator = np.where(cross > n / 2, cross - n / 2, np.where(cross >= 0, 0.0, cross.astype("float64")))
    product = margins[0].astype("float64") * margins[1] * margins[2] * margins[3]
    zero = np.minimum(np.minimum(margins[0], margins[1]), np.minimum(margins[2], margins[3])) == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(zero, 0.0, numerator / np.sqrt(np.where(zero, 1.0, product)))


# long function: the docstring carries the method (formulas, phi rule, references); the body is 20 lines
def paired_difference_interval(
    both: int, a_only: int, b_only: int, neither: int, *, confidence: float = 0.95
) -> tuple[float | None, float | None]:
    r"""Newcombe's hybrid score interval for a difference of paired proportions (B minus A).

    The tasks of two runs form a paired 2x2 table: ``both`` succeeded in A and
    in B, ``a_only`` succeeded in A only, ``b_only`` in B only, ``neither`` in
    neither; :math:`n` is their sum.  The proportions are
    :math:`\hat p_A = (\text{both} + \text{a\_only})/n`,
    :math:`\hat p_B = (\text{both} + \text{b\_only})/n`, and the estimate is
    :math:`\hat\theta = \hat p_B - \hat p_A = (\text{b\_only} - \text{a\_only})/n`.

    Method 10 of Newcombe (1998) combines the Wilson score limits
    :math:`(l_A, u_A)` and :math:`(l_B, u_B)` of the two marginal proportions
    (:func:`wilson_interval`, each over :math:`n`) with their correlation
    :math:`\hat\phi`:

    .. math::

        L = \hat\theta - \sqrt{(\hat p_B - l_B)^2 - 2\hat\phi(\hat p_B - l_B)(u_A - \hat p_A) + (u_A - \hat p_A)^2}

        U = \hat\theta + \sqrt{(u_B - \hat p_B)^2 - 2\hat\phi(u_B - \hat p_B)(\hat p_A - l_A) + (\hat p_A - l_A)^2}

    The phi rule is Newcombe's, as given in Altman et al. (2000), p. 52, and
    in Fagerland, Lydersen and Laake (2017), chapter 8: with
    :math:`A = \text{both}\cdot\text{neither} - \text{a\_only}\cdot\text{b\_only}`
    and :math:`M` the product of the four marginal totals (B successes,
    B failures, A successes, A failures),

    .. math::

        \hat\phi = \begin{cases}
            0 & \text{if any marginal total is 0} \\
            (A - n/2)/\sqrt{M} & \text{if } A > n/2 \\
            0 & \text{if } 0 \le A \le n/2 \\
            A/\sqrt{M} & \text{if } A < 0
        \end{cases}

    (the plain phi coefficient, with a continuity correction that shrinks a
    positive correlation towards 0 and so widens the interval).  The interval
    always contains :math:`\hat\theta` and lies in [-1, 1]; the radicands are
    clipped at 0 and the limits at -1 and 1 against rounding only.

    Parameters
    ----------
    both, a_only, b_only, neither : int
        The paired table (non-negative counts).
    confidence : float, default 0.95
        Two-sided level of the Wilson limits; 0.95 uses the spec's
        :math:`z = 1.959963984540054`.

    Returns
    -------
    (ci_low, ci_high) : tuple of float or None
        ``(None, None)`` when ``n == 0``.

    References
    ----------
    R. G. Newcombe, "Improved confidence intervals for the difference between
    binomial proportions based on paired data", Stat. Med. 17 (1998)
    2635-2650 (method 10).
    D. G. Altman, D. Machin, T. N. Bryant, M. J. Gardner (eds.), *Statistics
    with Confidence*, 2nd ed., BMJ Books 2000, p. 52 (worked example).
    M. W. Fagerland, S. Lydersen, P. Laake, *Statistical Analysis of
    Contingency Tables*, CRC Press 2017, chapter 8, "The Paired 2x2 Table"
    (the "Newcombe square-and-add" interval).
    """
    cells = tuple(int(x) for x in (both, a_only, b_only, neither))
    if min(cells) < 0:
        raise ValueError(f"paired counts must be >= 0, got {cells}")
    if sum(cells) == 0:
        return None, None
    low, high = paired_difference_interval_array(*cells, confidence=confidence)
    return float(low), float(high)


def paired_difference_interval_array(both, a_only, b_only, neither, *,
                                     confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Newcombe's interval of :func:`paired_difference_interval`, element by element; NaN where n = 0.

    The one implementation: the scalar is this function on one element (the same IEEE float64
    operations in the same order, so a scalar and an array element give the same bits).  Counts
    are not checked here (the scalar checks them).

    Parameters
    ----------
    both, a_only, b_only, neither : array_like of int
        Same shape.
    """
    both, a_only, b_only, neither = (np.asarray(x, dtype="int64") for x in (both, a_only, b_only, neither))
    n = both + a_only + b_only + neither
    empty = n == 0
    m = np.where(empty, 1, n)
    p_a = (both + a_only) / m
    p_b = (both + b_only) / m
    theta = (b_only - a_only) / m
    l_a, u_a = wilson_interval_array(both + a_only, n, confidence=confidence)
    l_b, u_b = wilson_interval_array(both + b_only, n, confidence=confidence)
    phi = _newcombe_phi(both, a_only, b_only, neither)
    x, y = p_b - l_b, u_a - p_a
    delta = np.sqrt(np.maximum(0.0, x * x - 2.0 * phi * x * y + y * y))
    x, y = u_b - p_b, p_a - l_a
    epsilon = np.sqrt(np.maximum(0.0, x * x - 2.0 * phi * x * y + y * y))
    low, high = np.maximum(-1.0, theta - delta), np.minimum(1.0, theta + epsilon)
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)
