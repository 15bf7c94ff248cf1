"""RFC 6901 JSON pointers: parse, resolve, escape, and ``FILE#POINTER`` references."""

from __future__ import annotations

from typing import Any, Iterator

__all__ = ["EvidenceError", "parse_pointer", "resolve_pointer", "escape_token", "expand_pattern", "split_reference"]


class EvidenceError(ValueError):
    """A JSON pointer or file reference that is malformed, escapes its directory or does not resolve."""


def parse_pointer(pointer: str) -> list[str]:
    """Split an RFC 6901 JSON pointer into unescaped reference tokens.

    ``""`` is the whole document; otherwise the pointer starts with ``/``.
    ``~1`` decodes to ``/`` and ``~0`` to ``~`` (in that order, as RFC 6901
    section 4 requires); any other ``~`` sequence is an error.
    """
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise EvidenceError(f"JSON pointer {pointer!r} must be empty or start with '/'")
    tokens = pointer[1:].split("/")
    for tok in tokens:
        i = tok.find("~")
        while i != -1:
            if i + 1 >= len(tok) or tok[i + 1] not in "01":
                raise EvidenceError(f"JSON pointer {pointer!r} has an invalid '~' escape")
            i = tok.find("~", i + 2)
    return [tok.replace("~1", "/").replace("~0", "~") for tok in tokens]


def resolve_pointer(document: Any, pointer: str) -> Any:
    """Return the value ``pointer`` refers to in ``document``.

    Raises
    ------
    EvidenceError
        When a token names a missing key, an index past the end (``-``
        included), a non-canonical index such as ``01``, or steps into a scalar.
    """
    node = document
    tokens = parse_pointer(pointer)
    for depth, tok in enumerate(tokens):
        where = "/" + "/".join(tokens[:depth]) if depth else "the document root"
        if isinstance(node, dict):
            if tok not in node:
                raise EvidenceError(f"pointer {pointer!r}: no key {tok!r} at {where}")
            node = node[tok]
        elif isinstance(node, list):
            if not tok.isdigit() or not tok.isascii() or (tok != "0" and tok.startswith("0")):
                raise EvidenceError(f"pointer {pointer!r}: {tok!r} is not an array index at {where}")
            idx = int(tok)
            if idx >= len(node):
                raise EvidenceError(
                    f"pointer {pointer!r}: index {idx} is past the end of the array "
                    f"(length {len(node)}) at {where}"
                )
            node = node[idx]
        else:
            raise EvidenceError(f"pointer {pointer!r}: cannot step into a {type(node).__name__} at {where}")
    return node


def split_reference(reference: str) -> tuple[str, str]:
    """Split ``FILE#POINTER`` at its first ``#``; the pointer is used as written."""
    file, sep, pointer = reference.partition("#")
    if not sep or not file:
        raise EvidenceError(f"evidence reference {reference!r} is not of the form FILE#JSON_POINTER")
    return file, pointer


def escape_token(key: str) -> str:
    """One reference token of a pointer: ``~`` as ``~0`` and ``/`` as ``~1`` (RFC 6901 section 3)."""
    return key.replace("~", "~0").replace("/", "~1")


def expand_pattern(doc: Any, pattern: str) -> Iterator[tuple[str, Any, bool]]:
    """(pointer, value, present) of every place ``pattern`` (a JSON pointer whose token ``*`` is every index of
    a list, as the field tables write it) names in ``doc`` whose parent exists and has the right container
    type; an absent last key is yielded with ``present`` False and value None."""
    places = [("", doc)]
    tokens = pattern.split("/")[1:] if pattern else []
    for depth, token in enumerate(tokens):
        last = depth == len(tokens) - 1
        nxt = []
        for pointer, value in places:
            if token == "*":
                if isinstance(value, list):
                    nxt.extend((f"{pointer}/{i}", item) for i, item in enumerate(value))
            elif isinstance(value, dict):
                if token in value:
                    nxt.append((f"{pointer}/{escape_token(token)}", value[token]))
                elif last:
                    yield f"{pointer}/{escape_token(token)}", None, False
        places = nxt
    for pointer, value in places:
        yield pointer, value, True
