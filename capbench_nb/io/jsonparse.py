"""The one strict JSON parser of the toolkit, and the descriptions its errors use.

Every input file (manifest.json, results.jsonl lines, artifacts, imported logs, a metrics.json
to verify) is parsed by :func:`parse_strict` or checked with the helpers here, so that a NaN
token, an over-long integer literal or a lone surrogate gets the same rule and message wherever
it appears.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from capbench_nb.errors import Violation
from capbench_nb.io.pointer import escape_token

__all__ = [
    "parse_strict", "reject_constant", "max_int_digits", "locate_refused_token", "find_surrogate",
    "surrogate_message", "ascii_escaped", "SURROGATE", "SURROGATE_ESCAPE", "size_text", "is_int",
    "is_number", "short", "json_type_name",
]


def reject_constant(name: str):
    raise Violation("json-nan", f"JSON {name} is not a number the run format accepts")


_DECODER = json.JSONDecoder(parse_constant=reject_constant)


def max_int_digits() -> int:
    """Python's limit on the digits of an integer literal (4300 by default; 0: no limit)."""
    getter = getattr(sys, "get_int_max_str_digits", None)
    return getter() if getter is not None else 0


class _Marker:
    """Stands for a token the strict parser refuses, so that a lenient re-parse can locate it."""

    def __init__(self, token: str) -> None:
        self.token = token


def locate_refused_token(text: str) -> tuple[str, str] | None:
    """JSON pointer and token of the first NaN/Infinity token or over-long integer in ``text``.

    Only called on text the strict parser refused for one of those (so it is valid JSON
    otherwise); the text is parsed again with both replaced by markers and walked.
    """
    limit = max_int_digits()

    def parse_int(digits: str):
        if limit and len(digits.lstrip("-")) > limit:
            return _Marker(digits)
        return int(digits)

    try:
        doc = json.JSONDecoder(parse_constant=_Marker, parse_int=parse_int).decode(text)
    except (ValueError, RecursionError):
        return None
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        node, pointer = stack.pop()
        if isinstance(node, _Marker):
            return pointer, node.token
        if isinstance(node, dict):
            items = [(f"{pointer}/{escape_token(key)}", value) for key, value in node.items()]
        elif isinstance(node, list):
            items = [(f"{pointer}/{i}", value) for i, value in enumerate(node)]
        else:
            continue
        stack.extend((value, where) for where, value in reversed(items))
    return None


def parse_strict(text: str) -> Any:
    """Strict JSON: NaN and Infinity tokens refused (``json-nan``), and integer literals longer
    than Python converts (4300 digits) refused as ``number-too-large`` instead of escaping as a
    bare ValueError."""
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError:
        raise
    except ValueError:  # "Exceeds the limit (4300 digits) for integer string conversion"
        found = locate_refused_token(text)
        if found is None:
            raise Violation("number-too-large", f"an integer literal has more than {max_int_digits()} digits") from None
        pointer, token = found
        raise Violation(
            "number-too-large",
            f"{pointer[1:].replace('/', '.') or 'the value'} is an integer literal of {len(token.lstrip('-'))} "
            "digits, above 2**53-1",
        ) from None


#: A JSON escape of a UTF-16 surrogate (``\ud800`` to ``\udfff``): the only way a string parsed
#: from valid UTF-8 can hold a surrogate.  A match is only a hint (a pair is fine, and ``\\ud800``
#: is no escape); :func:`find_surrogate` decides.
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
SURROGATE = re.compile("[\ud800-\udfff]")


def find_surrogate(doc: Any) -> tuple[str, str] | None:
    """JSON pointer and text of the first string (key or value, in document order) that holds a
    lone surrogate, i.e. is not Unicode text; None when every string is."""
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        node, pointer = stack.pop()
        if isinstance(node, str):
            if not node.isascii() and SURROGATE.search(node):
                return pointer, node
        elif isinstance(node, dict):
            items = []
            for key, value in node.items():
                where = f"{pointer}/{escape_token(key)}"
                if not key.isascii() and SURROGATE.search(key):
                    return where, key
                items.append((value, where))
            stack.extend(reversed(items))
        elif isinstance(node, list):
            stack.extend(reversed([(value, f"{pointer}/{i}") for i, value in enumerate(node)]))
    return None


def ascii_escaped(text: str) -> str:
    """``text`` with every non-ASCII character as a Python escape (so surrogates show as ``\\udcff``)."""
    return text.encode("ascii", "backslashreplace").decode("ascii")


def surrogate_message(pointer: str, text: str) -> str:
    char = SURROGATE.search(text).group()
    shown = ascii_escaped(text if len(text) <= 60 else text[:57] + "...")
    where = f"the string at {pointer}" if pointer else "the string"
    return (f"{ascii_escaped(where)} ('{shown}') holds \\u{ord(char):04x}, a lone UTF-16 surrogate escape: "
            "valid JSON syntax, but not Unicode text")


def size_text(n: int) -> str:
    return f"{n >> 20} MiB" if n and not n % (1 << 20) else f"{n} bytes"


def is_int(v: Any) -> bool:
    return type(v) is int


def is_number(v: Any) -> bool:
    return type(v) is int or type(v) is float


def short(v: Any) -> str:
    text = json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def json_type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    return "an object"
