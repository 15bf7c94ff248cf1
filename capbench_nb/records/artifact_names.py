"""The names of an attempt's artifact files and of the token counts they hold (spec sections 4, 5 and 8).

One statement for the modules that read those files (:mod:`capbench_nb.records.derivation`), take
telemetry from them (:mod:`capbench_nb.records.telemetry_extract`) and point evidence into them
(:mod:`capbench_nb.records.outcome`).
"""

from __future__ import annotations

__all__ = ["ATTEMPT", "EPISODE", "HISTORY", "TOKEN_FIELDS", "EPISODE_ONLY_FIELDS"]

#: The required artifact file, and the two optional ones.
ATTEMPT, EPISODE, HISTORY = "attempt.json", "episode.json", "history.json"
#: Token counts of ``episode.json#/run_metrics``, and of each ``history.json`` message's ``usage``.
TOKEN_FIELDS = ("input_tokens", "output_tokens", "total_tokens")
#: What only ``episode.json#/run_metrics`` records.
EPISODE_ONLY_FIELDS = ("cached_input_tokens", "reasoning_tokens", "time_to_first_token_ms")
