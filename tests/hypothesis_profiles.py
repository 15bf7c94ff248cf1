"""The hypothesis profiles of the suite, one place for every property test's example budget.

- ``capbench`` (the default): 100 examples per test, hypothesis's own default, deterministic
  (``derandomize``) so that a run of the suite in a fresh clone takes the same time each time;
- ``capbench-long``: 1,000 examples per test, random; chosen by ``CAPBENCH_FUZZ=long`` (the flag of
  the long fuzz run, see docs/development.md), or by ``CAPBENCH_HYPOTHESIS_PROFILE=capbench-long``.

Applied per test (``@settings(PROFILE)``, or ``scaled(PROFILE, 1/2)`` for a test that does several
loads per example), not with ``settings.load_profile``, so importing this module changes no other
module's settings.  A test may ask for fewer examples than the profile, never more.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

__all__ = ["LONG", "PROFILE", "scaled"]

_COMMON = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                           HealthCheck.function_scoped_fixture],
    print_blob=True,
)
settings.register_profile("capbench", max_examples=100, derandomize=True, **_COMMON)
settings.register_profile("capbench-long", max_examples=1000, **_COMMON)

#: ``CAPBENCH_FUZZ=long``: the long fuzz run (the same flag as tests/conftest.py's ``LONG``).
LONG = os.environ.get("CAPBENCH_FUZZ", "").strip().lower() in ("long", "1", "yes", "true")

PROFILE = settings.get_profile(os.environ.get("CAPBENCH_HYPOTHESIS_PROFILE")
                               or ("capbench-long" if LONG else "capbench"))


def scaled(profile: settings, fraction: float) -> settings:
    """``profile`` with ``fraction`` (at most 1) of its examples, at least one."""
    assert 0 < fraction <= 1, "a test may ask for fewer examples than the profile, never more"
    return settings(profile, max_examples=max(1, int(profile.max_examples * fraction)))
