"""Task health and structured intervals (spec section 11): hand-computed cases for every quantity,
the clustered standard error against statsmodels, and its coverage in a simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import capbench_nb as cb
from capbench_nb.io.atomic import dumps
from capbench_nb.metrics.health import (
    ClusteredError, TaskMean, all_attempts_pass_rate, check_quarantine_threshold, clustered_mean_se, clustered_se,
    health_document, inconsistent_share, mean_quality_score, task_health,
)
from capbench_nb.metrics.rates import Rate
from capbench_nb.metrics.slices import UnknownSliceError
from capbench_nb.metrics.stats import t_interval_array

from conftest import SAMPLE_RUN, manifest, outcomes, record, write_run

# --------------------------------------------------------------------------- consistency and quarantine

#: k = 2 (the smallest planned repeats).  Codes as in conftest: S success, A agent, E environment,
#: V evaluation, K skipped, U/X unknown eligible/not, "." no record.
HEALTH_RUN = {
    "pass": "SS",       # stable_pass
    "fail": "AA",       # stable_fail
    "mixed": "SA",      # inconsistent
    "half": "EA",       # exactly half environment: a candidate at 0.5; not k-eligible
    "skips": "KS",      # half skipped: skipped is not the suite failing, never a candidate
    "third": "VAS",     # one evaluation of three counted: below one half
    "gap": "S.E",       # attempt 2 missing: 1 environment of 2 counted, exactly half
    "none": "",         # no attempt at all: nothing failed there, not a candidate
    "unknown": "XU",    # only the ineligible unknown counts as ineligible
    "above": "SSE",     # attempt 3 is above its planned repeats (2): enters nothing
}
REPEATS = {"third": 3, "gap": 3}


@pytest.fixture(scope="module")
def health_run(tmp_path_factory):
    tasks = [(t, REPEATS.get(t, 2)) for t in HEALTH_RUN]
    path = tmp_path_factory.mktemp("health") / "run"
    return cb.load_run(write_run(path, manifest(tasks), outcomes(HEALTH_RUN)))


def test_per_task_consistency_ineligibility_and_quarantine(health_run):
    table = task_health(health_run).set_index("task_id")
    assert list(table.index) == list(HEALTH_RUN)  # plan order
    assert table["consistency"].astype(object).where(table["consistency"].notna(), None).to_dict() == {
        "pass": "stable_pass", "fail": "stable_fail", "mixed": "inconsistent", "half": None, "skips": None,
        "third": None, "gap": None, "none": None, "unknown": None, "above": "stable_pass"}
    assert table.loc["third", ["counted", "environment", "evaluation", "skipped", "unknown"]].tolist() == [3, 0, 1, 0, 0]
    assert table.loc["unknown", ["counted", "unknown"]].tolist() == [2, 1]  # the eligible unknown is a failure
    assert table.loc["above", ["counted", "environment"]].tolist() == [2, 0]  # attempt 3 is an anomaly
    assert table.loc["none", "counted"] == 0
    assert [t for t, q in table["quarantine"].items() if q] == ["half", "gap"]
    # the threshold is adjustable: above one half, neither exactly-half task is a candidate
    assert not task_health(health_run, quarantine_threshold=0.6)["quarantine"].any()
    lower = task_health(health_run, quarantine_threshold=1 / 3).set_index("task_id")["quarantine"]
    assert [t for t, q in lower.items() if q] == ["half", "third", "gap"]


def test_inconsistent_share_is_a_rate_over_the_k_eligible_tasks(health_run):
    share = inconsistent_share(health_run)
    assert share == Rate.of(1, 4, 10)  # pass, fail, mixed, above are k-eligible; mixed is inconsistent
    assert share.metric == "inconsistent_share"
    one = inconsistent_share(health_run, k=1)  # with k = 1 no task can be inconsistent
    assert (one.successes, one.n) == (0, 5)


@pytest.mark.parametrize("threshold", [0, -0.5, 1.01, float("nan"), True, "0.5", None])
def test_a_threshold_outside_0_1_is_refused(threshold):
    with pytest.raises(ValueError, match="quarantine threshold"):
        check_quarantine_threshold(threshold)


# --------------------------------------------------------------------------- means over tasks


def mean_run(tmp_path, tasks, codes, scores=None):
    """A run from plan ``tasks`` and outcome ``codes``; ``scores`` maps (task, attempt) to a quality score."""
    records = outcomes(codes)
    for r in records:
        r["quality_score"] = (scores or {}).get((r["task_id"], r["attempt"]))
    return cb.load_run(write_run(tmp_path / "run", manifest(tasks), records))


#: x_t = c/n over eligible attempts: t1 1, t2 1/2, t3 0, t4 2/3, t6 1 (its environment attempt is
#: not counted); t5 has no eligible attempt and enters nothing.  Apps: p {t1, t2}, q {t3, t4},
#: r {t5}, and no app for t6.
MEAN_TASKS = [{"task_id": "t1", "repeats": 2, "app": "p"}, {"task_id": "t2", "repeats": 2, "app": "p"},
              {"task_id": "t3", "repeats": 2, "app": "q"}, {"task_id": "t4", "repeats": 3, "app": "q"},
              {"task_id": "t5", "repeats": 2, "app": "r"}, {"task_id": "t6", "repeats": 2}]
MEAN_CODES = {"t1": "SS", "t2": "SA", "t3": "AA", "t4": "SAS", "t5": "E.", "t6": "SE"}
#: per-task means over eligible non-null scores: t1 0.7, t2 0.5, t4 0.6, t6 1.0 (the 0.0 of its
#: ineligible attempt 2 does not count); t3 and t5 have none.
MEAN_SCORES = {("t1", 1): 0.8, ("t1", 2): 0.6, ("t2", 1): 0.5, ("t4", 1): 0.9, ("t4", 2): 0.3, ("t4", 3): 0.6,
               ("t6", 1): 1.0, ("t6", 2): 0.0}


@pytest.fixture
def means(tmp_path):
    return mean_run(tmp_path, MEAN_TASKS, MEAN_CODES, MEAN_SCORES)


def test_mean_quality_score_by_hand(means):
    m = mean_quality_score(means)
    assert isinstance(m, TaskMean) and m.n == 4
    assert m.value == pytest.approx(0.7)
    # deviations 0, -0.2, -0.1, 0.3: s^2 = 0.14 / 3, se = s / 2
    assert m.se == pytest.approx(math.sqrt(0.14 / 3) / 2)


def test_fewer_than_two_tasks_with_a_score_have_no_standard_error(tmp_path):
    one = mean_run(tmp_path / "one", [("a", 2), ("b", 2)], {"a": "SA", "b": "SS"}, {("a", 2): 0.25})
    assert mean_quality_score(one).to_dict() == {"value": 0.25, "n": 1, "se": None}
    none = mean_run(tmp_path / "none", [("a", 2)], {"a": "SV"}, {("a", 2): 0.5})  # the score is ineligible
    assert mean_quality_score(none).to_dict() == {"value": None, "n": 0, "se": None}
    single = all_attempts_pass_rate(one.attempts[one.attempts["task_id"] == "a"], plan=one.plan)
    assert single.to_dict() == {"value": 0.5, "n": 1, "se": None}


def test_all_attempts_pass_rate_by_hand_and_the_unbiased_pass_at_1(means):
    m = all_attempts_pass_rate(means)
    assert m.n == 5 and m.value == pytest.approx(19 / 30)
    # deviations 11, -4, -19, 1, 11 (thirtieths): s^2 = 620 / 900 / 4, se = s / sqrt(5)
    assert m.se == pytest.approx(math.sqrt(620 / 3600 / 5))
    unbiased = cb.compute_metrics(means)["curves"]["unbiased"]["points"][0]
    assert unbiased["pass@j"] == pytest.approx(m.value)  # spec section 11: it is the unbiased pass@1


def test_clustered_standard_error_by_hand(means):
    # groups p {11, -4}, q {-19, 1}, no app {11} (thirtieths); r holds only t5, which enters nothing
    by_app = clustered_se(means, "app")
    assert by_app.groups == 3 and by_app.df == 2
    # CR1: G / (G - 1) = 3 / 2 times the uncorrected sum of squared group sums
    assert by_app.se == pytest.approx(math.sqrt(3 / 2 * (7**2 + 18**2 + 11**2) / 900) / 5)
    # 19/30 +- t_{0.975, 2} * se, clipped to [0, 1]; t_{0.975, 2} = 4.302652729749462 (scipy.stats.t.ppf(0.975, 2))
    half = 4.302652729749462 * by_app.se
    assert by_app.ci_low == pytest.approx(max(0.0, 19 / 30 - half)) and by_app.ci_low == 0.0
    assert by_app.ci_high == 1.0  # 19/30 + half = 1.41: clipped
    # a config key: one group for the whole run says nothing: no standard error, no interval, never 0
    assert clustered_se(means, "model") == ClusteredError(se=None, groups=1, df=0, ci_low=None, ci_high=None)
    # every task its own group: CR1 makes it exactly the plain standard error sd/sqrt(T)
    own = clustered_se(means, [f"g{i}" for i in range(6)])
    assert own.groups == 5 and own.df == 4 and own.se == pytest.approx(all_attempts_pass_rate(means).se, rel=1e-12)
    assert own.ci_low == pytest.approx(19 / 30 - 2.7764451051977934 * own.se)  # scipy.stats.t.ppf(0.975, 4)
    assert own.ci_high == 1.0  # 19/30 + 0.52: clipped
    # tasks without a value for the dimension form one group together
    assert clustered_se(means, [None, float("nan"), None, "x", "x", None]).groups == 2
    with pytest.raises(UnknownSliceError):
        clustered_se(means, "colour")


def test_clustered_interval_of_the_means_run_against_statsmodels(means):
    """statsmodels' cluster-robust OLS on a constant with t inference over G - 1 degrees of freedom
    gives the same interval before clipping.  Reference values from
    ``sm.OLS([1, 0.5, 0, 2/3, 1], np.ones((5, 1))).fit(cov_type="cluster", cov_kwds={"groups": [0, 0, 1, 1, 2]},
    use_t=True)`` (statsmodels 0.15.0): ``bse[0] = 0.18147543451754924``, ``conf_int(0.05) =
    [-0.14749244037606968, 1.4141591070427362]``, ``df_resid_inference = 2``."""
    by_app = clustered_se(means, "app")
    assert by_app.se == pytest.approx(0.18147543451754924, rel=1e-12)
    assert (by_app.ci_low, by_app.ci_high) == (max(0.0, -0.14749244037606968), min(1.0, 1.4141591070427362))


def test_no_eligible_task_gives_nulls(tmp_path):
    run = mean_run(tmp_path, [("a", 2), ("b", 1)], {"a": "EK", "b": ""})
    assert all_attempts_pass_rate(run).to_dict() == {"value": None, "n": 0, "se": None}
    assert clustered_se(run, "model") == ClusteredError(se=None, groups=0, df=None, ci_low=None, ci_high=None)
    share = inconsistent_share(run)
    assert share.value is None and share.n == 0 and share.ci_low is None


def test_clustered_se_equals_statsmodels_cluster_robust_ols_on_an_intercept(tmp_path):
    r"""The intercept-only OLS of x on a constant has :math:`\hat\beta = \bar x` and residuals
    :math:`x_t - \bar x`; its cluster-robust (sandwich) variance with statsmodels' default
    small-sample correction G/(G-1) * (N-1)/(N-K), K = 1, is
    :math:`\frac{G}{G-1}\frac{1}{T^2}\sum_g (\sum_{t\in g} (x_t - \bar x))^2`, the spec's CR1 SE^2.
    Reference: ``sm.OLS(x, np.ones((40, 1))).fit(cov_type="cluster", cov_kwds={"groups": g}, use_t=True)``,
    its ``bse[0]`` and ``conf_int(0.05)`` (t with G - 1 degrees of freedom)."""
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(11)
    for groups_n in (2, 7, 40):
        g = rng.integers(0, groups_n, size=40)
        g[:groups_n] = np.arange(groups_n)  # every group present
        x = rng.integers(0, 4, size=40) / 3
        fit = sm.OLS(x, np.ones((40, 1))).fit(cov_type="cluster", cov_kwds={"groups": g}, use_t=True)
        se, count = clustered_mean_se(x, g)
        assert count == groups_n
        assert se == pytest.approx(fit.bse[0], rel=1e-12)
        low, high = fit.conf_int(alpha=0.05)[0]
        ours = clustered_se(_shares_run(tmp_path / str(groups_n), x), list(g))
        assert ours.df == groups_n - 1 == fit.df_resid_inference
        assert ours.ci_low == pytest.approx(max(0.0, low), rel=1e-12, abs=1e-15)
        assert ours.ci_high == pytest.approx(min(1.0, high), rel=1e-12, abs=1e-15)
    # every task its own group: the plain sd/sqrt(T) exactly (CR1 undoes the (T-1)/T of the sandwich)
    assert clustered_mean_se(x, np.arange(40))[0] == pytest.approx(x.std(ddof=1) / math.sqrt(40), rel=1e-12)


def _shares_run(path, x: np.ndarray) -> cb.Run:
    """A loaded run whose task t has c/n = x_t over 3 attempts (x in thirds)."""
    codes = {f"t{i}": "S" * int(round(v * 3)) + "A" * (3 - int(round(v * 3))) for i, v in enumerate(x)}
    return mean_run(path, [(t, 3) for t in codes], codes)


def test_clustered_interval_covers_the_truth_where_the_plain_one_does_not():
    """Tasks come in apps that share a success probability (30 apps of 6 tasks, 4 attempts each;
    app probabilities uniform on 0.6 +- 0.35, so the truth is 0.6).  Over 400 seeds the clustered
    t interval (CR1, 29 degrees of freedom) covers 0.6 about 95% of the time, value +- 1.96 plain
    se far less often."""
    rng = np.random.default_rng(2024)
    seeds, apps, per_app = 400, 30, 6
    p = 0.6 + rng.uniform(-0.35, 0.35, (seeds, apps)).repeat(per_app, axis=1)
    p = p + rng.uniform(-0.04, 0.04, p.shape)
    x = rng.binomial(4, p) / 4
    groups = np.arange(apps).repeat(per_app)
    mean = x.mean(axis=1)
    clustered, count = clustered_mean_se(x, groups)
    low, high = t_interval_array(mean, clustered, count - 1)
    plain = x.std(axis=1, ddof=1) / math.sqrt(apps * per_app)
    covered = np.mean((low <= 0.6) & (0.6 <= high))
    naive = np.mean(np.abs(mean - 0.6) <= 1.959963984540054 * plain)
    assert count == apps
    assert 0.92 <= covered <= 0.99, covered
    assert naive <= 0.82, naive  # 0.73


# --------------------------------------------------------------------------- the health block


def test_health_block_of_the_sample_run():
    run = cb.load_run(SAMPLE_RUN)
    doc = cb.compute_metrics(run, clusters=["app", "app", "model"])
    h = doc["health"]
    assert list(h) == ["consistency", "quarantine_threshold", "quarantine", "per_task", "mean_quality_score",
                       "all_attempts_pass_rate"]
    assert list(doc)[-2:] == ["health", "provenance"]
    # k = 2: settings.wifi.toggle AS, dark_mode AS, brightness SA, contacts.search AS, search.query SA,
    # sms.send SA are inconsistent; alarm.create SS and contact.create SS pass, stopwatch.lap AA fails
    c = h["consistency"]
    assert (c["stable_pass"], c["stable_fail"], c["inconsistent"]) == (2, 1, 6)
    assert c["inconsistent_share"] == Rate.of(6, 9, 13).to_dict()
    assert h["quarantine"] == ["clock.timer.start"]  # 2 environment of 3 counted attempts
    timer = next(e for e in h["per_task"] if e["task_id"] == "clock.timer.start")
    assert timer == {"task_id": "clock.timer.start", "counted": 3,
                     "ineligible": {"environment": 2, "evaluation": 0, "skipped": 0, "unknown": 0},
                     "consistency": None, "quarantine": True}
    assert [e["task_id"] for e in h["per_task"]] == [e["task_id"] for e in doc["per_task"]]
    assert list(h["all_attempts_pass_rate"]["clustered"]) == ["app", "model"]
    assert h["all_attempts_pass_rate"]["clustered"]["app"]["groups"] == 5
    assert h["all_attempts_pass_rate"]["clustered"]["model"] == {"se": None, "groups": 1, "df": 0,
                                                                 "ci_low": None, "ci_high": None}
    app = h["all_attempts_pass_rate"]["clustered"]["app"]
    assert list(app) == ["se", "groups", "df", "ci_low", "ci_high"] and app["df"] == 4
    assert app["ci_low"] < h["all_attempts_pass_rate"]["value"] < app["ci_high"]
    assert doc["provenance"]["options"] == {"allow_invalid": False, "slices": [], "quarantine_threshold": 0.5,
                                            "clusters": ["app", "model"]}
    again = cb.compute_metrics(cb.load_run(SAMPLE_RUN), clusters=["app", "model"])
    assert dumps(again) == dumps(doc)  # byte-identical
    assert health_document(run, quarantine_threshold=1)["quarantine"] == []


def test_clustered_caveat_names_the_cells_where_the_coverage_study_found_the_interval_short():
    from capbench_nb.metrics.health import clustered_caveat

    held = ClusteredError(se=0.05, groups=8, df=7, ci_low=0.4, ci_high=0.6)
    assert clustered_caveat(0.5, held, 40) is None  # 8 groups, 5 tasks per group, value near 0.5: it held (docs/coverage.md)
    assert clustered_caveat(0.5, held, 31) == "fewer than 4 tasks per group"  # 31 < 4 * 8
    assert clustered_caveat(0.5, held, 32) is None
    assert clustered_caveat(0.19, held, 40) == "the value is within 0.2 of 0 or 1"
    assert clustered_caveat(0.2, held, 40) is None and clustered_caveat(0.8, held, 40) is None
    few = ClusteredError(se=0.05, groups=7, df=6, ci_low=0.4, ci_high=0.6)
    assert clustered_caveat(0.5, few, 40) == "fewer than 8 groups"
    assert clustered_caveat(0.95, few, 10) == ("the value is within 0.2 of 0 or 1; fewer than 8 groups; "
                                               "fewer than 4 tasks per group")
    one = ClusteredError(se=None, groups=1, df=0, ci_low=None, ci_high=None)
    assert clustered_caveat(0.5, one, 40) is None  # no interval to qualify: one group says nothing
    assert clustered_caveat(None, ClusteredError(se=None, groups=0), 0) is None


def test_clustered_approximate_only_with_a_cluster_dimension():
    run = cb.load_run(SAMPLE_RUN)
    plain = cb.compute_metrics(run)["health"]["all_attempts_pass_rate"]
    assert list(plain) == ["value", "n", "se", "clustered"] and plain["clustered"] == {}
    rate = cb.compute_metrics(run, clusters=["app", "model"])["health"]["all_attempts_pass_rate"]
    assert list(rate) == ["value", "n", "se", "clustered", "clustered_approximate"]
    # 11 tasks in 5 apps (2.2 per group); the config key model is one group: no interval, no caveat
    assert rate["clustered_approximate"] == {"app": "fewer than 8 groups; fewer than 4 tasks per group", "model": None}
