"""Publishing output files into a directory (capbench_nb.io.publish): a reader sees the old set or the new one."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from capbench_nb.io import publish

OUTPUT_FILES = ("metrics.json", "summary.md", "report.ipynb", "report.html")


def exchange_unsupported(a, b):
    raise OSError(errno.EINVAL, "exchange unsupported (test)")


def cannot_move(monkeypatch, directory: Path) -> None:
    """``os.rename`` of ``directory`` fails as for a mount point (EBUSY)."""
    real_rename = os.rename

    def rename(src, dst, *args, **kwargs):
        if Path(src) == directory:
            raise OSError(errno.EBUSY, "Device or resource busy", str(src))
        return real_rename(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "rename", rename)


def staged(directory: Path, names=OUTPUT_FILES, text="new ") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_text(text + name, encoding="utf-8")
    return directory


def test_publishing_rolls_back_when_a_rename_fails(tmp_path, monkeypatch):
    out, staging = tmp_path / "out", tmp_path / "out" / ".capbench-report-x.partial"
    staged(staging)
    (out / "metrics.json").write_text("old metrics", encoding="utf-8")
    (out / "summary.md").write_text("old summary", encoding="utf-8")
    real_replace = os.replace

    def failing_replace(src, dst):
        if Path(dst).name == "report.html" and Path(src).parent == staging:
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        publish.publish(staging, out, OUTPUT_FILES)
    monkeypatch.setattr(os, "replace", real_replace)
    assert (out / "metrics.json").read_text(encoding="utf-8") == "old metrics"
    assert (out / "summary.md").read_text(encoding="utf-8") == "old summary"
    assert not (out / "report.ipynb").exists() and not (out / "report.html").exists()


def test_publish_replaces_only_the_named_files(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "results.jsonl").write_text("keep", encoding="utf-8")
    (out / "metrics.json").write_text("old", encoding="utf-8")
    staging = staged(tmp_path / "run" / ".capbench-report-y.partial")
    publish.publish(staging, out, OUTPUT_FILES)
    assert (out / "results.jsonl").read_text(encoding="utf-8") == "keep"
    assert {name: (out / name).read_text(encoding="utf-8") for name in OUTPUT_FILES} == \
        {name: "new " + name for name in OUTPUT_FILES}


def test_switch_into_a_missing_directory_is_one_rename(tmp_path):
    out = tmp_path / "out"
    staging = staged(tmp_path / (publish.sibling_prefix(out) + "a" + publish.PARTIAL))
    assert publish.switch(staging, out, OUTPUT_FILES) is True
    assert not staging.exists()
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUT_FILES)


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
def test_switch_replaces_a_dedicated_directory_and_keeps_what_appeared_meanwhile(tmp_path, monkeypatch, exchange):
    out = staged(tmp_path / "out", text="old ")
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    staging = staged(tmp_path / (publish.sibling_prefix(out) + "b" + publish.PARTIAL))
    if not exchange:
        monkeypatch.setattr(publish, "rename_exchange", exchange_unsupported)
    assert publish.switch(staging, out, OUTPUT_FILES) is True
    assert (out / "report.html").read_text(encoding="utf-8") == "new report.html"
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_switch_changes_nothing_when_the_directory_cannot_move(tmp_path, monkeypatch):
    out = staged(tmp_path / "out", text="old ")
    staging = staged(tmp_path / (publish.sibling_prefix(out) + "c" + publish.PARTIAL))
    monkeypatch.setattr(publish, "rename_exchange", exchange_unsupported)
    cannot_move(monkeypatch, out)
    assert publish.switch(staging, out, OUTPUT_FILES) is False
    monkeypatch.undo()
    assert (out / "report.html").read_text(encoding="utf-8") == "old report.html"
    assert staging.is_dir()


def test_dedicated(tmp_path):
    out = staged(tmp_path / "out")
    assert publish.dedicated(out, OUTPUT_FILES)
    (out / "results.jsonl").write_text("", encoding="utf-8")
    assert not publish.dedicated(out, OUTPUT_FILES)
    assert not publish.dedicated(tmp_path / "missing", OUTPUT_FILES)


def test_recover_removes_unlocked_leftovers_and_restores_previous_outputs(tmp_path):
    out = tmp_path / "out"
    prefix = publish.sibling_prefix(out)
    previous = staged(tmp_path / (prefix + "d" + publish.PREVIOUS), text="old ")
    killed = staged(tmp_path / (prefix + "e" + publish.PARTIAL))
    live = staged(tmp_path / (prefix + "f" + publish.PARTIAL))
    held = publish.lock(live)
    try:
        assert not publish.unlocked(live)
        publish.recover(out)
    finally:
        os.close(held)
    assert (out / "report.html").read_text(encoding="utf-8") == "old report.html"  # put back
    assert not previous.exists() and not killed.exists()
    assert live.is_dir()  # a live build's folder is never touched
    assert publish.unlocked(live)


def test_sibling_prefix_fits_name_max_for_any_name(tmp_path):
    short = publish.sibling_prefix(tmp_path / "out")
    assert short == ".out" + publish.STAGING_MARK
    long = publish.sibling_prefix(tmp_path / ("é" * 127))
    assert len(os.fsencode(long + "x" * 8 + publish.PREVIOUS)) < 255
    assert long == publish.sibling_prefix(tmp_path / ("é" * 127))  # every build finds the others' folders


@pytest.mark.parametrize("mount", ["another-file-system", "bind-mount"])
def test_publish_files_into_a_mount_point_goes_through_a_folder_inside(tmp_path, monkeypatch, mount):
    """Another file system shows another st_dev; a bind mount shows the same one, yet a rename into it
    from outside fails with EXDEV (simulated: os.replace from the staging folder beside it)."""
    out = staged(tmp_path / "mounted", text="old ")
    staging = staged(tmp_path / (publish.sibling_prefix(out) + "g" + publish.PARTIAL))
    real_stat, real_replace = os.stat, os.replace

    def stat(path, *args, **kwargs):
        result = real_stat(path, *args, **kwargs)
        if Path(path) == staging:  # "another device"
            fields = list(result)
            fields[2] = result.st_dev + 1
            return os.stat_result(fields)
        return result

    def replace(src, dst, *args, **kwargs):
        if Path(src).parent == staging:
            raise OSError(errno.EXDEV, "Invalid cross-device link", str(src), None, str(dst))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "stat" if mount == "another-file-system" else "replace",
                        stat if mount == "another-file-system" else replace)
    publish.publish_files(staging, out, OUTPUT_FILES)
    monkeypatch.undo()
    assert {name: (out / name).read_text(encoding="utf-8") for name in OUTPUT_FILES} == \
        {name: "new " + name for name in OUTPUT_FILES}
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUT_FILES)  # no staging folder left inside


def test_replace_directory_changes_nothing_when_the_directory_cannot_move(tmp_path, monkeypatch):
    out = staged(tmp_path / "run", text="old ")
    new = staged(tmp_path / (publish.sibling_prefix(out) + "import-h" + publish.PARTIAL))
    monkeypatch.setattr(publish, "rename_exchange", exchange_unsupported)
    cannot_move(monkeypatch, out)
    with pytest.raises(OSError):
        publish.replace_directory(new, out)
    monkeypatch.undo()
    assert (out / "report.html").read_text(encoding="utf-8") == "old report.html"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["run", new.name])
