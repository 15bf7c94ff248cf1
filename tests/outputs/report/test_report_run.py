"""``capbench-nb report``: the notebooks executed by papermill, the outputs, the HTML, failures.

One report of the sample run is built per module (``built``) and shared by the
checks on its outputs; the other executions are the ones a check needs for
itself (a path with spaces and quotes through the CLI, a failing cell, the
explore notebook).  Each papermill execution takes a few seconds.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from conftest import REPO, SAMPLE_RUN, TINY_REPORT_NOTEBOOK, manifest, outcomes, write_run

from capbench_nb import compute_metrics, load_run
from capbench_nb.cli import main
from capbench_nb.io.atomic import dumps
from capbench_nb.outputs import build
from capbench_nb.outputs.report import run as reportrun
from capbench_nb.outputs.verify import _ABSENT, diff_lines, verify

NOTEBOOKS = REPO / "notebooks"
OUTPUTS = ("report.html", "report.ipynb", "metrics.json", "summary.md")


def summary_markdown(doc: dict) -> str:
    from capbench_nb.outputs.report.page import summary_markdown as render

    return render(doc)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The sample run reported once into a fresh directory (shared, read-only)."""
    out = tmp_path_factory.mktemp("report") / "out"
    html = reportrun.build_report(SAMPLE_RUN, out, progress=False)
    assert html == out / "report.html"
    return out


@pytest.fixture(scope="module")
def tiny_notebook(tmp_path_factory) -> Path:
    """A two-cell report notebook (metrics.json and summary.md, no figures): for the tests of publishing,
    which are about where the four outputs go, not what the page shows."""
    notebook = tmp_path_factory.mktemp("tiny") / "tiny.ipynb"
    notebook.write_text(json.dumps(TINY_REPORT_NOTEBOOK), encoding="utf-8")
    return notebook


@pytest.fixture(scope="module")
def expected_doc() -> dict:
    return compute_metrics(load_run(SAMPLE_RUN))


def leftovers(directory: Path) -> list[str]:
    """Staging folders a build left behind, inside the output directory (when it exists) or next to it."""
    inside = [p.name for p in directory.iterdir() if p.name.startswith(".capbench-report-")] if directory.is_dir() else []
    beside = [p.name for p in directory.parent.iterdir() if p.name.startswith(f".{directory.name}.capbench-")]
    return sorted(inside + beside)


# --------------------------------------------------------------------------- the committed notebooks


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_notebooks_are_committed_stripped(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name} cell {i} has outputs"
            assert cell.execution_count is None, f"{path.name} cell {i} has an execution count"
    assert "papermill" not in nb.metadata
    assert nb.metadata["kernelspec"]["language"] == "python"


def test_both_notebooks_exist():
    assert {p.name for p in NOTEBOOKS.glob("*.ipynb")} >= {"run_report.ipynb", "explore.ipynb"}


def test_run_report_has_one_typed_parameters_cell():
    import papermill

    nb = nbformat.read(NOTEBOOKS / "run_report.ipynb", as_version=4)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    params = papermill.inspect_notebook(str(NOTEBOOKS / "run_report.ipynb"))
    assert {name: p["inferred_type_name"] for name, p in params.items()} == {
        "run_dir": "str", "out_dir": "str", "report_dir": "str", "allow_invalid": "bool", "skip_evidence": "bool", "slices": "list[str]",
        "quarantine_threshold": "float", "clusters": "list[str]",
    }
    assert all(p["help"] for p in params.values())  # each one commented
    assert json.loads(params["run_dir"]["default"]) == "../data/sample-run"
    assert (NOTEBOOKS / json.loads(params["run_dir"]["default"]) / "manifest.json").is_file()


def test_run_report_only_calls_into_the_package():
    nb = nbformat.read(NOTEBOOKS / "run_report.ipynb", as_version=4)
    imported = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported.add(node.module.split(".")[0])
            assert not isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.For, ast.While, ast.Lambda))
    assert imported <= {"capbench_nb", "pathlib"}


def test_the_report_template_is_package_data():
    from importlib import resources

    template = resources.files("capbench_nb.outputs.html").joinpath("templates", build.HTML_TEMPLATE)
    assert template.joinpath("index.html.j2").is_file() and template.joinpath("conf.json").is_file()
    assert reportrun.find_notebook(reportrun.REPORT_NOTEBOOK) == NOTEBOOKS / "run_report.ipynb"
    with pytest.raises(FileNotFoundError):
        reportrun.find_notebook("no-such-notebook.ipynb")


# --------------------------------------------------------------------------- outputs of a report


def test_report_writes_the_four_outputs_and_nothing_else(built):
    assert sorted(p.name for p in built.iterdir()) == sorted(OUTPUTS)


def test_metrics_json_is_byte_identical_to_compute_metrics(built, expected_doc):
    assert (built / "metrics.json").read_bytes() == dumps(expected_doc).encode("utf-8")


def test_summary_md_is_summary_markdown(built, expected_doc):
    assert (built / "summary.md").read_text(encoding="utf-8") == summary_markdown(expected_doc)


def test_outputs_are_ordinary_files(built):
    mask = os.umask(0)
    os.umask(mask)
    for name in OUTPUTS:
        assert (built / name).stat().st_mode & 0o777 == 0o666 & ~mask, name


def test_executed_notebook_has_outputs_and_no_errors(built):
    nb = nbformat.read(built / "report.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    assert sum(1 for c in code if c.outputs) >= 5
    assert nb.metadata["papermill"]["parameters"]["run_dir"] == str(SAMPLE_RUN)


class _Resources(HTMLParser):
    """Every URL an HTML page would load: src/href/srcset/data of loading tags, CSS url() and @import."""

    LOADING = frozenset({"script", "link", "img", "iframe", "frame", "embed", "object", "source", "audio",
                         "video", "track", "image", "use", "input", "base"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.loads: list[tuple[str, str]] = []
        self.images: list[str] = []
        self.scripts_with_src = 0
        self._style = False
        self.css: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in self.LOADING:
            for name in ("src", "href", "data", "srcset", "poster", "xlink:href"):
                if attrs.get(name):
                    self.loads.append((tag, attrs[name]))
        if tag == "img":
            self.images.append(attrs.get("src") or "")
        if tag == "script" and attrs.get("src"):
            self.scripts_with_src += 1
        if attrs.get("style"):
            self.css.append(attrs["style"])
        self._style = tag == "style"

    def handle_endtag(self, tag):
        self._style = False

    def handle_data(self, data):
        if self._style:
            self.css.append(data)


def _remote(url: str) -> bool:
    url = url.strip().lower()
    return url.startswith(("http:", "https:", "//", "ftp:", "file:")) or bool(re.match(r"^[a-z][a-z0-9+.-]*://", url))


def test_report_html_is_self_contained(built):
    html = (built / "report.html").read_text(encoding="utf-8")
    page = _Resources()
    page.feed(html)
    assert [load for load in page.loads if _remote(load[1])] == []
    assert page.scripts_with_src == 0
    assert page.images and all(src.startswith("data:image/") for src in page.images)
    css = "\n".join(page.css)
    assert "@import" not in css
    urls = re.findall(r"url\(\s*['\"]?([^'\")]*)", css)
    assert [u for u in urls if not u.startswith(("data:", "#"))] == []
    for cdn in ("require.js", "mathjax", "mermaid.esm", "cdnjs", "unpkg.com", "jsdelivr", "fonts.googleapis"):
        assert cdn not in html.lower(), cdn


def test_report_html_has_the_run_and_no_code(built, expected_doc):
    html = (built / "report.html").read_text(encoding="utf-8")
    assert expected_doc["run_id"] in html
    assert "<title>" + expected_doc["run_id"] in html
    for code in ("compute_metrics(", "load_run(", "reporting.show_", "write_atomic(", "import capbench_nb",
                 "allow_invalid: bool"):
        assert code not in html, code
    assert "In&nbsp;[" not in html and "Out[&nbsp;" not in html
    assert not re.search(r'class="[^"]*jp-(Input|Output)Prompt', html)  # no prompts (the CSS names them)
    assert "pass@1" in html and "Coverage" in html  # the explanations of the markdown cells


def test_verify_passes_on_fresh_outputs_and_checks_summary(built, capsys):
    assert main(["verify", str(SAMPLE_RUN), "--out", str(built)]) == 0
    assert "verified" in capsys.readouterr().out


def test_verify_catches_an_edited_number_in_summary_md(built, tmp_path, capsys):
    out = tmp_path / "out"
    shutil.copytree(built, out)
    text = (out / "summary.md").read_text(encoding="utf-8")
    lines = text.split("\n")
    n = next(i for i, line in enumerate(lines) if re.search(r"\d", line))
    lines[n] = re.sub(r"\d", lambda m: str((int(m.group()) + 1) % 10), lines[n], count=1)
    (out / "summary.md").write_text("\n".join(lines), encoding="utf-8")
    assert main(["verify", str(SAMPLE_RUN), "--out", str(out)]) == 1
    captured = capsys.readouterr()
    problems = captured.out.strip().splitlines()
    assert len(problems) == 1 and problems[0].startswith(f"{out / 'summary.md'} line {n + 1}: found ")
    [problem] = verify(SAMPLE_RUN, out)
    assert (problem.pointer, problem.found, problem.expected) == (f"line {n + 1}", lines[n], text.split("\n")[n])
    assert "1 disagreement(s)" in captured.err


def test_verify_without_summary_md_checks_metrics_only(built, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(built / "metrics.json", out / "metrics.json")
    assert main(["verify", str(SAMPLE_RUN), "--out", str(out)]) == 0


def test_diff_lines_aligns_insertions_and_deletions():
    base = "a\nb\nc\nd\n"
    assert diff_lines(base, base) == []
    changed = diff_lines("a\nB\nc\nd\n", base, file="s.md")
    assert [(d.pointer, d.found, d.expected) for d in changed] == [("line 2", "B", "b")]
    assert str(changed[0]) == 's.md line 2: found "B", recomputed "b"'
    extra = diff_lines("a\nb\nX\nc\nd\n", base)
    assert [(d.pointer, d.found) for d in extra] == [("line 3", "X")]
    assert "recomputed nothing" in str(extra[0])
    missing = diff_lines("a\nc\nd\n", base)
    assert [(d.pointer, d.expected) for d in missing] == [("line 2", "b")]
    assert "found nothing" in str(missing[0])
    no_newline = diff_lines("a\nb\nc\nd", base)
    assert [(d.pointer, d.found, d.expected) for d in no_newline] == [("line 5", _ABSENT, "")]
    long_line = "x" * 100 + " 63.6% " + "y" * 100
    [cut] = diff_lines(long_line.replace("63.6", "73.6"), long_line)
    assert '"...xxxxxxxxxxxxxxxxxxx 73.6% yyy' in str(cut) and '"...xxxxxxxxxxxxxxxxxxx 63.6% yyy' in str(cut)


# --------------------------------------------------------------------------- the CLI, a hostile setting


def test_cli_report_on_a_path_with_spaces_and_quotes(built, tmp_path, monkeypatch, capfd):
    """Relative RUN_DIR with spaces and quotes, outputs into RUN_DIR, a broken user-wide python3
    kernelspec, MPLBACKEND=Agg: the report is the same, figures included, and nothing else is written."""
    parent = tmp_path / "runs"
    run = parent / "it's a \"quoted\" run, with spaces"
    shutil.copytree(SAMPLE_RUN, run)
    before = sorted(p.relative_to(run).as_posix() for p in run.rglob("*"))
    bogus = tmp_path / "jupyter" / "kernels" / "python3"
    bogus.mkdir(parents=True)
    (bogus / "kernel.json").write_text(json.dumps(
        {"argv": ["/nonexistent/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
         "display_name": "broken", "language": "python"}), encoding="utf-8")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(parent)

    assert main(["report", run.name, "--no-progress"]) == 0
    captured = capfd.readouterr()
    assert captured.out.strip() == str(Path(run.name) / "report.html")
    assert captured.err == ""  # quiet when not asked for progress: kernel included
    after = sorted(p.relative_to(run).as_posix() for p in run.rglob("*"))
    assert after == sorted(before + list(OUTPUTS))
    for name in ("metrics.json", "summary.md"):  # the same run reported twice: the same bytes
        assert (run / name).read_bytes() == (built / name).read_bytes()
    html = (run / "report.html").read_text(encoding="utf-8")
    assert html.count("data:image/png;base64,") == (built / "report.html").read_text(encoding="utf-8").count(
        "data:image/png;base64,") > 0
    nb = nbformat.read(run / "report.ipynb", as_version=4)
    assert nb.metadata["papermill"]["parameters"]["run_dir"] == str(run)
    assert os.environ["JUPYTER_PATH"] == str(tmp_path / "jupyter")  # restored


def test_own_kernel_is_this_python_and_leaves_the_environment_as_it_was(monkeypatch):
    from jupyter_client.kernelspec import KernelSpecManager

    monkeypatch.delenv("JUPYTER_PATH", raising=False)
    with build.own_kernel() as name:
        spec = KernelSpecManager().get_kernel_spec(name)
        assert spec.argv[0] == sys.executable
        assert spec.argv[1:3] == ["-m", "ipykernel_launcher"]
        assert spec.env["MPLBACKEND"].endswith("backend_inline")
    assert "JUPYTER_PATH" not in os.environ


def test_allow_invalid_reaches_the_notebook(tmp_path, capsys):
    run = write_run(tmp_path / "run", manifest([("t1", 2), ("t2", 2)], k=2),
                    outcomes({"t1": "SA", "t2": "ES"}) + ['{"task_id": "t2", "attempt": 3, "success": "yes"}'])
    out = tmp_path / "out"
    assert main(["report", str(run), "--out", str(out)]) == 2  # strict by default
    assert not out.exists()
    capsys.readouterr()
    assert main(["report", str(run), "--out", str(out), "--allow-invalid", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == str(out / "report.html")
    assert "1 invalid line(s) skipped" in captured.err
    doc = compute_metrics(load_run(run, strict=False))
    assert doc["anomaly_counts"]["invalid_line"] == 1
    assert (out / "metrics.json").read_bytes() == dumps(doc).encode("utf-8")
    assert (out / "summary.md").read_text(encoding="utf-8") == summary_markdown(doc)
    assert main(["verify", str(run), "--out", str(out)]) == 0  # verify follows the stored option


# --------------------------------------------------------------------------- failures


def test_bad_input_exits_2_before_any_notebook_runs(tmp_path, monkeypatch, capsys):
    def must_not_run(*args, **kwargs):
        raise AssertionError("a notebook ran on bad input")

    monkeypatch.setattr(build, "execute_notebook", must_not_run)
    run = write_run(tmp_path / "run", manifest([("t1", 2)]), outcomes({"t1": "SA"}))
    with open(run / "results.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"task_id": "t1", "attempt": ')
    out = tmp_path / "out"
    assert main(["report", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "results.jsonl:3" in err and "[rule: truncated-line]" in err
    assert not out.exists()
    assert main(["report", str(tmp_path / "missing")]) == 2


def _failing_notebook(tmp_path: Path) -> tuple[Path, int]:
    """run_report.ipynb whose explorer cell raises after drawing; returns it and that cell's number."""
    nb = nbformat.read(NOTEBOOKS / "run_report.ipynb", as_version=4)
    index = next(i for i, c in enumerate(nb.cells) if "show_explorer" in c.source)
    nb.cells[index].source += '\nraise ValueError("the task explorer\\nexploded")'
    path = tmp_path / "failing report.ipynb"
    nbformat.write(nb, path)
    number = sum(1 for c in nb.cells[: index + 1] if c.cell_type == "code")
    return path, number


def test_a_failing_cell_exits_3_naming_the_cell_and_leaves_previous_outputs(built, tmp_path, monkeypatch, capfd):
    failing, number = _failing_notebook(tmp_path)
    monkeypatch.setattr(reportrun, "find_notebook", lambda name=reportrun.REPORT_NOTEBOOK: failing)
    out = tmp_path / "out"
    shutil.copytree(built, out)  # a previous, complete report
    previous = {name: (out / name).read_bytes() for name in OUTPUTS}

    assert main(["report", str(SAMPLE_RUN), "--out", str(out), "--no-progress"]) == 3
    captured = capfd.readouterr()
    assert captured.out == ""
    assert captured.err == (f"capbench-nb: error: report notebook failed in cell {number} "
                            "(page.show_explorer(doc, run, report_dir=report_dir)): ValueError: the task explorer exploded\n")
    assert {name: (out / name).read_bytes() for name in OUTPUTS} == previous
    assert leftovers(out) == []


def _headline_replaced(path: Path, source: str) -> tuple[Path, int]:
    """The report notebook with its headline cell's code replaced, written to ``path``; and that cell's number."""
    nb = nbformat.read(NOTEBOOKS / "run_report.ipynb", as_version=4)
    index = next(i for i, c in enumerate(nb.cells) if "page.show_headline" in c.source)
    nb.cells[index].source = source
    nbformat.write(nb, path)
    return path, sum(1 for c in nb.cells[: index + 1] if c.cell_type == "code")


def test_a_failing_cell_leaves_no_outputs(tmp_path):
    failing, number = _headline_replaced(tmp_path / "failing.ipynb", "# the headline\n1 / 0")
    out = tmp_path / "out"
    with pytest.raises(build.ReportError) as info:
        reportrun.build_report(SAMPLE_RUN, out, progress=False, notebook=failing)
    assert str(info.value) == f"report notebook failed in cell {number} (1 / 0): ZeroDivisionError: division by zero"
    assert (info.value.cell, info.value.ename) == (number, "ZeroDivisionError")
    # metrics.json and summary.md were written by then, into the staging folder only, which is gone
    assert not out.exists() and leftovers(out) == []


def test_a_kernel_that_dies_is_reported_with_its_cell(tmp_path, capfd):
    dying, number = _headline_replaced(tmp_path / "dying.ipynb", "import os\n\nos._exit(1)  # as an out-of-memory kill would")
    out = tmp_path / "out"
    with pytest.raises(build.ReportError) as info:
        reportrun.build_report(SAMPLE_RUN, out, progress=False, notebook=dying)
    assert str(info.value) == f"report notebook failed in cell {number} (import os): DeadKernelError: Kernel died"
    assert not out.exists() and leftovers(out) == []
    assert capfd.readouterr().err == ""


# --------------------------------------------------------------------------- explore.ipynb


def test_explore_notebook_runs_with_its_defaults_from_the_notebooks_folder(tmp_path):
    import papermill

    before = sorted(p.name for p in NOTEBOOKS.iterdir())
    with build.own_kernel() as kernel:
        nb = papermill.execute_notebook(
            str(NOTEBOOKS / "explore.ipynb"), str(tmp_path / "explore.ipynb"),
            kernel_name=kernel, progress_bar=False, cwd=str(NOTEBOOKS),  # Jupyter's working directory
        )
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    text = json.dumps([c.outputs for c in code])
    assert "pass@1 = " in text and "95% CI" in text
    slice_cell = next(c for c in code if "groupby" in c.source)
    table = slice_cell.outputs[0]["data"]["text/plain"]
    run = load_run(SAMPLE_RUN)
    for app in run.plan["app"].dropna().unique():
        assert app in table
    assert sorted(p.name for p in NOTEBOOKS.iterdir()) == before  # nothing written next to the notebooks


def test_an_output_directory_that_cannot_move_is_published_file_by_file(tmp_path, monkeypatch, tiny_notebook):
    """A mount point cannot be renamed or exchanged (EBUSY, EXDEV): the outputs go in file by file, and
    across file systems through a staging folder inside it (simulated: another st_dev for the staging)."""
    import errno

    from capbench_nb.io import publish

    out = tmp_path / "mounted"
    reportrun.build_report(SAMPLE_RUN, out, progress=False, notebook=tiny_notebook)
    inode = out.stat().st_ino
    previous = {name: (out / name).stat().st_ino for name in OUTPUTS}

    def busy(*args, **kwargs):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    real_rename, real_stat = os.rename, os.stat

    def rename(src, dst, *args, **kwargs):
        if Path(src) == out:
            raise OSError(errno.EBUSY, "Device or resource busy", str(src))
        return real_rename(src, dst, *args, **kwargs)

    def stat(path, *args, **kwargs):
        result = real_stat(path, *args, **kwargs)
        if Path(path).name.startswith(".mounted.capbench-"):  # the sibling staging folder: "another device"
            fields = list(result)
            fields[2] = result.st_dev + 1
            return os.stat_result(fields)
        return result

    monkeypatch.setattr(publish, "rename_exchange", busy)
    monkeypatch.setattr(os, "rename", rename)
    monkeypatch.setattr(os, "stat", stat)
    reportrun.build_report(SAMPLE_RUN, out, progress=False, notebook=tiny_notebook)
    monkeypatch.undo()
    assert out.stat().st_ino == inode  # the folder itself stayed
    assert all((out / name).stat().st_ino != previous[name] for name in OUTPUTS)  # every file replaced
    assert leftovers(out) == []
    assert verify(SAMPLE_RUN, out) == []


def test_an_output_directory_with_a_name_at_the_file_system_limit(tmp_path, tiny_notebook):
    out = tmp_path / ("é" * 127)  # 254 bytes: no room for a prefix and a suffix around it
    reportrun.build_report(SAMPLE_RUN, out, progress=False, notebook=tiny_notebook)
    first = out.stat().st_ino
    reportrun.build_report(SAMPLE_RUN, out, progress=False, notebook=tiny_notebook)
    assert out.stat().st_ino != first  # the second replaced the first as a whole (a folder swap)
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUTS)
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]


# --------------------------------------------------------------------------- output directories: mounts, permissions


@contextlib.contextmanager
def bind_mount(source: Path, target: Path, *, read_only: bool = False):
    """``source`` mounted again at ``target`` (``mount --bind``; root only: the test is skipped otherwise)."""
    target.mkdir(exist_ok=True)
    proc = subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"mount --bind is not permitted here: {proc.stderr.strip()}")
    try:
        if read_only:
            subprocess.run(["mount", "-o", "remount,bind,ro", str(target)], check=True, capture_output=True)
        yield target
    finally:
        subprocess.run(["umount", str(target)], check=True, capture_output=True)


def test_a_report_into_a_bind_mount(tmp_path, tiny_notebook):
    """A rename from the staging folder beside the mount point into it is EXDEV, though both show one st_dev:
    the outputs go in through a staging folder inside it."""
    (tmp_path / "disk").mkdir()
    with bind_mount(tmp_path / "disk", tmp_path / "mounted") as out:
        reportrun.build_report(SAMPLE_RUN, out, progress=False, notebook=tiny_notebook)
        assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUTS) and leftovers(out) == []
        assert verify(SAMPLE_RUN, out) == []
    assert sorted(p.name for p in (tmp_path / "disk").iterdir()) == sorted(OUTPUTS)


def test_a_read_only_run_directory_without_out_says_so(tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(SAMPLE_RUN, tmp_path / "disk")
    with bind_mount(tmp_path / "disk", run, read_only=True):
        assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err
    assert err == (f"capbench-nb: error: {run}: the run directory is not writable (Read-only file system); "
                   "write the outputs elsewhere with --out DIR [rule: output-unwritable]\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["disk", "run"]


def test_an_output_directory_without_write_permission_is_refused_not_swapped(tmp_path):
    """An empty mode-0555 --out: one line, exit 2, the directory itself unchanged (a swap through its writable
    parent would replace it).  Root, which may write anywhere, runs the command without CAP_DAC_OVERRIDE."""
    out = tmp_path / "locked"
    out.mkdir()
    out.chmod(0o555)
    inode = out.stat().st_ino
    command = [sys.executable, "-m", "capbench_nb.cli", "report", str(SAMPLE_RUN), "--out", str(out)]
    if os.geteuid() == 0:
        if not shutil.which("capsh"):
            pytest.skip("running as root without capsh: cannot drop CAP_DAC_OVERRIDE")
        command = ["capsh", "--drop=cap_dac_override,cap_dac_read_search", "--", "-c", shlex.join(command)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (f"capbench-nb: error: {out}: the output directory is not writable (Permission denied) "
                           "[rule: output-unwritable]\n")
    assert out.stat().st_ino == inode and list(out.iterdir()) == [] and out.stat().st_mode & 0o777 == 0o555
    assert sorted(p.name for p in tmp_path.iterdir()) == ["locked"]
