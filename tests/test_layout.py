"""The package's layout rules, checked on its source (issue 12).

Data flows one way, a folder per stage: ``format`` (the run format as data) -> ``io`` (parsing,
files, pointers, atomic writes) -> ``records`` (raw run -> attempt records) -> ``metrics`` ->
``simulation`` (writes synthetic raw runs, checks its truth with the metrics) -> ``outputs``
(files and pages) -> ``cli``.  A module may import from its own stage or an earlier one, never a
later one; no private name crosses a module boundary; modules and functions stay short unless a
comment says why (``# long module: ...`` near the top, ``# long function: ...`` on the ``def`` line
or the line above it).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from conftest import REPO


def _layout():
    spec = importlib.util.spec_from_file_location("layout", REPO / "scripts" / "layout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: the scan of scripts/layout.py, which also draws the layout's picture (STAGES, PAGES, the imports)
layout = _layout()
PACKAGE, modules, module_name, stage_of, imports = (layout.PACKAGE, layout.modules, layout.module_name,
                                                    layout.stage_of, layout.imports)
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def test_every_top_level_part_has_a_stage():
    for path in modules():
        stage_of(module_name(path))


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_from_a_later_stage(path):
    here = module_name(path)
    late = [f"line {line}: {target}" for line, target, _ in imports(path)
            if not target.startswith(".") and stage_of(target) > stage_of(here)]
    assert not late, f"{here} imports from a later stage: {late}"


def test_each_page_is_a_room_of_its_own():
    """No page package of outputs/ imports another, and what the pages share imports no page; the
    picture (``python scripts/layout.py``) prints the same finding."""
    counted = layout.edges()
    assert {part for (part, _) in counted} >= {f"outputs.{page}" for page in layout.PAGES}
    assert layout.against_the_flow(counted) == []


def test_the_layout_check_catches_an_import_against_the_flow():
    from collections import Counter

    bad = layout.against_the_flow(Counter({("outputs.board", "outputs.report"): 1, ("metrics", "outputs"): 2,
                                           ("outputs.html", "outputs.gate"): 1, ("outputs.documents", "outputs.board"): 1}))
    assert bad == ["metrics -> outputs (2): a later stage", "outputs.board -> outputs.report (1): another page",
                   "outputs.html -> outputs.gate (1): a page, from what the pages share"]


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_are_absolute(path):
    relative = [f"line {line}: from {target} import ..." for line, target, _ in imports(path) if target.startswith(".")]
    assert not relative, relative


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_name_is_imported_across_modules(path):
    private = [f"line {line}: {name} from {target}" for line, target, names in imports(path)
               for name in names if name.startswith("_") and not name.startswith("__")]
    private += [f"line {line}: {target}" for line, target, _ in imports(path)
                if any(part.startswith("_") and not part.startswith("__") and part != "_version"
                       for part in target.split("."))]
    assert not private, f"{module_name(path)} imports private names: {private}"


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_are_short_unless_a_comment_says_why(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    if len(lines) > MAX_MODULE_LINES:
        head = "\n".join(lines[:60])
        assert "# long module:" in head, (
            f"{path.relative_to(REPO)} has {len(lines)} lines (> {MAX_MODULE_LINES}) and no '# long module: why' comment")


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_functions_are_short_unless_a_comment_says_why(path):
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    long = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            length = node.end_lineno - first + 1
            context = " ".join(lines[max(first - 2, 0): node.lineno])
            if length > MAX_FUNCTION_LINES and "# long function:" not in context:
                long.append(f"{node.name} (line {node.lineno}, {length} lines)")
    assert not long, f"{path.relative_to(REPO)}: functions over {MAX_FUNCTION_LINES} lines without a reason: {long}"


def test_test_modules_mirror_the_package_and_none_is_named_after_an_issue():
    tests = REPO / "tests"
    names = [p.name for p in tests.rglob("test_*.py")]
    assert len(names) == len(set(names)), "test module basenames must be unique (tests/ folders have no __init__.py)"
    assert not [n for n in names if "issue" in n], "a test module is named after an issue"
    for folder in ("format", "io", "records", "metrics", "simulation", "outputs"):
        assert (PACKAGE / folder).is_dir() and (tests / folder).is_dir(), folder


def test_test_modules_import_shared_builders_only_from_conftest():
    crossing = []
    for path in (REPO / "tests").rglob("*.py"):
        for line, target, _ in imports_any(path):
            if target.split(".")[0].startswith("test_"):
                crossing.append(f"{path.relative_to(REPO)}:{line} imports {target}")
    assert not crossing, crossing


def imports_any(path: Path) -> list[tuple[int, str, list[str]]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name, []) for a in node.names)
    return found
