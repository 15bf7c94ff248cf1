"""The results.jsonl record of one attempt directory, derived from its artifacts (spec sections 4, 5 and 8).

- :func:`read_artifacts` reads ``attempt.json`` (required), ``episode.json`` and ``history.json``
  (optional), each only if it resolves inside the attempt directory, and checks their types;
- :func:`derive_record` puts together the outcome (:func:`capbench_nb.records.outcome.classify`),
  the telemetry (:func:`capbench_nb.records.telemetry_extract.extract_telemetry`) and the cost
  (:func:`capbench_nb.records.prices.price_cost`) into one record, and checks that its evidence resolves;
- :class:`DerivationContext`: what a caller deriving every record of one run (``ingest``) already
  knows, handed in explicitly.

Nothing is guessed: a failure stage is set only with evidence.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from capbench_nb.errors import InvalidRunError
from capbench_nb.io.files import NotARegularFile, checked_stat
from capbench_nb.io.jsonparse import parse_document
from capbench_nb.io.pointer import EvidenceError, resolve_pointer
from capbench_nb.format import ATTEMPT, EPISODE, HISTORY, new_record
from capbench_nb.records.artifacts import check_attempt, check_episode, check_history
from capbench_nb.records.evidence import EvidenceResolver
from capbench_nb.records.outcome import classify
from capbench_nb.records.prices import PriceTable, ToolConfig, price_cost
from capbench_nb.records.telemetry_extract import extract_telemetry

try:  # optional: parses artifact files faster, to the same documents (see _parse_artifact)
    import orjson as _orjson
except ImportError:  # pragma: no cover - the standard library alone gives the same results
    _orjson = None

__all__ = ["Artifacts", "DerivationContext", "read_artifacts", "derive_record"]


# --------------------------------------------------------------------------- artifacts


@dataclass(frozen=True)
class Artifacts:
    """The parsed artifact files of one attempt; ``None`` for an optional file that is absent."""

    directory: Path
    attempt: dict
    episode: dict | None
    history: dict | None
    #: ``os.path.realpath(directory)`` when read_artifacts computed it (saves resolving it again).
    real_directory: str | None = field(default=None, compare=False, repr=False)
    #: Set by read_artifacts only: the directory (``os.fspath``) whose files these documents are.
    _read_from: str | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class DerivationContext:
    """What a caller that derives every record of one run already knows, so that it is not found again per record.

    Parameters
    ----------
    run_dir : str
        ``os.fspath`` of the run directory; the context serves only the calls of
        :func:`derive_record` with this ``run_dir`` (any other call ignores it).
    real_paths : mapping of str to str
        ``os.path.realpath`` of the run directory and of directories below it, by ``os.fspath``
        (``ingest`` knows them from its scan without a system call per directory).
    resolver : EvidenceResolver, optional
        One resolver of ``run_dir`` shared by every record, instead of one per record.  With it,
        a reference into attempt.json or episode.json as :func:`read_artifacts` just read them
        resolves in those documents (see :func:`derive_record`).
    """

    run_dir: str
    real_paths: Mapping[str, str] = field(default_factory=dict)
    resolver: EvidenceResolver | None = None

    def realpath(self, path: str | os.PathLike) -> str:
        """``os.path.realpath(path)``, from :attr:`real_paths` when known."""
        return self.real_paths.get(os.fspath(path)) or os.path.realpath(path)


_NO_CONTEXT = DerivationContext("")


_OPEN = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # opening a FIFO must not wait for a writer
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _open_artifact(file: str, name: str, required: bool, real_dir: str) -> int | None:
    """A descriptor open for reading on the artifact file, or None when an optional file is absent.

    The file must resolve (symlinks followed) inside its attempt directory, whose real path is
    ``real_dir``.  A name that is not a symlink is ``real_dir/name``: inside.  So the file is first
    opened without following a symlink; only when that fails for another reason than its absence
    (it is a symlink, or cannot be opened) is it looked at again: a symlink is resolved and must
    stay inside, then the file is opened following it.
    """
    if _NOFOLLOW:
        try:
            return os.open(file, _OPEN | _NONBLOCK | _NOFOLLOW)
        except FileNotFoundError:
            if required:
                raise InvalidRunError(file, "artifact-missing", f"the attempt has no {name}") from None
            return None
        except OSError:
            pass  # a symlink (or an error the checks below report as before)
    try:
        link = stat.S_ISLNK(os.lstat(file).st_mode)
    except OSError:  # absent (os.path.lexists is False): nothing to check here
        link = False
    if link and not os.path.realpath(file).startswith(real_dir.rstrip(os.sep) + os.sep):
        raise InvalidRunError(file, "artifact-outside", f"{name} resolves outside the attempt directory")
    try:
        return os.open(file, _OPEN | _NONBLOCK)
    except FileNotFoundError:
        if required:
            raise InvalidRunError(file, "artifact-missing", f"the attempt has no {name}") from None
        return None
    except IsADirectoryError:
        raise InvalidRunError(file, "artifact-unreadable", f"{name} is a directory") from None
    except OSError as exc:
        raise InvalidRunError(file, "artifact-unreadable", f"cannot read {name}: {exc.strerror}") from None


def _read_artifact(file: str, name: str, required: bool, real_dir: str) -> bytes | None:
    """The bytes of an artifact file (see :func:`_open_artifact` and :func:`_read_fd`), or None
    when an optional file is absent."""
    fd = _open_artifact(file, name, required, real_dir)
    return None if fd is None else _read_fd(fd, file, name)


def _read_fd(fd: int, file: str, name: str) -> bytes:
    """Everything ``fd`` (opened with ``O_NONBLOCK``) reads, then closes it; InvalidRunError otherwise.

    A regular file, or the null device, is read to its end.  A FIFO (named pipe), a socket or
    another device is refused (:func:`capbench_nb.io.files.checked_stat`): reading one could wait
    for a writer, maybe forever, or never end.
    """
    try:
        st = checked_stat(fd, file, null_device=True)
        parts = []
        if stat.S_ISREG(st.st_mode):
            data = os.read(fd, st.st_size + 1)
            if len(data) == st.st_size:  # all of it in one read (one byte more was asked for)
                return data
            parts = [data]  # it grew or shrank since fstat, or says size 0 and has content (/proc)
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(parts)
            parts.append(chunk)
    except IsADirectoryError:
        raise InvalidRunError(file, "artifact-unreadable", f"{name} is a directory") from None
    except NotARegularFile as exc:
        raise InvalidRunError(file, "artifact-unreadable", f"{name} is {exc.kind}, not a regular file") from None
    except OSError as exc:
        raise InvalidRunError(file, "artifact-unreadable", f"cannot read {name}: {exc.strerror}") from None
    finally:
        os.close(fd)


_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_19_DIGITS = b"0" * 19  # an integer orjson may read as a float has at least 19 digits (-2**63 - 1)


def _parse_artifact(raw: bytes, file: str, check) -> Any:
    """The parsed, type-checked document of an artifact file.

    With orjson installed it parses first, and its document is the standard library's: any problem
    (a syntax error, a broken type rule, but also what the standard library reads and orjson does
    not: NaN, infinities, lone surrogates, deep nesting) sends the file to the standard library,
    which gives the document, or the error, it always gave.  orjson reads an integer beyond 64 bits
    as a float, so a file with 19 digits in a row (anywhere: cheaper to find than to tell where)
    goes the standard library's way from the start.
    """
    if _orjson is not None and _19_DIGITS not in raw.translate(_DIGITS_AS_ZERO):
        try:
            doc = _orjson.loads(raw)
            check(doc, file)
            return doc
        except Exception:  # noqa: BLE001, S110 - whatever it was, the exact reading below decides
            pass
    doc = parse_document(raw, file=file, rule="artifact-json")
    check(doc, file)
    return doc


def read_artifacts(directory: str | os.PathLike, *, context: DerivationContext | None = None) -> Artifacts:
    """Read and type-check the artifacts of one attempt directory.

    ``context`` may know the directory's real path (:class:`DerivationContext`).

    Raises
    ------
    InvalidRunError
        Naming the file (and a JSON pointer) when attempt.json is missing, a
        file is not JSON, or a value has the wrong type.
    """
    directory = directory if isinstance(directory, Path) else Path(directory)
    real_dir = (context or _NO_CONTEXT).realpath(directory)
    shown = str(directory)
    base = "" if shown == "." else shown if shown.endswith(os.sep) else shown + os.sep  # + name: str(directory / name)
    file = base + ATTEMPT
    attempt = _parse_artifact(_read_artifact(file, ATTEMPT, True, real_dir), file, check_attempt)
    file = base + EPISODE
    raw = _read_artifact(file, EPISODE, False, real_dir)
    episode = None if raw is None else _parse_artifact(raw, file, check_episode)
    file = base + HISTORY
    raw = _read_artifact(file, HISTORY, False, real_dir)
    history = None if raw is None else _parse_artifact(raw, file, check_history)
    return Artifacts(directory, attempt, episode, history, real_directory=real_dir, _read_from=shown)


# --------------------------------------------------------------------------- record


def derive_record(
    directory: str | os.PathLike,
    *,
    run_dir: str | os.PathLike,
    judge_default: bool | None = None,
    model: str | None = None,
    tools: ToolConfig | None = None,
    prices: PriceTable | None = None,
    artifacts: Artifacts | None = None,
    context: DerivationContext | None = None,
    lock: str | None = None,
) -> dict:
    """The results.jsonl record of one attempt directory.

    Parameters
    ----------
    directory : path-like
        The attempt's artifact directory (inside ``run_dir``).
    run_dir : path-like
        The run directory; ``artifact_dir`` is written relative to it.
    judge_default : bool, optional
        The manifest's ``config.judge``.
    model : str, optional
        The model whose prices apply (the manifest's ``config.model``).
    tools : ToolConfig, optional
        Device-action and read-only tool names; the package defaults otherwise.
    prices : PriceTable, optional
        Without one, ``cost`` and ``cost_source`` are null.
    artifacts : Artifacts, optional
        Already read artifacts (otherwise read from ``directory``).
    context : DerivationContext, optional
        What the caller knows of the run (used only when its ``run_dir`` is this one).
    lock : str, optional
        The manifest's ``suite.lock``: a preflight naming another lock is drift (rule 1b, spec section 12).

    Raises
    ------
    InvalidRunError
        For a missing attempt.json, unparseable JSON or wrong types, naming the file.
    """
    if context is not None and context.run_dir != os.fspath(run_dir):
        context = None
    art = artifacts or read_artifacts(directory, context=context)
    outcome = classify(art.attempt, art.episode, judge_default=judge_default, lock=lock)
    telemetry, sources = extract_telemetry(art.attempt, art.episode, art.history, tools=tools)
    cost, cost_source = price_cost(telemetry, model, prices)
    read_here = art._read_from is not None and art._read_from == os.fspath(directory)
    artifact_dir, below = _artifact_dir(art, directory, run_dir, read_here, context)
    record = new_record(
        task_id=art.attempt["task_id"], attempt=art.attempt["attempt"], artifact_dir=artifact_dir,
        success=outcome.success, agent_eligible=outcome.agent_eligible, failure_class=outcome.failure_class,
        failure_stage=outcome.failure_stage, evidence=list(outcome.evidence), quality_score=outcome.quality_score,
        telemetry=telemetry, telemetry_source=sources, cost=cost, cost_source=cost_source,
    )
    # Every reference must resolve: the rule the loader enforces, checked where the reference is
    # made.  With a context's shared resolver (ingest), a reference into attempt.json
    # or episode.json as read_artifacts just read them from this directory, which lies below the
    # run (artifact_dir is then relative, without ``..``, and those files were checked to resolve
    # inside it), resolves exactly where its pointer resolves in that document.  Any other is
    # resolved by an EvidenceResolver, reading the file again.  (ingest's final check, the loader,
    # resolves every reference of the written file on disk.)
    shared = context.resolver if context is not None else None
    documents = {ATTEMPT: art.attempt, EPISODE: art.episode} if below and read_here and shared else {}
    if record["evidence"]:
        _check_evidence(record["evidence"], artifact_dir, directory, run_dir, documents, shared)
    return record


def _artifact_dir(art: Artifacts, directory, run_dir, read_here: bool,
                  context: DerivationContext | None) -> tuple[str, bool]:
    """``artifact_dir`` of the record: the real attempt directory relative to the real run directory,
    and whether it lies below the run (then it is relative, without ``..``)."""
    if art.real_directory is not None and os.fspath(art.directory) == os.fspath(directory) \
            and (read_here or os.path.isdir(art.real_directory)):
        # what Path(directory).resolve() gives, already known (read_artifacts opened files in it)
        resolved = art.real_directory
    else:
        resolved = Path(directory).resolve()
    real_run = (context.real_paths.get(os.fspath(run_dir)) if context is not None else None) \
        or str(Path(run_dir).resolve())
    inside = real_run if real_run.endswith(os.sep) else real_run + os.sep
    below = os.sep == "/" and isinstance(resolved, str) and resolved.startswith(inside)
    if below:
        return resolved[len(inside):], True  # relpath of a real path below a real path: the rest of it
    return Path(os.path.relpath(resolved, real_run)).as_posix(), False


def _check_evidence(evidence: list, artifact_dir: str, directory, run_dir, documents: dict,
                    shared: EvidenceResolver | None) -> None:
    """Raise InvalidRunError (rule ``evidence``) for the first reference that does not resolve:
    in ``documents`` (artifacts just read, by file name) when there, else by an EvidenceResolver."""
    resolver = None
    for ref in evidence:
        file, _, pointer = ref.partition("#")
        if documents.get(file) is not None:
            try:
                resolve_pointer(documents[file], pointer)
                continue
            except EvidenceError:
                pass  # the resolver names the problem
        resolver = resolver or shared or EvidenceResolver(run_dir)
        try:
            resolver.resolve(artifact_dir, ref)
        except EvidenceError as exc:
            raise InvalidRunError(str(Path(directory) / file), "evidence", str(exc)) from None
