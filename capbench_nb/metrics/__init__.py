"""Stage 3: attempt records -> metrics: one preparation kernel, rates, curves, telemetry, statistics,
slices, comparison, power and the metric registry; the metrics.json document."""
