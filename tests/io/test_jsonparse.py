"""The one strict JSON parser and the one JSON error mapping (capbench_nb.io.jsonparse)."""

from __future__ import annotations

import json

import pytest

from capbench_nb.errors import InvalidRunError, Violation
from capbench_nb.io.jsonparse import JsonMessages, json_error, max_int_digits, parse_document, parse_strict


def failure(data, **options) -> InvalidRunError:
    with pytest.raises(InvalidRunError) as info:
        parse_document(data, file="f.json", **options)
    return info.value


def test_valid_documents_from_bytes_and_text():
    assert parse_document(b'{"a": [1, 2.5, null]}', file="f") == {"a": [1, 2.5, None]}
    assert parse_document('"x"', file="f") == "x"
    assert parse_document(b'\xef\xbb\xbf{"a": 1}', file="f", encoding="utf-8-sig") == {"a": 1}


def test_syntax_error_names_the_line_and_column():
    exc = failure(b'{\n  "a": \n}', rule="artifact-json")
    assert (exc.rule, exc.line, exc.message) == ("artifact-json", 3, "not valid JSON: Expecting value (column 1)")
    assert str(exc) == "f.json:3: not valid JSON: Expecting value (column 1) [rule: artifact-json]"


def test_bad_utf8():
    exc = failure(b'{"a": "\xff"}', rule="artifact-json")
    assert (exc.rule, exc.line, exc.message) == ("artifact-json", None, "not valid UTF-8 at byte 7")
    assert failure(b"\xff", messages=JsonMessages(utf8_rule="utf-8")).rule == "utf-8"


def test_too_deep_and_too_long():
    exc = failure("[" * 100_000)
    assert (exc.rule, exc.message) == ("json", "JSON nested too deeply")
    if max_int_digits():
        exc = failure("1" * (max_int_digits() + 1), rule="price-table")
        assert exc.rule == "number-too-large"
        assert exc.message == f"an integer literal too long to read (more than {max_int_digits()} digits)"


def test_lenient_by_default_strict_on_request():
    assert parse_document('{"a": NaN}', file="f")["a"] != 0  # NaN, as the standard library reads it
    exc = failure('{"a": [1, NaN]}', strict=True)
    assert (exc.rule, exc.pointer) == ("json-nan", "/a/1")
    assert str(exc) == "f.json#/a/1: JSON NaN is not a number the run format accepts [rule: json-nan]"


def test_what_prefix_and_line_in_message():
    inspect = JsonMessages(syntax="not valid JSON: {msg} (line {lineno}, column {colno})", syntax_line=False)
    exc = failure(b'{"a": }', rule="json", messages=inspect, what="header.json")
    assert (exc.line, exc.message) == (None, "header.json: not valid JSON: Expecting value (line 1, column 7)")
    assert failure("[" * 100_000, what="header.json").message == "header.json: JSON nested too deeply"


def test_a_document_on_a_line_of_a_file_names_that_line():
    lines = JsonMessages(syntax="not valid JSON: {msg} (column {colno}); one object per line")
    exc = failure('{"a" 1}', messages=lines, line=7)
    assert (exc.line, exc.message) == (7, "not valid JSON: Expecting ':' delimiter (column 6); one object per line")
    assert failure("[" * 100_000, line=7).line == 7


def test_json_error_maps_each_failure_once():
    for exc, rule in [(json.JSONDecodeError("Expecting value", "x", 0), "json"),
                      (RecursionError(), "json"), (ValueError("digits"), "number-too-large"),
                      (Violation("json-nan", "JSON NaN is not a number"), "json-nan")]:
        assert json_error(exc, file="f").rule == rule
    with pytest.raises(TypeError):
        json_error(KeyError("x"), file="f")


def test_parse_strict_is_unchanged():
    with pytest.raises(json.JSONDecodeError):
        parse_strict("{")
    with pytest.raises(Violation) as info:
        parse_strict("Infinity")
    assert info.value.rule == "json-nan"


def test_values_refuses_a_long_integer_by_its_pointer_after_any_syntax_error():
    """parse_document(values=True), the importers' reading: NaN accepted, an over-long integer
    literal named by its JSON pointer, a lone surrogate refused; a syntax error anywhere wins."""
    import math

    import pytest

    from capbench_nb import InvalidRunError

    digits = max_int_digits()
    assert math.isnan(parse_document('{"a": NaN}', file="f", values=True)["a"])
    if digits:
        long = "9" * (digits + 1)
        with pytest.raises(InvalidRunError) as info:
            parse_document(f'{{"a": [1, {long}]}}', file="f", what="member", values=True)
        assert (info.value.rule, info.value.message) == (
            "number-too-large", f"member: the value at /a/1 is an integer literal of {digits + 1} digits (at most "
            f"{digits} are read; a number of the run format is at most 2**53-1)")
        with pytest.raises(InvalidRunError) as info:
            parse_document(f'{{"a": [1, {long}]', file="f", values=True)
        assert info.value.rule == "json"
    with pytest.raises(InvalidRunError) as info:
        parse_document('{"a": "x\\udcff"}', file="f", what="m",
                       messages=JsonMessages(value_what=False), values=True)
    assert info.value.rule == "invalid-unicode" and info.value.message.startswith("the string at /a ")
