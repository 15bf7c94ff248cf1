"""The simulator's parameters: :class:`SimulationOptions` and the causes an attempt can have.

A simulated run is a function of ``tasks``, ``repeats``, ``seed`` and these options alone
(:func:`capbench_nb.simulation.writer.build_run`); ``simulation.json`` records all of them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from capbench_nb.records.prices import PriceTable

__all__ = ["SimulationOptions", "CAUSES", "SIMULATOR_VERSION"]

#: Bumped whenever the same arguments would give different bytes.
SIMULATOR_VERSION = "1"

#: Causes (``cause`` in the truth file) and what they are.
CAUSES = {
    "success": "the agent completed the task",
    "success_after_device_error": "the agent completed the task after a device action error it retried",
    "wrong_outcome": "the agent finished but did the wrong thing (missed the critical step)",
    "device_error": "a device action errored and the agent gave up",
    "timeout": "the agent ran until the runner's timeout; the runner attempted recovery",
    "skipped": "the task was skipped (deliberately, before setup)",
    "setup_failed": "the device setup failed",
    "provider_unavailable": "the model provider was unavailable",
    "not_started": "the agent runtime did not start",
    "crashed": "the agent runtime crashed mid-task",
    "judge_error": "the agent ran, but the LLM judge errored",
}


@dataclass(frozen=True)
class SimulationOptions:
    """Options of :func:`simulate_run` (all keyword-only there); rates are probabilities.

    Run configuration
        ``model``, ``provider``, ``platform``: the manifest's ``config``;
        ``judge``: whether the LLM judge is enabled (``False`` is a
        ``--no-judge`` run: success is the hard assertions alone and no judge
        error can happen); ``reasoning_tokens``: whether the model reports
        reasoning tokens (else that field is null throughout).
    Difficulty
        ``success_alpha``, ``success_beta``: the Beta distribution of the
        per-task latent success probability (default mean 0.6).
    Harness and environment (drawn per attempt, in this order, independent of
    difficulty)
        ``skip_rate`` (per task: every attempt of the task is skipped),
        ``setup_failure_rate``, ``provider_unavailable_rate``,
        ``not_started_rate``, ``crash_rate``, ``judge_error_rate``.
    How attempts fail
        ``timeout_rate`` and ``device_error_rate``: shares of the agent's
        failures that time out, or end on a device action error (the rest do
        the wrong thing); ``transient_device_error_rate``: share of successes
        that hit a device error and retried; ``tool_error_rate``: per tool call,
        an element-not-found error followed by a replan (doubled in failures);
        ``recovery_success_rate``: the runner's recovery after a timeout;
        ``timeout_ms``: the runner's per-attempt timeout.
    Missing telemetry sources
        ``episode_missing_rate``, ``history_missing_rate``,
        ``history_usage_missing_rate`` (history without any ``usage``),
        ``run_metrics_gap_rate`` (one run_metrics field null or absent),
        ``screenshot_gap_rate`` (one screenshot without ``capture_ms``),
        ``recovery_key_missing_rate`` (attempt.json without ``recovery``).
    Plan shape
        ``short_tasks``: tasks planned with one repeat fewer (then
        ``plan.k = repeats - 1``); ``empty_tasks``: planned tasks that never
        ran; ``missing_attempts``: tasks whose last planned attempt never ran;
        ``extra_attempts``: tasks with one attempt above their planned repeats
        (anomalies).  Missing attempts or empty tasks make the run ``partial``.
    Cost
        ``price_table``: a :class:`~capbench_nb.records.prices.PriceTable`; with
        it, records with token counts get a cost (without artifacts directly;
        with artifacts the truth holds the cost that ``ingest --prices`` gives).
    Selector
        ``selector_accuracy``: with a probability, also write ``selection.jsonl`` from a best-of-k
        selector of that accuracy (:mod:`capbench_nb.simulation.selector`); None (the default): no
        selection file, and the run is byte for byte the one drawn before selectors existed.
    """

    model: str = "m-large"
    provider: str = "p1"
    platform: str = "android"
    judge: bool = True
    reasoning_tokens: bool = False
    success_alpha: float = 1.5
    success_beta: float = 1.0
    skip_rate: float = 0.02
    setup_failure_rate: float = 0.02
    provider_unavailable_rate: float = 0.01
    not_started_rate: float = 0.01
    crash_rate: float = 0.02
    judge_error_rate: float = 0.02
    timeout_rate: float = 0.15
    device_error_rate: float = 0.2
    transient_device_error_rate: float = 0.03
    tool_error_rate: float = 0.04
    recovery_success_rate: float = 0.7
    timeout_ms: int = 180_000
    episode_missing_rate: float = 0.05
    history_missing_rate: float = 0.3
    history_usage_missing_rate: float = 0.02
    run_metrics_gap_rate: float = 0.05
    screenshot_gap_rate: float = 0.03
    recovery_key_missing_rate: float = 0.02
    short_tasks: int = 0
    missing_attempts: int = 0
    empty_tasks: int = 0
    extra_attempts: int = 0
    price_table: PriceTable | None = None
    selector_accuracy: float | None = None

    def check(self, tasks: int, repeats: int) -> None:
        """Raise ValueError for an option outside its range."""
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name.endswith("_rate") and not (type(value) in (int, float) and 0 <= value <= 1):
                raise ValueError(f"{f.name} must be a probability in [0, 1], got {value!r}")
        for name in ("short_tasks", "missing_attempts", "empty_tasks", "extra_attempts"):
            value = getattr(self, name)
            if type(value) is not int or not 0 <= value <= tasks:
                raise ValueError(f"{name} must be an integer in [0, tasks={tasks}], got {value!r}")
        if self.success_alpha <= 0 or self.success_beta <= 0:
            raise ValueError("success_alpha and success_beta must be positive")
        if type(self.timeout_ms) is not int or self.timeout_ms < 30_000:
            raise ValueError(f"timeout_ms must be an integer >= 30000, got {self.timeout_ms!r}")
        if self.short_tasks and repeats < 2:
            raise ValueError("short_tasks needs repeats >= 2 (a short task has repeats - 1)")
        if self.missing_attempts + self.extra_attempts + self.empty_tasks > tasks:
            raise ValueError("missing_attempts, extra_attempts and empty_tasks need distinct tasks: too many for the plan")
        accuracy = self.selector_accuracy
        if accuracy is not None and not (type(accuracy) in (int, float) and 0 <= accuracy <= 1):
            raise ValueError(f"selector_accuracy must be a probability in [0, 1] or None, got {accuracy!r}")
        if self.price_table is not None and not isinstance(self.price_table, PriceTable):
            raise ValueError("price_table must be a capbench_nb.records.prices.PriceTable")

    def as_json(self) -> dict:
        """The options as JSON values, in field order (``price_table`` as an object or None;
        ``selector_accuracy`` only when set, so that a run without a selector keeps its bytes)."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "selector_accuracy" and value is None:
                continue
            out[f.name] = asdict(value) if isinstance(value, PriceTable) else value
        return out
