"""Opening inputs safely (``capbench_nb.io.files``): lexical path checks, containment, regular files only, digests."""

from __future__ import annotations

import hashlib
import os

import pytest

from capbench_nb.io.files import (
    NotARegularFile, check_relative_path, inside, open_input, read_regular_file, sha256_file,
)
from capbench_nb.io.pointer import EvidenceError


@pytest.mark.parametrize("path", ["a", "a/b", "attempts/t1/1/", "..x/y", "a/...", "a..b"])
def test_relative_paths_are_accepted(path):
    check_relative_path(path, "artifact_dir")


@pytest.mark.parametrize("path, reason", [
    ("/abs", "must be a relative path"),
    ("\\abs", "must be a relative path"),
    ("..", "must not contain '..'"),
    ("a/../b", "must not contain '..'"),
    ("a\\..\\b", "must not contain '..'"),
    ("a\x00b", "contains a NUL character"),
])
def test_relative_path_refusals_name_the_value(path, reason):
    with pytest.raises(EvidenceError) as info:
        check_relative_path(path, "artifact_dir")
    assert str(info.value) == f"artifact_dir {path!r} {reason}"


def test_inside_is_containment_not_a_prefix():
    assert inside("/r/run", "/r/run")
    assert inside("/r/run/a", "/r/run")
    assert inside("/r/run/a", "/r/run/")
    assert not inside("/r/run2/a", "/r/run")
    assert not inside("/r", "/r/run")


def test_regular_files_are_read_and_hashed(tmp_path):
    path = tmp_path / "f.json"
    path.write_bytes(b'{"a": 1}\n')
    with open_input(path) as fh:
        assert fh.read() == b'{"a": 1}\n'
    assert read_regular_file(path) == b'{"a": 1}\n'
    assert sha256_file(path) == "sha256:" + hashlib.sha256(b'{"a": 1}\n').hexdigest()


def test_a_directory_raises_is_a_directory(tmp_path):
    with pytest.raises(IsADirectoryError):
        open_input(tmp_path)
    with pytest.raises(IsADirectoryError):
        read_regular_file(tmp_path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes")
def test_a_fifo_is_refused_unread_without_blocking(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for read in (open_input, read_regular_file):
        with pytest.raises(NotARegularFile) as info:
            read(fifo)
        assert info.value.kind == "a named pipe (FIFO)"
        assert info.value.strerror == "it is a named pipe (FIFO), not a regular file"


@pytest.mark.skipif(not os.path.exists(os.devnull), reason="no null device")
def test_the_null_device_is_an_empty_input_only_where_allowed():
    with open_input(os.devnull) as fh:
        assert fh.read() == b""
    with pytest.raises(NotARegularFile):
        open_input(os.devnull, null_device=False)
    with pytest.raises(NotARegularFile):
        read_regular_file(os.devnull)
