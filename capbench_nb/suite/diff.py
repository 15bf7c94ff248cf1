"""How two locks differ (spec section 12: the ``lock`` warning of compare and board).

:func:`lock_differences` names the differing top-level sections and the differing paths as JSON
pointers, apps addressed by ``package`` and tasks by ``task_id`` rather than position
(``/apps/net.osmand/version_code``, ``/tasks/settings.wifi.toggle/seed``).
"""

from __future__ import annotations

from typing import Any, Iterator

from capbench_nb.format.lock import LOCK_DIFF_PATHS
from capbench_nb.io.pointer import escape_token
from capbench_nb.records.outcome import json_equal

__all__ = ["lock_differences", "differing_paths"]

#: Lists whose items are addressed by a key, not by position.
_KEYED = {"/apps": "package", "/tasks": "task_id"}
_MISSING = object()


def _keyed(items: list, key: str) -> dict | None:
    """The items of a list by their ``key`` (None when an item has none, or a key repeats)."""
    out = {}
    for item in items:
        name = item.get(key) if isinstance(item, dict) else None
        if not isinstance(name, str) or name in out:
            return None
        out[name] = item
    return out


def differing_paths(a: Any, b: Any, pointer: str = "") -> Iterator[str]:
    """JSON pointers of every leaf where ``a`` and ``b`` differ (an absent key: its path), in a stable order:
    object keys sorted, list items by position or, under ``/apps`` and ``/tasks``, by package / task_id."""
    if a is _MISSING or b is _MISSING or type(a) is not type(b) and not (
            isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool)
            and not isinstance(b, bool)):
        yield pointer
        return
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            yield from differing_paths(a.get(key, _MISSING), b.get(key, _MISSING), f"{pointer}/{escape_token(key)}")
        return
    if isinstance(a, list):
        key = _KEYED.get(pointer)
        ka, kb = (_keyed(a, key), _keyed(b, key)) if key else (None, None)
        if ka is not None and kb is not None:
            names = list(ka) + [name for name in kb if name not in ka]
            for name in names:
                yield from differing_paths(ka.get(name, _MISSING), kb.get(name, _MISSING),
                                           f"{pointer}/{escape_token(name)}")
            return
        for i in range(max(len(a), len(b))):
            yield from differing_paths(a[i] if i < len(a) else _MISSING, b[i] if i < len(b) else _MISSING,
                                       f"{pointer}/{i}")
        return
    if not json_equal(a, b):
        yield pointer


def lock_differences(a: dict, b: dict, *, limit: int = LOCK_DIFF_PATHS) -> tuple[list[str], list[str], int]:
    """(differing top-level sections, up to ``limit`` differing paths, the number of differing paths) of two
    locks, their ``digest`` left out."""
    sections = sorted(key for key in set(a) | set(b) if key != "digest"
                      and any(True for _ in differing_paths(a.get(key, _MISSING), b.get(key, _MISSING))))
    paths = [p for key in sections for p in differing_paths(a.get(key, _MISSING), b.get(key, _MISSING),
                                                             f"/{escape_token(key)}")]
    return sections, paths[:limit], len(paths)
