"""Wilson score interval (capbench_nb.metrics.stats) against scipy and closed forms.

Spec section 6: every rate comes with its 95% Wilson score interval,
z = 1.959963984540054; an empty denominator gives a null interval.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from capbench_nb.metrics.stats import Z_95, wilson_interval, wilson_interval_array

TOL = 1e-12

SMALL_GRID = [(x, n) for n in range(1, 61) for x in range(n + 1)]
LARGE_N = [100, 1000, 12345]


def _large_grid():
    cases = []
    for n in LARGE_N:
        xs = {0, 1, 2, n // 7, n // 3, n // 2, n - n // 3, n - 2, n - 1, n}
        cases.extend((x, n) for x in sorted(xs))
    return cases


GRID = SMALL_GRID + _large_grid()


def _scipy_ci(x: int, n: int, confidence: float) -> tuple[float, float]:
    ci = sps.binomtest(x, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


# --------------------------------------------------------------------------- the constant


def test_z95_is_the_two_sided_95_normal_quantile():
    assert Z_95 == 1.959963984540054  # the literal of spec section 6
    assert abs(Z_95 - float(sps.norm.ppf(0.975))) <= 1e-15


# --------------------------------------------------------------------------- scalar vs scipy


@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.99])
def test_wilson_matches_scipy_on_full_grid(confidence):
    worst = 0.0
    for x, n in GRID:
        low, high = wilson_interval(x, n, confidence=confidence)
        ref_low, ref_high = _scipy_ci(x, n, confidence)
        assert isinstance(low, float) and isinstance(high, float)
        err = max(abs(low - ref_low), abs(high - ref_high))
        assert err <= TOL, (x, n, confidence, (low, high), (ref_low, ref_high))
        worst = max(worst, err)
        assert 0.0 <= low <= x / n <= high <= 1.0, (x, n, low, high)
    assert worst <= TOL


def test_default_confidence_is_95():
    for x, n in [(0, 1), (1, 2), (7, 13), (20, 40), (60, 60)]:
        assert wilson_interval(x, n) == wilson_interval(x, n, confidence=0.95)


@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.99])
def test_exact_bounds_at_the_edges(confidence):
    for n in list(range(1, 61)) + LARGE_N:
        low0, high0 = wilson_interval(0, n, confidence=confidence)
        assert low0 == 0.0 and type(low0) is float
        assert 0.0 < high0 < 1.0
        lown, highn = wilson_interval(n, n, confidence=confidence)
        assert highn == 1.0 and type(highn) is float
        assert 0.0 < lown < 1.0
        # The two edge intervals mirror each other.
        assert abs(lown - (1.0 - high0)) <= TOL


def test_intervals_are_symmetric_under_x_to_n_minus_x():
    for x, n in GRID:
        low, high = wilson_interval(x, n)
        mlow, mhigh = wilson_interval(n - x, n)
        assert abs(low - (1.0 - mhigh)) <= TOL
        assert abs(high - (1.0 - mlow)) <= TOL


def test_interval_narrows_with_confidence():
    for x, n in [(0, 5), (3, 10), (10, 10), (17, 60), (500, 1000)]:
        l90, h90 = wilson_interval(x, n, confidence=0.9)
        l95, h95 = wilson_interval(x, n, confidence=0.95)
        l99, h99 = wilson_interval(x, n, confidence=0.99)
        assert l99 <= l95 <= l90 and h90 <= h95 <= h99
        assert (h99 - l99) > (h95 - l95) > (h90 - l90)


# --------------------------------------------------------------------------- hand-computed vectors


def test_hand_computed_x1_n2():
    # p = 1/2: center = 1/2 exactly, half-width = z / (2 sqrt(2 + z^2)).
    z = 1.959963984540054
    half = z / (2.0 * math.sqrt(2.0 + z * z))
    low, high = wilson_interval(1, 2)
    assert abs(low - (0.5 - half)) <= 1e-15
    assert abs(high - (0.5 + half)) <= 1e-15
    # Rounded reference values (computed by hand: z^2 = 3.841459, sqrt(5.841459) = 2.416912).
    assert round(low, 6) == 0.094531
    assert round(high, 6) == 0.905469


def test_hand_computed_general_formula():
    # The Newcombe (1998) form written out independently of the package.
    z = 1.959963984540054
    for x, n in [(1, 3), (2, 7), (5, 9), (20, 40), (33, 50)]:
        p = x / n
        root = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        center = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = root / (1 + z * z / n)
        low, high = wilson_interval(x, n)
        assert abs(low - (center - half)) <= 1e-14, (x, n)
        assert abs(high - (center + half)) <= 1e-14, (x, n)


def test_hand_computed_edges():
    # x = 0: upper bound z^2 / (n + z^2); x = n: lower bound n / (n + z^2).
    z2 = 1.959963984540054**2
    for n in (1, 2, 3, 10, 59, 1000):
        assert abs(wilson_interval(0, n)[1] - z2 / (n + z2)) <= 1e-14
        assert abs(wilson_interval(n, n)[0] - n / (n + z2)) <= 1e-14


def test_spec_example_pass_at_1():
    # metrics.json example in spec section 7: 20 of 40 gives (0.352, 0.648).
    low, high = wilson_interval(20, 40)
    assert round(low, 3) == 0.352 and round(high, 3) == 0.648


# --------------------------------------------------------------------------- empty and invalid


def test_empty_denominator_gives_none():
    assert wilson_interval(0, 0) == (None, None)
    assert wilson_interval(0, 0, confidence=0.9) == (None, None)


@pytest.mark.parametrize(
    "x, n",
    [(1, 0), (3, 2), (61, 60), (-1, 5), (-1, 0), (0, -1), (-2, -1), (12346, 12345)],
)
def test_invalid_counts_raise(x, n):
    with pytest.raises(ValueError):
        wilson_interval(x, n)


@pytest.mark.parametrize("confidence", [0.0, 1.0, -0.5, 1.5, 95])
def test_invalid_confidence_raises(confidence):
    with pytest.raises(ValueError):
        wilson_interval(1, 2, confidence=confidence)


def test_numpy_integers_accepted():
    assert wilson_interval(np.int64(3), np.int64(10)) == wilson_interval(3, 10)


# --------------------------------------------------------------------------- vectorised


@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.99])
def test_array_matches_scalar_elementwise(confidence):
    xs = np.array([x for x, _ in GRID] + [0, 0], dtype="int64")
    ns = np.array([n for _, n in GRID] + [0, 0], dtype="int64")
    low, high = wilson_interval_array(xs, ns, confidence=confidence)
    assert isinstance(low, np.ndarray) and isinstance(high, np.ndarray)
    assert low.shape == xs.shape and high.shape == xs.shape
    assert low.dtype == np.float64 and high.dtype == np.float64
    for i, (x, n) in enumerate(zip(xs.tolist(), ns.tolist())):
        if n == 0:
            assert math.isnan(low[i]) and math.isnan(high[i])
            continue
        s_low, s_high = wilson_interval(x, n, confidence=confidence)
        assert abs(low[i] - s_low) <= 1e-15, (x, n)
        assert abs(high[i] - s_high) <= 1e-15, (x, n)
        if x == 0:
            assert low[i] == 0.0
        if x == n:
            assert high[i] == 1.0


def test_array_nan_only_where_n_is_zero():
    low, high = wilson_interval_array([0, 1, 0, 2, 0], [0, 1, 3, 0, 5])
    assert np.isnan(low).tolist() == [True, False, False, True, False]
    assert np.isnan(high).tolist() == [True, False, False, True, False]
    assert low[1] == wilson_interval(1, 1)[0] and high[1] == 1.0
    assert low[2] == 0.0


def test_array_accepts_2d_and_lists():
    xs = [[0, 1], [2, 3]]
    ns = [[1, 2], [3, 3]]
    low, high = wilson_interval_array(xs, ns)
    assert low.shape == (2, 2)
    for i in range(2):
        for j in range(2):
            s_low, s_high = wilson_interval(xs[i][j], ns[i][j])
            assert abs(low[i, j] - s_low) <= 1e-15 and abs(high[i, j] - s_high) <= 1e-15


def test_array_all_empty():
    low, high = wilson_interval_array(np.zeros(3, dtype=int), np.zeros(3, dtype=int))
    assert np.isnan(low).all() and np.isnan(high).all()


def test_array_scalar_inputs():
    low, high = wilson_interval_array(1, 2)
    assert np.ndim(low) == 0
    assert abs(float(low) - wilson_interval(1, 2)[0]) <= 1e-15
    assert abs(float(high) - wilson_interval(1, 2)[1]) <= 1e-15


def test_array_invalid_confidence_raises():
    with pytest.raises(ValueError):
        wilson_interval_array([1], [2], confidence=1.0)


def _wilson_by_hand(x: int, n: int, z: float) -> tuple[float, float]:
    """The Wilson formula in plain Python floats, step by step (the pre-vectorised scalar)."""
    p = x / n
    denom = 2 * (n + z * z)
    center = (2 * n * p + z * z) / denom
    delta = z / denom * math.sqrt(4 * n * p * (1 - p) + z * z)
    return (0.0 if x == 0 else center - delta), (1.0 if x == n else center + delta)


@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.99])
def test_scalar_is_the_array_to_the_last_bit(confidence):
    """One implementation: the scalar goes through the array one, and both give the plain-float bits."""
    from scipy.special import ndtri

    z = Z_95 if confidence == 0.95 else float(ndtri(0.5 + 0.5 * confidence))
    cases = [(x, n) for n in range(1, 120) for x in range(n + 1)] + [(12345, 10**9), (10**9 - 1, 10**9)]
    xs, ns = np.array([c[0] for c in cases]), np.array([c[1] for c in cases])
    low, high = wilson_interval_array(xs, ns, confidence=confidence)
    for i, (x, n) in enumerate(cases):
        scalar = wilson_interval(x, n, confidence=confidence)
        assert scalar == _wilson_by_hand(x, n, z) == (low[i], high[i]), (x, n)
        assert all(type(v) is float for v in scalar)


# --------------------------------------------------------------------------- Student's t interval


def test_t_interval_by_hand_and_clipped():
    from capbench_nb.metrics.stats import t_interval

    # t_{0.975, 4} = 2.7764451051977934 (scipy.stats.t.ppf(0.975, 4)); 0.5 +- 2.776 * 0.1
    low, high = t_interval(0.5, 0.1, 4)
    assert low == pytest.approx(0.5 - 0.27764451051977934, rel=1e-14)
    assert high == pytest.approx(0.5 + 0.27764451051977934, rel=1e-14)
    assert t_interval(0.9, 0.1, 4) == (pytest.approx(0.9 - 0.27764451051977934), 1.0)  # clipped to [0, 1]
    assert t_interval(0.05, 0.1, 1)[0] == 0.0
    assert t_interval(0.5, None, 4) == (None, None)
    assert t_interval(0.5, 0.1, 0) == (None, None)  # one group: no degrees of freedom
    assert t_interval(None, 0.1, 3) == (None, None)


def test_t_interval_scalar_and_array_give_the_same_bits():
    from capbench_nb.metrics.stats import t_interval, t_interval_array

    rng = np.random.default_rng(5)
    values, ses, dfs = rng.random(200), rng.random(200) / 4, rng.integers(0, 12, 200)
    low, high = t_interval_array(values, ses, dfs)
    for v, s, d, lo, hi in zip(values, ses, dfs, low, high):
        got = t_interval(float(v), float(s), int(d))
        if d < 1:
            assert got == (None, None) and np.isnan(lo) and np.isnan(hi)
        else:
            assert got == (float(lo), float(hi))


def test_paired_difference_interval_scalar_and_array_give_the_same_bits():
    from capbench_nb.metrics.stats import paired_difference_interval, paired_difference_interval_array

    cells = np.random.default_rng(9).integers(0, 40, (500, 4))
    cells[:5] = 0  # empty tables
    low, high = paired_difference_interval_array(*cells.T)
    for row, lo, hi in zip(cells, low, high):
        got = paired_difference_interval(*row.tolist())
        if row.sum() == 0:
            assert got == (None, None) and np.isnan(lo)
        else:
            assert got == (float(lo), float(hi))
