"""``ingest``: derive results.jsonl from a run's attempt directories (spec sections 1 and 4).

Every ``attempts/*/*/`` directory gives one record (:func:`derive_record`);
the records are sorted by task then attempt and written atomically.  An
existing results.jsonl is never overwritten unless asked (``force``), and then
a backup is kept.  The written file is loaded back and validated before
ingest reports success, so what ingest writes is what ``load_run`` accepts.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from capbench_nb.errors import InvalidRunError
from capbench_nb.format import ATTEMPT, new_record
from capbench_nb.io import interrupts
from capbench_nb.io.atomic import copy_atomic, write_atomic
from capbench_nb.io.files import inside, read_regular_file
from capbench_nb.io.jsonparse import parse_document
from capbench_nb.io.pointer import EvidenceError
from capbench_nb.records.derivation import DerivationContext, derive_record, read_artifacts
from capbench_nb.records.evidence import EvidenceResolver
from capbench_nb.records.manifest import load_manifest, manifest_lock
from capbench_nb.records.run import MANIFEST, RESULTS, read_results
from capbench_nb.records.prices import PriceTable, ToolConfig, load_tool_config

__all__ = ["IngestReport", "ingest_run", "attempt_directories", "record_line"]


@dataclass(frozen=True)
class IngestReport:
    """What ingest wrote."""

    path: Path
    records: int
    errors: int
    backup: Path | None


def attempt_directories(run_dir: str | os.PathLike) -> list[Path]:
    """The ``attempts/<task>/<attempt>/`` directories of a run, in a stable (byte-sorted) order."""
    return [Path(directory) for directory in _scan(run_dir)[0]]


def _scan(run_dir: str | os.PathLike) -> tuple[list[str], dict[str, str]]:
    """:func:`attempt_directories` as strings (each ``str`` of its Path), and the real path
    (``os.path.realpath``) of the run, of ``attempts`` and of every directory below it.

    The real paths cost no system call per directory: below a resolved directory, a name that
    is not a symlink resolves to itself, and the directory listing says which names are symlinks.
    """
    run = Path(run_dir)
    root = run / "attempts"
    if not root.is_dir():
        return [], {}
    top, root_str = os.fspath(run), os.fspath(root)
    real = {top: os.path.realpath(top)}
    real_root = os.path.join(real[top], "attempts")
    real[root_str] = os.path.realpath(root_str) if os.path.islink(real_root) else real_root

    def subdirectories(path: str, real_path: str) -> list:  # (is_dir follows symlinks, as Path.is_dir does)
        with os.scandir(path) as entries:
            found = [(e.name, e.is_symlink()) for e in entries if e.is_dir()]
        found.sort(key=lambda item: os.fsencode(item[0]))
        out = []
        for name, link in found:
            child = path + os.sep + name  # str(Path(path) / name): names hold no separator, never . or ..
            real[child] = os.path.realpath(child) if link else os.path.join(real_path, name)
            out.append(child)
        return out

    found = []
    for task_dir in subdirectories(root_str, real[root_str]):
        found.extend(subdirectories(task_dir, real[task_dir]))
    return found, real


#: Why an attempt directory whose real path leaves the run is refused (the loader's rule for an
#: artifact_dir that does: ``evidence``).
_OUTSIDE_RUN = "the attempt directory resolves outside the run directory (through a symlink); nothing in it is read"

_LINE_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(", ", ": "))


def record_line(record: dict) -> str:
    """One results.jsonl line: compact JSON in the record's key order, UTF-8 text, no NaN."""
    return _LINE_ENCODER.encode(record) + "\n"


def _error_record(directory: Path, run_dir: Path, error: InvalidRunError) -> dict | None:
    """The ``unknown``, ineligible record of an attempt whose artifacts are broken (``--allow-invalid``).

    Its ids come from attempt.json when that file reads, else from the
    directory names (the only other place they exist).  Evidence is kept only
    for references that resolve; here that is attempt.json itself when it parses.
    A directory that resolves outside the run is not read at all: its ids come from
    the directory names and its ``artifact_dir`` is null.
    """
    attempt_doc = None
    path = str(directory / ATTEMPT)
    outside = not inside(os.path.realpath(directory), os.path.realpath(run_dir))
    try:  # (a FIFO is refused, not waited for)
        if not outside:
            attempt_doc = parse_document(read_regular_file(path), file=path)
    except (OSError, InvalidRunError):
        pass
    task_id = attempt_doc.get("task_id") if isinstance(attempt_doc, dict) else None
    number = attempt_doc.get("attempt") if isinstance(attempt_doc, dict) else None
    source = ATTEMPT
    if not isinstance(task_id, str) or not task_id or type(number) is not int or number < 1:
        task_id, source = directory.parent.name, "directory names"
        digits = directory.name.isascii() and directory.name.isdigit()  # "²" is a digit int() refuses
        number = int(directory.name) if digits and int(directory.name) >= 1 else None
        if number is None:
            return None
    artifact_dir = None if outside else Path(os.path.relpath(directory, run_dir)).as_posix()
    evidence = []
    if isinstance(attempt_doc, dict):
        try:
            EvidenceResolver(run_dir).resolve(artifact_dir, ATTEMPT + "#")
            evidence = [ATTEMPT + "#"]
        except EvidenceError:
            pass
    record = new_record(task_id=task_id, attempt=number, artifact_dir=artifact_dir, success=False,
                        agent_eligible=False, failure_class="unknown", evidence=evidence)
    record["ingest_error"] = {  # an extra key, after the record's own
        "file": Path(os.path.relpath(error.file, directory)).as_posix(),
        "rule": error.rule,
        "reason": error.message,
        "ids_from": source,
    }
    return record


class _Progress:
    """A one-line progress display on a terminal; silent otherwise."""

    def __init__(self, total: int, enabled: bool | None) -> None:
        self.total = total
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.step = max(1, total // 100)

    def update(self, done: int) -> None:
        if self.enabled and (done % self.step == 0 or done == self.total):
            print(f"\ringest: {done}/{self.total} attempts ({100 * done // max(1, self.total)}%)", end="",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.enabled:
            print(file=sys.stderr, flush=True)


def _line(record: dict) -> tuple:
    """A derived record as ingest needs it: ``(task_id, attempt, line, exception)``, its
    results.jsonl line or why it has none (raised where the lines are joined, in file order)."""
    try:
        return record["task_id"], record["attempt"], record_line(record), None
    except Exception as exc:  # noqa: BLE001 - kept, raised in file order
        return record["task_id"], record["attempt"], None, exc


class _Deriver:
    """Derives the record of one attempt directory: ``(_line(...), None)``, or ``(None, exception)``."""

    def __init__(self, run_dir: Path, judge_default, model, tools, prices, context: DerivationContext,
                 lock: str | None = None) -> None:
        self.run_dir, self.judge_default, self.model, self.tools, self.prices = run_dir, judge_default, model, tools, prices
        self.context, self.lock = context, lock

    def __call__(self, directory: str) -> tuple[tuple | None, BaseException | None]:
        try:
            path = Path(directory)
            # A symlinked attempt directory (or task or attempts/ folder) that leads out of the run
            # is refused before anything in it is read (the real paths are known from the scan).
            if not inside(self.context.realpath(directory), self.context.realpath(self.context.run_dir)):
                raise InvalidRunError(directory, "evidence", _OUTSIDE_RUN)
            record = derive_record(path, run_dir=self.run_dir, judge_default=self.judge_default, model=self.model,
                                   tools=self.tools, prices=self.prices, context=self.context, lock=self.lock,
                                   artifacts=read_artifacts(path, context=self.context))
        except Exception as exc:  # handed back in directory order, as one process would meet it
            return None, exc
        return _line(record), None


#: A pool worker's deriver and the parent's stop flag, set once when it starts (:func:`_start_worker`).
_WORKER: dict = {}


def _start_worker(derive: _Deriver, parent: int, stop) -> None:
    # Forked workers inherit ``derive`` (its context holds every real path of the run) without a
    # copy; handing it with each batch instead would pickle it once per batch.
    _WORKER.update(derive=derive, stop=stop)
    # The parent answers interrupts and stops the workers through ``stop`` (a Ctrl-C reaches the
    # whole process group; the handlers inherited from the parent would print a traceback per
    # worker); a worker also dies with its parent, instead of blocking for good on a result pipe
    # nobody reads.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with(parent)


def _die_with(parent: int) -> None:
    """Have the kernel kill this process when ``parent`` ends (Linux ``PR_SET_PDEATHSIG``); elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent ended before the request was made
        os._exit(1)


def _worker_batch(directories: list[str]) -> list[tuple[tuple | None, BaseException | None]]:
    derive, stop = _WORKER["derive"], _WORKER["stop"]
    return [derive(directory) for directory in directories if not stop.is_set()]  # (short once stopped)


#: Below this many attempt directories a process pool costs more than it saves.
PARALLEL_MIN_DIRECTORIES = 2000


def _default_workers(n: int) -> int:
    if n < PARALLEL_MIN_DIRECTORIES:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 4))


def _derived(derive: _Deriver, directories: list[str], workers: int | None):
    """``(directory, (record, exception))`` for every directory, in order.

    With several workers the directories are split into contiguous batches derived by forked
    processes; results still come back in directory order, so the caller sees exactly what one
    process would.  Without ``fork`` (or when the pool fails to start), one process does it all.
    """
    import multiprocessing

    workers = _default_workers(len(directories)) if workers is None else max(1, int(workers))
    if workers > 1 and "fork" in multiprocessing.get_all_start_methods():
        from concurrent.futures import ProcessPoolExecutor

        size = max(1, min(500, -(-len(directories) // (4 * workers))))
        batches = [directories[i:i + size] for i in range(0, len(directories), size)]
        context = multiprocessing.get_context("fork")
        try:
            stop = context.Event()
            pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_start_worker,
                                       initargs=(derive, os.getpid(), stop))
        except (OSError, ValueError):
            pool = None
        if pool is not None:
            try:
                with interrupts.deferred():  # the workers are forked here: none may take a signal as ours
                    outcomes = pool.map(_worker_batch, batches)
                for batch, results in zip(batches, outcomes):
                    yield from zip(batch, results)
            finally:  # also when the caller stops at an error or an interrupt: the workers end their
                stop.set()  # current attempt and exit (terminating one could cut a result it is sending)
                pool.shutdown(wait=True, cancel_futures=True)
            return
    for directory in directories:
        yield directory, derive(directory)


def _collect(derived, run_dir: Path, allow_invalid: bool, bar: _Progress) -> tuple[list[tuple], int]:
    """The lines of the derived records (``_line`` tuples, in directory order) and the number of
    attempts recorded as broken; raises the first error that is not to be recorded (``bar`` closed)."""
    records: list[tuple] = []
    errors = 0
    seen: dict[tuple, str] = {}
    for done, (directory, outcome) in enumerate(derived, start=1):
        record, exc = outcome
        if exc is not None:
            if not isinstance(exc, InvalidRunError):
                bar.close()
                raise exc
            if not allow_invalid:
                bar.close()
                raise exc
            broken = _error_record(Path(directory), run_dir, exc)
            errors += 1
            if broken is None:
                bar.close()
                raise InvalidRunError(directory, "artifact-ids",
                                      f"cannot tell which attempt this is: {exc.message}") from None
            record = _line(broken)
        key = record[:2]  # (task_id, attempt)
        if key in seen:
            bar.close()
            raise InvalidRunError(str(Path(directory) / ATTEMPT), "duplicate-attempt",
                                  f"task {key[0]!r} attempt {key[1]} is also recorded in {seen[key]}")
        seen[key] = directory
        records.append(record)
        bar.update(done)
        if done == 1:
            interrupts.pause_point("ingest")
    return records, errors


def _backup_path(path: Path) -> Path:
    candidate = path.with_name(path.name + ".bak")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.bak{n}")
        n += 1
    return candidate


def _write_with_backup(target: Path, text: str, check) -> Path | None:
    """Write ``text`` over ``target`` atomically (:func:`write_atomic`, validated by ``check``), an existing
    file first copied to a free ``.bak`` name; the backup is complete or absent, even on a full disk, and is
    removed again when the write fails (the file is then as it was)."""
    backup = copy_atomic(target, _backup_path(target)) if target.exists() else None
    try:
        write_atomic(target, text, check=check)
    except BaseException:
        if backup is not None:
            with contextlib.suppress(OSError):
                backup.unlink()
        raise
    return backup


def ingest_run(
    run_dir: str | os.PathLike,
    *,
    out: str | os.PathLike | None = None,
    force: bool = False,
    allow_invalid: bool = False,
    tools: ToolConfig | None = None,
    prices: PriceTable | None = None,
    progress: bool | None = None,
    workers: int | None = None,
) -> IngestReport:
    """Derive every attempt record of ``run_dir`` and write results.jsonl.

    Parameters
    ----------
    run_dir : path-like
        A run directory with manifest.json and ``attempts/<task>/<attempt>/``.
    out : path-like, optional
        Where to write; default ``RUN_DIR/results.jsonl``.
    force : bool, default False
        Replace an existing file, keeping it as ``<name>.bak`` (``.bak1``, ...).
    allow_invalid : bool, default False
        Turn an attempt with broken artifacts into an ``unknown``, ineligible
        record carrying ``ingest_error`` instead of failing.
    tools : ToolConfig, optional
        Device-action and read-only tool names (package defaults otherwise).
    prices : PriceTable, optional
        Versioned price table; without it cost stays null.
    progress : bool, optional
        Show progress on stderr; default: when stderr is a terminal.
    workers : int, optional
        Processes deriving records in parallel (directories are split into
        contiguous batches; the records, their order and the errors are those
        of one process).  Default: one per available CPU, up to 4, for runs
        of at least 2,000 attempt directories where ``fork`` is available;
        1 (no process pool) otherwise.

    Raises
    ------
    InvalidRunError
        A broken artifact (file named), two directories claiming the same
        ``(task_id, attempt)``, or an existing output without ``force``.
    """
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir / MANIFEST)
    config = manifest.get("config") or {}
    judge_default = config.get("judge") if isinstance(config.get("judge"), bool) else None
    model = config.get("model") if isinstance(config.get("model"), str) else None
    tools = tools or load_tool_config()
    target = Path(out) if out is not None else run_dir / RESULTS
    if target.exists() and not force:
        raise InvalidRunError(str(target), "output-exists", "results.jsonl already exists; use --force to replace it (a backup is kept)")

    directories, known = _scan(run_dir)  # directories as strings: cheaper to hand to other processes
    bar = _Progress(len(directories), progress)
    context = DerivationContext(os.fspath(run_dir), known, EvidenceResolver(run_dir))
    derive = _Deriver(run_dir, judge_default, model, tools, prices, context, manifest_lock(manifest))
    derived = _derived(derive, directories, workers)
    try:
        records, errors = _collect(derived, run_dir, allow_invalid, bar)
    finally:  # an error or an interrupt ends the process pool now, not when the generator is collected
        derived.close()
    bar.close()

    records.sort(key=lambda r: (r[0].encode("utf-8", "surrogatepass"), r[1]))
    for record in records:  # a line that could not be written: its error, in file order
        if record[3] is not None:
            raise record[3]
    text = "".join(record[2] for record in records)
    target.parent.mkdir(parents=True, exist_ok=True)
    def check(tmp: Path) -> None:  # what ingest writes, the loader accepts
        try:
            read_results(tmp, run_dir=run_dir, strict=True)
        except InvalidRunError as exc:
            raise InvalidRunError(str(target), exc.rule, f"ingest derived an invalid record: {exc.message}",
                                  line=exc.line) from None

    backup = _write_with_backup(target, text, check)
    return IngestReport(path=target, records=len(records), errors=errors, backup=backup)
