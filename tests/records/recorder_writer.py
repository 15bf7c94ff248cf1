"""Test helper run as a subprocess by test_recorder.py: a runner that records slowly until killed.

Usage: ``python recorder_writer.py RUN_DIR DELAY_S PAD [DIE_AFTER]``.  It
resumes the run whose manifest.json is in RUN_DIR and records every planned
attempt not yet recorded, sleeping DELAY_S after each; each record carries PAD
characters of multi-byte UTF-8 padding.  With DIE_AFTER, the process writes
DIE_AFTER lines, then half of the next one, and SIGKILLs itself: a real crash
in the middle of a line, at a known place.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/, for conftest

from conftest import record  # noqa: E402

from capbench_nb.records.recorder import RunRecorder  # noqa: E402


def planned(manifest: dict) -> list[tuple[str, int]]:
    """Every planned (task_id, attempt), in plan order."""
    override = manifest["plan"].get("repeats_override")
    return [(t["task_id"], a) for t in manifest["plan"]["tasks"]
            for a in range(1, (override or t["repeats"]) + 1)]


def make_record(task_id: str, attempt: int, pad: int) -> dict:
    """The deterministic record of one attempt (so a resumed runner re-derives the same one)."""
    rec = record(task_id, attempt, "S" if attempt % 2 else "A", telemetry={"task_wall_ms": 100 * attempt})
    rec["padding"] = "é" * pad
    return rec


class _DyingFile:
    """The recorder's file, which kills its process halfway through line ``lines + 1``."""

    def __init__(self, fh, lines: int) -> None:
        self._fh, self._left = fh, lines

    def write(self, data) -> int:
        if self._left == 0:
            self._fh.write(data[: len(data) // 2])
            os.kill(os.getpid(), signal.SIGKILL)
        self._left -= 1
        return self._fh.write(data)

    def fileno(self) -> int:
        return self._fh.fileno()

    def close(self) -> None:
        self._fh.close()


def main(run_dir: str, delay: float, pad: int, die_after: int | None = None) -> None:
    manifest = json.loads((Path(run_dir) / "manifest.json").read_text(encoding="utf-8"))
    with RunRecorder(run_dir, manifest) as rec:
        if die_after is not None:
            rec._fh = _DyingFile(rec._fh, die_after)
        for task_id, attempt in planned(manifest):
            rec.record(make_record(task_id, attempt, pad))
            time.sleep(delay)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else None)
