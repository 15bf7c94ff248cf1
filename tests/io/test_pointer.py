"""RFC 6901 JSON pointers and ``FILE#POINTER`` references (``capbench_nb.io.pointer``).

Pointer syntax and evaluation per RFC 6901 (its section 5 example in full, also through a file
reference), and the split of a reference at its first ``#``.
"""

from __future__ import annotations

import json

import pytest

from capbench_nb.io.pointer import (EvidenceError, escape_token, expand_pattern, parse_pointer, resolve_pointer,
                                    split_reference)
from capbench_nb.records.evidence import EvidenceResolver

# --------------------------------------------------------------------------- parse_pointer

@pytest.mark.parametrize(
    "pointer, tokens",
    [
        ("", []),                      # the whole document
        ("/", [""]),                   # the key "" of the root object
        ("//", ["", ""]),
        ("/foo", ["foo"]),
        ("/foo/0", ["foo", "0"]),
        ("/a~1b", ["a/b"]),
        ("/m~0n", ["m~n"]),
        ("/~01", ["~1"]),              # ~0 then 1: a literal "~1", not "/"
        ("/~10", ["/0"]),
        ("/~0~1", ["~/"]),
        ("/~00", ["~0"]),
        ("/c%25d", ["c%25d"]),         # no percent-decoding
        ("/-", ["-"]),
        ("/ ", [" "]),
        ("/a#b", ["a#b"]),
    ],
)
def test_parse_pointer_tokens(pointer, tokens):
    assert parse_pointer(pointer) == tokens


@pytest.mark.parametrize("pointer", ["foo", "#/foo", "/~2", "/a~", "/~", "/x/~a", "/ok/~"])
def test_parse_pointer_rejects_malformed(pointer):
    with pytest.raises(EvidenceError):
        parse_pointer(pointer)


# --------------------------------------------------------------------------- resolve_pointer

DOC = {"a": [10, {"b": None}], "s": "text", "n": 3, "z": False, "": {"": "empty-empty"}}


@pytest.mark.parametrize(
    "pointer, value",
    [
        ("", DOC),
        ("/a", [10, {"b": None}]),
        ("/a/0", 10),
        ("/a/1", {"b": None}),
        ("/a/1/b", None),               # a null value resolves (the key exists)
        ("/z", False),
        ("/", {"": "empty-empty"}),
        ("//", "empty-empty"),
    ],
)
def test_resolve_pointer_values(pointer, value):
    assert resolve_pointer(DOC, pointer) == value


@pytest.mark.parametrize(
    "pointer",
    [
        "/missing",
        "/a/2",        # index past the end
        "/a/-",        # "-" is the (nonexistent) element after the last one
        "/a/01",       # leading zero
        "/a/00",
        "/a/-1",
        "/a/+1",
        "/a/ 1",
        "/a/1.0",
        "/a/\u0661",   # ARABIC-INDIC DIGIT ONE: isdigit() but not an RFC 6901 index
        "/a/x",
        "/s/0",        # stepping into a string
        "/n/x",        # stepping into a number
        "/z/x",        # into a boolean
        "/a/1/b/c",    # into null
        "/a~2",
    ],
)
def test_resolve_pointer_errors(pointer):
    with pytest.raises(EvidenceError):
        resolve_pointer(DOC, pointer)


def test_resolve_pointer_array_index_zero_and_large_array():
    arr = list(range(12))
    assert resolve_pointer(arr, "/0") == 0
    assert resolve_pointer(arr, "/10") == 10
    assert resolve_pointer(arr, "/11") == 11
    with pytest.raises(EvidenceError):
        resolve_pointer(arr, "/12")


def test_resolve_pointer_on_scalar_root():
    assert resolve_pointer(5, "") == 5
    with pytest.raises(EvidenceError):
        resolve_pointer(5, "/0")


# RFC 6901 section 5, the example document and every pointer of its table.
RFC_DOC = json.loads(
    r"""
    {
      "foo": ["bar", "baz"],
      "": 0,
      "a/b": 1,
      "c%d": 2,
      "e^f": 3,
      "g|h": 4,
      "i\\j": 5,
      "k\"l": 6,
      " ": 7,
      "m~n": 8
    }
    """
)

RFC_TABLE = [
    ("", RFC_DOC),
    ("/foo", ["bar", "baz"]),
    ("/foo/0", "bar"),
    ("/", 0),
    ("/a~1b", 1),
    ("/c%d", 2),
    ("/e^f", 3),
    ("/g|h", 4),
    ("/i\\j", 5),
    ('/k"l', 6),
    ("/ ", 7),
    ("/m~0n", 8),
]


@pytest.mark.parametrize("pointer, value", RFC_TABLE)
def test_rfc6901_section5_example(pointer, value):
    assert resolve_pointer(RFC_DOC, pointer) == value


def test_rfc6901_example_document_parsed_as_in_the_rfc():
    assert set(RFC_DOC) == {"foo", "", "a/b", "c%d", "e^f", "g|h", "i\\j", 'k"l', " ", "m~n"}


@pytest.mark.parametrize("pointer, value", RFC_TABLE)
def test_rfc6901_example_through_the_resolver(tmp_path, pointer, value):
    """The same table through a file reference: the pointer is used as written."""
    art = tmp_path / "attempts" / "t" / "1"
    art.mkdir(parents=True)
    (art / "doc.json").write_text(json.dumps(RFC_DOC), encoding="utf-8")
    assert EvidenceResolver(tmp_path).resolve("attempts/t/1", f"doc.json#{pointer}") == value


@pytest.mark.parametrize("pointer", ["/c%25d", "/a/b", "/m~n~", "/foo/2", "/foo/-"])
def test_rfc6901_example_non_matches(pointer):
    # "/c%25d": URI-fragment percent-encoding is not decoded (spec section 8).
    with pytest.raises(EvidenceError):
        resolve_pointer(RFC_DOC, pointer)


# --------------------------------------------------------------------------- split_reference

@pytest.mark.parametrize(
    "reference, parts",
    [
        ("attempt.json#/setup", ("attempt.json", "/setup")),
        ("attempt.json#", ("attempt.json", "")),
        ("sub/e.json#/a#b", ("sub/e.json", "/a#b")),   # split at the first '#'
    ],
)
def test_split_reference(reference, parts):
    assert split_reference(reference) == parts


@pytest.mark.parametrize("reference", ["attempt.json", "#/setup", "", "attempt.json/setup"])
def test_split_reference_needs_file_and_hash(reference):
    with pytest.raises(EvidenceError):
        split_reference(reference)


@pytest.mark.parametrize("key", ["", "a", "a/b", "m~n", "~1", "/~0/", "x y"])
def test_escape_token_round_trips_through_parse_pointer(key):
    assert parse_pointer("/" + escape_token(key)) == [key]


def test_expand_pattern_names_every_place_of_a_field_table_row():
    doc = {"tasks": [{"task_id": "a"}, {"seed": 1}, 7], "t~x": 1}
    # an absent key as it is met, the present values after (7 is no object: no place)
    assert list(expand_pattern(doc, "/tasks/*/task_id")) == [("/tasks/1/task_id", None, False),
                                                              ("/tasks/0/task_id", "a", True)]
    assert list(expand_pattern(doc, "")) == [("", doc, True)]
    assert list(expand_pattern(doc, "/t~x")) == [("/t~0x", 1, True)]  # a token is a key, escaped in the pointer
    assert list(expand_pattern(doc, "/missing/child")) == []  # only the last key is reported absent
