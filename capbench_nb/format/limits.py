"""Limits of the run format, and the one number rule (spec section 8)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MAX_SAFE_NUMBER", "MAX_REPEATS", "MAX_LINE_BYTES", "MAX_MANIFEST_BYTES", "MAX_LOCK_BYTES", "MAX_PLAN_TASKS",
           "MAX_IMPORT_LOG_BYTES", "MAX_SUBSET_BYTES", "MAX_RESAMPLES",
           "MAX_EVAL_DECOMPRESSED_BYTES", "MAX_EVAL_MEMBERS", "LIMITS", "is_safe_number", "safe_numbers"]

#: Largest number accepted in a numeric field: 2**53 - 1, the largest integer a
#: JSON reader in any language represents exactly.  Larger values are refused as
#: invalid input rather than silently rounded.
MAX_SAFE_NUMBER = 2**53 - 1

#: Largest planned repeats of a task (and ``repeats_override``).  The reliability curves hold
#: one point per j = 1..k, so k sets the size of metrics.json (about 400 bytes per j) and the
#: time to compute it.  Ten thousand attempts of one task is far beyond any agent benchmark
#: run; a plan above it is refused (``repeats-too-large``), never truncated.
MAX_REPEATS = 10_000

#: Longest line of results.jsonl, in bytes (its newline not included): 128 MiB.  A record is a
#: few hundred bytes; a longer line (such as a file that never ends, ``/dev/zero``) is refused
#: (``line-too-long``) instead of being read until memory runs out.
MAX_LINE_BYTES = 128 << 20

#: Largest manifest.json, in bytes: 64 MiB.  How many tasks that holds depends on their ids and
#: labels (two million short ones fit); :data:`MAX_PLAN_TASKS` bounds the count itself.
MAX_MANIFEST_BYTES = 64 << 20

#: Largest suite.lock.json (or lock spec), in bytes: 100 MiB.  A lock of 50 tasks and a few apps is
#: a few kilobytes; even 100,000 tasks with long descriptions stay far below this.  A larger file is
#: refused (``lock-too-large``) before it is parsed, never read into memory whole.
MAX_LOCK_BYTES = 100 << 20

#: Most tasks in a plan: 1,000,000.  Every planned task has its entry in metrics.json (about 270
#: bytes) and its rows in every table, so time and memory grow with the plan, attempts or not:
#: ``metrics`` on a plan of 1M tasks and an empty results.jsonl took 12.6 s, peaked at 2.8 GB and
#: wrote a 271 MB metrics.json (docs/format-notes.md).  That is 10 million attempts at 10 repeats,
#: the size the memory benchmark holds under 6 GB; no agent benchmark comes near it.  A larger plan
#: is refused just after manifest.json is parsed (``plan-too-large``), with the count found.
MAX_PLAN_TASKS = 1_000_000

#: Largest imported JSON log, in bytes: 256 MiB (an inspect_ai ``.json`` log, a tau-bench results
#: file).  Such a log is parsed as one document, which takes several times its size in memory.  A
#: larger file is refused unread (``import-too-large``); a large inspect log
#: belongs in the ``.eval`` format, whose samples are read one at a time.
MAX_IMPORT_LOG_BYTES = 256 << 20

#: Most bytes the members of an inspect_ai ``.eval`` archive may decompress to, in total: 1 GiB.  The
#: members are read as streams and counted as they inflate, so a zip bomb (a 2 MB archive whose member
#: inflates to 2 GiB) is refused after about this many bytes (``eval-too-large``), never written out.
#: Each sample is parsed on its own and its event transcript dropped, so memory stays bounded by the
#: largest member and what is kept of the samples.
MAX_EVAL_DECOMPRESSED_BYTES = 1 << 30

#: Most members of an ``.eval`` archive: 200,000 (inspect writes one per sample and epoch, plus a few
#: summaries; 20,000 samples of 10 epochs fit).  Counted from the archive's end record before its
#: central directory is read (``eval-too-many-members``).
MAX_EVAL_MEMBERS = 200_000

#: Largest subset.json that ``suite estimate`` reads, in bytes: 100 MiB, as a lock.  A subset of a
#: 116-task suite is about 40 kB (each common task's difficulty, each chosen task's pass rates); a
#: larger file is refused unread (``subset-too-large``).
MAX_SUBSET_BYTES = 100 << 20

#: Most resamples of a board's rank bootstrap (``board --resamples``, ``cb.board(resamples=)``, the
#: ``resamples`` that ``verify-board`` reads back from board.json): 1,000,000, 500 times the default
#: 2,000.  The B ranks of every run are held in memory and each resample draws every common task
#: (time grows with B x runs x tasks, memory with B x runs): 50 runs of 1,000 tasks at the limit took
#: 26 s and 0.9 GB.  Without a limit, 3,000,000,000 resamples of 3 runs ended in a MemoryError (numpy
#: asked for 67.1 GiB at once).  More is refused before any run is read (``board-options``).
MAX_RESAMPLES = 1_000_000


#: Every limit as (name, value, what it bounds, the rule id of a refusal): the table the reference
#: page (docs/format-reference.md) renders.
LIMITS = (
    ("MAX_SAFE_NUMBER", MAX_SAFE_NUMBER, "largest number in any numeric field", "number-too-large"),
    ("MAX_REPEATS", MAX_REPEATS, "largest planned repeats of a task", "repeats-too-large"),
    ("MAX_LINE_BYTES", MAX_LINE_BYTES, "longest line of results.jsonl, in bytes", "line-too-long"),
    ("MAX_MANIFEST_BYTES", MAX_MANIFEST_BYTES, "largest manifest.json, in bytes", "manifest-too-large"),
    ("MAX_LOCK_BYTES", MAX_LOCK_BYTES, "largest suite.lock.json or lock spec, in bytes", "lock-too-large"),
    ("MAX_PLAN_TASKS", MAX_PLAN_TASKS, "most tasks in a manifest's plan", "plan-too-large"),
    ("MAX_IMPORT_LOG_BYTES", MAX_IMPORT_LOG_BYTES, "largest imported JSON log, in bytes", "import-too-large"),
    ("MAX_EVAL_DECOMPRESSED_BYTES", MAX_EVAL_DECOMPRESSED_BYTES,
     "most bytes the members of an inspect .eval archive decompress to, in total", "eval-too-large"),
    ("MAX_EVAL_MEMBERS", MAX_EVAL_MEMBERS, "most members of an inspect .eval archive", "eval-too-many-members"),
    ("MAX_SUBSET_BYTES", MAX_SUBSET_BYTES, "largest subset.json suite estimate reads, in bytes", "subset-too-large"),
    ("MAX_RESAMPLES", MAX_RESAMPLES, "most resamples of a board's rank bootstrap", "board-options"),
)


def is_safe_number(value: Any, integer: bool = False) -> bool:
    """The number rule: a JSON number (an integer when ``integer``) with 0 <= value <= 2**53-1.

    Booleans are no numbers; NaN and the infinities fail the range test.
    """
    kind = type(value)
    return (kind is int or (kind is float and not integer)) and 0 <= value <= MAX_SAFE_NUMBER


def safe_numbers(values: np.ndarray, upper: float = MAX_SAFE_NUMBER) -> bool:
    """:func:`is_safe_number` on a whole numeric column (nulls filled with 0): all within
    ``[0, upper]``, and no -0.0 (the exact reader reads the literal ``-0`` as the integer 0)."""
    if values.dtype.kind == "f":
        return bool(((values >= 0.0) & (values <= upper)).all() and not np.signbit(values).any())
    return bool(((values >= 0) & (values <= upper)).all())
