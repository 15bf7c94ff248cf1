"""The one strict JSON parser of the toolkit, its one error mapping, and the descriptions its errors use.

Every input file (manifest.json, results.jsonl lines, artifacts, imported logs, a metrics.json
to verify) is parsed by :func:`parse_strict` or :func:`parse_document`, or checked with the
helpers here, so that a NaN token, an over-long integer literal or a lone surrogate gets the same
rule and message wherever it appears.  :func:`json_reason` is the one place where a failed parse
becomes a rule and a message, and :func:`json_error` (on it) the one where it becomes an
:class:`~capbench_nb.errors.InvalidRunError`; each caller keeps its own wording of the message
through a :class:`JsonMessages` (its error lines are pinned by tests).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from typing import Any

from capbench_nb.errors import InvalidRunError, Violation
from capbench_nb.io.pointer import escape_token

__all__ = [
    "parse_strict", "reject_constant", "max_int_digits", "locate_refused_token", "find_surrogate",
    "surrogate_message", "ascii_escaped", "SURROGATE", "SURROGATE_ESCAPE", "size_text", "is_int",
    "is_number", "short", "json_type_name", "has_json_type", "JsonMessages", "json_reason", "json_error", "parse_document",
]


def reject_constant(name: str):
    """``parse_constant`` of the strict parser: a NaN or Infinity token is a ``json-nan`` violation."""
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


def locate_refused_token(text: str, *, constants: bool = True) -> tuple[str, str] | None:
    """JSON pointer and token of the first NaN/Infinity token (unless ``constants`` is false) or
    over-long integer in ``text``.

    Only called on text the parser refused for one of those (so it is valid JSON otherwise); the
    text is parsed again with them replaced by markers and walked.  ``None`` when it is not valid
    JSON after all, or holds none of them.
    """
    doc = _marked(text, constants=constants)
    return None if doc is None else _first_marker(doc)


def _marked(text: str, *, constants: bool) -> Any:
    """``text`` parsed with every refused token a :class:`_Marker` (None when it does not parse)."""
    try:
        return _marking_decoder(constants).decode(text)
    except (ValueError, RecursionError):
        return None


def _marking_decoder(constants: bool) -> json.JSONDecoder:
    limit = max_int_digits()

    def parse_int(digits: str):
        if limit and len(digits.lstrip("-")) > limit:
            return _Marker(digits)
        return int(digits)

    return json.JSONDecoder(parse_constant=_Marker, parse_int=parse_int) if constants else json.JSONDecoder(
        parse_int=parse_int)


def _first_marker(doc: Any) -> tuple[str, str] | None:
    """JSON pointer and token of the first :class:`_Marker` of ``doc``, in document order."""
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


_JSON_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,), "object": (dict,),
               "array": (list,)}


def has_json_type(value: Any, json_type: str) -> bool:
    """Whether a parsed JSON value is of ``json_type`` (a field table's name); a boolean is no integer or number."""
    if json_type in ("integer", "number") and type(value) is bool:
        return False
    return isinstance(value, _JSON_TYPES[json_type])


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


# --------------------------------------------------------------------------- the one error mapping


@dataclass(frozen=True)
class JsonMessages:
    """How one kind of input words the failures of its JSON (templates for :func:`json_error`).

    Each template is a ``str.format`` string over ``msg``, ``lineno``, ``colno`` (of the syntax
    error), ``start`` (the first byte that is not UTF-8), ``digits`` (Python's limit on the digits
    of an integer literal, or ``the allowed``), ``exc`` (the exception) and ``file`` (the file).

    Attributes
    ----------
    syntax : str
        A JSON syntax error.
    nested : str
        Nesting deeper than Python's recursion limit.
    too_long : str
        An integer literal longer than Python converts (4300 digits by default).
    utf8 : str
        Bytes that are not UTF-8.
    syntax_line : bool
        Whether a syntax error's line goes into :attr:`InvalidRunError.line` (when the message
        does not say it).
    utf8_line : bool
        Whether the line of the first byte that is not UTF-8 goes into :attr:`InvalidRunError.line`.
    utf8_rule, too_long_rule : str or None
        The rule ids of those two failures; None: the caller's rule.
    value_what : bool
        Whether ``what`` also prefixes the refusal of a value by ``parse_document(values=True)``
        (an over-long integer literal, a lone surrogate).
    """

    syntax: str = "not valid JSON: {msg} (column {colno})"
    nested: str = "JSON nested too deeply"
    too_long: str = "an integer literal too long to read (more than {digits} digits)"
    utf8: str = "not valid UTF-8 at byte {start}"
    syntax_line: bool = True
    utf8_line: bool = False
    utf8_rule: str | None = None
    too_long_rule: str | None = "number-too-large"
    value_what: bool = True


#: The wording of every input file without one of its own (artifacts, tool and price configurations).
DEFAULT_MESSAGES = JsonMessages()


def json_reason(
    exc: BaseException,
    *,
    file: str = "",
    rule: str = "json",
    messages: JsonMessages = DEFAULT_MESSAGES,
    what: str = "",
) -> tuple[str, str]:
    """The rule id and message of a failed JSON parse, for a reader that knows no location yet
    (it raises :class:`~capbench_nb.errors.Violation` with them) or words its own error.

    Parameters
    ----------
    exc : BaseException
        What decoding or parsing raised: ``UnicodeDecodeError``, ``json.JSONDecodeError``,
        ``RecursionError``, :class:`~capbench_nb.errors.Violation` (the strict parser: its own rule
        and reason) or ``ValueError`` (an integer literal over Python's digit limit).
    file : str, optional
        The file, for templates that name it (``{file}``).
    rule, messages, what
        As :func:`json_error`.

    Returns
    -------
    (rule, message) : tuple of str
    """
    prefix = f"{what}: " if what else ""
    if isinstance(exc, Violation):
        return exc.rule, prefix + exc.reason
    fields = {"msg": "", "lineno": None, "colno": None, "start": None, "exc": exc, "file": file,
              "digits": max_int_digits() or "the allowed"}
    if isinstance(exc, UnicodeDecodeError):
        fields["start"] = exc.start
        template, rule = messages.utf8, messages.utf8_rule or rule
    elif isinstance(exc, json.JSONDecodeError):
        fields.update(msg=exc.msg, lineno=exc.lineno, colno=exc.colno)
        template = messages.syntax
    elif isinstance(exc, RecursionError):
        template = messages.nested
    elif isinstance(exc, ValueError):  # "Exceeds the limit (4300 digits) for integer string conversion"
        template, rule = messages.too_long, messages.too_long_rule or rule
    else:
        raise TypeError(f"not a JSON parse error: {exc!r}") from exc
    return rule, prefix + template.format(**fields)


def json_error(
    exc: BaseException,
    *,
    file: str,
    rule: str = "json",
    messages: JsonMessages = DEFAULT_MESSAGES,
    what: str = "",
    line: int | None = None,
    text: str | None = None,
) -> InvalidRunError:
    """The :class:`~capbench_nb.errors.InvalidRunError` of a failed JSON parse (raise it ``from None``).

    Parameters
    ----------
    exc : BaseException
        As :func:`json_reason`.
    file : str
        The file, as the user named it.
    rule : str, default ``"json"``
        The rule id of a syntax error and of deep nesting (and, unless ``messages`` names others,
        of the other failures).
    messages : JsonMessages
        The wording.
    what : str, optional
        Prefixed to the message as ``"WHAT: "`` (e.g. the member of an archive).
    line : int, optional
        The line of ``file`` the document starts on (one line of a JSON-lines file): every error
        then names a line, a syntax error the line it is on.
    text : str, optional
        The parsed text: with it, a ``Violation`` names the JSON pointer of the refused token.

    Returns
    -------
    InvalidRunError
    """
    rule, message = json_reason(exc, file=file, rule=rule, messages=messages, what=what)
    pointer = None
    if isinstance(exc, Violation):
        if text is not None:
            found = locate_refused_token(text)
            pointer = found[0] if found is not None else None
    elif isinstance(exc, UnicodeDecodeError):
        if messages.utf8_line:
            lineno = exc.object.count(b"\n", 0, exc.start) + 1
            line = lineno if line is None else line + lineno - 1
    elif isinstance(exc, json.JSONDecodeError):
        if messages.syntax_line:
            line = exc.lineno if line is None else line + exc.lineno - 1
    return InvalidRunError(file, rule, message, line=line, pointer=pointer)


def parse_document(
    data: bytes | str,
    *,
    file: str,
    rule: str = "json",
    messages: JsonMessages = DEFAULT_MESSAGES,
    what: str = "",
    line: int | None = None,
    strict: bool = False,
    encoding: str = "utf-8",
    values: bool = False,
) -> Any:
    """One JSON document, decoded and parsed; any failure an ``InvalidRunError`` (:func:`json_error`).

    Parameters
    ----------
    data : bytes or str
        The document; bytes are decoded with ``encoding`` first (``"utf-8-sig"`` accepts a BOM).
    file, rule, messages, what, line
        As :func:`json_error`.
    strict : bool, default False
        Parse with :func:`parse_strict` (NaN and Infinity tokens refused, ``json-nan``) instead of
        the standard library's lenient reading, which accepts them.
    encoding : str, default ``"utf-8"``
    values : bool, default False
        Also refuse, naming the value's JSON pointer in the message, what no run can hold (the
        importers' reading of a source document, lenient or not about NaN):

        - an integer literal longer than Python converts (4300 digits): ``number-too-large``;
        - a string (key or value) with a lone UTF-16 surrogate escape (``"t\\udcff"``):
          ``invalid-unicode``.

    Raises
    ------
    InvalidRunError
    """
    text = None
    try:
        text = data.decode(encoding) if isinstance(data, (bytes, bytearray)) else data
        doc = parse_strict(text) if strict else json.loads(text)
    except (ValueError, RecursionError, Violation) as exc:
        if values and type(exc) is ValueError and text is not None:  # an over-long integer literal
            _refuse_long_integer(text, file=file, rule=rule, messages=messages, what=what, line=line)
        raise json_error(exc, file=file, rule=rule, messages=messages, what=what, line=line, text=text) from None
    if values and SURROGATE_ESCAPE.search(text):
        found = find_surrogate(doc)
        if found is not None:
            prefix = f"{what}: " if what and messages.value_what else ""
            raise InvalidRunError(file, "invalid-unicode", prefix + surrogate_message(*found), line=line)
    return doc


def _refuse_long_integer(text: str, *, file: str, rule: str, messages: JsonMessages, what: str,
                         line: int | None) -> None:
    """Raise for ``text``, which holds an integer literal Python does not convert: its syntax
    error when it has one anywhere (as a whole-document parse reports it first), else the first
    such literal, by its JSON pointer."""
    try:
        doc = _marking_decoder(False).decode(text)
    except (ValueError, RecursionError) as exc:
        raise json_error(exc, file=file, rule=rule, messages=messages, what=what, line=line, text=text) from None
    found = _first_marker(doc)
    if found is None:  # pragma: no cover - json.loads refused an integer the markers did not find
        return
    where, token = found
    place = f"the value at {where}" if where else "an integer literal"
    prefix = f"{what}: " if what and messages.value_what else ""
    raise InvalidRunError(file, "number-too-large", f"{prefix}{place} is an integer literal of "
                          f"{len(token.lstrip('-'))} digits (at most {max_int_digits()} are read; a number "
                          "of the run format is at most 2**53-1)", line=line)
