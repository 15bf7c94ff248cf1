"""A frozen suite's lock (spec section 12): read, validate, digest, write.

- :func:`lock_digest`: ``"sha256:"`` + the hex SHA-256 of the RFC 8785 (JCS) canonical form of the
  lock without its ``digest`` key (canonicalised by the ``rfc8785`` package);
- :func:`lock_problems`: every problem of a lock by the table :data:`capbench_nb.format.LOCK`, one
  :class:`~capbench_nb.errors.InvalidRunError` each (file, JSON pointer, rule id); a secret is named
  by its key, never shown;
- :func:`load_lock` reads and validates ``suite.lock.json``; :func:`read_spec` reads a lock without
  a digest (JSON or YAML); :func:`make_lock` adds the digest; :func:`dumps_lock` is the written text.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any, Iterator

import rfc8785

from capbench_nb.errors import InvalidRunError, Violation
from capbench_nb.format.limits import MAX_LOCK_BYTES
from capbench_nb.format.lock import (
    LOCK, LOCK_NONEMPTY, LOCK_UNIQUE, SECRET_KEY_WORDS, SECRET_KEYS, SECRET_PREFIXES,
)
from capbench_nb.io.files import FileTooLarge, input_errors, read_regular_file
from capbench_nb.io.jsonparse import has_json_type, json_type_name, max_int_digits, parse_document, short, size_text
from capbench_nb.io.pointer import escape_token, expand_pattern

__all__ = ["Lock", "lock_digest", "lock_problems", "check_lock", "load_lock", "read_spec", "make_lock",
           "dumps_lock", "is_secret_reference"]


class Lock(dict):
    """A validated lock: the document (a dict), with :attr:`file` it was read from."""

    file: str = ""

    @property
    def digest(self) -> str:
        return self["digest"]


def lock_digest(lock: dict) -> str:
    """The digest of a lock (spec section 12).

    Parameters
    ----------
    lock : dict
        The lock, with or without its ``digest`` key (it is left out).

    Returns
    -------
    str
        ``"sha256:" + sha256(JCS(lock without digest)).hexdigest()``, JCS as RFC 8785 defines it.

    Raises
    ------
    ValueError
        When the lock has no canonical form (an integer beyond 2**53-1, a NaN, a non-string key).
    """
    body = {key: value for key, value in lock.items() if key != "digest"}
    try:
        canonical = rfc8785.dumps(body)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise ValueError(str(exc) or type(exc).__name__) from None
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


def _field_problems(doc: Any, file: str, digest_required: bool) -> Iterator[InvalidRunError]:
    for field in LOCK:
        for pointer, value, present in expand_pattern(doc, field.name):
            if not present:
                if field.required and (field.name != "/digest" or digest_required):
                    yield InvalidRunError(file, field.type_rule, f"{field.name or 'the lock'} is required",
                                          pointer=pointer)
                continue
            if value is None and field.nullable:
                continue
            if not has_json_type(value, field.json_type):
                if field.type_rule == "lock-secret":
                    yield InvalidRunError(file, "lock-secret", f"{pointer} must be a secret reference "
                                          "(env:NAME, file:PATH or vault:PATH)", pointer=pointer)
                    continue
                yield InvalidRunError(file, field.type_rule, field.type_message.format(
                    where=pointer or "the lock", type=json_type_name(value), value=short(value)), pointer=pointer)
                continue
            yield from _value_problems(field, pointer, value, file)


def _value_problems(field, pointer: str, value: Any, file: str) -> Iterator[InvalidRunError]:
    if field.vocabulary and value not in field.vocabulary:
        yield InvalidRunError(file, field.vocabulary_rule, f"{pointer} must be {' or '.join(field.vocabulary)}, "
                              f"not {short(value)}", pointer=pointer)
    if field.minimum is not None and value < field.minimum:
        yield InvalidRunError(file, field.low_rule, f"{pointer} must be >= {field.minimum:g}, found {value}",
                              pointer=pointer)
    if field.maximum is not None and value > field.maximum:
        yield InvalidRunError(file, field.high_rule, f"{pointer} is {value}, above 2**53-1", pointer=pointer)
    if field.name in LOCK_NONEMPTY and value == "":
        yield InvalidRunError(file, LOCK_NONEMPTY[field.name], f"{pointer} must not be empty", pointer=pointer)
    if field.items:
        entries = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in entries:
            if not has_json_type(item, field.items):
                where = f"{pointer}/{escape_token(str(key))}"
                yield InvalidRunError(file, field.type_rule, f"{where} must be {'an' if field.items[0] in 'aeiou' else 'a'}"
                                      f" {field.items}, not {json_type_name(item)}", pointer=where)
    if field.name == "/tasks" and not value:
        yield InvalidRunError(file, "lock-tasks-empty", "/tasks must not be empty", pointer=pointer)


def _unique_problems(doc: Any, file: str) -> Iterator[InvalidRunError]:
    for pattern, rule in LOCK_UNIQUE.items():
        seen: set = set()
        for pointer, value, present in expand_pattern(doc, pattern):
            if present and isinstance(value, str) and value:
                if value in seen:
                    yield InvalidRunError(file, rule, f"{pointer} repeats {short(value)}", pointer=pointer)
                seen.add(value)


def is_secret_reference(value: Any) -> bool:
    """Whether ``value`` is a secret reference: ``env:NAME``, ``file:PATH`` or ``vault:PATH``."""
    return isinstance(value, str) and any(value.startswith(p) and len(value) > len(p) for p in SECRET_PREFIXES)


def _secret_key(key: str) -> bool:
    low = key.lower()
    return any(word in low for word in SECRET_KEY_WORDS)


def _secret_pointers(value: Any, pointer: str = "", under: bool = False) -> Iterator[str]:
    """Pointers of every string under a secret-named key that is not a secret reference (a number, such as
    ``max_tokens: 4096``, is no secret: the rule is about strings)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _secret_pointers(item, f"{pointer}/{escape_token(str(key))}",
                                        under or (isinstance(key, str) and _secret_key(key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _secret_pointers(item, f"{pointer}/{i}", under)
    elif under and isinstance(value, str) and not is_secret_reference(value):
        yield pointer


def _secret_problems(doc: dict, file: str) -> Iterator[InvalidRunError]:
    seen = set()
    for pattern in SECRET_KEYS:
        for pointer, value, present in expand_pattern(doc, pattern):
            if present and isinstance(value, str) and not is_secret_reference(value):
                seen.add(pointer)
                yield _secret_error(file, pointer)
    for pointer in _secret_pointers(doc):
        if pointer not in seen:
            yield _secret_error(file, pointer)


def _secret_error(file: str, pointer: str) -> InvalidRunError:
    # The message names the key, never the value.
    return InvalidRunError(file, "lock-secret", f"{pointer} holds a secret, not a reference env:NAME, file:PATH "
                           "or vault:PATH (a lock must never hold a secret; the value is not shown)", pointer=pointer)


def _json_problems(value: Any, file: str, pointer: str = "") -> Iterator[InvalidRunError]:
    """Values JSON cannot hold (a YAML spec can): non-string keys, non-finite floats, other types."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                yield InvalidRunError(file, "lock-json", f"{pointer or '/'} has a key that is not a string",
                                      pointer=pointer)
                continue
            yield from _json_problems(item, file, f"{pointer}/{escape_token(key)}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _json_problems(item, file, f"{pointer}/{i}")
    elif isinstance(value, float) and not math.isfinite(value):
        yield InvalidRunError(file, "lock-json", f"{pointer} is not a finite number", pointer=pointer)
    elif not (value is None or isinstance(value, (str, int, float, bool))):
        yield InvalidRunError(file, "lock-json", f"{pointer} is a {type(value).__name__}, not a JSON value",
                              pointer=pointer)


def lock_problems(doc: Any, file: str, *, digest_required: bool = True) -> list[InvalidRunError]:
    """Every problem of a lock document, one error each, in table order (spec section 12).

    Parameters
    ----------
    doc : object
        The parsed lock.
    file : str
        Its name, as the errors show it.
    digest_required : bool, default True
        False for a spec (``suite lock SPEC``), which has no digest yet.

    Returns
    -------
    list of InvalidRunError
        Empty for a valid lock.  A digest that is present is checked against :func:`lock_digest`.
    """
    problems = list(_json_problems(doc, file))
    if problems:
        return problems
    problems = list(_field_problems(doc, file, digest_required))
    if not isinstance(doc, dict):
        return problems
    problems += _unique_problems(doc, file)
    problems += _secret_problems(doc, file)
    try:
        digest = lock_digest(doc)
    except ValueError as exc:
        problems.append(InvalidRunError(file, "lock-canonical", f"the lock has no RFC 8785 canonical form: {exc}"))
        return problems
    if isinstance(doc.get("digest"), str) and doc["digest"] != digest:
        problems.append(InvalidRunError(file, "lock-digest-mismatch", f"digest is {doc['digest'][:80]!r}, but the "
                                        f"lock's canonical form hashes to {digest}", pointer="/digest"))
    return problems


def check_lock(doc: Any, file: str) -> Lock:
    """The validated :class:`Lock` of a document; raises the first of :func:`lock_problems`."""
    problems = lock_problems(doc, file)
    if problems:
        raise problems[0]
    lock = Lock(doc)
    lock.file = file
    return lock


def _read(path: str | os.PathLike) -> bytes:
    file = os.fspath(path)
    with input_errors(file, os.path.basename(file) or file, missing_rule="lock-unreadable",
                      missing=f"no lock at {file}", unreadable_rule="lock-unreadable"):
        try:
            return read_regular_file(path, limit=MAX_LOCK_BYTES)
        except FileTooLarge:
            raise InvalidRunError(
                file, "lock-too-large",
                f"the lock is larger than {size_text(MAX_LOCK_BYTES)} (MAX_LOCK_BYTES), the most this toolkit "
                "reads; is it a lock?") from None


def load_lock(path: str | os.PathLike) -> Lock:
    """Read and validate ``suite.lock.json`` (UTF-8 JSON, NaN refused).

    Raises
    ------
    InvalidRunError
        The first problem (:func:`lock_problems`), naming the file, the JSON pointer and the rule.
    """
    file = os.fspath(path)
    doc = parse_document(_read(path), file=file, rule="lock-json", strict=True)
    return check_lock(doc, file)


#: Deepest nesting of a YAML spec's values.  PyYAML composes a node by recursion (two frames a level), and so do
#: the checks, the digest and the writing of the lock (one frame a level), within Python's 1,000 frames: a spec
#: written 500 deep is refused by the loader itself, and aliases can nest deeper than the text (``b: &b [*a]``,
#: ``c: &c [*b]``, ...), so the document is measured too.  A lock of this toolkit is a few levels deep.
MAX_SPEC_DEPTH = 400


def _yaml_loader():
    import yaml  # a dependency of papermill; only a YAML spec needs it

    class Loader(yaml.SafeLoader):
        """YAML's safe loader, with timestamps kept as the strings they were written as, an integer too long for
        Python refused, and a merged mapping's pairs kept once."""

        def flatten_mapping(self, node):
            # PyYAML before 6.0.4 copies the pairs of a merged mapping once per alias of it, so nested merges
            # (``<<: [*a, *a]``) grow exponentially while loading (yaml/pyyaml#897): keep each pair once, its
            # last copy, the one construct_mapping lets win.
            super().flatten_mapping(node)
            seen: set[int] = set()
            kept = [pair for pair in reversed(node.value) if not (id(pair) in seen or seen.add(id(pair)))]
            node.value = kept[::-1]

    def construct_int(loader, node):
        try:
            return yaml.SafeLoader.construct_yaml_int(loader, node)
        except ValueError:  # "Exceeds the limit (4300 digits) for integer string conversion"
            raise Violation("number-too-large", f"the integer at line {node.start_mark.line + 1} is longer than "
                            f"{max_int_digits()} digits, above 2**53-1") from None

    Loader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node))
    Loader.add_constructor("tag:yaml.org,2002:int", construct_int)
    return yaml, Loader


def _scalar_bytes(value: Any) -> int:
    """The fewest bytes the JSON text of a scalar takes (a string without escapes, a number of one digit)."""
    if isinstance(value, str):
        return len(value) + 2
    if value is None or value is True:
        return 4
    return 5 if value is False else 1


def _container_size(node: dict | list, measured: dict[int, tuple[int, int, int, int]]) -> tuple[int, int, int, int]:
    """(bytes of the text without line breaks and indents, line breaks, their indent levels, depth) of a
    container in the form :func:`dumps_lock` writes, from those of its children, at least (see
    :func:`_scalar_bytes`).  The container placed at depth d takes ``text + lines * (1 + 2 * d) + 2 * levels``
    bytes: each line break is followed by two spaces per level."""
    values = list(node.values()) if isinstance(node, dict) else node
    parts = [measured[id(v)] if isinstance(v, (dict, list)) else (_scalar_bytes(v), 0, 0, 0) for v in values]
    if not parts:
        return 2, 0, 0, 1
    text = 2 + len(parts) - 1 + sum(part[0] for part in parts)  # brackets, commas, the values
    if isinstance(node, dict):  # each key, quoted, and ': '
        text += sum(_scalar_bytes(key if isinstance(key, str) else str(key)) + 2 for key in node)
    lines = len(parts) + 1 + sum(part[1] for part in parts)  # a line per value and the closing bracket's
    levels = sum(1 + part[1] + part[2] for part in parts)  # a value's line one level in, its own lines too
    return text, lines, levels, 1 + max(part[3] for part in parts)


def _spec_shape(doc: Any, file: str) -> None:
    """Refuse a YAML document that is not a JSON tree a lock can be: an alias inside its own anchor (a cycle),
    nesting deeper than :data:`MAX_SPEC_DEPTH`, or a lock that would be written larger than
    :data:`MAX_LOCK_BYTES` (the most :func:`load_lock` reads), as a billion laughs is: a small file whose nested
    aliases repeat a value exponentially often.

    PyYAML builds an alias as a second reference to one object, so the checks, the digest and the writing,
    which walk the lock as a tree, would walk every repetition.  This walk visits each object once, without
    recursion, a container after its children (:func:`_container_size`).
    """
    if not isinstance(doc, (dict, list)):
        return
    measured: dict[int, tuple[int, int, int, int]] = {}
    open_: set[int] = set()  # the containers whose children are being measured: the path from the root
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:
        node, children_done = stack.pop()
        if not children_done:
            if id(node) in open_:
                raise InvalidRunError(file, "lock-json", "the spec has a recursive alias (an anchor used inside its "
                                      "own value, as in a: &a [*a]): JSON cannot hold it")
            if id(node) not in measured:
                open_.add(id(node))
                stack.append((node, True))
                values = node.values() if isinstance(node, dict) else node
                stack.extend((value, False) for value in values if isinstance(value, (dict, list)))
            continue
        open_.discard(id(node))
        text, lines, levels, depth = measured[id(node)] = _container_size(node, measured)
        if depth > MAX_SPEC_DEPTH:
            raise InvalidRunError(file, "lock-json", f"the spec is nested more than {MAX_SPEC_DEPTH} levels deep "
                                  "(its aliases expanded)")
        if text + lines + 2 * levels + 1 > MAX_LOCK_BYTES:
            raise InvalidRunError(file, "lock-too-large", "the lock written from the spec (its aliases expanded) "
                                  f"would be larger than {size_text(MAX_LOCK_BYTES)} (MAX_LOCK_BYTES), the most a "
                                  "lock may be")


def read_spec(path: str | os.PathLike) -> Any:
    """The document of a lock spec: JSON, or YAML when the file is not JSON (``.yaml``/``.yml``, or any other
    name whose text does not parse as JSON).  A YAML timestamp stays the string it was written as; a YAML
    document that JSON cannot write out as a lock (a recursive alias, too deep, aliases expanding beyond
    :data:`MAX_LOCK_BYTES`) is refused."""
    file = os.fspath(path)
    raw = _read(path)
    if not file.lower().endswith((".yaml", ".yml")):
        try:
            return parse_document(raw, file=file, rule="lock-json", strict=True)
        except InvalidRunError:
            if file.lower().endswith(".json"):
                raise
    yaml, loader = _yaml_loader()
    try:
        doc = yaml.load(raw.decode("utf-8"), Loader=loader)  # noqa: S506 - a SafeLoader subclass
    except UnicodeDecodeError:
        raise InvalidRunError(file, "lock-json", "the spec is not valid UTF-8") from None
    except RecursionError:  # PyYAML composes nested nodes by recursion
        raise InvalidRunError(file, "lock-json", "the spec is nested too deeply") from None
    except Violation as exc:
        raise InvalidRunError(file, exc.rule, exc.reason) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise InvalidRunError(file, "lock-json", f"the spec is neither JSON nor YAML{where}: "
                              f"{getattr(exc, 'problem', None) or type(exc).__name__}") from None
    _spec_shape(doc, file)
    return doc


def make_lock(spec: Any, file: str) -> tuple[Lock | None, list[InvalidRunError]]:
    """The lock of a spec (a lock without a digest), digest added; or None and the spec's problems.

    A spec that already has a ``digest`` is refused (``lock-has-digest``): a lock is never edited, a
    change is a new lock; drop the key to make one.
    """
    if isinstance(spec, dict) and "digest" in spec:
        return None, [InvalidRunError(file, "lock-has-digest", "the spec already has a digest; a lock is never "
                                      "edited: remove the digest key to make a new lock", pointer="/digest")]
    problems = lock_problems(spec, file, digest_required=False)
    if problems:
        return None, problems
    lock = Lock({**spec, "digest": lock_digest(spec)})
    lock.file = file
    return lock, []


def dumps_lock(lock: dict) -> str:
    """The text of a lock file: keys sorted, 2-space indent, UTF-8 (not escaped), final newline."""
    return json.dumps(lock, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
