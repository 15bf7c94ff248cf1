"""``capbench-nb simulate``: a realistic synthetic run, seeded (:func:`capbench_nb.simulation.writer.simulate_run`)."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from fractions import Fraction

from capbench_nb.cli_options import EXIT_INVALID, EXIT_OK, PROG, Limit, probability

__all__ = ["add_simulate_parser", "cmd_simulate"]


def add_simulate_parser(sub) -> None:
    p = sub.add_parser("simulate", help="write a realistic synthetic run (seeded, reproducible)")
    # the limits `metrics` holds a run to: a run simulate writes is one every command reads
    p.add_argument("--tasks", type=Limit("MAX_PLAN_TASKS"), required=True, metavar="N",
                   help="number of planned tasks, at most %(type)s")
    p.add_argument("--repeats", type=Limit("MAX_REPEATS"), required=True, metavar="R",
                   help="planned repeats per task, at most %(type)s")
    p.add_argument("--seed", type=int, required=True, metavar="S", help="random seed: same arguments, same bytes")
    p.add_argument("--out", required=True, metavar="RUN_DIR", help="run directory to create (must not exist, or be empty)")
    p.add_argument("--artifacts", action="store_true",
                   help="write attempts/<task>/<attempt>/ artifacts (then derive results.jsonl with ingest)")
    p.add_argument("--selector", type=probability, default=None, metavar="ACCURACY",
                   help="also write selection.jsonl: a best-of-k selector whose pick succeeds with this probability "
                        "on a task with a success among attempts 1..k (its truth goes into simulation.json)")
    p.add_argument("--lock", metavar="FILE", help="simulate a run of this frozen suite (spec section 12): the manifest "
                                                  "names the lock, every attempt has a preflight")
    p.add_argument("--drift", type=probability, default=0.0, metavar="RATE",
                   help="with --lock: the probability that an attempt's device drifted from the lock (default 0)")
    p.add_argument("--model", type=_non_empty, default=None, metavar="NAME",
                   help="the manifest's config.model (default m-large): the model a board or campaign groups by")
    p.add_argument("--success-mean", type=_open_probability, default=None, metavar="P",
                   help="the mean of the tasks' latent success probabilities, 0 < P < 1 (default 0.6): a weaker or "
                        "stronger agent (the Beta(P/(1-P), 1) of the simulator's success_alpha)")
    p.add_argument("--run-id", type=_non_empty, default=None, metavar="ID", help="the manifest's run_id (default sim-S)")
    p.add_argument("--created-at", type=_iso_time, default=None, metavar="TIME",
                   help="the manifest's created_at, ISO 8601 (default 2026-11-28T10:00:00Z: the simulator reads no clock)")


def _non_empty(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def _open_probability(text: str) -> Fraction:
    """``text`` as the exact fraction of its shortest decimal, strictly between 0 and 1 (so that 0.6 gives
    success_alpha 1.5 exactly, where the binary 0.6 would give 1.4999999999999998)."""
    value = probability(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be strictly between 0 and 1, got {text}")
    return Fraction(repr(value))  # any text float() reads (1e-1, 0.5_0) gives a decimal Fraction reads


def _iso_time(text: str) -> str:
    """``text`` unchanged when it is an ISO 8601 date or time (``Z`` or an offset, or none: UTC)."""
    try:
        datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 time (e.g. 2026-10-01T09:00:00Z)") from None
    return text


def cmd_simulate(args: argparse.Namespace) -> int:
    from capbench_nb.simulation.writer import simulate_run

    # Only the options given are passed: without them the run is byte for byte the one drawn before they existed.
    options: dict = {} if args.selector is None else {"selector_accuracy": args.selector}
    if args.model is not None:
        options["model"] = args.model
    if args.success_mean is not None:
        options.update(success_alpha=float(args.success_mean / (1 - args.success_mean)), success_beta=1.0)
    if args.lock is not None:
        from capbench_nb.records.lock import load_lock

        options.update(lock=load_lock(args.lock), drift=args.drift)
    elif args.drift:
        print(f"{PROG}: error: --drift needs --lock [rule: usage]", file=sys.stderr)
        return EXIT_INVALID
    path = simulate_run(args.out, tasks=args.tasks, repeats=args.repeats, seed=args.seed, artifacts=args.artifacts,
                        run_id=args.run_id, created_at=args.created_at, **options)
    print(path)
    return EXIT_OK
