"""The header of an inspect_ai log, checked before the mapping reads it.

inspect writes each header value the mapping reads with one JSON type (``eval.config`` an object,
``status`` a string, ...); a log with another type there (damaged, hand-edited or hostile) is refused
with one line naming the value (``inspect-format``), instead of failing deep in the mapping.
"""

from __future__ import annotations

from typing import Any

from capbench_nb.errors import InvalidRunError
from capbench_nb.format import MAX_SAFE_NUMBER
from capbench_nb.records.importers import common

__all__ = ["HEADER_TYPES", "check_header"]


#: Header values the mapping reads, with the JSON types inspect writes for them (null always allowed).
HEADER_TYPES = (
    (("eval", "config"), dict, "an object"), (("eval", "dataset"), dict, "an object"),
    (("eval", "dataset", "sample_ids"), list, "a list"), (("eval", "packages"), dict, "an object"),
    (("eval", "scorers"), list, "a list"), (("status",), str, "a string"),
    (("eval", "task"), str, "a string"), (("eval", "model"), str, "a string"),
    (("eval", "run_id"), str, "a string"), (("eval", "eval_id"), str, "a string"),
    (("eval", "created"), str, "a string"), (("eval", "task_version"), (str, int), "a string or an integer"),
)


def check_header(file: str, header: Any) -> None:
    """The header is an object with an ``eval`` object, and each value the mapping reads has inspect's type."""
    if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
        raise InvalidRunError(file, "inspect-format", "no 'eval' object: not an inspect_ai log")
    for keys, kind, name in HEADER_TYPES:
        value = header
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            raise InvalidRunError(file, "inspect-format",
                                  f"{'.'.join(keys)} must be {name} (or null), found {common.describe(value)}")
    version = header["eval"].get("task_version")
    if isinstance(version, int) and abs(version) > MAX_SAFE_NUMBER:
        raise InvalidRunError(file, "number-too-large",
                              f"eval.task_version {common.describe(version)} is beyond 2**53-1")
