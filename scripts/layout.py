"""The package's layout as data, and its picture: the stages, the page packages, the imports between them.

    .venv/bin/python scripts/layout.py       # the picture; exit 1 if an import goes against the flow

Data flows one way, a folder per stage: ``format`` (the run format as data) -> ``io`` (parsing, files,
pointers, atomic writes) -> ``records`` (raw run -> attempt records) -> ``suite`` -> ``metrics`` ->
``simulation`` -> ``outputs`` (files and pages) -> ``cli``.  A module may import from its own stage or an
earlier one, never a later one, and each page of ``outputs/`` is a package of its own that imports no
other page.  ``tests/test_layout.py`` checks these rules on the scan below; this script draws it: for
each part of the package, the parts it imports from and how many import statements do.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "capbench_nb"

#: stage of each top-level part of the package (a later stage may import an earlier one)
STAGES = {
    "_version": 0, "errors": 0, "format": 0,
    "io": 1,
    "records": 2,
    "suite": 2.5,  # the frozen suite (spec section 12): reads records, feeds metrics
    "metrics": 3,
    "simulation": 4,
    "outputs": 5,
    "cli": 6, "cli_options": 6, "cli_suite": 6, "cli_export": 6, "cli_simulate": 6, "cli_reference": 6,
    "__init__": 6,
}

#: the page packages of ``outputs/``: each holds its builder, its views and its notebook runner, and
#: imports no other page; what the pages share is in ``outputs/html`` and ``outputs``' own modules, which
#: import no page
PAGES = ("report", "comparison", "board", "gate", "subset")
#: the rooms of ``outputs/`` that are not pages: the shared HTML pieces, and ``documents`` (what
#: ``cb.compute_metrics``, ``cb.compare_runs`` and ``cb.board`` return), which shows each document in
#: Jupyter with its page's views and so sits above the pages
ROOMS = ("html", "documents")


def modules() -> list[Path]:
    """Every module of the package, in path order."""
    return sorted(p for p in PACKAGE.rglob("*.py") if ".ipynb_checkpoints" not in p.parts)


def module_name(path: Path) -> str:
    """``capbench_nb/outputs/report/page.py`` -> ``capbench_nb.outputs.report.page``."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def stage_of(module: str) -> float:
    """The stage of a module of the package; an AssertionError for a top-level part without one."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    if top not in STAGES:
        raise AssertionError(f"{module}: no stage is declared for capbench_nb.{top} in scripts/layout.py")
    return STAGES[top]


def part_of(module: str) -> str:
    """The room a module belongs to: its top-level part, or ``outputs.<page>`` for a page package."""
    parts = module.split(".")[1:] or ["__init__"]
    if parts[0] == "outputs" and len(parts) > 1 and parts[1] in PAGES + ROOMS:
        return f"outputs.{parts[1]}"
    return parts[0]


def imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, imported module, names) of every import of capbench_nb, lazy ones included; a relative
    import is given with its dots (``..x``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("capbench_nb"):
            found.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.append((node.lineno, "." * node.level + (node.module or ""), [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name, []) for a in node.names if a.name.startswith("capbench_nb"))
    return found


def edges() -> Counter:
    """``(importing part, imported part) -> import statements``, over every module of the package."""
    counted: Counter = Counter()
    for path in modules():
        here = part_of(module_name(path))
        for _, target, _ in imports(path):
            if not target.startswith("."):
                counted[here, part_of(target)] += 1
    return counted


def against_the_flow(counted: Counter) -> list[str]:
    """The imports that break the layout: to a later stage, from one page package to another, or from
    what the pages share (``outputs``' own modules, ``outputs.html``) to a page."""
    pages = {f"outputs.{p}" for p in PAGES}
    bad = []
    for (here, there), n in sorted(counted.items()):
        if stage_of(f"capbench_nb.{there}") > stage_of(f"capbench_nb.{here}"):
            bad.append(f"{here} -> {there} ({n}): a later stage")
        elif here != there and {here, there} <= pages:
            bad.append(f"{here} -> {there} ({n}): another page")
        elif here in ("outputs", "outputs.html") and there in pages:
            bad.append(f"{here} -> {there} ({n}): a page, from what the pages share")
    return bad


def picture(counted: Counter) -> str:
    """One line per part, by stage: the parts it imports from, with the number of import statements."""
    parts = sorted({p for edge in counted for p in edge} | {part_of(module_name(p)) for p in modules()},
                   key=lambda p: (stage_of(f"capbench_nb.{p}"), p))
    sizes = Counter()
    for path in modules():
        sizes[part_of(module_name(path))] += 1
    lines = ["stage  part                 modules  imports from (import statements)"]
    for part in parts:
        uses = sorted(((there, n) for (here, there), n in counted.items() if here == part and there != part),
                      key=lambda e: (stage_of(f"capbench_nb.{e[0]}"), e[0]))
        used = ", ".join(f"{there} {n}" for there, n in uses) or "-"
        lines.append(f"{stage_of('capbench_nb.' + part):<6g} {part:<20} {sizes[part]:>7}  {used}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    counted = edges()
    print(picture(counted))
    bad = against_the_flow(counted)
    print("against the flow: " + ("; ".join(bad) if bad else "none (no import to a later stage, no page imports another, the shared modules import no page)"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
