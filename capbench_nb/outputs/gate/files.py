"""The gate's three files in one directory: gate.json, gate.md, junit.xml (spec section 15)."""

from __future__ import annotations

import os
from pathlib import Path

from capbench_nb.io.atomic import dumps, write_atomic
from capbench_nb.outputs.gate.junit import gate_junit
from capbench_nb.outputs.gate.markdown import gate_markdown

__all__ = ["GATE_FILE", "GATE_MARKDOWN", "GATE_JUNIT", "DEFAULT_OUT", "write_gate"]

GATE_FILE = "gate.json"
GATE_MARKDOWN = "gate.md"
GATE_JUNIT = "junit.xml"
DEFAULT_OUT = "gate"


def write_gate(doc: dict, out_dir: str | os.PathLike = DEFAULT_OUT) -> Path:
    """Write gate.json, gate.md and junit.xml of ``doc`` into ``out_dir`` (made if missing); return gate.json's path.

    Each file is written atomically; the bytes depend only on ``doc``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / GATE_MARKDOWN, gate_markdown(doc))
    write_atomic(out / GATE_JUNIT, gate_junit(doc))
    return write_atomic(out / GATE_FILE, dumps(doc))
