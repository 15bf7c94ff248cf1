"""The pages' shared HTML pieces (capbench_nb.outputs.html.assets): the one JSON data island form,
section ids, the page assets."""

from __future__ import annotations

import json
import re

import pytest

from capbench_nb.outputs.html.assets import island_id, island_json, json_island, page_asset, with_tables

HOSTILE = ["<script>window.__pwned = 1</script>", "</script><!--", "a & b &amp; &lt;", "rtl\u202eevil\u202c",
           "sep\u2028line\u2029para", "quote\" ' `tick`", "非拉丁 текст 😀", "lone \ud800 surrogate"]


def test_json_island_is_a_script_element_whose_text_is_the_json_exactly():
    data = {"ids": HOSTILE, "n": 3}
    island = json_island(data, "cbc-0123456789ab-data")
    m = re.fullmatch(r'<script type="application/json" id="cbc-0123456789ab-data">(.*)</script>', island, re.S)
    assert m
    text = m.group(1)
    for ch in "<>&\u2028\u2029\u202e":
        assert ch not in text
    assert text.isascii() and json.loads(text) == data
    assert text == island_json(data)


@pytest.mark.parametrize("bad", ["", "a b", 'x"y', "x<y", "id>"])
def test_json_island_refuses_an_id_that_is_not_a_plain_identifier(bad):
    with pytest.raises(ValueError):
        json_island({}, bad)


def test_island_id_is_the_prefix_and_12_hex_digits_of_the_sha256_of_the_text():
    # hashlib.sha256(b"{}").hexdigest()[:12] == "44136fa355b3"
    assert island_id("cbb-", "{}") == "cbb-44136fa355b3"
    assert island_id("cbc-", '{"a":1}') != island_id("cbc-", '{"a":2}')


def test_page_assets_are_shipped_and_the_scripts_read_the_island_the_same_way():
    read = 'JSON.parse(document.getElementById(root.getAttribute("data-island")).textContent)'
    assert read in page_asset("board.js")
    assert 'getElementById(root.getAttribute("data-island"))' in page_asset("explorer.js")
    assert with_tables("X();").startswith(page_asset("tables.js")) and with_tables("X();").endswith("X();")
