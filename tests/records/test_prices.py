"""Tool configuration and versioned cost (capbench_nb.records.prices)."""

from __future__ import annotations

import json

import pytest
from conftest import PRICES

from capbench_nb import InvalidRunError
from capbench_nb.records.prices import load_price_table, load_tool_config, price_cost

# --------------------------------------------------------------------------- tool configuration


def test_default_tool_config_is_the_spec_lists():
    tools = load_tool_config()
    assert tools.device_actions == {"tap", "long_press", "swipe", "scroll", "type_text", "press_key",
                                    "launch_app", "open_url", "go_back", "go_home"}
    assert tools.read_only == {"screenshot", "get_ui_tree", "get_screen_text", "list_apps"}


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"device_actions": "tap"}',
        '{"device_actions": [1, 2]}',
        '{"device_actions": ["tap"], "read_only": [null]}',
        '{"device_actions": ["tap", "screenshot"], "read_only": ["screenshot"]}',
    ],
)
def test_invalid_tool_config(tmp_path, text):
    path = tmp_path / "tools.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidRunError) as info:
        load_tool_config(path)
    assert info.value.rule == "tools-config"
    assert str(path) in info.value.file


def test_missing_tool_config(tmp_path):
    with pytest.raises(InvalidRunError) as info:
        load_tool_config(tmp_path / "nope.json")
    assert info.value.rule == "tools-config"


# --------------------------------------------------------------------------- cost




def test_load_price_table(price_table):
    assert price_table.source == "prices/p1@2026-10-01"
    assert price_table.name == "prices/p1" and price_table.effective_date == "2026-10-01"
    assert set(price_table.models) == {"m-large", "m-small"}


def tokens(inp, out, cached=None) -> dict:
    return {"input_tokens": inp, "output_tokens": out, "cached_input_tokens": cached}


@pytest.mark.parametrize(
    "tel, model, expected",
    [
        # uncached input at input price, cached at cached price, output at output price
        (tokens(9100, 840, 6000), "m-large", 3100 * 2.5e-06 + 6000 * 6.25e-07 + 840 * 1e-05),
        (tokens(9100, 840, None), "m-large", 9100 * 2.5e-06 + 840 * 1e-05),
        (tokens(9100, 840, 0), "m-large", 9100 * 2.5e-06 + 840 * 1e-05),
        # no cached price: cached input tokens cost the input price
        (tokens(9100, 840, 6000), "m-small", 9100 * 1e-06 + 840 * 2e-06),
        (tokens(0, 0, 0), "m-large", 0.0),
        # the spec's example; sample run settings.wifi.toggle attempt 1
        (tokens(15590, 909, 11776), "m-large", 0.025985),
    ],
)
def test_price_cost(price_table, tel, model, expected):
    cost, source = price_cost(tel, model, price_table)
    assert cost == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert source == "prices/p1@2026-10-01"


@pytest.mark.parametrize(
    "tel, model",
    [
        (tokens(9100, 840, 6000), "m-unknown"),   # model not in the table
        (tokens(9100, 840, 6000), None),          # run names no model
        (tokens(None, 840, 6000), "m-large"),     # tokens null
        (tokens(9100, None, 6000), "m-large"),
        (tokens(None, None, None), "m-large"),
    ],
)
def test_price_cost_null(price_table, tel, model):
    assert price_cost(tel, model, price_table) == (None, None)


def test_no_price_table_no_cost():
    assert price_cost(tokens(9100, 840, 6000), "m-large", None) == (None, None)


@pytest.mark.parametrize(
    "doc",
    [
        [],
        {k: v for k, v in PRICES.items() if k != "name"},
        PRICES | {"version": ""},
        PRICES | {"version": 20261001},
        PRICES | {"effective_date": None},
        PRICES | {"models": {}},
        PRICES | {"models": []},
        PRICES | {"models": {"m": 0.1}},
        PRICES | {"models": {"m": {"input": 1e-6}}},
        PRICES | {"models": {"m": {"input": -1e-6, "output": 1e-6}}},
        PRICES | {"models": {"m": {"input": "1e-6", "output": 1e-6}}},
        PRICES | {"models": {"m": {"input": True, "output": 1e-6}}},
        PRICES | {"models": {"m": {"input": 1e-6, "output": 1e-6, "cached_input": -1}}},
        PRICES | {"models": {"m": {"input": 1e-6, "output": 1e-6, "cached_input": None}}},
    ],
)
def test_invalid_price_table(tmp_path, doc):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InvalidRunError) as info:
        load_price_table(path)
    assert info.value.rule == "price-table"
    assert str(path) in info.value.file


@pytest.mark.parametrize("text", ["{not json", "", '{"name":'])
def test_price_table_not_json(tmp_path, text):
    path = tmp_path / "prices.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidRunError) as info:
        load_price_table(path)
    assert info.value.rule == "price-table"


@pytest.mark.parametrize("token", ["NaN", "Infinity"])
def test_price_table_non_finite_price(tmp_path, token):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(PRICES).replace("1e-05", token), encoding="utf-8")
    assert token in path.read_text()
    with pytest.raises(InvalidRunError) as info:
        load_price_table(path)
    assert info.value.rule == "price-table"


def test_price_table_missing_file(tmp_path):
    with pytest.raises(InvalidRunError) as info:
        load_price_table(tmp_path / "nope.json")
    assert info.value.rule == "price-table"
