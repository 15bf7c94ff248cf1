"""``capbench-nb export``: runs into a campaign store (Parquet, spec section 14), or one run as Every
Eval Ever records."""

from __future__ import annotations

import argparse
import sys

from capbench_nb.cli_options import EXIT_INVALID, EXIT_OK, PROG, add_skip_evidence

__all__ = ["add_export_parser", "cmd_export"]


def add_export_parser(sub) -> None:
    p = sub.add_parser("export", help="write runs into a campaign store (Parquet, spec section 14), or one run as "
                                      "Every Eval Ever records (--format eee)")
    p.add_argument("runs", nargs="+", metavar="RUN", help="run directories")
    p.add_argument("--out", required=True, metavar="DIR", help="the store (or, with --format eee, the output) directory")
    p.add_argument("--format", dest="export_format", choices=("campaign", "eee"), default="campaign",
                   help="campaign: the Parquet campaign store (default); eee: Every Eval Ever aggregate and "
                        "instance-level records of one run")
    p.add_argument("--append", action="store_true", help="add the runs to the existing store DIR")
    p.add_argument("--replace", action="store_true", help="with --append: re-export a run_id already in the store")
    p.add_argument("--allow-invalid", action="store_true",
                   help="skip invalid lines of results.jsonl, listing each under the run's anomalies")
    add_skip_evidence(p)


def cmd_export(args: argparse.Namespace) -> int:
    if args.export_format == "eee":
        from capbench_nb.outputs.eee_export import export_eee

        if len(args.runs) != 1:
            print(f"{PROG}: error: --format eee exports one run, got {len(args.runs)} [rule: export-options]",
                  file=sys.stderr)
            return EXIT_INVALID
        print(export_eee(args.runs[0], args.out, allow_invalid=args.allow_invalid, skip_evidence=args.skip_evidence))
        return EXIT_OK
    from capbench_nb.outputs.campaign_export import export_campaign

    print(export_campaign(args.runs, args.out, append=args.append, replace=args.replace,
                          allow_invalid=args.allow_invalid, skip_evidence=args.skip_evidence))
    return EXIT_OK
