"""A crash-safe results.jsonl writer for Python runners (spec sections 1-4 and 8).

:class:`RunRecorder` owns one run directory while a runner executes it::

    with RunRecorder("runs/r1", manifest) as rec:
        for task_id, attempt in planned_attempts:
            if rec.has(task_id, attempt):          # done before a crash: skip
                continue
            directory = run_attempt(task_id, attempt)   # writes attempt.json, ...
            rec.record_attempt(directory)
        rec.close(status="completed")

Every record is checked with the loader's own rules before it is written, so
the file is always one that :func:`~capbench_nb.records.run.load_run` accepts.
Each line is appended with a single ``write`` and made durable with
``os.fsync`` before :meth:`RunRecorder.record` returns; a crash can therefore
leave at most a truncated final line, which the next recorder opened on the
run moves to a side file (``results.jsonl.truncated``, ``.truncated1``, ...)
before resuming.  Any other invalid content is real corruption and raises.

A run that uses a best-of-k selector records its picks with
:meth:`RunRecorder.record_selection`, one line of ``selection.jsonl`` per task
(spec section 9), checked with the loader's own rules
(:class:`~capbench_nb.records.selection.SelectionChecker`) and written the same
crash-safe way (a truncated last line moves to ``selection.jsonl.truncated``).

Single writer: one recorder per run at a time (one process, one thread).  On
POSIX systems an advisory lock on results.jsonl makes a second recorder fail
with rule ``run-locked``; elsewhere the assumption is not checked.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable

from capbench_nb.records.derivation import derive_record
from capbench_nb.records.prices import PriceTable, ToolConfig, load_tool_config
from capbench_nb.errors import InvalidRunError, Violation
from capbench_nb.io.atomic import create_synced, fsync_directory, write_atomic
from capbench_nb.records.ingest import record_line
from capbench_nb.records.exact_reader import validate_record
from capbench_nb.records.manifest import load_manifest, manifest_lock, plan_frame, validate_manifest
from capbench_nb.records.run import MANIFEST, RESULTS, read_results
from capbench_nb.records.selection import SELECTION, SelectionChecker, read_selection

try:  # POSIX advisory locking; absent on Windows
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

__all__ = ["RunRecorder"]

TRUNCATED_SUFFIX = ".truncated"


def _json_text(value: Any, **options) -> str:
    """``json.dumps`` that refuses NaN/Infinity; TypeError/ValueError for anything not JSON."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, **options)


def _digest(obj: dict) -> bytes:
    """A key-order independent fingerprint of a parsed record (to tell identical re-records)."""
    text = _json_text(obj, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _written(serialise: Callable[[Any], str], value: Any, *, file: str, rule: str, what: str) -> tuple[bytes, Any]:
    """The UTF-8 bytes ``serialise(value)`` writes, and the value as they read back.

    Raises InvalidRunError (``rule``) when ``value`` is not writable as JSON: a NaN, a lone
    surrogate, a key or an object JSON cannot hold, nesting too deep.
    """
    try:
        data = serialise(value).encode("utf-8")
        return data, json.loads(data)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidRunError(file, rule, f"the {what} is not writable as JSON: {exc}") from None


def _plan_key(manifest: dict) -> str:
    """The plan as comparable text; a null ``k`` or ``repeats_override`` reads as absent."""
    plan = {key: value for key, value in manifest["plan"].items() if value is not None}
    return _json_text(plan, sort_keys=True)


def _last_line_start(path: Path, size: int) -> int:
    """Byte offset where the file's last line starts (just after the last newline, else 0)."""
    with open(path, "rb") as fh:
        pos = size
        while pos > 0:
            step = min(pos, 1 << 16)
            pos -= step
            fh.seek(pos)
            i = fh.read(step).rfind(b"\n")
            if i >= 0:
                return pos + i + 1
    return 0


def _append_line(fh, line: bytes, size: int) -> int:
    """One line, one write, then fsync; the file's new size.  On failure the file is cut back to
    ``size`` (its last complete line) and the exception raised."""
    try:
        view = memoryview(line)
        while view:
            view = view[fh.write(view):]
        os.fsync(fh.fileno())
    except BaseException:
        try:
            os.ftruncate(fh.fileno(), size)
        except OSError:  # a partial line left behind is repaired by the next open
            pass
        raise
    return size + len(line)


def _add_preflight(path: Path, preflight: dict) -> None:
    """Write ``preflight`` into the attempt.json at ``path`` (spec section 12), unless it holds it already."""
    file = str(path)
    if not isinstance(preflight, dict):
        raise InvalidRunError(file, "artifact-type", "a preflight must be an object", pointer="/preflight")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidRunError(file, "artifact-missing", "the attempt has no attempt.json") from None
    except (OSError, ValueError) as exc:
        raise InvalidRunError(file, "artifact-json", f"cannot read attempt.json: {exc}") from None
    if not isinstance(doc, dict):
        raise InvalidRunError(file, "artifact-type", "the document must be an object", pointer="")
    if doc.get("preflight") is not None:
        if doc["preflight"] == preflight:
            return
        raise InvalidRunError(file, "artifact-type", "attempt.json already holds another preflight",
                              pointer="/preflight")
    doc["preflight"] = preflight
    write_atomic(path, json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def _free_name(path: Path) -> Path:
    candidate, n = path, 0
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}{n}")
    return candidate


class RunRecorder:
    """Append attempt records to a run's results.jsonl, durably and resumably.

    Parameters
    ----------
    run_dir : path-like
        The run directory; created if missing.
    manifest : dict
        The run's manifest (spec section 2).  It is validated and written to
        ``manifest.json`` on entry.  If the directory already has a manifest,
        it must describe the same run (same ``run_id`` and ``plan``): the
        recorder then resumes that run, and the given manifest replaces the
        stored one (status, runner, config may change).
    tools : ToolConfig, optional
        Device-action and read-only tool names for :meth:`record_attempt`;
        the package defaults otherwise.
    prices : PriceTable, optional
        Versioned price table for :meth:`record_attempt`; without it cost is null.

    Notes
    -----
    Use as a context manager (or call :meth:`open` and :meth:`close`).
    Leaving the ``with`` block, normally or by an exception, closes the file
    and leaves the manifest exactly as given: the status changes only when
    the caller asks, with ``close(status="completed")``.  A runner would
    typically start with ``status: "partial"`` so that an interrupted run
    says so.

    Memory use is one fingerprint per recorded attempt; records are not kept.

    Re-recording an attempt already in the file (same ``task_id`` and
    ``attempt``) writes nothing: :meth:`record` returns False when the record
    is identical (key order aside), and raises ``InvalidRunError`` with rule
    ``duplicate-attempt`` when it differs, since the file may hold only one
    outcome per attempt.  Use :meth:`has` to skip attempts already done.
    """

    def __init__(
        self,
        run_dir: str | os.PathLike,
        manifest: dict,
        *,
        tools: ToolConfig | None = None,
        prices: PriceTable | None = None,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.manifest_path = self.run_dir / MANIFEST
        self.results_path = self.run_dir / RESULTS
        self.tools = tools
        self.prices = prices
        self._given = manifest
        self._manifest: dict | None = None
        self._fh = None
        self._size = 0
        self._recorded: dict[tuple[str, int], bytes] = {}
        self.selection_path = self.run_dir / SELECTION
        self._selection_fh = None
        self._selection_size = 0
        self._selections: dict[str, bytes] = {}  # task_id -> fingerprint of its line
        self._checker: SelectionChecker | None = None

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> RunRecorder:
        return self.open()

    def __exit__(self, *exc_info) -> None:
        self.close()

    def open(self) -> RunRecorder:
        """Check and write the manifest, lock and repair results.jsonl, read the recorded ids.

        Returns
        -------
        RunRecorder
            ``self``.

        Raises
        ------
        InvalidRunError
            An invalid manifest (given or stored), a stored manifest of another
            run (rule ``manifest-mismatch``), a run already open in another
            recorder (``run-locked``), or invalid content in an existing
            results.jsonl other than a truncated final line.
        """
        if self._fh is not None:
            raise RuntimeError("the recorder is already open")
        manifest = self._checked_manifest(self._given)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.manifest_path.exists():
            stored = load_manifest(self.manifest_path)
            for what, same in (("run_id", stored["run_id"] == manifest["run_id"]),
                               ("plan", _plan_key(stored) == _plan_key(manifest))):
                if not same:
                    raise InvalidRunError(str(self.manifest_path), "manifest-mismatch",
                                          f"the directory holds another run: its manifest has a different {what}; "
                                          "a run can only be resumed with the same run_id and plan")
        try:
            fh = open(self.results_path, "ab", buffering=0)
        except OSError as exc:
            raise InvalidRunError(str(self.results_path), "results-unreadable",
                                  f"cannot open results.jsonl for appending: {exc.strerror}") from None
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise InvalidRunError(str(self.results_path), "run-locked",
                                          "another recorder is writing this run (single writer only)") from None
            self._size = self._repair(fh, self.results_path, self._check_results)
            records, _, _ = read_results(self.results_path, run_dir=self.run_dir, strict=True)
            self._recorded = self._scan()
            self._open_selection(manifest, records)
            self._write_manifest(manifest)  # last, so that a refused resume changes nothing
        except BaseException:
            if self._selection_fh is not None:
                self._selection_fh.close()
                self._selection_fh = None
            fh.close()
            raise
        self._fh, self._manifest = fh, manifest
        if self.tools is None:
            self.tools = load_tool_config()
        return self

    def close(self, status: str | None = None) -> None:
        """Close results.jsonl (releasing the lock); optionally set the manifest's status first.

        Parameters
        ----------
        status : {"completed", "partial", "aborted"}, optional
            Rewrite ``manifest.json`` (atomically) with this status.  Without
            it the manifest is left as written on entry.
        """
        if status is not None:
            if self._fh is None:
                raise RuntimeError("the recorder is not open")
            manifest = self._checked_manifest({**self._manifest, "status": status})
            self._write_manifest(manifest)
            self._manifest = manifest
        if self._selection_fh is not None:
            self._selection_fh.close()
            self._selection_fh = None
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    # ------------------------------------------------------------------ recording

    @property
    def recorded(self):
        """The ``(task_id, attempt)`` pairs in results.jsonl (a read-only, live view)."""
        return self._recorded.keys()

    def has(self, task_id: str, attempt: int) -> bool:
        """Whether results.jsonl already holds a record of this attempt."""
        return (task_id, attempt) in self._recorded

    def record(self, record: dict) -> bool:
        """Validate one attempt record and append it to results.jsonl, durably.

        Parameters
        ----------
        record : dict
            A record of spec section 3; extra fields are kept.  Evidence must
            resolve inside its ``artifact_dir`` now, so write artifacts first.

        Returns
        -------
        bool
            True when the line was written (and fsynced); False when an
            identical record of this attempt is already in the file.

        Raises
        ------
        InvalidRunError
            The record breaks a rule of the run format (the loader's rule id),
            or the attempt is recorded with different content
            (``duplicate-attempt``).  Nothing is written.
        """
        if self._fh is None:
            raise RuntimeError("the recorder is not open")
        file = str(self.results_path)
        line, obj = _written(record_line, record, file=file, rule="record-json", what="record")
        try:  # exactly the loader's check, evidence resolved against the artifacts as they are now
            validate_record(obj, run_dir=self.run_dir, file=file)
        except InvalidRunError as exc:
            ids = f" ({obj['task_id']!r}, {obj['attempt']!r})" if isinstance(obj, dict) and "attempt" in obj else ""
            raise InvalidRunError(file, exc.rule, f"record{ids} not written: {exc.message}") from None
        key, digest = (obj["task_id"], obj["attempt"]), _digest(obj)
        known = self._recorded.get(key)
        if known is not None:
            if known == digest:
                return False
            raise InvalidRunError(file, "duplicate-attempt",
                                  f"({key[0]!r}, {key[1]}) is already recorded with a different outcome; "
                                  "a run holds one record per attempt")
        self._append(line)
        self._recorded[key] = digest
        return True

    def record_attempt(self, attempt_dir: str | os.PathLike, *, preflight: dict | None = None) -> bool:
        """Derive the record of an attempt directory (spec section 4) and :meth:`record` it.

        With ``preflight`` (spec section 12: ``{"lock": digest, "probes": [{"name", "expected",
        "observed"}]}``), the runner's device probe is first written into the attempt's attempt.json
        (atomically; an attempt.json that already holds another preflight is an error), so that a
        drifted attempt is derived by rule 1b against the manifest's ``suite.lock``.

        Parameters
        ----------
        attempt_dir : path-like
            The attempt's artifact directory inside the run; a relative path is
            taken relative to the run directory (e.g. ``attempts/t1/1``).

        Returns
        -------
        bool
            As :meth:`record`.
        """
        if self._fh is None:
            raise RuntimeError("the recorder is not open")
        config = self._manifest.get("config") or {}
        judge, model = config.get("judge"), config.get("model")
        if preflight is not None:
            _add_preflight(self.run_dir / attempt_dir / "attempt.json", preflight)
        record = derive_record(
            self.run_dir / attempt_dir,
            lock=manifest_lock(self._manifest),
            run_dir=self.run_dir,
            judge_default=judge if isinstance(judge, bool) else None,
            model=model if isinstance(model, str) else None,
            tools=self.tools,
            prices=self.prices,
        )
        return self.record(record)

    def record_selection(self, task_id: str, candidates, selected: int | None, *, selector: dict,
                         scores: dict | None = None, selector_ms: float | None = None,
                         selector_tokens: int | None = None, selector_cost: float | None = None,
                         selector_cost_source: str | None = None) -> bool:
        """Check one line of a best-of-k selector's picks and append it to selection.jsonl, durably.

        Parameters
        ----------
        task_id : str
            A task of the plan; one line per task.
        candidates : sequence of int
            The attempt numbers the selector was shown; each must already be recorded.
        selected : int or None
            The attempt it picked, one of ``candidates``; None when it abstained.
        selector : dict
            ``{"name": str, "version": str}``, the same on every line.
        scores : dict, optional
            Attempt number (int or decimal string) -> the selector's score, one per candidate.
        selector_ms, selector_tokens, selector_cost, selector_cost_source : optional
            The selector's wall time, tokens and cost (a cost needs its versioned price source).

        Returns
        -------
        bool
            True when the line was written (and fsynced); False when an identical line of this
            task is already in the file.

        Raises
        ------
        InvalidRunError
            The line breaks a rule of spec section 9 (the loader's rule id, e.g.
            ``selection-candidate-missing``), or the task's line is already recorded with other
            content (``selection-duplicate-task``).  Nothing is written.
        """
        if self._fh is None:
            raise RuntimeError("the recorder is not open")
        file = str(self.selection_path)
        line = {"task_id": task_id, "candidates": list(candidates), "selected": selected,
                "scores": None if scores is None else {str(key): value for key, value in scores.items()},
                "selector": selector, "selector_ms": selector_ms, "selector_tokens": selector_tokens,
                "selector_cost": selector_cost, "selector_cost_source": selector_cost_source}
        data, obj = _written(lambda v: _json_text(v) + "\n", line, file=file, rule="selection-json",
                             what="selection line")
        digest, known = _digest(obj), self._selections.get(task_id) if isinstance(task_id, str) else None
        if known is not None:
            if known == digest:
                return False
            raise InvalidRunError(file, "selection-duplicate-task", f"the selection of {task_id!r} is already "
                                  "recorded with other content; a run holds one selection line per task")
        try:  # exactly the loader's checks, against the attempts recorded so far
            self._checker.check(obj)
        except Violation as exc:
            raise InvalidRunError(file, exc.rule, f"selection line of {task_id!r} not written: {exc.reason}") from None
        if self._selection_fh is None:
            self._selection_fh = open(self.selection_path, "ab", buffering=0)
            self._selection_size = os.fstat(self._selection_fh.fileno()).st_size
            fsync_directory(self.run_dir)  # the new file's name is durable too
        try:
            self._selection_size = _append_line(self._selection_fh, data, self._selection_size)
        except BaseException:
            self.close()
            raise
        self._selections[task_id] = digest
        return True

    # ------------------------------------------------------------------ internals

    def _open_selection(self, manifest: dict, records) -> None:
        """Repair and read an existing selection.jsonl as the loader does; set up the checks of new lines."""
        plan = plan_frame(manifest)
        self._checker = SelectionChecker(plan["task_id"].astype(object),
                                         lambda task_id, attempt: (task_id, attempt) in self._recorded)
        self._selections = {}
        if not os.path.lexists(self.selection_path):
            return
        try:
            fh = open(self.selection_path, "ab", buffering=0)
        except OSError as exc:
            raise InvalidRunError(str(self.selection_path), "selection-unreadable",
                                  f"cannot open selection.jsonl for appending: {exc.strerror}") from None
        self._selection_fh = fh  # closed by open() if anything below fails

        def read():
            return read_selection(self.selection_path, plan=plan, records=records, strict=True)

        self._selection_size = self._repair(fh, self.selection_path, read)
        existing = read()
        self._checker.selector = existing.selector
        for task, line in zip(existing.lines["task_id"].astype(object), existing.lines["line"].tolist()):
            self._checker.seen[task] = line
            self._checker.selector_line = self._checker.selector_line or line
        with open(self.selection_path, "rb") as reader:
            for raw in reader:
                if raw.strip():
                    obj = json.loads(raw)
                    self._selections[obj["task_id"]] = _digest(obj)


    def _checked_manifest(self, manifest: dict) -> dict:
        """The manifest as it will read back from disk, validated."""
        _, parsed = _written(_json_text, manifest, file=str(self.manifest_path), rule="manifest-json", what="manifest")
        validate_manifest(parsed, file=str(self.manifest_path))
        return parsed

    def _write_manifest(self, manifest: dict) -> None:
        write_atomic(self.manifest_path, _json_text(manifest, indent=2) + "\n")
        fsync_directory(self.run_dir)

    def _append(self, line: bytes) -> None:
        """One line of results.jsonl, durably (:func:`_append_line`); after a failure the recorder is closed."""
        try:
            self._size = _append_line(self._fh, line, self._size)
        except BaseException:
            self.close()  # the file's state is uncertain after a failed write: reopen to go on
            raise

    def _check_results(self) -> None:
        read_results(self.results_path, run_dir=self.run_dir, strict=True)

    def _repair(self, fh, path: Path, check: Callable[[], Any]) -> int:
        """Make ``path`` (results.jsonl or selection.jsonl) end with a newline; return its size.

        A last line without a newline is ended when the loader accepts it (``check``), and
        moved to a side file when the loader reports it as ``truncated-line``
        (a crash mid-write).  Any other error is raised: that is not a crash.
        """
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return 0
        with open(path, "rb") as reader:
            reader.seek(size - 1)
            if reader.read(1) == b"\n":
                return size
        try:
            check()
        except InvalidRunError as exc:
            if exc.rule != "truncated-line":
                raise
            start = _last_line_start(path, size)
            with open(path, "rb") as reader:
                reader.seek(start)
                fragment = reader.read()
            side = _free_name(path.with_name(path.name + TRUNCATED_SUFFIX))
            create_synced(side, fragment)  # saved durably before the cut: nothing is lost
            os.ftruncate(fh.fileno(), start)
            os.fsync(fh.fileno())
            return start
        fh.write(b"\n")  # a complete last record that only lacks its newline
        os.fsync(fh.fileno())
        return size + 1

    def _scan(self) -> dict[tuple[str, int], bytes]:
        """Fingerprints of the records of the (validated) results.jsonl, by (task_id, attempt)."""
        recorded = {}
        with open(self.results_path, "rb") as fh:
            for raw in fh:
                if raw.strip():
                    obj = json.loads(raw)
                    recorded[(obj["task_id"], obj["attempt"])] = _digest(obj)
        return recorded
