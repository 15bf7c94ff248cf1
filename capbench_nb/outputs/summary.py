"""summary.md: a pure, deterministic function of the metrics.json document.

``capbench-nb verify`` regenerates it and compares.
"""

from __future__ import annotations

from collections.abc import Mapping

from capbench_nb.format import ANOMALY_KINDS, INELIGIBLE_CLASSES
from capbench_nb.metrics.registry import HEADLINE, headline_rates
from capbench_nb.outputs.html.escaping import DISPLAY_MAX, md_escape
from capbench_nb.outputs.html.formatting import (
    NA, NA_NO_ELIGIBLE, fmt_count, fmt_interval, fmt_pct, formatter, is_null, join_words, judge_phrase,
    listing, plural,
)

__all__ = [
    "anomaly_counts",
    "health_sentence",
    "clustered_sentence",
    "selection_sentence",
    "selection_rows",
    "headline_lines",
    "summary_markdown",
]

def anomaly_counts(doc: Mapping) -> dict:
    """Anomalies by kind (every kind of the format), from ``anomaly_counts`` or, without it, the list."""
    counts = doc.get("anomaly_counts")
    if isinstance(counts, Mapping):
        return {kind: int(counts.get(kind, 0) or 0) for kind in ANOMALY_KINDS}
    out = {kind: 0 for kind in ANOMALY_KINDS}
    for a in doc.get("anomalies") or []:
        if a.get("kind") in out:
            out[a["kind"]] += 1
    return out


def _ineligible_by_class(attempts: Mapping) -> tuple[dict, int, int]:
    """Ineligible attempts by class, from the document alone.

    environment, evaluation and skipped are always ineligible; ``unknown`` may
    be either, and its ineligible part is what remains of ``total - eligible``.
    """
    byc = attempts.get("by_failure_class") or {}
    total = int(attempts.get("total") or 0)
    eligible = int(attempts.get("eligible") or 0)
    ineligible = total - eligible
    classes = {c: int(byc.get(c) or 0) for c in INELIGIBLE_CLASSES}
    unknown = int(byc.get("unknown") or 0)
    unknown_ineligible = max(0, min(unknown, ineligible - sum(classes.values())))
    classes["unknown"] = unknown_ineligible
    return classes, ineligible, unknown - unknown_ineligible


def health_sentence(doc: Mapping) -> str | None:
    """Suite health in one sentence: the inconsistent share and the quarantine candidates, by name.

    From the document's ``health`` block (spec section 11); None when the document has none.
    """
    health = doc.get("health")
    if not isinstance(health, Mapping):
        return None
    k = doc.get("k")
    c = health.get("consistency") or {}
    share = c.get("inconsistent_share") or {}
    n, inconsistent = int(share.get("n") or 0), int(c.get("inconsistent") or 0)
    if n:
        text = (f"Suite health: {inconsistent:,} of the {plural(n, 'k-eligible task')} "
                f"{'was' if inconsistent == 1 else 'were'} inconsistent over attempts 1..{k} ({fmt_pct(share.get('value'))},"
                f" 95% Wilson interval {fmt_interval(share.get('ci_low'), share.get('ci_high'))};"
                f" {int(c.get('stable_pass') or 0):,} passed and {int(c.get('stable_fail') or 0):,} failed"
                f" every one of attempts 1..{k})")
    else:
        text = f"Suite health: no task is k-eligible, so consistency over attempts 1..{k} is undefined"
    threshold = fmt_pct(health.get("quarantine_threshold")).replace(".0%", "%")  # 50%, 33.3%
    where = f"environment and evaluation failures are at least {threshold} of the counted attempts"
    names = [md_escape(t, max_len=120) for t in health.get("quarantine") or []]
    if names:
        text += (f"; {plural(len(names), 'quarantine candidate')}, where {where} (the suite, not the agent,"
                 f" fails there): {listing(names, limit=10)}")
    else:
        text += f"; no quarantine candidate (no task where {where})"
    return text + "."


def clustered_sentence(doc: Mapping) -> str | None:
    """The clustered intervals of all_attempts_pass_rate in one sentence, one clause per dimension.

    From ``health.all_attempts_pass_rate`` (``clustered`` and ``clustered_approximate``, spec section
    11); None when the document has no clustered dimension (a run without ``--cluster``).  A dimension
    with one group says nothing: it has no interval, and the sentence says so.
    """
    health = doc.get("health")
    rate = health.get("all_attempts_pass_rate") if isinstance(health, Mapping) else None
    clustered = rate.get("clustered") if isinstance(rate, Mapping) else None
    if not isinstance(clustered, Mapping) or not clustered:
        return None
    caveats = rate.get("clustered_approximate") if isinstance(rate.get("clustered_approximate"), Mapping) else {}
    clauses = []
    for dim, c in clustered.items():
        c = c if isinstance(c, Mapping) else {}
        name = f"clustered by {md_escape(dim, max_len=120)}"
        groups = c.get("groups") if isinstance(c.get("groups"), int) else 0
        if c.get("se") is None or c.get("ci_low") is None or c.get("ci_high") is None:
            why = "one group says nothing" if groups == 1 else "no task to group"
            clauses.append(f"{name} ({plural(groups, 'group')}): no interval, {why}")
            continue
        caveat = caveats.get(dim)
        se = c["se"]
        se_text = f"{se * 100:.1f} pp" if isinstance(se, (int, float)) and not isinstance(se, bool) else NA
        clauses.append(f"{name} ({plural(groups, 'group')}): standard error {se_text}, 95% t"
                       f" interval {fmt_interval(c.get('ci_low'), c.get('ci_high'))} on {fmt_count(c.get('df'))}"
                       f" degrees of freedom"
                       + (f" (approximate: {md_escape(caveat, max_len=200)})" if isinstance(caveat, str) and caveat
                          else ""))
    return f"all_attempts_pass_rate {fmt_pct(rate.get('value'))}; " + "; ".join(clauses) + "."


def _selector_name(selection: Mapping, markdown: bool) -> str:
    selector = selection.get("selector") if isinstance(selection.get("selector"), Mapping) else {}
    parts = [str(selector.get(key)) for key in ("name", "version") if selector.get(key)]
    name = " ".join(md_escape(p, max_len=80) if markdown else p[:80] for p in parts)
    return name or "not named"


def selection_sentence(doc: Mapping, *, markdown: bool = True) -> str | None:
    """selected@k beside pass@1 and pass@k on the same tasks, with the gap, in one sentence.

    From the document's ``selection`` block (spec section 9); None when the document has none.
    The selector's name is Markdown-escaped unless ``markdown`` is False (for a display that
    escapes the sentence as HTML itself).
    """
    sel = doc.get("selection")
    if not isinstance(sel, Mapping):
        return None
    k, n = sel.get("k"), int(sel.get("entering") or 0)
    head = f"Best-of-k with a selector ({_selector_name(sel, markdown)}, shown attempts 1..{k})"
    other = int(sel.get("other_candidates") or 0)
    tail = (f"; {plural(other, 'k-eligible task')} shown other candidates than 1..{k} "
            f"{'stays' if other == 1 else 'stay'} out") if other else ""
    if not n:
        return f"{head}: no task enters (k-eligible with candidates 1..{k}), so selected@k is undefined{tail}."
    m = sel.get("metrics") or {}
    picked, p1, pk, acc = (m.get(key) or {} for key in ("selected@k", "pass@1", "pass@k", "selection_accuracy"))
    mc = sel.get("mcnemar") or {}
    text = (f"{head}: over the {plural(n, 'task')} that enter, selected@k is {fmt_pct(picked.get('value'))}"
            f" ({picked.get('successes')}/{n}; 95% Wilson interval {fmt_interval(picked.get('ci_low'), picked.get('ci_high'))})"
            f" beside pass@1 {fmt_pct(p1.get('value'))} and pass@k {fmt_pct(pk.get('value'))} on the same tasks:"
            f" a gap of {100 * float(sel.get('gap') or 0):.1f} percentage points to pass@k")
    closed = sel.get("gap_closed")
    text += ("" if is_null(closed) else f", closing {fmt_pct(closed)} of the way from pass@1 to pass@k")
    text += f" (exact McNemar p = {float(mc.get('p', 1)):.4g} against pass@1, b = {mc.get('b')}, c = {mc.get('c')})"
    if int(acc.get("n") or 0):
        text += (f"; selection accuracy {fmt_pct(acc.get('value'))} ({acc.get('successes')}/{acc.get('n')} tasks"
                 " with a success)")
    abstentions = int(sel.get("abstentions") or 0)
    if abstentions:
        text += f"; {plural(abstentions, 'abstention')} (not a success)"
    return text + tail + "."


def selection_rows(doc: Mapping) -> list[tuple[str, Mapping]]:
    """The rows of the selection block for the summary table (label, rate), none without one."""
    sel = doc.get("selection")
    if not isinstance(sel, Mapping):
        return []
    m, k = sel.get("metrics") or {}, sel.get("k")
    labels = (("selected@k", f"selected@k (k = {k}, selector)"), ("pass@1", "pass@1 (selector's tasks)"),
              ("pass@k", f"pass@k (k = {k}, selector's tasks)"), ("selection_accuracy", "selection accuracy"))
    return [(label, m.get(key) or {}) for key, label in labels]


def _metric_sentence(name: str, m: Mapping) -> str:
    n = int(m.get("n") or 0)
    if not n or is_null(m.get("value")):
        return f"{name} is undefined (no eligible tasks; coverage {fmt_pct(m.get('coverage'))})"
    return (
        f"{name} is {fmt_pct(m['value'])} ({m.get('successes')}/{n} tasks; 95% Wilson interval "
        f"{fmt_interval(m.get('ci_low'), m.get('ci_high'))}; coverage {fmt_pct(m.get('coverage'))} of planned tasks)"
    )


_EMPTY_RATE = {"value": None, "successes": 0, "n": 0, "ci_low": None, "ci_high": None, "coverage": None}


def headline_lines(doc: Mapping) -> list[str]:
    """The headline rates of a metrics document, one line each (``capbench-nb metrics`` prints them):
    ``pass@1 is 62.9% (22/35 tasks; 95% Wilson interval ...; coverage 100.0% of planned tasks)``."""
    return [_metric_sentence(m.display(doc.get("k")), m.value_in(doc) or _EMPTY_RATE) for m in headline_rates()]


def _suite_text(doc: Mapping) -> str:
    suite = doc.get("suite") if isinstance(doc.get("suite"), Mapping) else None
    if not suite:
        return ""
    return " ".join(md_escape(part, max_len=DISPLAY_MAX) for part in (suite.get("name"), suite.get("version")) if part)


def _identity_sentence(doc: Mapping, run_id: str, suite_text: str) -> str:
    planned = int((doc.get("tasks") or {}).get("planned") or 0)
    observed = int((doc.get("tasks") or {}).get("observed") or 0)
    attempts = doc.get("attempts") or {}
    total = int(attempts.get("total") or 0)
    eligible = int(attempts.get("eligible") or 0)
    identity = f"Run {run_id}"
    if suite_text:
        identity += f" of suite {suite_text}"
    status = md_escape(doc.get("status") or "not recorded")
    identity += f" (status {status}; judge mode: {md_escape(judge_phrase(doc.get('judge')))})"
    identity += (
        f" planned {plural(planned, 'task')} with a fixed k = {doc.get('k')} (the smallest planned repeats);"
        f" {observed:,} {'task was' if observed == 1 else 'tasks were'} observed,"
        f" with {plural(total, 'counted attempt')},"
        f" {eligible:,} of them agent-eligible."
    )
    return identity


def _excluded_sentence(doc: Mapping) -> str:
    """What was excluded from every denominator, and why."""
    by_class, ineligible, unknown_eligible = _ineligible_by_class(doc.get("attempts") or {})
    if ineligible:
        parts = [f"{n:,} {cls}" for cls, n in by_class.items() if n]
        excl = f"Excluded from every denominator: {plural(ineligible, 'ineligible attempt')} ({', '.join(parts)})"
    else:
        excl = "No attempt was ineligible"
    if unknown_eligible:
        one = unknown_eligible == 1
        excl += (
            f"; {plural(unknown_eligible, 'unknown attempt')} marked eligible"
            f" {'counts as a failure' if one else 'count as failures'}"
        )
    return excl + "."


def _tasks_sentence(doc: Mapping) -> str:
    """The planned tasks each denominator leaves out."""
    k = doc.get("k")
    planned = int((doc.get("tasks") or {}).get("planned") or 0)
    p1 = (doc.get("metrics") or {}).get("pass@1") or _EMPTY_RATE
    left_out_1 = planned - int(p1.get("n") or 0)
    per_task_entries = doc.get("per_task") or []
    not_k = [e for e in per_task_entries if not e.get("k_eligible")]
    no_attempts = sum(1 for e in per_task_entries if not e.get("attempts"))
    if left_out_1:
        task_text = (
            f"Of the {plural(planned, 'planned task')}, pass@1 leaves out {left_out_1:,}"
            " (attempt 1 missing or ineligible)"
        )
    else:
        task_text = f"pass@1 keeps all {plural(planned, 'planned task')}"
    if not_k:
        names = [md_escape(e.get("task_id"), max_len=120) for e in not_k]
        task_text += (
            f"; {plural(len(not_k), 'task is', 'tasks are')} not k-eligible"
            f" (attempts 1..{k} not all present and eligible)"
            f" and {'stays' if len(not_k) == 1 else 'stay'} out of pass@k and pass^k: {listing(names)}"
        )
    else:
        task_text += "; every planned task is k-eligible"
    if no_attempts:
        task_text += f" ({plural(no_attempts, 'task')} without any attempt)"
    return task_text + "."


def _anomalies_sentence(doc: Mapping) -> str:
    counts = anomaly_counts(doc)
    if not sum(counts.values()):
        return "There were no anomalies and no invalid lines."
    kinds = []
    if counts["above_planned_repeats"]:
        kinds.append(f"{plural(counts['above_planned_repeats'], 'record')} above the planned repeats")
    if counts["task_not_in_plan"]:
        kinds.append(f"{plural(counts['task_not_in_plan'], 'record')} of tasks not in the plan")
    if counts["invalid_line"]:
        kinds.append(f"{plural(counts['invalid_line'], 'invalid line')} skipped with --allow-invalid")
    if counts["invalid_selection_line"]:
        kinds.append(f"{plural(counts['invalid_selection_line'], 'invalid line')} of selection.jsonl skipped"
                     " with --allow-invalid")
    examples = []
    for a in doc.get("anomalies") or []:
        tid = a.get("task_id")
        text = md_escape(tid, max_len=120) if tid is not None else "unreadable task"
        if a.get("attempt") is not None:
            text += f" attempt {a['attempt']}"
        where = "selection.jsonl line" if a.get("kind") == "invalid_selection_line" else "line"
        examples.append(f"{text}, {where} {a.get('line')}")
    return (f"Anomalies, entering no metric and no count: {join_words(kinds)}"
            + (f" ({listing(examples, sep='; ')})" if examples else "") + ".")


def _table(doc: Mapping, rates: list) -> list[str]:
    """The compact table of the headline numbers (the selection block's rows after the rates)."""
    k = doc.get("k")
    planned = int((doc.get("tasks") or {}).get("planned") or 0)

    def row(name: str, m: Mapping) -> str:
        n = int(m.get("n") or 0)
        value = fmt_pct(m.get("value")) if n and not is_null(m.get("value")) else NA_NO_ELIGIBLE
        return (
            f"| {name} | {value} | {m.get('successes', 0)} / {n} | {fmt_interval(m.get('ci_low'), m.get('ci_high'))}"
            f" | {fmt_pct(m.get('coverage'))} |"
        )

    def mean_row(metric) -> str:  # a headline mean (a diagnostic): value and n, no interval
        m = metric.value_in(doc) or {}
        return (f"| {md_escape(metric.display(k))} | {formatter(metric.kind)(m.get('value'))}"
                f" | n = {int(m.get('n') or 0):,} | n/a | n/a |")

    return [
        f"| metric | value | successes / tasks | 95% Wilson interval | coverage of {planned:,} planned tasks |",
        "|---|---:|---:|---|---:|",
        *(row(md_escape(m.display(k)), value) for m, value in rates),
        *(row(label, m) for label, m in selection_rows(doc)),
        *(mean_row(m) for m in HEADLINE if m.kind != "rate"),
    ]


def _provenance_text(doc: Mapping) -> str:
    prov = doc.get("provenance") or {}
    inputs = prov.get("inputs") or {}
    options = prov.get("options") or {}
    toolkit = md_escape(prov.get("toolkit") or "capbench-nb")
    prov_text = f"Computed with {toolkit} {md_escape(prov.get('toolkit_version') or '')}".rstrip()
    if inputs:
        prov_text += " from " + join_words([f"{md_escape(name)} {md_escape(h)}" for name, h in inputs.items()])
    if options.get("allow_invalid"):
        prov_text += " (with --allow-invalid)"
    if prov.get("evidence_checked") is False:
        prov_text += "; evidence references were not resolved (--skip-evidence)"
    return prov_text + (
        ". Rates are over tasks; a task enters a denominator only when the attempts it needs are present and"
        " agent-eligible; pass@k and pass^k look at attempts 1..k of each task (the planned prefix);"
        " intervals are 95% Wilson score intervals."
    )


def summary_markdown(doc: Mapping) -> str:
    """A paste-ready Markdown section for a paper or a pull request.

    A pure, deterministic function of the metrics.json document (no run, no
    clock, no paths): ``capbench-nb verify`` regenerates it from the
    recomputed document and compares the text.

    Parameters
    ----------
    doc : dict
        The metrics.json document (:func:`capbench_nb.metrics.document.compute_metrics`,
        or the parsed file: both give the same text).

    Returns
    -------
    str
        A heading; one paragraph with the run's identity, the three headline
        rates with their 95% Wilson intervals and coverage, and what was
        excluded and why (ineligible attempts by class, tasks outside each
        denominator, anomalies and invalid lines); a compact table of the
        headline numbers; a provenance line.  Every run-supplied string is
        escaped with :func:`md_escape`.  Ends with a newline.
    """
    rates = [(m, m.value_in(doc) or _EMPTY_RATE) for m in headline_rates()]
    run_id = md_escape(doc.get("run_id"), max_len=DISPLAY_MAX)
    suite_text = _suite_text(doc)
    heading = f"## Capability metrics: {suite_text + ', ' if suite_text else ''}run {run_id}"
    said = [_metric_sentence(m.name, value) for m, value in rates]
    sentences = [
        _identity_sentence(doc, run_id, suite_text),
        "Headline rates: " + "; ".join(said[:-1]) + ("; and " if len(said) > 1 else "") + said[-1] + ".",
        selection_sentence(doc),
        _excluded_sentence(doc),
        _tasks_sentence(doc),
        health_sentence(doc),
        clustered_sentence(doc),
        _anomalies_sentence(doc),
    ]
    paragraph = " ".join(s for s in sentences if s)
    lines = [heading, "", paragraph, "", *_table(doc, rates), "", _provenance_text(doc)]
    return "\n".join(lines) + "\n"
