"""Large inputs: a 50 MB results.jsonl in bounded memory, 100 MB single lines in bounded time, damage deep in
a large file found on its line (a 1 GB file with ``CAPBENCH_FUZZ=long``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import LONG, check_error, compact, read_doc, write

# =========================================================================== large inputs

_MEASURE = textwrap.dedent("""
    import resource, sys, time
    from capbench_nb.cli import main
    start = time.monotonic()
    try:
        rc = main(sys.argv[1:])
    except SystemExit as exc:
        rc = exc.code
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"MEASURE rc={rc} peak={peak} seconds={time.monotonic() - start:.2f}", file=sys.stderr)
    sys.exit(rc)
""")


def measure(*argv, timeout: float = 120) -> dict:
    """``capbench-nb ARGV`` in a fresh process: exit code, peak RSS (bytes), wall seconds, stderr without the probe."""
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", _MEASURE, *map(str, argv)], check=False, capture_output=True, text=True,
                          timeout=timeout)
    wall = time.monotonic() - start
    m = re.search(r"MEASURE rc=(\S+) peak=(\d+) seconds=(\S+)", proc.stderr)
    assert m, proc.stderr[-2000:]
    stderr = proc.stderr[: m.start()]
    return {"rc": proc.returncode, "peak": int(m.group(2)), "wall": wall, "stderr": stderr}


def _big_run(path: Path, size: int, *, tasks: int = 1000) -> Path:
    """A valid run of about ``size`` bytes of results.jsonl: one record repeated with new ids.

    Planned repeats cover every attempt written (~700 bytes a record) and no more: k, and with it the size of
    metrics.json's curves, grows with repeats (see test_damaged_inputs.py::test_plan_with_a_million_repeats...).
    """
    record = {"task_id": "@T@", "attempt": 999999, "artifact_dir": None, "success": False, "agent_eligible": True,
              "failure_class": "agent", "quality_score": 0.5,
              "telemetry": {"task_wall_ms": 1234.5, "input_tokens": 100, "output_tokens": 50, "total_tokens": 150,
                            "tool_calls": 3, "recovery_attempted": False},
              "telemetry_source": {"task_wall_ms": "attempt.json#/agent/task_wall_ms"}, "cost": None, "cost_source": None}
    template = json.dumps(record).replace('"@T@"', '"task-%05d"').replace("999999", "%d") + "\n"
    repeats = size // (len(template % (0, 1)) * tasks) + 2
    manifest_doc = {"schema_version": "capbench.run/1", "run_id": "big", "status": "completed",
                    "plan": {"k": None, "tasks": [{"task_id": f"task-{i:05d}", "repeats": repeats}
                                                  for i in range(tasks)]}}
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps(manifest_doc))
    with open(path / "results.jsonl", "w", encoding="utf-8") as fh:
        written, i, chunk = 0, 0, []
        while written < size:
            line = template % (i % tasks, i // tasks + 1)
            chunk.append(line)
            written += len(line)
            i += 1
            if len(chunk) == 20000:
                fh.write("".join(chunk))
                chunk = []
        fh.write("".join(chunk))
    return path


@pytest.fixture(scope="module")
def baseline_rss(tmp_path_factory) -> int:
    root = tmp_path_factory.mktemp("baseline")
    run = write(root / "run", {"schema_version": "capbench.run/1", "run_id": "tiny", "status": "completed",
                               "plan": {"tasks": [{"task_id": "t", "repeats": 1}]}},
                compact({"task_id": "t", "attempt": 1, "success": True, "agent_eligible": True,
                         "failure_class": ""}) + b"\n")
    result = measure("metrics", run, "--out", root / "out")
    assert result["rc"] == 0, result["stderr"]
    return result["peak"]


def test_50_mb_results_in_bounded_memory_and_time(tmp_path, baseline_rss):
    run = _big_run(tmp_path / "run", 50_000_000)
    size = (run / "results.jsonl").stat().st_size
    result = measure("metrics", run, "--out", tmp_path / "out")
    assert result["rc"] == 0, result["stderr"]
    extra = result["peak"] - baseline_rss
    print(f"50 MB: {size / 1e6:.0f} MB, {result['wall']:.1f} s, peak RSS {result['peak'] / 2**20:.0f} MiB "
          f"({extra / 2**20:.0f} MiB above a tiny run)")
    assert result["wall"] < 60
    assert extra < 5 * size, f"{extra / 2**20:.0f} MiB above a tiny run for a {size / 1e6:.0f} MB file"
    doc = read_doc(tmp_path / "out")
    assert doc["attempts"]["total"] == (run / "results.jsonl").read_bytes().count(b"\n")


def test_damage_deep_in_a_large_file_is_found_on_its_line(tmp_path):
    """Damage past the first 16 MB (the fast path's first chunk): a NaN token, a duplicate of a record from the
    start of the file and a truncated last line.  Strict names the first, --allow-invalid lists all three."""
    run = _big_run(tmp_path / "run", 20_000_000)
    results = run / "results.jsonl"
    lines = results.read_bytes().split(b"\n")[:-1]
    offset, nan_at = 0, 0
    while offset <= 17_000_000:  # the first line starting past 16 MiB
        offset += len(lines[nan_at]) + 1
        nan_at += 1
    dup_at = nan_at + 1000
    lines[nan_at] = lines[nan_at].replace(b'"quality_score": 0.5', b'"quality_score": NaN')
    lines.insert(dup_at, lines[3])
    data = b"\n".join(lines) + b"\n" + lines[10][:57]
    results.write_bytes(data)
    total = len(lines) + 1
    result = measure("metrics", run, "--out", tmp_path / "out")
    assert result["rc"] == 2
    check_error(result["stderr"], run, f"results.jsonl:{nan_at + 1}", "json-nan")
    result = measure("metrics", run, "--out", tmp_path / "out", "--allow-invalid")
    assert result["rc"] == 0, result["stderr"]
    doc = read_doc(tmp_path / "out")
    assert [(a["line"], a["reason"].rsplit("[rule: ", 1)[1]) for a in doc["anomalies"]] == [
        (nan_at + 1, "json-nan]"), (dup_at + 1, "duplicate-attempt]"), (total, "truncated-line]")]
    assert doc["attempts"]["total"] == total - 3


@pytest.mark.parametrize("kind", ["valid-record-with-a-100-MB-field", "100-MB-of-garbage", "100-MB-truncated-record"])
def test_single_100_mb_line_finishes(tmp_path, kind):
    run = tmp_path / "run"
    first = compact({"task_id": "t", "attempt": 1, "success": True, "agent_eligible": True, "failure_class": ""})
    blob = "x" * 100_000_000
    if kind.startswith("valid"):
        second = json.dumps({"task_id": "t", "attempt": 2, "success": False, "agent_eligible": True,
                             "failure_class": "agent", "notes": blob}).encode() + b"\n"
    elif kind.startswith("100-MB-of-garbage"):
        second = blob.encode() + b"\n"
    else:
        second = b'{"task_id": "t", "attempt": 2, "notes": "' + blob.encode()
    write(run, {"schema_version": "capbench.run/1", "run_id": "line", "status": "completed",
                "plan": {"tasks": [{"task_id": "t", "repeats": 2}]}}, first + b"\n" + second)
    del blob, second
    result = measure("metrics", run, "--out", tmp_path / "out")
    print(f"{kind}: {result['wall']:.1f} s, peak RSS {result['peak'] / 2**20:.0f} MiB")
    assert result["wall"] < 60
    if kind.startswith("valid"):
        assert result["rc"] == 0, result["stderr"]
        assert read_doc(tmp_path / "out")["attempts"]["total"] == 2
        assert (tmp_path / "out" / "metrics.json").stat().st_size < 1_000_000
    else:
        assert result["rc"] == 2
        check_error(result["stderr"], run, "results.jsonl:2", "json" if "garbage" in kind else "truncated-line")
        assert len(result["stderr"]) < 1200


@pytest.mark.skipif(not LONG, reason="1 GB input: set CAPBENCH_FUZZ=long")
def test_1_gb_results_in_bounded_memory_or_refused(tmp_path, baseline_rss):
    run = _big_run(tmp_path / "run", 1_000_000_000)
    size = (run / "results.jsonl").stat().st_size
    result = measure("metrics", run, "--out", tmp_path / "out", timeout=900)
    print(f"1 GB: {result['wall']:.1f} s, peak RSS {result['peak'] / 2**20:.0f} MiB, rc {result['rc']}")
    if result["rc"] == 2:
        check_error(result["stderr"])
    else:
        assert result["rc"] == 0, result["stderr"]
        assert result["peak"] < 2 * 2**30, f"peak RSS {result['peak'] / 2**20:.0f} MiB for {size / 1e9:.1f} GB"
