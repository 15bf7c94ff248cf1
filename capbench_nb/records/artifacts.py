"""The type checks of an attempt's artifact files (spec section 4), driven by :data:`~capbench_nb.format.ARTIFACT`.

:func:`check_attempt`, :func:`check_episode` and :func:`check_history` raise
:class:`~capbench_nb.errors.InvalidRunError` (the row's rule: ``artifact-type``, or
``number-too-large``) naming the file and the JSON pointer of the first value that breaks its row
of the table, or an object that breaks a rule of :data:`~capbench_nb.format.ARTIFACT_RULES`.

The rows of a file are compiled once into a tree of closures, one per pointer (``*``: every item
of an array), checked depth first in the table's order: a value, then the values below it, then the
rules of its object.  A closure tests a value with the cheapest test that accepts exactly what its
row accepts; only a refusal builds the JSON pointer and the message, so a valid document costs no
string formatting.  (Artifact checks are on ingest's hot path.)
"""

from __future__ import annotations

import math
from typing import Any, Callable

from capbench_nb.errors import InvalidRunError
from capbench_nb.format import ARTIFACT, ARTIFACT_RULES, ATTEMPT, EPISODE, HISTORY, Field, ObjectRule

__all__ = ["check_attempt", "check_episode", "check_history", "checker"]

#: The type test of each JSON type (exact types for the numbers and booleans: a bool is no number).
_TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) is int or type(v) is float,
    "boolean": lambda v: type(v) is bool,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}

#: What ``doc.get(key, ABSENT)`` gives for a required field the document leaves out: refused as missing,
#: not as a null of the wrong type.
_ABSENT = object()


class _Node:
    """One pointer of a file's rows: its row (None for ``*``), and the pointers below it."""

    def __init__(self) -> None:
        self.field: Field | None = None
        self.children: dict[str, _Node] = {}
        self.rules: list[ObjectRule] = []


def _tree(file: str) -> _Node:
    root = _Node()
    for f in ARTIFACT:
        name, _, pointer = f.name.partition("#")
        if name == file:
            node = root
            for token in pointer.split("/")[1:]:
                node = node.children.setdefault(token, _Node())
            node.field = f
    for rule in ARTIFACT_RULES:
        name, _, pointer = rule.at.partition("#")
        if name == file:
            node = root
            for token in pointer.split("/")[1:]:
                node = node.children[token]
            node.rules.append(rule)
    return root


class _Refusal(Exception):
    """A refused value: rule, message and pointer (the file is added by :func:`checker`'s check)."""


def _raiser(template: str) -> Callable[..., None]:
    """Raise the refusal of a value at ``template`` (its ``{}`` filled in by the indices of ``*``)."""

    def fail(rule: str, message: str, idx: tuple, value: Any = None, key: str = "") -> None:
        where = template.format(*idx)
        raise _Refusal(rule, message.format(where=where, value=value), f"{where}/{key}" if key else where)

    return fail


#: The Python types a JSON parser gives for each JSON type (the fast test; any other type goes
#: through the full test of :data:`_TYPE_TESTS`).
_PARSED_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
                 "object": (dict,), "array": (list,)}


def _refuser(f: Field, fail: Callable[..., None]) -> Callable[[Any, tuple], None]:
    """The slow path of a value its row's fast test refused: raise with the rule of the first test
    that refuses it, in the row's order (type and null, non-empty, vocabulary, minimum, maximum)."""
    test = _TYPE_TESTS[f.json_type]
    vocabulary = frozenset(f.vocabulary) if f.vocabulary else None
    low = -math.inf if f.minimum is None else f.minimum
    high = math.inf if f.maximum is None else f.maximum

    def refuse(value: Any, idx: tuple) -> None:
        if value is _ABSENT:
            fail(f.type_rule, f"{{where}} is missing: a required {f.json_type}", idx)
        if value is None or not test(value) or (f.non_empty and not value):
            fail(f.type_rule, f.type_message, idx, value)
        if vocabulary is not None and value not in vocabulary:
            fail(f.vocabulary_rule, f.vocabulary_message, idx, value)
        if not low <= value <= high:  # (NaN is in no range)
            # an int is finite (math.isfinite would raise OverflowError on one beyond a float's range)
            if value > high and not (type(value) is float and not math.isfinite(value)):
                fail(f.high_rule, f.high_message, idx, value)
            fail(f.low_rule, f.low_message, idx, value)

    return refuse


class _Source:
    """The Python source of one file's check, and the objects it refers to (``_k`` names)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, Any] = {}

    def name(self, value: Any) -> str:
        key = f"_{len(self.names)}"
        self.names[key] = value
        return key

    def add(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)


def _accepts(src: _Source, f: Field, var: str) -> str:
    """The fast test of a non-null value: exactly what the row accepts, for the types a parser gives."""
    types = _PARSED_TYPES[f.json_type]
    test = f"type({var}) is {types[0].__name__}" if len(types) == 1 else f"type({var}) in {src.name(types)}"
    if f.vocabulary:
        return f"{test} and {var} in {src.name(frozenset(f.vocabulary))}"
    if f.minimum is not None or f.maximum is not None:
        low = -math.inf if f.minimum is None else f.minimum
        high = math.inf if f.maximum is None else f.maximum
        return f"{test} and {src.name(low)} <= {var} <= {src.name(high)}"
    return f"{test} and {var}" if f.non_empty else test


def _emit(src: _Source, node: _Node, var: str, pointer: str, idx: list[str], depth: int) -> None:
    """The source checking ``var`` (the value at ``pointer``), the values below it and its rules."""
    f = node.field
    here = "(" + "".join(f"{i}, " for i in idx) + ")"
    if f is not None:
        refuse = src.name(_refuser(f, _raiser(pointer)))
        if f.nullable:
            src.add(depth, f"if {var} is not None:")
            depth += 1
            src.add(depth, f"if not ({_accepts(src, f, var)}): {refuse}({var}, {here})")
        else:
            src.add(depth, f"if {var} is None or not ({_accepts(src, f, var)}): {refuse}({var}, {here})")
    level = len(idx)
    item = node.children.get("*")
    if item is None and f is not None and f.items:  # the items' type, with no row below them
        item = _Node()
    if item is not None:
        i, v = f"i{level}", f"v{level}_item"
        item_pointer = f"{pointer}/{{}}"
        item_fail = _raiser(item_pointer)
        item_test, item_types = _TYPE_TESTS[f.items], _PARSED_TYPES[f.items]
        message = f.items_message or f.type_message

        def refuse_item(value: Any, at: tuple, rule: str = f.type_rule) -> None:
            if not item_test(value):
                item_fail(rule, message, at, value)

        src.add(depth, f"for {i}, {v} in enumerate({var}):")
        src.add(depth + 1, f"if type({v}) not in {src.name(item_types)}: {src.name(refuse_item)}({v}, {here[:-1]}{i},))")
        _emit(src, item, v, item_pointer, idx + [i], depth + 1)
    for n, (key, child) in enumerate((k, c) for k, c in node.children.items() if k != "*"):
        inner = depth
        if child.field is not None and child.field.only_if is not None:
            other, wanted = child.field.only_if
            src.add(depth, f"if {var}.get({other!r}) == {src.name(wanted)}:")
            inner += 1
        v = f"v{level}_{len(src.lines)}"
        required = child.field is not None and child.field.required and not child.field.nullable
        src.add(inner, f"{v} = {var}.get({key!r}, {src.name(_ABSENT)})" if required else f"{v} = {var}.get({key!r})")
        _emit(src, child, v, f"{pointer}/{key}", idx, inner)
    for rule in node.rules:
        fail = _raiser(pointer)
        src.add(depth, f"if {src.name(rule.broken)}({var}): "
                       f"{src.name(fail)}({rule.id!r}, {rule.message!r}, {here}, key={rule.key!r})")


def _compile(root: _Node, file: str) -> Callable[[Any], None]:
    """The check of one file, as one generated function (straight-line code, as one would write it
    by hand: artifact checks are on ingest's hot path)."""
    src = _Source()
    src.add(0, "def check(doc):")
    _emit(src, root, "doc", "", [], 1)
    namespace = dict(src.names)
    exec(compile("\n".join(src.lines), f"<artifact check of {file}>", "exec"), namespace)  # noqa: S102
    return namespace["check"]


def checker(file: str) -> Callable[[Any, str], None]:
    """The check of the artifact file ``file`` (``check(doc, path)``): the rows of ``ARTIFACT``
    under ``file#`` and the rules of ``ARTIFACT_RULES`` at them; ``path`` names it in an error."""
    run = _compile(_tree(file), file)

    def check(doc: Any, path: str) -> None:
        try:
            run(doc)
        except _Refusal as refusal:
            rule, message, pointer = refusal.args
            raise InvalidRunError(path, rule, message, pointer=pointer) from None

    check.__doc__ = f"The types of {file} (raises InvalidRunError naming the first broken value)."
    return check


check_attempt = checker(ATTEMPT)
check_episode = checker(EPISODE)
check_history = checker(HISTORY)
