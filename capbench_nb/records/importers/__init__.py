"""Importers: other tools' results as ordinary runs (``capbench-nb import ...``).

- :func:`import_inspect`: inspect_ai logs (``.json`` and ``.eval``);
- :func:`import_taubench`: tau-bench result files (JSON list of trials, or JSON lines);
- :func:`import_tau2bench`: tau2-bench results (a results file, or a folder of them).

Each writes a complete run directory (manifest.json, results.jsonl and one
``attempts/<task>/<attempt>/record.json`` per attempt) that every other
command reads unchanged.  The mappings are documented in docs/importers.md.
"""

from capbench_nb.records.importers.common import ImportReport
from capbench_nb.records.importers.inspect_logs import import_inspect
from capbench_nb.records.importers.tau2bench import import_tau2bench
from capbench_nb.records.importers.taubench import import_taubench

__all__ = ["ImportReport", "import_inspect", "import_taubench", "import_tau2bench"]
