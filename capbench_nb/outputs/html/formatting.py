"""Formatting of report values (pure): durations, counts, percentages, intervals, rates, costs, phrases.

A missing value is always shown as ``n/a (...)``, never as 0.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import asdict, is_dataclass
from typing import Any

import numpy as np

from capbench_nb.format import TELEMETRY_MS_FIELDS
from capbench_nb.records.views import judge_phrase  # the Run card's word too

__all__ = [
    "NA_SOURCE",
    "NA_NO_ELIGIBLE",
    "NA",
    "is_null",
    "fmt_ms",
    "fmt_count",
    "fmt_pct",
    "fmt_interval",
    "fmt_rate",
    "fmt_cost",
    "fmt_score",
    "judge_phrase",
    "plural",
    "join_words",
    "listing",
    "telemetry_formatter",
    "FORMATTERS",
    "formatter",
]

#: How a missing telemetry (or cost) value is shown: never as 0.
NA_SOURCE = "n/a (no source)"
#: How a rate with an empty denominator is shown.
NA_NO_ELIGIBLE = "n/a (no eligible tasks)"
NA = "n/a"


def is_null(value: Any) -> bool:
    """None, NaN, pandas NA/NaT."""
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN, NaT
    except TypeError:  # pd.NA: its truth value is ambiguous
        return True


def _sign_and_size(value: Any) -> tuple[str | None, str, float]:
    """The shared start of the duration and cost formats: ``(text, "", 0.0)`` for a null
    (``NA_SOURCE``) or an infinity (``"∞"``), else ``(None, sign, magnitude)``."""
    if is_null(value):
        return NA_SOURCE, "", 0.0
    v = float(value)
    if math.isinf(v):
        return "∞", "", 0.0
    return None, "-" if v < 0 else "", abs(v)


def fmt_ms(value: Any) -> str:
    """A duration in milliseconds, for people.

    Parameters
    ----------
    value : number or None
        Milliseconds.

    Returns
    -------
    str
        ``"n/a (no source)"`` for None/NaN/NA; below one second ``"842 ms"``;
        below a minute ``"12.4 s"``; below an hour ``"3 min 05 s"``; else
        ``"1 h 02 min"``.  Rounding is half up and happens before the unit is
        chosen, so 999.5 ms is ``"1.0 s"`` and 59,950 ms is ``"1 min 00 s"``.
        A positive value below 0.5 ms is ``"<1 ms"``, never ``"0 ms"``.

    Examples
    --------
    >>> fmt_ms(185_000)
    '3 min 05 s'
    """
    shown, sign, v = _sign_and_size(value)
    if shown is not None:
        return shown
    whole_ms = math.floor(v + 0.5)
    if whole_ms < 1000:
        if v > 0 and whole_ms == 0:
            return f"{sign}<1 ms"
        return f"{sign}{whole_ms} ms"
    tenths = math.floor(v / 100 + 0.5)
    if tenths < 600:
        return f"{sign}{tenths // 10}.{tenths % 10} s"
    seconds = math.floor(v / 1000 + 0.5)
    if seconds < 3600:
        return f"{sign}{seconds // 60} min {seconds % 60:02d} s"
    minutes = math.floor(v / 60_000 + 0.5)
    return f"{sign}{minutes // 60:,} h {minutes % 60:02d} min"


def fmt_count(value: Any) -> str:
    """A count with thousands separators.

    Parameters
    ----------
    value : int, float or None
        Integers (counts, sums) print exactly; floats (means, medians) with
        one decimal.

    Returns
    -------
    str
        ``"12,345"``, ``"1,234.5"``, or ``"n/a (no source)"`` for a null.
    """
    if is_null(value):
        return NA_SOURCE
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    v = float(value)
    if math.isinf(v):
        return "∞"
    return f"{v:,.1f}"


def fmt_pct(value: Any, digits: int = 1) -> str:
    """A proportion as a percentage.

    Parameters
    ----------
    value : float or None
        A proportion in [0, 1].
    digits : int, default 1
        Decimals of the percentage.

    Returns
    -------
    str
        ``0.7 -> "70.0%"``; ``"n/a"`` for a null.  A non-zero value that
        would round to 0 is ``"<0.1%"`` and a value below 1 that would round
        to 100 is ``">99.9%"`` (with ``digits=1``), so rounding never turns a
        failure or a success into "none" or "all".
    """
    if is_null(value):
        return NA
    v = float(value) * 100.0
    text = f"{v:.{digits}f}"
    step = 10.0**-digits
    if v > 0 and float(text) == 0:
        return f"<{step:.{digits}f}%"
    if v < 100 and float(text) >= 100:
        return f">{100 - step:.{digits}f}%"
    return text + "%"


def fmt_interval(low: Any, high: Any, digits: int = 1) -> str:
    """A confidence interval of proportions: ``"[39.7%, 89.2%]"``; ``"n/a"`` when a bound is null."""
    if is_null(low) or is_null(high):
        return NA
    return f"[{fmt_pct(low, digits)}, {fmt_pct(high, digits)}]"


def _as_mapping(metric: Any) -> Mapping:
    if isinstance(metric, Mapping):
        return metric
    if is_dataclass(metric):
        return asdict(metric)
    if hasattr(metric, "to_dict"):
        return metric.to_dict()
    raise TypeError(f"expected a metric dict or Rate, got {type(metric).__name__}")


def fmt_rate(metric: Any) -> str:
    """A headline rate with numerator, denominator and interval.

    Parameters
    ----------
    metric : dict or Rate
        ``{"value", "successes", "n", "ci_low", "ci_high", ...}`` as in
        metrics.json.

    Returns
    -------
    str
        ``"70.0% (7/10) [39.7%, 89.2%]"``; ``"n/a (no eligible tasks)"`` when
        ``n == 0``.
    """
    m = _as_mapping(metric)
    n = m.get("n") or 0
    if not n or is_null(m.get("value")):
        return NA_NO_ELIGIBLE
    return f"{fmt_pct(m['value'])} ({m.get('successes')}/{n}) {fmt_interval(m.get('ci_low'), m.get('ci_high'))}"


def fmt_cost(value: Any) -> str:
    """A provider cost in USD.

    Returns
    -------
    str
        Four decimals with thousands separators (``"$0.0468"``,
        ``"$1,234.5000"``); a positive value below $0.001 keeps three
        significant digits (``"$0.0000123"``) so it never reads as zero;
        ``"n/a (no source)"`` for a null.
    """
    shown, sign, v = _sign_and_size(value)
    if shown is not None:
        return shown
    if 0 < v < 0.001:
        decimals = 2 - math.floor(math.log10(v))
        return f"{sign}${v:.{decimals}f}"
    return f"{sign}${v:,.4f}"


def fmt_score(value: Any, *, none: str = NA) -> str:
    """A quality score with three decimals; ``none`` when missing."""
    return none if is_null(value) else f"{float(value):.3f}"


def plural(n: int, one: str, many: str | None = None) -> str:
    """``n`` with its noun, plural unless ``n == 1`` (``many`` when the plural is irregular)."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def join_words(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(items) <= 1:
        return "".join(items)
    if len(items) == 2:
        return f"{items[0]} and {items[1]}"
    return ", ".join(items[:-1]) + f" and {items[-1]}"


def listing(items: list[str], limit: int = 5, sep: str = ", ") -> str:
    """The first ``limit`` items joined by ``sep``, then how many more there are."""
    shown = items[:limit]
    rest = len(items) - len(shown)
    return sep.join(shown) + (f"{sep}and {rest:,} more" if rest else "")


def telemetry_formatter(name: str):
    """The formatter of a telemetry field: :func:`fmt_ms` for durations, else :func:`fmt_count`."""
    return fmt_ms if name in TELEMETRY_MS_FIELDS else fmt_count


def metric_label(name: str, k: int) -> str:
    """``pass@k`` and ``pass^k`` with the paired k written out (``pass^3``; ``pass@k (k=1)`` beside pass@1)."""
    if name == "pass@1":
        return name
    return f"{name} (k=1)" if k == 1 else name[:-1] + str(k)


def fmt_pp(value: Any, *, signed: bool = True) -> str:
    """A difference of proportions in percentage points: ``0.078 -> "+7.8 pp"``; ``"n/a"`` for a null.

    A non-zero difference that would round to zero is ``"<0.1 pp"`` (with its sign), never ``"0.0 pp"``.
    """
    if is_null(value):
        return "n/a"
    v = 100.0 * float(value)
    text = f"{abs(v):.1f}"
    if v != 0 and float(text) == 0:
        text = "<0.1"
    sign = ("+" if v > 0 else "-" if v < 0 else "") if signed else ""
    return f"{sign}{text} pp"


def fmt_p(value: Any, alpha: float = 0.05) -> str:
    """A p-value: two decimals from 0.1 up, three below (four when three would hide which side of ``alpha``
    it lies), ``"< 0.001"`` below 0.001; ``"n/a"`` for a null."""
    if is_null(value):
        return "n/a"
    p = float(value)
    if p < 0.001:
        return "< 0.001"
    if p >= 0.1:
        return f"{p:.2f}"
    text = f"{p:.3f}"
    if float(text) == alpha and p != alpha:
        text = f"{p:.4f}"
    return text


#: The formatter of each format kind of the metric registry (``capbench_nb.metrics.registry.KINDS``):
#: the one place where a kind becomes text.
FORMATTERS = {"rate": fmt_pct, "score": fmt_score, "count": fmt_count, "ms": fmt_ms, "cost": fmt_cost}


def formatter(kind: str):
    """The formatter of a registry format kind (:data:`FORMATTERS`)."""
    return FORMATTERS[kind]
