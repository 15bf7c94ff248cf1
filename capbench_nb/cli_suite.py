"""``capbench-nb suite``: a frozen suite's lock (``suite lock``, ``suite check``; spec section 12) and a
representative subset of it (``suite select``, ``suite estimate``; spec section 13)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from capbench_nb.cli_options import EXIT_DISAGREE, EXIT_INVALID, EXIT_OK, EXIT_REPORT, PROG, add_skip_evidence, positive
from capbench_nb.cli_options import seed
from capbench_nb.errors import InvalidRunError, one_line

__all__ = ["add_suite_parsers", "add_subset_parsers", "cmd_suite"]


# --------------------------------------------------------------------------- suite (spec section 12)


def add_suite_parsers(sub) -> None:
    p = sub.add_parser("suite", help="a frozen suite: write a lock (suite lock), check a run against it (suite check)")
    cmds = p.add_subparsers(dest="suite_command", required=True, metavar="SUITE_COMMAND")
    q = cmds.add_parser("lock", help="validate a lock spec (JSON or YAML, no digest), add its digest, write the lock; "
                                     "or draft a spec from a run's plan with --from-run")
    q.add_argument("spec", metavar="SPEC", nargs="?", help="the lock without its digest (.json, .yaml or .yml)")
    q.add_argument("--from-run", metavar="RUN", help="draft a spec from this run's plan (tasks, labels, k; pins empty)")
    q.add_argument("--out", metavar="FILE", required=True, help="where to write (an existing different file is refused)")
    q = cmds.add_parser("check", help="check a run against its lock: one finding per line; exit 0 none, 1 some, 2 invalid")
    q.add_argument("run_dir", metavar="RUN", help="run directory")
    q.add_argument("--lock", metavar="LOCK", help="the lock (default: RUN/suite.lock.json)")
    q.add_argument("--allow-invalid", action="store_true", help="skip invalid lines of results.jsonl")
    add_skip_evidence(q)


def _write_new(out: str, text: str) -> Path:
    """Write ``text`` to ``out``, refusing an existing file that holds something else (a lock is never edited)."""
    from capbench_nb.io.atomic import write_atomic

    path = Path(out)
    if path.exists() and (not path.is_file() or path.read_bytes() != text.encode("utf-8")):
        raise InvalidRunError(out, "output-exists", "the file exists with other content; a lock is never edited: "
                              "write a new lock to a new file")
    return write_atomic(path, text)


def cmd_suite(args: argparse.Namespace) -> int:
    from capbench_nb.suite.check import check_run, lock_at_hand
    from capbench_nb.suite.draft import draft_from_run
    from capbench_nb.records.run import load_run
    from capbench_nb.records.lock import dumps_lock, make_lock, read_spec

    if args.suite_command == "check":
        run = load_run(args.run_dir, strict=not args.allow_invalid, skip_evidence=args.skip_evidence)
        lock = lock_at_hand(run, args.lock)
        if lock is None:
            raise InvalidRunError(str(Path(args.run_dir) / "suite.lock.json"), "lock-unreadable",
                                  "the run has no lock copy; name one with --lock")
        result = check_run(run, lock)
        for finding in result.findings:
            print(one_line(finding, limit=2000))
        print(f"{PROG}: {len(result.findings)} finding(s); {len(result.drifts)} drifted attempt(s) in "
              f"{len(result.drifted_tasks)} task(s); lock {lock.digest}", file=sys.stderr)
        return EXIT_DISAGREE if result.findings else EXIT_OK
    if (args.spec is None) == (args.from_run is None):
        print(f"{PROG}: error: suite lock takes a SPEC or --from-run RUN, not both or neither [rule: usage]",
              file=sys.stderr)
        return EXIT_INVALID
    if args.from_run is not None:
        print(_write_new(args.out, dumps_lock(draft_from_run(args.from_run))))
        print(f"{PROG}: a draft without a digest: fill in the pins, then `{PROG} suite lock {one_line(args.out)} "
              "--out LOCK`", file=sys.stderr)
        return EXIT_OK
    lock, problems = make_lock(read_spec(args.spec), args.spec)
    for problem in problems:  # every problem of the spec, one line each
        print(f"{PROG}: error: {problem}", file=sys.stderr)
    if problems:
        return EXIT_INVALID
    print(_write_new(args.out, dumps_lock(lock)))
    print(f"{PROG}: {lock.digest}", file=sys.stderr)
    return EXIT_OK


# --------------------------------------------------------------------------- suite select / suite estimate (spec 13)
def add_subset_parsers(sub) -> None:
    """``suite select`` and ``suite estimate`` on the ``suite`` group (created here when no other command made it)."""
    suite = sub.choices.get("suite") or sub.add_parser("suite", help="frozen suites: lock, check, select, estimate")
    groups = [a for a in suite._actions if isinstance(a, argparse._SubParsersAction)]  # argparse's own type
    group = groups[0] if groups else suite.add_subparsers(dest="suite_command", required=True, metavar="SUITE_COMMAND")
    p = group.add_parser("select", help="a representative subset of N common tasks: DIR/subset.json, subset.md, "
                                        "subset.html (spec section 13)")
    p.add_argument("runs", nargs="+", metavar="RUN", help="three or more run directories of one suite")
    p.add_argument("--size", type=positive, required=True, metavar="N", help="number of tasks to choose")
    p.add_argument("--strata", metavar="DIM", default=None, help="a plan label (e.g. app) whose values each keep tasks")
    p.add_argument("--seed", type=seed, default=0, metavar="S", help="seed of the choice and the validation (default 0)")
    p.add_argument("--lock", metavar="LOCK", default=None, help="write DIR/suite.lock.json: LOCK restricted to the subset")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--html", action=argparse.BooleanOptionalAction, default=True,
                   help="also execute the page notebook: subset.html, subset.ipynb (default: yes)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="papermill's progress bar on stderr (default: only on a terminal)")
    p.set_defaults(subset_handler=_cmd_suite_select)
    p = group.add_parser("estimate", help="estimate a run's full-suite pass@1 from a subset: DIR/estimate.json")
    p.add_argument("run_dir", metavar="RUN", help="a run that plans every subset task")
    p.add_argument("--subset", required=True, metavar="SUBSET", help="subset.json, or the directory holding it")
    p.add_argument("--out", metavar="DIR", default=None, help="output directory (default: RUN)")
    p.add_argument("--quiet", action="store_true", help="print only the path of estimate.json, not the estimate")
    p.set_defaults(subset_handler=_cmd_suite_estimate)


def _cmd_suite_select(args: argparse.Namespace) -> int:
    from capbench_nb.metrics.subset import select_subset, subset_lock
    from capbench_nb.outputs.build import ReportError
    from capbench_nb.outputs.subset.files import write_subset
    from capbench_nb.records.lock import load_lock
    from capbench_nb.records.run import load_run

    runs = [load_run(r) for r in args.runs]
    doc = select_subset(runs, size=args.size, strata=args.strata, seed=args.seed)
    # the input lock is validated (its digest included) as `suite check` reads it, before any kernel starts
    lock = None if args.lock is None else subset_lock(doc, load_lock(Path(args.lock)))
    if not args.html:
        print(write_subset(doc, args.out, lock=lock))
        return EXIT_OK
    from capbench_nb.outputs.subset.run import build_subset_page

    try:
        print(build_subset_page(doc, args.out, lock=lock, progress=args.progress))
    except ReportError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_REPORT
    return EXIT_OK


def _cmd_suite_estimate(args: argparse.Namespace) -> int:
    from capbench_nb.metrics.subset import estimate_run
    from capbench_nb.outputs.subset.files import estimate_line, write_estimate
    from capbench_nb.records.subset import read_subset
    from capbench_nb.records.run import load_run

    subset = read_subset(args.subset)
    doc = estimate_run(load_run(args.run_dir), subset)
    print(write_estimate(doc, args.out or args.run_dir))
    if not args.quiet:
        print(estimate_line(doc))
    return EXIT_OK
