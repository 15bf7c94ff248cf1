"""Evidence references ``FILE#JSON_POINTER`` (spec sections 3 and 8; RFC 6901).

The resolver is shared by validation (every reference in results.jsonl must
resolve) and by ingest (every reference it derives must resolve), so it is
tested on its own: the file part (relative, inside the artifact directory on
real paths, JSON).  Pointer syntax and evaluation (RFC 6901) are tested in
tests/io/test_pointer.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from capbench_nb.io.pointer import EvidenceError
from capbench_nb.records.evidence import EvidenceResolver

# --------------------------------------------------------------------------- EvidenceResolver

ATTEMPT = {"setup": {"status": "failed"}, "events": [{"type": "x"}, {"type": "y"}], "a/b": 1}


@pytest.fixture
def run(tmp_path) -> Path:
    """A run dir with attempts/t/1 (attempt.json, a sub-dir, a non-JSON file) and a file outside it."""
    run_dir = tmp_path / "run"
    art = run_dir / "attempts" / "t" / "1"
    art.mkdir(parents=True)
    (art / "attempt.json").write_text(json.dumps(ATTEMPT), encoding="utf-8")
    (art / "sub").mkdir()
    (art / "sub" / "nested.json").write_text('{"k": [1, 2]}', encoding="utf-8")
    (art / "log.txt").write_text("not json at all\n", encoding="utf-8")
    (art / "bad.json").write_text('{"truncated": ', encoding="utf-8")
    (art / "latin1.json").write_bytes(b'{"k": "\xe9"}')
    other = run_dir / "attempts" / "t" / "2"
    other.mkdir(parents=True)
    (other / "attempt.json").write_text('{"sibling": true}', encoding="utf-8")
    (run_dir / "manifest.json").write_text('{"inside_run": true}', encoding="utf-8")
    (tmp_path / "outside.json").write_text('{"secret": 1}', encoding="utf-8")
    return run_dir


@pytest.mark.parametrize(
    "reference, value",
    [
        ("attempt.json#/setup", {"status": "failed"}),
        ("attempt.json#/setup/status", "failed"),
        ("attempt.json#/events/1", {"type": "y"}),
        ("attempt.json#", ATTEMPT),
        ("attempt.json#/a~1b", 1),
        ("sub/nested.json#/k/1", 2),
        ("./attempt.json#/setup/status", "failed"),
    ],
)
def test_resolver_valid_references(run, reference, value):
    assert EvidenceResolver(run).resolve("attempts/t/1", reference) == value


def test_resolver_accepts_trailing_slash_on_artifact_dir(run):
    assert EvidenceResolver(run).resolve("attempts/t/1/", "attempt.json#/setup/status") == "failed"


@pytest.mark.parametrize(
    "reference",
    [
        "attempt.json",                     # no '#'
        "#/setup",                          # no file
        "attempt.json#setup",               # pointer without leading '/'
        "attempt.json#/nope",               # pointer does not resolve
        "attempt.json#/events/2",           # index past the end
        "attempt.json#/events/-",
        "attempt.json#/events/01",
        "attempt.json#/setup/status/x",     # into a scalar
        "missing.json#",                    # missing file
        "sub#",                             # a directory in place of a file
        "sub/#",
        ".#",                               # the artifact directory itself
        "log.txt#",                         # not JSON
        "bad.json#",                        # truncated JSON
        "latin1.json#",                     # not UTF-8
        "../2/attempt.json#",               # '..' escape to a sibling attempt
        "sub/../../2/attempt.json#",
        "../../../manifest.json#",          # '..' escape to the run dir
        "..\\2\\attempt.json#",             # backslash spelling of '..'
    ],
)
def test_resolver_rejects(run, reference):
    with pytest.raises(EvidenceError):
        EvidenceResolver(run).resolve("attempts/t/1", reference)


def test_resolver_rejects_absolute_file(run, tmp_path):
    absolute = str(tmp_path / "outside.json")
    assert os.path.isabs(absolute)
    with pytest.raises(EvidenceError, match="relative"):
        EvidenceResolver(run).resolve("attempts/t/1", f"{absolute}#/secret")
    # even an absolute path to a file that *is* inside the artifact directory
    inside = str(run / "attempts" / "t" / "1" / "attempt.json")
    with pytest.raises(EvidenceError):
        EvidenceResolver(run).resolve("attempts/t/1", f"{inside}#/setup")


@pytest.mark.parametrize("artifact_dir", [None, "/abs/path", "../run", "attempts/../../x", "attempts/t/1/../../../.."])
def test_resolver_rejects_bad_artifact_dir(run, artifact_dir):
    with pytest.raises(EvidenceError):
        EvidenceResolver(run).resolve(artifact_dir, "attempt.json#")


def test_resolver_missing_artifact_dir(run):
    with pytest.raises(EvidenceError):
        EvidenceResolver(run).resolve("attempts/t/9", "attempt.json#")


def _symlink(link: Path, target: Path) -> None:
    try:
        link.symlink_to(target)
    except (OSError, NotImplementedError):  # pragma: no cover - platform without symlinks
        pytest.skip("symlinks unavailable")


def test_symlinked_file_escaping_the_run_is_refused(run, tmp_path):
    art = run / "attempts" / "t" / "1"
    _symlink(art / "link.json", tmp_path / "outside.json")
    # the file exists and is JSON: only the real-path check refuses it
    assert json.loads((art / "link.json").read_text()) == {"secret": 1}
    with pytest.raises(EvidenceError, match="outside"):
        EvidenceResolver(run).resolve("attempts/t/1", "link.json#/secret")


def test_symlinked_file_escaping_to_a_sibling_attempt_is_refused(run):
    """Inside the run is not enough: a reference stays inside its own artifact dir."""
    art = run / "attempts" / "t" / "1"
    _symlink(art / "sib.json", run / "attempts" / "t" / "2" / "attempt.json")
    with pytest.raises(EvidenceError):
        EvidenceResolver(run).resolve("attempts/t/1", "sib.json#/sibling")


def test_symlinked_directory_escaping_is_refused(run, tmp_path):
    art = run / "attempts" / "t" / "1"
    _symlink(art / "outdir", tmp_path)
    with pytest.raises(EvidenceError):
        EvidenceResolver(run).resolve("attempts/t/1", "outdir/outside.json#/secret")


def test_symlink_inside_the_artifact_dir_is_followed(run):
    art = run / "attempts" / "t" / "1"
    _symlink(art / "alias.json", art / "sub" / "nested.json")
    assert EvidenceResolver(run).resolve("attempts/t/1", "alias.json#/k/0") == 1


def test_artifact_dir_symlinked_outside_the_run_is_refused(run, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "attempt.json").write_text('{"setup": {}}', encoding="utf-8")
    _symlink(run / "attempts" / "t" / "3", elsewhere)
    with pytest.raises(EvidenceError, match="outside the run"):
        EvidenceResolver(run).resolve("attempts/t/3", "attempt.json#/setup")


def test_artifact_dir_symlinked_inside_the_run_is_accepted(run):
    _symlink(run / "attempts" / "alias", run / "attempts" / "t")
    assert EvidenceResolver(run).resolve("attempts/alias/1", "attempt.json#/setup/status") == "failed"


def test_run_dir_itself_may_be_a_symlink(run, tmp_path):
    """Real paths are compared on both sides, so a symlinked run dir still works."""
    _symlink(tmp_path / "run-link", run)
    assert EvidenceResolver(tmp_path / "run-link").resolve("attempts/t/1", "attempt.json#/setup/status") == "failed"


def test_run_dir_prefix_is_not_containment(tmp_path):
    """``/x/run`` does not contain ``/x/run2``: a string-prefix check would say it does."""
    run_dir = tmp_path / "run"
    (run_dir / "attempts").mkdir(parents=True)
    twin = tmp_path / "run2"
    twin.mkdir()
    (twin / "attempt.json").write_text("{}", encoding="utf-8")
    _symlink(run_dir / "attempts" / "a", twin)
    with pytest.raises(EvidenceError):
        EvidenceResolver(run_dir).resolve("attempts/a", "attempt.json#")


def test_resolver_errors_are_value_errors_with_a_reason(run):
    with pytest.raises(ValueError) as info:
        EvidenceResolver(run).resolve("attempts/t/1", "missing.json#")
    assert "missing.json" in str(info.value)


def test_resolver_repeated_lookups_are_consistent(run):
    """The parse cache must not turn an error into a value or vice versa."""
    resolver = EvidenceResolver(run, cache_size=1)
    for _ in range(3):
        assert resolver.resolve("attempts/t/1", "attempt.json#/setup/status") == "failed"
        with pytest.raises(EvidenceError):
            resolver.resolve("attempts/t/1", "log.txt#")
        assert resolver.resolve("attempts/t/1", "sub/nested.json#/k/0") == 1
