"""A board of many runs as files: board.json, board.md, and ``verify`` for a board.

:func:`capbench_nb.metrics.board.board` computes the board document; here it becomes
``board.md`` (:func:`board_markdown`: a table ready for a paper or a pull request), the two files
of :func:`write_board`, and :func:`verify_board`, which recomputes both from the runs and lists
every disagreement (``capbench-nb verify-board DIR RUN...``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from capbench_nb.errors import InvalidRunError, one_line
from capbench_nb.io.atomic import dumps, write_atomic
from capbench_nb.metrics.board import BOARD_METRICS, SELECTED, board, check_board_metric, check_board_options
from capbench_nb.outputs.html.escaping import md_escape  # one escaping rule for every Markdown output
from capbench_nb.outputs.html.formatting import fmt_cost, fmt_interval, fmt_pct, metric_label
from capbench_nb.outputs.verify import Disagreement, diff_documents, diff_lines, read_output_json
from capbench_nb.records.run import load_run

__all__ = [
    "BOARD_FILE",
    "BOARD_MARKDOWN",
    "board_order",
    "board_metrics",
    "metric_labels",
    "suite_text",
    "suite_locks",
    "board_markdown",
    "write_board",
    "verify_board",
]

BOARD_FILE = "board.json"
BOARD_MARKDOWN = "board.md"
#: Separable pairs and left-out tasks board.md names before "and N more".
MAX_LISTED = 50


def board_order(doc: dict) -> list[int]:
    """Input positions in board order: by rank (a run without a value last), ties in input order."""
    runs = doc["runs"]
    return sorted(range(len(runs)), key=lambda i: (runs[i]["rank"] is None, runs[i]["rank"] or 0, i))


def board_metrics(doc: dict) -> list[str]:
    """The metrics of the board's ``values``: pass@1, pass@k, pass^k, and selected@k when some run has a selection file."""
    return [*BOARD_METRICS, *([SELECTED] if SELECTED in doc["runs"][0]["values"] else [])]


def metric_labels(doc: dict) -> dict[str, str]:
    """Each board metric with the common k written out: ``{"pass@1": "pass@1", "pass@k": "pass@3", ...}``."""
    return {name: metric_label(name, doc["common"]["k"]) for name in board_metrics(doc)}


def suite_text(suite: dict | None) -> str:
    """A run's suite as the page and board.md name it: name and version (its lock is shown apart)."""
    words = [str(x) for x in ((suite or {}).get("name"), (suite or {}).get("version")) if x is not None]
    return " ".join(words) or "no suite named"


def suite_locks(doc: dict) -> str | None:
    """The board's suite lock (spec 12): one digest for every run, or how many differ; None when no run names one."""
    locks = [(e["suite"] or {}).get("lock") for e in doc["runs"]]
    if not any(locks):
        return None
    named = sorted({x for x in locks if x})
    if len(named) == 1 and all(locks):
        return f"{named[0]} (every run)"
    return (f"{len(named)} different lock(s), {sum(1 for x in locks if not x)} run(s) without one "
            "(see the lock warning)")


def _value(rate: dict | None) -> str:
    return "n/a" if rate is None or rate["value"] is None else fmt_pct(rate["value"])


def _rank(entry: dict) -> tuple[str, str]:
    if entry["rank"] is None:
        return "n/a", "n/a"
    interval = entry["rank_interval"]
    return str(entry["rank"]), "n/a" if interval is None else f"{interval[0]}-{interval[1]}"


def _cost(entry: dict) -> tuple[str, str]:
    if entry["cost_per_attempt"] is None:
        return "unpriced", "n/a (unpriced)"
    return fmt_cost(entry["cost_per_attempt"]), {True: "yes", False: "dominated", None: "n/a (no value)"}[entry["frontier"]]


def _table(doc: dict) -> list[str]:
    labels = metric_labels(doc)
    main = doc["metric"]
    others = [name for name in board_metrics(doc) if name != main]
    lines = [f"| rank | 95% rank interval | group | run | model | {labels[main]} | 95% interval | tasks | "
             + "".join(f"{labels[name]} | " for name in others) + "cost / attempt | frontier |",
             "|" + "---|" * (10 + len(others))]
    for i in board_order(doc):
        e = doc["runs"][i]
        rate = e["values"][main]
        rank, interval = _rank(e)
        cost, frontier = _cost(e)
        lines.append(f"| {rank} | {interval} | {e['group']} | {md_escape(e['run_id'])} | {md_escape(e['model'])} | "
                     f"{_value(rate)} | {fmt_interval(rate['ci_low'], rate['ci_high'])} | {rate['successes']}/{rate['n']} | "
                     + "".join(f"{_value(e['values'][name])} | " for name in others) + f"{cost} | {frontier} |")
    return lines


def _run_name(doc: dict, i: int) -> str:
    return f"#{i + 1} {md_escape(doc['runs'][i]['run_id'])}"


def _listed(items: list[str], total: int) -> str:
    return ", ".join(items) + (f" and {total - len(items)} more" if total > len(items) else "")


def _pair_text(doc: dict, pair: dict) -> str:
    return (f"{_run_name(doc, pair['a'])} vs {_run_name(doc, pair['b'])} ({pair['a_only']}:{pair['b_only']}, "
            f"Holm p = {pair['p_holm']:.3g})")


def _selection_lines(doc: dict) -> list[str]:
    """board.md's selected@k section: what it is, the runs without one and why, its separable pairs."""
    if SELECTED not in doc["runs"][0]["values"]:
        return []
    label, k = metric_labels(doc)[SELECTED], doc["common"]["k"]
    lines = ["", f"## Best-of-k with a selector ({label})", "",
             f"- {label}: spec section 9's selected@k on the common tasks that enter the run's selection (attempts "
             f"1..{k} present and eligible, candidates exactly 1..{k}): the selected attempt succeeded; 95% Wilson "
             "interval, coverage over the common tasks."]
    missing = [f"{_run_name(doc, i)} ({md_escape(e['selection']['reason'])})"
               for i, e in enumerate(doc["runs"]) if e["selection"]["reason"] is not None]
    lines.append(f"- No {label} (n/a): " + ("; ".join(missing) if missing else "none"))
    pairs = [p for p in doc["pairs"] if p["metric"] == SELECTED]
    if pairs and doc["metric"] != SELECTED:
        separable = [p for p in pairs if p["p_holm"] < doc["alpha"]]
        shown = [_pair_text(doc, p) for p in separable[:MAX_LISTED]]
        lines.append(f"- Separable pairs by {label} (Holm over the {len(pairs)} pair(s) of the runs that have one, "
                     f"adjusted p < {doc['alpha']:g}): " + (_listed(shown, len(separable)) if separable else "none"))
    return lines


def board_markdown(doc: dict) -> str:
    """board.md: the board as a Markdown table (rank, group, value with interval, cost) and its notes.

    Every run-supplied string (run ids, models, suites, task ids, warning messages) goes through
    :func:`~capbench_nb.outputs.html.escaping.md_escape`.
    """
    runs, common, labels = doc["runs"], doc["common"], metric_labels(doc)
    main = labels[doc["metric"]]
    suites = sorted({suite_text(r["suite"]) for r in runs})
    m = len(runs) * (len(runs) - 1) // 2
    left = len(common["not_common"])
    lines = [
        f"# Board: {len(runs)} runs on {', '.join(md_escape(s) for s in suites)}, by {main}",
        "",
        *([f"Suite lock: {md_escape(suite_locks(doc))}.", ""] if suite_locks(doc) else []),
        f"Compared on the {common['tasks']} tasks planned in every run, at the common k = {common['k']}"
        + (f"; {left} task(s) planned in only some runs are left out of every number." if left else "."),
        f"Groups: runs not separable from the group's best at alpha = {doc['alpha']:g} (exact McNemar, Holm over "
        f"{m} pair{'s' if m != 1 else ''}). Rank intervals: paired bootstrap of the common tasks, "
        f"{doc['resamples']} resamples, seed {doc['seed']}. Intervals of values: 95% Wilson.",
        "",
        *_table(doc),
        "",
        "## Compatibility",
        "",
    ]
    warnings = doc["compatibility"]["warnings"]
    lines += [f"- **{md_escape(w['code'])}**: {md_escape(w['message'])}" for w in warnings] or ["No compatibility warning."]
    lines += ["", "## Cost", ""]
    frontier = [_run_name(doc, i) for i in doc["frontier"]]
    lines.append(f"- Cost-accuracy frontier ({main} against cost per attempt), cheapest first: "
                 + (", ".join(frontier) if frontier else "none (no priced run has a value)"))
    unpriced = [_run_name(doc, i) for i in doc["unpriced"]]
    lines.append("- Unpriced (some eligible attempt has no cost; not placed on the cost axis, never counted as free): "
                 + (", ".join(unpriced) if unpriced else "none"))
    lines += _selection_lines(doc)
    separable = [p for p in doc["pairs"] if p["metric"] == doc["metric"] and p["p_holm"] < doc["alpha"]]
    shown = [_pair_text(doc, p) for p in separable[:MAX_LISTED]]
    lines += ["", f"## Separable pairs ({main}, Holm-adjusted p < {doc['alpha']:g})", "",
              _listed(shown, len(separable)) if separable else "None: no pair of runs is separable at this level."]
    if left:
        names = [md_escape(t) for t in common["not_common"][:MAX_LISTED]]
        lines += ["", "## Tasks left out (planned in only some runs)", "", _listed(names, left)]
    lines.append("")
    return "\n".join(lines)


def write_board(doc: dict, out_dir: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``board.json`` (canonical JSON, :func:`~capbench_nb.io.atomic.dumps`) and ``board.md``.

    Both atomically; ``out_dir`` is created when missing.  Returns the two paths.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return write_atomic(out / BOARD_FILE, dumps(doc)), write_atomic(out / BOARD_MARKDOWN, board_markdown(doc))


def _read_board(path: Path) -> dict:
    found = read_output_json(path, rule="board", command="board", json_rule="board-unreadable", what="board.json")
    if not isinstance(found, dict):
        raise InvalidRunError(str(path), "board-unreadable", "board.json is not a JSON object")
    return found


def _flags(provenance: object, key: str, n: int, default: bool) -> list[bool]:
    """``provenance[key]``, one boolean per run; ``default`` where it is absent or not a boolean."""
    values = provenance.get(key) if isinstance(provenance, dict) else None
    if not isinstance(values, list) or len(values) != n:
        values = [default] * n
    return [v if isinstance(v, bool) else default for v in values]


class RunOrder(Disagreement):
    """The board's runs given in another order: one line naming the order expected."""

    def __str__(self) -> str:
        return (f"{one_line(self.file)}: the runs are in a different order than the board's; expected: "
                f"{one_line(' '.join(self.expected), limit=2000)}")


def _order_problem(found: dict, loaded: list, runs: Sequence, *, file: str) -> RunOrder | None:
    """A :class:`RunOrder` when the board's run_ids are the given runs' in another order, else None."""
    entries = found.get("runs") if isinstance(found.get("runs"), list) else []
    board_ids = [e.get("run_id") if isinstance(e, dict) else None for e in entries]
    given_ids = [run.run_id for run in loaded]
    if board_ids == given_ids or sorted(map(str, board_ids)) != sorted(map(str, given_ids)):
        return None
    pool = list(zip(given_ids, [str(r) for r in runs]))
    expected = []
    for rid in board_ids:
        i = next(j for j, (g, _) in enumerate(pool) if str(g) == str(rid))
        expected.append(pool.pop(i)[1])
    return RunOrder(file, "/runs", board_ids, expected)


def verify_board(out_dir: str | os.PathLike, runs: Sequence[str | os.PathLike]) -> list[Disagreement]:
    """Recompute a board from its runs and list every disagreement with ``out_dir``'s board.json and board.md.

    The options (metric, alpha, seed, resamples) are read from the board.json found, and so is how
    each run was read (``provenance.allow_invalid``, ``provenance.evidence_checked``), so that the
    recomputation is like for like; the runs must be given in the board's order.

    Returns
    -------
    list of Disagreement
        JSON pointers into board.json, then board.md lines; empty when everything agrees.

    Raises
    ------
    InvalidRunError
        board.json missing, unreadable or with options out of range; a run that is not valid.
    """
    out = Path(out_dir)
    path = out / BOARD_FILE
    found = _read_board(path)
    options = {key: found.get(key) for key in ("metric", "alpha", "seed", "resamples")}
    try:
        check_board_options(**options, runs=len(runs))
    except (TypeError, ValueError) as exc:
        raise InvalidRunError(str(path), "board-options", f"cannot recompute this board: {exc}") from None
    provenance = found.get("provenance")
    allow = _flags(provenance, "allow_invalid", len(runs), False)
    checked = _flags(provenance, "evidence_checked", len(runs), True)
    loaded = [load_run(r, strict=not a, skip_evidence=not c) for r, a, c in zip(runs, allow, checked)]
    try:
        check_board_metric(loaded, options["metric"])
    except ValueError as exc:
        raise InvalidRunError(str(path), "board-options", f"cannot recompute this board: {exc}") from None
    misordered = _order_problem(found, loaded, runs, file=str(path))
    if misordered is not None:  # a dozen hash mismatches would all say this one thing
        return [misordered]
    recomputed = json.loads(dumps(board(loaded, **options)))
    problems = diff_documents(found, recomputed, file=str(path))
    problems.sort(key=lambda d: not d.pointer.startswith("/provenance/inputs"))  # changed inputs explain the rest
    md_path = out / BOARD_MARKDOWN
    if md_path.is_file():
        text = md_path.read_bytes().decode("utf-8", errors="replace")
        problems.extend(diff_lines(text, board_markdown(recomputed), file=str(md_path)))
    return problems
