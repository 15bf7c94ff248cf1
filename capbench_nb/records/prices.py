"""Configuration of a derivation: which tools are device actions, and what tokens cost (spec sections 5 and 8).

- :class:`ToolConfig` / :func:`load_tool_config`: device-action and read-only tool names;
- :class:`PriceTable` / :func:`load_price_table`: a named, versioned price table;
- :func:`price_cost`: the cost of one record's tokens by such a table, never estimated.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from capbench_nb.errors import InvalidRunError
from capbench_nb.io.jsonparse import is_number, parse_document

__all__ = ["ToolConfig", "load_tool_config", "PriceTable", "load_price_table", "price_cost"]


@dataclass(frozen=True)
class ToolConfig:
    """Which tool names are device actions and which are read-only queries (configuration, not code)."""

    device_actions: frozenset[str]
    read_only: frozenset[str] = frozenset()


def load_tool_config(path: str | os.PathLike | None = None) -> ToolConfig:
    """Read a tool configuration: ``{"device_actions": [...], "read_only": [...]}``.

    Without ``path``, the package's defaults (the run format's lists) are used.
    """
    if path is None:
        text = resources.files("capbench_nb").joinpath("data/tools.json").read_text(encoding="utf-8")
        shown = "capbench_nb/data/tools.json"
    else:
        shown = str(path)
        text = _read_text(path, "tools-config")
    doc = parse_document(text, file=shown, rule="tools-config")
    lists = {}
    for key in ("device_actions", "read_only"):
        value = doc.get(key, []) if isinstance(doc, dict) else None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InvalidRunError(shown, "tools-config", f"{key} must be a list of tool names", pointer=f"/{key}")
        lists[key] = frozenset(value)
    overlap = lists["device_actions"] & lists["read_only"]
    if overlap:
        raise InvalidRunError(shown, "tools-config", f"tools listed as both device action and read-only: {sorted(overlap)}")
    return ToolConfig(**lists)


@dataclass(frozen=True)
class PriceTable:
    """A named, versioned price table: USD per token, per model.

    File format (JSON)::

        {"name": "prices/p1", "version": "2026-10-01", "effective_date": "2026-10-01",
         "models": {"m-large": {"input": 2.5e-06, "output": 1e-05, "cached_input": 6.25e-07}}}

    ``cached_input`` is optional; without it cached input tokens are priced as input.
    """

    name: str
    version: str
    effective_date: str
    models: dict = field(default_factory=dict)

    @property
    def source(self) -> str:
        """The ``cost_source`` this table gives: ``NAME@VERSION``."""
        return f"{self.name}@{self.version}"


def load_price_table(path: str | os.PathLike) -> PriceTable:
    """Read and check a price table file (see :class:`PriceTable`)."""
    shown = str(path)
    doc = parse_document(_read_text(path, "price-table"), file=shown, rule="price-table")
    if not isinstance(doc, dict):
        raise InvalidRunError(shown, "price-table", "a price table must be a JSON object")
    for key in ("name", "version", "effective_date"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            raise InvalidRunError(shown, "price-table", f"{key} must be a non-empty string", pointer=f"/{key}")
    models = doc.get("models")
    if not isinstance(models, dict) or not models:
        raise InvalidRunError(shown, "price-table", "models must map model names to prices", pointer="/models")
    for model, prices in models.items():
        if not isinstance(prices, dict):
            raise InvalidRunError(shown, "price-table", f"prices of {model!r} must be an object", pointer=f"/models/{model}")
        for key in ("input", "output"):
            if not is_number(prices.get(key)) or not math.isfinite(prices[key]) or prices[key] < 0:
                raise InvalidRunError(shown, "price-table", f"{model!r} needs a non-negative {key} price per token",
                                      pointer=f"/models/{model}/{key}")
        cached = prices.get("cached_input", 0)
        if not is_number(cached) or not math.isfinite(cached) or cached < 0:
            raise InvalidRunError(shown, "price-table", f"cached_input price of {model!r} must be a non-negative number",
                                  pointer=f"/models/{model}/cached_input")
    return PriceTable(name=doc["name"], version=doc["version"], effective_date=doc["effective_date"], models=models)


def _read_text(path: str | os.PathLike, rule: str) -> str:
    try:
        return Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise InvalidRunError(str(path), rule, "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRunError(str(path), rule, f"cannot read: {exc}") from None


def price_cost(telemetry: dict, model: str | None, prices: PriceTable | None) -> tuple[float | None, str | None]:
    """Provider cost from a named price table, or ``(None, None)``: never estimated.

    cost = (input - cached) * input price + cached * cached price + output * output price,
    with cached input tokens priced as input when the table has no cached price
    or the record has no cached count.  Null when the table or the model's
    prices are missing, or input or output tokens are null.
    """
    if prices is None or model is None or model not in prices.models:
        return None, None
    inp, out = telemetry.get("input_tokens"), telemetry.get("output_tokens")
    if inp is None or out is None:
        return None, None
    table = prices.models[model]
    cached = telemetry.get("cached_input_tokens") or 0
    cached = min(cached, inp)
    cached_price = table.get("cached_input", table["input"])
    cost = (inp - cached) * table["input"] + cached * cached_price + out * table["output"]
    return round(cost, 12), prices.source
