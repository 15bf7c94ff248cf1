"""The names of an attempt's artifact files and of the token counts they hold (spec sections 4, 5 and 8).

One statement for the artifact table (:data:`~capbench_nb.format.ARTIFACT`), the modules that read
those files (``records.derivation``), take telemetry from them (``records.telemetry_extract``),
point evidence into them (``records.outcome``) and write them (``simulation``).
"""

from __future__ import annotations

__all__ = ["ATTEMPT", "EPISODE", "HISTORY", "ARTIFACT_FILES", "TOKEN_FIELDS", "EPISODE_ONLY_FIELDS"]

#: The required artifact file, and the two optional ones.
ATTEMPT, EPISODE, HISTORY = "attempt.json", "episode.json", "history.json"
#: Every artifact file the derivation reads, in the order it reads them.
ARTIFACT_FILES = (ATTEMPT, EPISODE, HISTORY)
#: Token counts of ``episode.json#/run_metrics``, and of each ``history.json`` message's ``usage``.
TOKEN_FIELDS = ("input_tokens", "output_tokens", "total_tokens")
#: What only ``episode.json#/run_metrics`` records.
EPISODE_ONLY_FIELDS = ("cached_input_tokens", "reasoning_tokens", "time_to_first_token_ms")
