"""A simulated run of a frozen suite (spec section 12): its manifest names the lock, every attempt has a
preflight, and a seeded share of attempts has drifted (``simulate --lock FILE --drift RATE``).

The probes are the lock's ``device_state`` pins (locale, region, timezone, network, ...); a drifted
attempt observes another value for one of them (or, for a lock without device_state pins, names another
lock).  The draws come from their own seeded stream, so the rest of the run is the run drawn without a
lock: same attempts, same artifacts, and only the drifted ones (not skipped) derive differently, by
rule 1b.  ``simulation.json`` says which attempts drifted (``lock``) and holds their intended records.
"""

from __future__ import annotations

import copy
import random
from dataclasses import replace

from capbench_nb.format.artifact_files import ATTEMPT
from capbench_nb.simulation.artifacts import artifact_documents
from capbench_nb.simulation.generator import DrawnAttempt
from capbench_nb.records.lock import Lock

__all__ = ["locked_run", "preflight_documents", "OTHER_LOCK"]

#: The lock a drifted preflight names when the lock has no device_state pin to probe.
OTHER_LOCK = "sha256:" + "0" * 64


def _probes(lock: Lock) -> list[tuple[str, object]]:
    state = lock.get("device_state") or {}
    return [(name, value) for name, value in state.items()]


def _observed(value):
    """A value other than ``value`` (what a drifted device reports)."""
    if isinstance(value, str):
        return value + "-drifted" if value else "unset"
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    return None if value is not None else "unset"


def preflight_documents(attempts, lock: Lock, rate: float, seed: int) -> dict:
    """``{(task_id, attempt): (preflight, evidence or None)}``: each attempt's preflight, and for a drifted
    one the evidence rule 1b gives (one failed probe, or the lock)."""
    if not 0 <= rate <= 1:
        raise ValueError(f"drift must be a rate in [0, 1], got {rate!r}")
    rng = random.Random(f"capbench-sim/{seed}/drift")
    probes = _probes(lock)
    out = {}
    for a in attempts:
        expected = [{"name": name, "expected": value, "observed": copy.deepcopy(value)} for name, value in probes]
        preflight = {"lock": lock.digest, "probes": expected}
        evidence = None
        if rng.random() < rate:
            if probes:
                i = rng.randrange(len(probes))
                expected[i]["observed"] = _observed(expected[i]["expected"])
                evidence = f"{ATTEMPT}#/preflight/probes/{i}"
            else:
                preflight["lock"] = OTHER_LOCK
                evidence = f"{ATTEMPT}#/preflight/lock"
        out[(a.task.task_id, a.attempt)] = (preflight, evidence)
    return out


def locked_run(run, lock: Lock, rate: float, seed: int, *, artifacts: bool):
    """The simulated run ``run`` as a run of ``lock``: manifest, truth, and the preflight of each attempt.

    Returns
    -------
    (SimulatedRun, dict)
        The run (manifest ``suite`` = the lock's name, version and digest; ``simulation.json`` with
        ``lock`` and the drifted attempts' intended records) and :func:`preflight_documents`.
    """
    preflights = preflight_documents(run.attempts, lock, rate, seed)
    manifest = copy.deepcopy(run.manifest)
    manifest["suite"] = {"name": lock["suite"]["name"], "version": lock["suite"]["version"], "lock": lock.digest}
    truth = copy.deepcopy(run.truth)
    drifted = []
    by_key = {(a.task.task_id, a.attempt): a for a in run.attempts}
    for entry in truth["attempts"]:
        key = (entry["task_id"], entry["attempt"])
        evidence = preflights[key][1]
        a: DrawnAttempt = by_key[key]
        if evidence is None or artifact_documents(a, run.options)[ATTEMPT].get("skip") is not None:
            continue  # rule 1 (skip) comes before rule 1b
        drifted.append(list(key))
        entry["cause"] = "drift"
        entry["record"].update(success=False, agent_eligible=False, failure_class="environment",
                               failure_stage="setup" if artifacts else None,
                               evidence=[evidence] if artifacts else [], quality_score=None)
    truth["lock"] = {"digest": lock.digest, "drift": rate, "drifted": drifted}
    return replace(run, manifest=manifest, truth=truth), preflights
