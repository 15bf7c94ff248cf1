"""Writing files atomically and durably (capbench_nb.io.atomic)."""

from __future__ import annotations

import json
import os
import stat

import pytest

from capbench_nb.io import atomic


def test_dumps_is_canonical_ascii_json_with_a_final_newline():
    text = atomic.dumps({"b": "é", "a": [1, 2]})
    assert text == '{\n  "b": "\\u00e9",\n  "a": [\n    1,\n    2\n  ]\n}\n'
    assert json.loads(text) == {"b": "é", "a": [1, 2]}
    with pytest.raises(ValueError):
        atomic.dumps({"x": float("nan")})


def test_write_atomic_replaces_and_keeps_the_mode(tmp_path):
    path = tmp_path / "f.json"
    path.write_text("old", encoding="utf-8")
    os.chmod(path, 0o640)
    assert atomic.write_atomic(path, "new\n") == path
    assert path.read_bytes() == b"new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_write_atomic_new_file_gets_the_umask_mode(tmp_path):
    path = atomic.write_atomic(tmp_path / "new.txt", "x")
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~atomic.current_umask()


def test_a_refusing_check_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("old", encoding="utf-8")
    seen = []

    def check(tmp):
        seen.append(tmp.read_text(encoding="utf-8"))
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        atomic.write_atomic(path, "new", check=check)
    assert seen == ["new"]
    assert path.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_json_pieces_written_as_they_come_are_the_bytes_of_dumps(tmp_path):
    """More pieces than one batch (2**16), then a document whose encoding fails halfway: the old file
    stays and no temporary is left."""
    doc = {"anomalies": [{"line": i, "reason": "é", "x": [None, True, 0.5]} for i in range(20_000)]}
    assert atomic.dumps(doc) == json.dumps(doc, indent=2, ensure_ascii=True, allow_nan=False) + "\n"
    path = atomic.write_atomic(tmp_path / "m.json", atomic.json_pieces(doc))
    written = path.read_text(encoding="utf-8")
    assert written == atomic.dumps(doc)
    doc["anomalies"][-1]["x"] = float("nan")
    with pytest.raises(ValueError):
        atomic.write_atomic(path, atomic.json_pieces(doc))
    assert path.read_text(encoding="utf-8") == written
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


def test_write_synced_writes_newlines_as_they_are(tmp_path):
    path = tmp_path / "out.html"
    atomic.write_synced(path, "a\nb\n")
    assert path.read_bytes() == b"a\nb\n"
    atomic.fsync_file(path)  # a file written by someone else: made durable, unchanged
    assert path.read_bytes() == b"a\nb\n"


def test_current_umask_does_not_change_it():
    before = os.umask(0o022)
    try:
        assert atomic.current_umask() == 0o022
        assert atomic.current_umask() == 0o022
    finally:
        os.umask(before)


def test_fsync_directory_is_a_no_op_where_it_cannot_open(tmp_path):
    atomic.fsync_directory(tmp_path)
    atomic.fsync_directory(tmp_path / "missing")  # no exception


def test_create_synced_never_replaces(tmp_path):
    path = tmp_path / "side.truncated"
    atomic.create_synced(path, b'{"task_id": "t1", "att')
    assert path.read_bytes() == b'{"task_id": "t1", "att'
    with pytest.raises(FileExistsError):
        atomic.create_synced(path, b"other")
    assert path.read_bytes() == b'{"task_id": "t1", "att'
