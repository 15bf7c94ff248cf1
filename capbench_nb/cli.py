"""The ``capbench-nb`` command line.

Exit codes: 0 success; 1 ``verify`` or ``verify-board`` found disagreements, ``suite check`` found findings, or ``compare --strict``
found compatibility warnings of a kind not allowed with ``--allow-diff``; ``gate`` (spec section 15): 0 pass,
1 fail, 4 inconclusive, 5 incompatible; 2 bad input or usage
(one line on stderr naming file, line and rule; no traceback); 3 ``report``, ``compare`` or ``board``:
the notebook failed (one line naming the cell and the exception); 130 interrupted by
SIGINT, 143 by SIGTERM (one line, ``capbench-nb: interrupted``: the previous outputs stay, or the
complete new ones when the signal came after they were switched; no staging folder, kernel or
worker process is left).
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from capbench_nb.io import interrupts

if interrupts.is_program(__name__):  # a signal while the modules below import is answered like any other
    interrupts.hold_early()
    interrupts.pause_point("startup")

from capbench_nb._version import __version__
from capbench_nb.errors import InvalidRunError, one_line
from capbench_nb.io import publish
from capbench_nb.metrics.options import QUARANTINE_THRESHOLD, WARNING_CODES

# Nothing above loads pandas, numpy or scipy: `--help` and `--version` answer at once (issue 24 item 5).
# A command imports what it needs when it runs (tests/test_cli_usage.py checks the import stays light).

__all__ = ["main"]

from capbench_nb.cli_options import EXIT_DISAGREE, EXIT_INVALID, EXIT_OK, EXIT_REPORT, PROG  # noqa: F401
from capbench_nb.cli_options import Limit as _Limit, add_skip_evidence as _add_skip_evidence, seed as _seed
from capbench_nb.cli_suite import add_subset_parsers as _add_subset_parsers, add_suite_parsers as _add_suite_parsers
from capbench_nb.cli_suite import cmd_suite as _cmd_suite
from capbench_nb.cli_export import add_export_parser as _add_export_parser, cmd_export as _cmd_export
from capbench_nb.cli_simulate import add_simulate_parser, cmd_simulate


class _Parser(argparse.ArgumentParser):
    """argparse with a usage error in one line on stderr, exit 2 (the README's promise), for every command:
    ``add_subparsers`` makes its subcommands (``suite lock``, ``import tau-bench``, ...) of this class too."""

    def error(self, message: str):  # argparse's own hook; it must not return
        command = self.prog[len(PROG):].strip()
        where = f"{command}: " if command else ""
        self.exit(EXIT_INVALID, f"{PROG}: error: {where}{one_line(message, limit=1000)} "
                                f"(see {self.prog} --help) [rule: usage]\n")


def _add_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="run directory with manifest.json and results.jsonl")
    p.add_argument("--out", metavar="DIR", help="output directory (default: RUN_DIR)")
    p.add_argument(
        "--allow-invalid",
        action="store_true",
        help="skip invalid lines of results.jsonl, listing each under anomalies, instead of failing",
    )
    _add_skip_evidence(p)




def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Capability metrics for agent benchmark runs.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("metrics", help="compute every metric and write DIR/metrics.json; print its path and the headline")
    _add_run_args(p)
    _add_slice_arg(p)
    _add_health_args(p)
    p.add_argument("--quiet", action="store_true", help="print only the path of metrics.json, not the headline rates")
    p = sub.add_parser("verify", help="recompute from the raw results and report each disagreement with the outputs")
    _add_run_args(p)
    _add_threshold_arg(p, default=None, note="default: the threshold metrics.json records")
    p = sub.add_parser("report", help="execute the report notebook: DIR/report.html, report.ipynb, summary.md, metrics.json")
    _add_run_args(p)
    _add_slice_arg(p)
    _add_health_args(p)
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="papermill's progress bar on stderr (default: only on a terminal)")
    p = sub.add_parser("compare", help="paired comparison of two runs: DIR/comparison.json, .md, .html")
    p.add_argument("run_a", metavar="RUN_A", help="baseline run directory")
    p.add_argument("run_b", metavar="RUN_B", help="run compared with the baseline (differences are B minus A)")
    p.add_argument("--out", metavar="DIR", default=None, help="output directory (default: ./comparison)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when there is a compatibility warning of a kind not allowed with --allow-diff")
    p.add_argument("--allow-diff", dest="allow_diff", action="append", default=[], metavar="KIND",
                   help="a warning kind that is intended, e.g. model when comparing two models on one suite: "
                        "still printed and shown, marked allowed, but --strict does not fail on it "
                        f"(repeatable; kinds: {', '.join(WARNING_CODES)})")
    p.add_argument("--seed", type=_seed, default=0, metavar="S", help="bootstrap seed (default 0)")
    p.add_argument("--allow-invalid", action="store_true",
                   help="skip invalid lines of results.jsonl in either run, listing each under anomalies")
    _add_skip_evidence(p)
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="papermill's progress bar on stderr (default: only on a terminal)")
    _add_gate_parser(sub)
    p = sub.add_parser("ingest", help="derive results.jsonl from the attempt directories of a run")
    p.add_argument("run_dir", metavar="RUN_DIR", help="run directory with manifest.json and attempts/<task>/<attempt>/")
    p.add_argument("--out", metavar="FILE", help="where to write (default: RUN_DIR/results.jsonl)")
    p.add_argument("--device-actions", metavar="FILE",
                   help='tool-name configuration {"device_actions": [...], "read_only": [...]} (default: the spec\'s lists)')
    p.add_argument("--prices", metavar="FILE", help="versioned price table; without one, cost stays null")
    p.add_argument("--force", action="store_true", help="replace an existing results file, keeping a .bak copy")
    p.add_argument("--allow-invalid", action="store_true",
                   help="record attempts with broken artifacts as unknown, ineligible records with ingest_error")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress display on stderr (default: only on a terminal)")
    add_simulate_parser(sub)
    _add_import_parser(sub)
    _add_board_parsers(sub)
    _add_suite_parsers(sub)
    _add_export_parser(sub)
    _add_subset_parsers(sub)
    return parser


def _add_board_parsers(sub) -> None:
    p = sub.add_parser("board", help="a board of many runs: DIR/board.json, board.md, board.html (spec section 10)")
    p.add_argument("runs", nargs="*", metavar="RUN", help="two or more run directories, in board order (#1, #2, ...); "
                                                         "with --campaign: run_ids of the store (default: all of them)")
    p.add_argument("--campaign", metavar="STORE", default=None,
                   help="read the runs from a campaign store (capbench-nb export): writes board.json and board.md")
    p.add_argument("--out", metavar="DIR", default=None, help="output directory (default: ./board)")
    # options parsed in _board_options, so that a bad value says [rule: board-options] as verify-board does
    p.add_argument("--metric", default="pass@1", metavar="M",
                   help="the metric of groups, ranks and the frontier: pass@1 (default), pass@k, pass^k, or "
                        "selected@k when every run has a selection.jsonl at the common k")
    p.add_argument("--alpha", default="0.05", metavar="A",
                   help="a run joins a group when its Holm-adjusted p against the group's first run is >= A "
                        "(default 0.05)")
    p.add_argument("--seed", default="0", metavar="S", help="seed of the rank bootstrap (default 0)")
    p.add_argument("--resamples", default="2000", metavar="B",
                   help="bootstrap resamples, at most %(limit)s (default 2000; 0: none)").limit = _Limit("MAX_RESAMPLES")
    p.add_argument("--allow-invalid", action="store_true",
                   help="skip invalid lines of results.jsonl in any run, listing each under anomalies")
    _add_skip_evidence(p)
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="papermill's progress bar on stderr (default: only on a terminal)")
    p = sub.add_parser("verify-board", help="recompute a board from its runs and list every disagreement with "
                                            "DIR/board.json and board.md")
    p.add_argument("out", metavar="DIR", help="the board's output directory (board.json, board.md)")
    p.add_argument("runs", nargs="+", metavar="RUN", help="the board's run directories, in its order")


def _add_import_parser(sub) -> None:
    p = sub.add_parser("import", help="turn another tool's results into a run directory (inspect_ai, tau-bench, "
                                      "tau2-bench)",
                       description="Write a run directory from another tool's results; every other command then "
                                   "reads it unchanged. See docs/importers.md for the mappings.")
    tools = p.add_subparsers(dest="source", required=True, metavar="SOURCE")
    q = tools.add_parser("inspect", help="inspect_ai logs (.json or .eval; .eval needs capbench-nb[inspect])")
    q.add_argument("logs", nargs="+", metavar="LOG_OR_DIR",
                   help="inspect_ai log files or log folders of one model (several tasks, eval sets, eval_retry)")
    q.add_argument("--scorer", metavar="NAME[.KEY]",
                   help="scorer whose value decides success (default: the log's first); NAME.KEY for a dict value")
    _add_import_out(q)
    q = tools.add_parser("tau-bench", help="a tau-bench results file (JSON list of trials, or JSON lines)")
    q.add_argument("file", metavar="FILE", help="tau-bench results: [{task_id, trial, reward, info, traj}, ...]")
    q.add_argument("--suite", metavar="NAME", help="suite name (default: tau-bench), e.g. tau-bench-airline")
    q.add_argument("--model", metavar="NAME", help="config.model (the file does not record it)")
    q.add_argument("--run-id", metavar="ID", help="run id (default: tau-bench- and the file's sha256 prefix)")
    _add_import_out(q)
    q = tools.add_parser("tau2-bench", help="tau2-bench results: a results JSON file, or a folder of them")
    q.add_argument("file", metavar="FILE_OR_DIR", help="tau2 results {info, tasks, simulations}, or a results folder")
    q.add_argument("--run-id", metavar="ID", help="run id (default: tau2-bench- and the sources' sha256 prefix)")
    q.add_argument("--cost-source", metavar="SOURCE",
                   help="the versioned price source tau2 priced agent_cost with, e.g. litellm@1.72.0 "
                        "(without it cost stays null: the file does not name it)")
    _add_import_out(q)


def _add_import_out(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, metavar="RUN_DIR", help="run directory to write (absent or empty)")
    p.add_argument("--force", action="store_true", help="replace a run directory already at RUN_DIR")


def _add_slice_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--slice", dest="slices", action="append", default=[], metavar="DIM",
                   help="also report metrics per value of DIM, a plan label or config key (repeatable)")


def _add_health_args(p: argparse.ArgumentParser) -> None:
    _add_threshold_arg(p, default=QUARANTINE_THRESHOLD, note=f"default {QUARANTINE_THRESHOLD}")
    p.add_argument("--cluster", dest="clusters", action="append", default=[], metavar="DIM",
                   help="also give the cluster-robust standard error of all_attempts_pass_rate with tasks grouped "
                        "by DIM, a plan label or config key (repeatable)")


def _add_threshold_arg(p: argparse.ArgumentParser, *, default: float | None, note: str) -> None:
    p.add_argument("--quarantine-threshold", dest="quarantine_threshold", type=_threshold, default=default,
                   metavar="T", help="a task is a quarantine candidate when its environment plus evaluation attempts "
                                     f"are at least T of its counted attempts, 0 < T <= 1 ({note})")


def _threshold(text: str) -> float:
    from capbench_nb.metrics.health import check_quarantine_threshold

    try:
        return check_quarantine_threshold(float(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc) if "threshold" in str(exc) else f"{text!r} is not a number") from None




def _cmd_metrics(args: argparse.Namespace) -> int:
    from capbench_nb.metrics.document import compute_metrics
    from capbench_nb.outputs.export import write_document
    from capbench_nb.outputs.summary import headline_lines
    from capbench_nb.records.run import load_run

    run = load_run(args.run_dir, strict=not args.allow_invalid, skip_evidence=args.skip_evidence)
    doc = compute_metrics(run, slices=_unique(args.slices), quarantine_threshold=args.quarantine_threshold,
                          clusters=_unique(args.clusters))
    path = write_document(doc, args.out if args.out is not None else run.path)
    invalid = int(run.anomalies["kind"].isin(["invalid_line", "invalid_selection_line"]).sum())  # either file
    if invalid:
        print(f"{PROG}: warning: {invalid} invalid line(s) skipped and listed under anomalies", file=sys.stderr)
    print(path)
    if not args.quiet:
        print("\n".join(headline_lines(doc)))
    return EXIT_OK


def _cmd_verify(args: argparse.Namespace) -> int:
    from capbench_nb.outputs.verify import verify

    problems = verify(args.run_dir, args.out, strict=not args.allow_invalid, skip_evidence=args.skip_evidence,
                      quarantine_threshold=args.quarantine_threshold)
    out = one_line(Path(args.out) if args.out else Path(args.run_dir))  # a path may hold a newline too
    return _disagreements(problems, f"{out} and the raw results", f"the outputs in {out} agree with the raw results")


def _disagreements(problems: list, between: str, verified: str) -> int:
    """Print each disagreement (stdout) and their count (stderr): exit 1; or that everything agrees: exit 0."""
    if problems:
        for item in problems:
            print(item)
        print(f"{len(problems)} disagreement(s) between {between}", file=sys.stderr)
        return EXIT_DISAGREE
    print(f"verified: {verified}")
    return EXIT_OK


def _cmd_report(args: argparse.Namespace) -> int:
    from capbench_nb.outputs.build import ReportError
    from capbench_nb.outputs.report.run import build_report

    try:
        path = build_report(args.run_dir, args.out, allow_invalid=args.allow_invalid,
                            skip_evidence=args.skip_evidence, slices=_unique(args.slices),
                            quarantine_threshold=args.quarantine_threshold, clusters=_unique(args.clusters),
                            progress=args.progress)
    except ReportError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_REPORT
    if args.allow_invalid:
        invalid = _invalid_lines(Path(path).parent)
        if invalid:
            print(f"{PROG}: warning: {invalid} invalid line(s) skipped and listed under anomalies", file=sys.stderr)
    print(path)
    return EXIT_OK


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _cmd_compare(args: argparse.Namespace) -> int:
    import json

    from capbench_nb.metrics.compatibility import blocking_warnings, check_warning_kinds
    from capbench_nb.outputs.build import ReportError
    from capbench_nb.outputs.comparison.run import build_comparison

    try:
        allowed = check_warning_kinds(args.allow_diff)
    except ValueError as exc:  # a usage error, reported before any run is read
        print(f"{PROG}: error: {one_line(exc, limit=1000)} [rule: usage]", file=sys.stderr)
        return EXIT_INVALID
    out = Path(args.out) if args.out else Path("comparison")
    try:
        path = build_comparison(args.run_a, args.run_b, out, allow_invalid=args.allow_invalid,
                                skip_evidence=args.skip_evidence, seed=args.seed,
                                strict=args.strict, allow_diff=allowed, progress=args.progress)
    except ReportError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_REPORT
    doc = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    warnings = (doc.get("compatibility") or {}).get("warnings") or []
    blocking = blocking_warnings(warnings, allowed)
    for w in warnings:
        note = "" if w in blocking else " (allowed by --allow-diff)"
        # the message quotes manifest strings: controls and bidi overrides shown as escapes
        print(f"{PROG}: warning: [{one_line(w.get('code'), 100)}]{note} {one_line(w.get('message'), 1000)}",
              file=sys.stderr)
    print(path)
    if blocking and args.strict:
        kinds = ", ".join(dict.fromkeys(one_line(w.get("code"), 100) for w in blocking))
        print(f"{PROG}: error: {len(blocking)} compatibility warning(s) with --strict ({kinds}; allow an intended "
              "kind with --allow-diff KIND)", file=sys.stderr)
        return EXIT_DISAGREE
    return EXIT_OK


def _add_gate_parser(sub) -> None:
    p = sub.add_parser("gate", help="regression gate of CANDIDATE against BASELINE: DIR/gate.json, gate.md, junit.xml; "
                                    "exit 0 pass, 1 fail, 4 inconclusive, 5 incompatible (spec section 15)")
    p.add_argument("run_a", metavar="BASELINE", help="baseline run directory")
    p.add_argument("run_b", metavar="CANDIDATE", help="candidate run directory (differences are candidate minus baseline)")
    p.add_argument("--metric", dest="metrics", action="append", default=[], metavar="M",
                   help="metric to gate on: pass@1 (default), pass@k, pass^k or selected@k (repeatable)")
    p.add_argument("--margin", default="0.02", metavar="D",
                   help="largest tolerated drop, a number in [0, 1) (default 0.02: 2 percentage points)")
    p.add_argument("--alpha", default="0.05", metavar="A",
                   help="one-sided level in (0, 0.5) (default 0.05: a 90%% two-sided interval)")
    p.add_argument("--allow-diff", dest="allow_diff", action="append", default=[], metavar="KIND",
                   help=f"a compatibility warning kind that is intended (repeatable; kinds: {', '.join(WARNING_CODES)})")
    p.add_argument("--out", metavar="DIR", default=None, help="output directory (default: ./gate)")
    p.add_argument("--allow-invalid", action="store_true",
                   help="skip invalid lines of results.jsonl in either run, listing each under anomalies")
    _add_skip_evidence(p)


def _cmd_gate(args: argparse.Namespace) -> int:
    import math
    import os

    from capbench_nb.metrics.gate import EXIT_CODES, check_gate_options, gate_document
    from capbench_nb.outputs.gate.files import DEFAULT_OUT, write_gate
    from capbench_nb.records.run import load_run

    def number(name: str, text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if math.isnan(value):
            raise ValueError(f"--{name} takes a number, got {text!r}")
        return value

    try:  # every option is checked before any run is read
        metrics, margin, alpha, allowed = check_gate_options(
            metrics=args.metrics, margin=number("margin", args.margin), alpha=number("alpha", args.alpha),
            allow_diff=args.allow_diff)
        runs = [load_run(path, strict=not args.allow_invalid, skip_evidence=args.skip_evidence)
                for path in (args.run_a, args.run_b)]
        doc = gate_document(*runs, metrics=metrics, margin=margin, alpha=alpha, allow_diff=allowed,
                            same_run=os.path.realpath(args.run_a) == os.path.realpath(args.run_b))
    except InvalidRunError:
        raise  # a run: reported by main with its own rule
    except ValueError as exc:  # a bad option, or selected@k for a run without selection.jsonl
        print(f"{PROG}: error: {one_line(exc)} [rule: gate-options]", file=sys.stderr)
        return EXIT_INVALID
    path = write_gate(doc, Path(args.out) if args.out else Path(DEFAULT_OUT))
    for w in doc["warnings"]:
        print(f"{PROG}: warning: [{one_line(w.get('code'), 100)}] {one_line(w.get('message'), 1000)}", file=sys.stderr)
    verdicts = ", ".join(f"{e['metric']} {e['decision']}" for e in doc["metrics"])
    trivial = "; the same run twice: passes trivially" if doc["same_run"] else ""
    print(f"{PROG}: gate: {doc['decision']} ({verdicts}){trivial}", file=sys.stderr)
    print(path)
    return EXIT_CODES[doc["decision"]]


def _board_options(args: argparse.Namespace, runs: int | None) -> dict:
    """``metric``, ``alpha``, ``seed`` and ``resamples`` of ``board``, checked (and ``runs``, the number of runs,
    unless None); ValueError (one sentence) if not."""
    from capbench_nb.metrics.board import check_board_options

    def number(kind, name: str, text: str):
        try:
            return kind(text)
        except ValueError:
            raise ValueError(f"--{name} takes {'a number' if kind is float else 'an integer'}, got {text!r}") from None

    options = {"metric": args.metric, "alpha": number(float, "alpha", args.alpha),
               "seed": number(int, "seed", args.seed), "resamples": number(int, "resamples", args.resamples)}
    check_board_options(**options, runs=runs)
    return options


def _board_refused(exc: ValueError) -> int:
    print(f"{PROG}: error: {one_line(exc)} [rule: board-options]", file=sys.stderr)
    return EXIT_INVALID


def _cmd_board_campaign(args: argparse.Namespace) -> int:
    """``board --campaign STORE [RUN_ID...]``: the board of section 10 from a campaign store (section 14)."""
    from capbench_nb.metrics.board import check_board_options
    from capbench_nb.metrics.campaign import campaign
    from capbench_nb.outputs.board.files import write_board

    try:
        options = _board_options(args, None)  # before the store is opened
    except ValueError as exc:
        return _board_refused(exc)
    store = campaign(args.campaign)
    ids = list(args.runs) or store.run_ids
    known = set(store.run_ids)
    for rid in ids:  # the first unknown run_id, in the order given, before the count: InvalidRunError naming it
        if rid not in known:
            store.run(rid)
    try:
        check_board_options(**options, runs=len(ids))
        doc = store.board(ids, **options)
    except ValueError as exc:
        if isinstance(exc, InvalidRunError):
            raise
        return _board_refused(exc)
    json_path, _ = write_board(doc, Path(args.out) if args.out else Path("board"))
    print(json_path)
    return EXIT_OK


def _cmd_board(args: argparse.Namespace) -> int:
    if args.campaign:
        return _cmd_board_campaign(args)
    from capbench_nb.outputs.board.run import build_board
    from capbench_nb.outputs.build import ReportError

    out = Path(args.out) if args.out else Path("board")
    try:
        options = _board_options(args, len(args.runs))  # checked before any run is read
        path = build_board(args.runs, out, **options, allow_invalid=args.allow_invalid,
                           skip_evidence=args.skip_evidence, progress=args.progress)
    except InvalidRunError:
        raise  # a run, or the output directory: reported by main with its own rule
    except ValueError as exc:  # a usage error; --metric selected@k while some run has none is known once runs are read
        return _board_refused(exc)
    except ReportError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_REPORT
    print(path)
    return EXIT_OK


def _cmd_verify_board(args: argparse.Namespace) -> int:
    from capbench_nb.outputs.board.files import verify_board

    out = one_line(args.out)
    return _disagreements(verify_board(args.out, args.runs), f"{out} and the runs",
                          f"the board in {out} agrees with its {len(args.runs)} runs")


def _invalid_lines(out: Path) -> int:
    """Invalid lines of results.jsonl and selection.jsonl in the metrics.json just written (0 if unreadable)."""
    import json

    try:
        doc = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
        counts = doc["anomaly_counts"]
        return int(counts["invalid_line"]) + int(counts.get("invalid_selection_line", 0))
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def _cmd_ingest(args: argparse.Namespace) -> int:
    from capbench_nb.records.prices import load_price_table, load_tool_config
    from capbench_nb.records.ingest import ingest_run

    report = ingest_run(
        args.run_dir,
        out=args.out,
        force=args.force,
        allow_invalid=args.allow_invalid,
        tools=load_tool_config(args.device_actions),
        prices=load_price_table(args.prices) if args.prices else None,
        progress=args.progress,
    )
    if report.backup is not None:
        print(f"{PROG}: kept the previous file as {report.backup}", file=sys.stderr)
    if report.errors:
        print(f"{PROG}: warning: {report.errors} attempt(s) with broken artifacts recorded as unknown "
              "(see ingest_error)", file=sys.stderr)
    print(report.path)
    return EXIT_OK


def _cmd_import(args: argparse.Namespace) -> int:
    from capbench_nb.records.importers import import_inspect, import_tau2bench, import_taubench

    if args.source == "inspect":
        report = import_inspect(args.logs, args.out, scorer=args.scorer, force=args.force)
    elif args.source == "tau2-bench":
        report = import_tau2bench(args.file, args.out, run_id=args.run_id, cost_source=args.cost_source,
                                  force=args.force)
    else:
        report = import_taubench(args.file, args.out, suite=args.suite, model=args.model, run_id=args.run_id,
                                 force=args.force)
    for line in report.notes:  # what the import decided (files skipped, retried logs, epochs)
        print(f"{PROG}: note: {one_line(line, limit=1000)}", file=sys.stderr)
    note = f", {report.ineligible} not agent-eligible" if report.ineligible else ""
    verb = "replaced the run in" if report.replaced else "wrote"
    print(f"{PROG}: imported {report.attempts} attempt(s) of {report.tasks} task(s){note}; {verb} {report.path}",
          file=sys.stderr)
    print(report.path)
    return EXIT_OK


@functools.cache
def _shared_parser() -> argparse.ArgumentParser:
    """One parser per process: ``parse_args`` leaves it unchanged, and building it takes about 17 ms (argparse
    looks up a translation for each of its ~130 strings), which callers of ``main`` in a loop pay every time."""
    return build_parser()


def main(argv: list[str] | None = None) -> int:
    args = _shared_parser().parse_args(argv)
    handler = getattr(args, "subset_handler", None) or {"metrics": _cmd_metrics, "verify": _cmd_verify, "report": _cmd_report,
               "ingest": _cmd_ingest, "simulate": cmd_simulate, "compare": _cmd_compare,
               "gate": _cmd_gate,
               "import": _cmd_import, "board": _cmd_board, "verify-board": _cmd_verify_board,
               "suite": _cmd_suite, "export": _cmd_export}[args.command]
    # SIGINT: KeyboardInterrupt; SIGTERM: interrupts.Terminated, its subclass.  argv None: the program itself.
    with interrupts.handling(final=argv is None):
        interrupted = None
        try:
            interrupts.raise_held()
            interrupts.pause_point("command")
            code = _dispatch(handler, args)
        except KeyboardInterrupt as exc:  # every clean-up has run on the way here
            interrupted = interrupts.exit_code(exc)
        except Exception:  # raised while an interrupt unwound the command (from a lock it cut short, say)
            if not interrupts.signalled():
                raise
        if interrupts.signalled():  # a signal that came before the command returned is always reported
            interrupted = 128 + interrupts.signalled()
        if interrupted is not None:
            print(f"{PROG}: interrupted", file=sys.stderr)
            return interrupted
        return code


def _restore_moved_runs(args: argparse.Namespace) -> None:
    """A run directory that a killed ``import --force`` left moved aside is put back first (io.publish.restore):
    the command's run, both runs of ``compare``, every run of ``board`` and ``verify-board``."""
    paths = [getattr(args, name, None) for name in ("run_dir", "run_a", "run_b")] + list(getattr(args, "runs", None) or [])
    paths = paths if not getattr(args, "campaign", None) else []  # board --campaign: run_ids, not directories
    for path in paths:
        if path:
            publish.restore(Path(path))


def _dispatch(handler, args: argparse.Namespace) -> int:
    from capbench_nb.metrics.slices import UnknownSliceError  # pandas: only once a command runs

    try:
        _restore_moved_runs(args)
        return handler(args)
    except InvalidRunError as exc:
        if exc.rule == "results-missing" and (Path(exc.file).parent / "attempts").is_dir():
            exc = InvalidRunError(exc.file, exc.rule, f"{exc.message}; the run has attempts/: run "
                                  f"`{PROG} ingest {Path(exc.file).parent}` first", line=exc.line, pointer=exc.pointer)
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except UnknownSliceError as exc:  # --slice or --cluster DIM: a usage error, known once the run is read
        print(f"{PROG}: error: {one_line(exc, limit=1000)} [rule: usage]", file=sys.stderr)
        return EXIT_INVALID
    except OSError as exc:  # e.g. an output directory that cannot be written
        name = f"{one_line(exc.filename)}: " if exc.filename else ""  # ENOSPC often comes without one
        print(f"{PROG}: error: {name}{one_line(exc.strerror or exc)} [rule: os-error]", file=sys.stderr)
        return EXIT_INVALID


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
