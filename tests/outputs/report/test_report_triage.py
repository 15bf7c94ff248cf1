"""The tasks to look at first (capbench_nb.outputs.report.triage), read from the metrics document."""

from __future__ import annotations

import re

import capbench_nb as cb
from capbench_nb.outputs.report.triage import triage_groups, triage_html

from conftest import HOSTILE_TEXTS, manifest, outcomes, write_run


def test_the_groups_by_hand(tmp_path):
    # a: never succeeded (eligible failures); b: inconsistent; c: only environment failures (the suite's, not
    # "never succeeded"); d: stable pass
    run = cb.load_run(write_run(tmp_path / "run", manifest([("a", 2), ("b", 2), ("c", 2), ("d", 2)]),
                                outcomes({"a": "AA", "b": "SA", "c": "EE", "d": "SS"})))
    doc = cb.compute_metrics(run)
    groups = {name: tasks for name, _, tasks in triage_groups(doc)}
    assert groups == {"never succeeded": ["a"], "inconsistent": ["b"], "quarantine candidates": ["c"], "drifted": []}
    html = triage_html(doc)
    assert "<b>1</b> task never succeeded" in html and "<b>1</b> quarantine candidate</div>" in html
    assert "drifted" not in html  # a run without a lock says nothing about drift
    links = re.findall(r'href="#cb-explorer-task-(\d+)">([^<]*)</a>', html)
    assert links == [("0", "a"), ("1", "b"), ("2", "c")]  # plan positions, as the explorer numbers its rows


def test_hostile_ids_are_text_and_long_groups_are_cut(tmp_path):
    plan = [(t, 1) for t in HOSTILE_TEXTS] + [(f"t{i}", 1) for i in range(20)]
    run = cb.load_run(write_run(tmp_path / "run", manifest(plan), outcomes({t: "A" for t, _ in plan})))
    html = triage_html(cb.compute_metrics(run), named=12)
    assert "<script>" not in html and "<img" not in html
    assert f"<b>{len(plan)}</b> tasks never succeeded" in html and f"and {len(plan) - 12} more" in html
    assert html.count('class="cb-task-link"') == 12
