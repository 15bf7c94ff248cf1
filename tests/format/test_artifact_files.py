"""The artifact file names and token counts (capbench_nb.format.artifact_files) agree with the format."""

from __future__ import annotations

from capbench_nb.format import TELEMETRY
from capbench_nb.format import ATTEMPT, EPISODE, EPISODE_ONLY_FIELDS, HISTORY, TOKEN_FIELDS


def test_every_telemetry_source_is_an_artifact_file():
    assert {f.source.partition("#")[0] for f in TELEMETRY} == {ATTEMPT, EPISODE, HISTORY}


def test_run_metrics_fields_are_the_episode_sources():
    run_metrics = [f.name for f in TELEMETRY if f.source.startswith(f"{EPISODE}#/run_metrics/")]
    assert run_metrics == list(TOKEN_FIELDS + EPISODE_ONLY_FIELDS)
    assert all(f.source == f"{EPISODE}#/run_metrics/{f.name}" for f in TELEMETRY if f.name in run_metrics)
