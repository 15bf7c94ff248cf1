"""The pages' shared number formats (capbench_nb.outputs.html.formatting) that moved here from the
comparison page (issue 22): differences in percentage points, p-values, metric labels."""

from __future__ import annotations

from capbench_nb.outputs.html.formatting import fmt_p, fmt_pp, metric_label


def test_differences_in_percentage_points():
    assert fmt_pp(0.0784) == "+7.8 pp" and fmt_pp(-0.11) == "-11.0 pp" and fmt_pp(0.0) == "0.0 pp"
    assert fmt_pp(0.0002) == "+<0.1 pp" and fmt_pp(-0.0002) == "-<0.1 pp"
    assert fmt_pp(None) == "n/a" and fmt_pp(-0.5, signed=False) == "50.0 pp"


def test_p_values():
    assert fmt_p(1.0) == "1.00" and fmt_p(0.5413) == "0.54" and fmt_p(0.031) == "0.031"
    # four decimals only when three would round onto alpha and hide which side of it p lies
    assert fmt_p(0.0499) == "0.0499" and fmt_p(0.0504) == "0.0504" and fmt_p(0.00001) == "< 0.001"
    assert fmt_p(0.0999, alpha=0.1) == "0.0999" and fmt_p(None) == "n/a"


def test_metric_labels_write_the_paired_k_out():
    assert metric_label("pass@1", 3) == "pass@1"
    assert metric_label("pass@k", 3) == "pass@3" and metric_label("pass^k", 5) == "pass^5"
    assert metric_label("pass@k", 1) == "pass@k (k=1)"
