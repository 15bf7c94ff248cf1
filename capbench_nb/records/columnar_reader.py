"""The columnar fast path of results.jsonl: pyarrow's JSON reader, rules checked on whole columns.

A valid results.jsonl is parsed by pyarrow's JSON reader with the explicit schema generated from
:data:`~capbench_nb.format.RECORD` (and :data:`~capbench_nb.format.RECORD_TELEMETRY`), and every
rule of sections 3 and 8 is then checked on whole columns: types by the schema, nullability,
ranges and vocabularies from the same rows, the invariants as the vectorised predicates of
:data:`~capbench_nb.format.INVARIANTS`.  The fast path only ever *accepts* a file: whenever
anything is off (a rule broken, a duplicate, and also whatever pyarrow is more lenient about than
the exact reader: NaN tokens, a byte-order mark, several objects on one line, blank lines,
``"telemetry": null``, fields beyond section 3, a negative zero that could have been written
``-0``), :func:`read_results_fast` returns None and the exact streaming reader
(:mod:`capbench_nb.records.exact_reader`) reads the file, so errors, anomalies and their lines are
exactly those of the exact reader.

The file is read in chunks that end at a newline.  A worker thread reads, hashes and parses
chunk i+1 (pyarrow and hashlib release the GIL) while the calling thread checks chunk i.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from capbench_nb.format import (
    INVARIANTS, RECORD, RECORD_DTYPES, RECORD_FIELDS, RECORD_TELEMETRY, TELEMETRY_FIELDS, Facts, safe_numbers,
)
from capbench_nb.io.files import check_relative_path, open_input
from capbench_nb.io.pointer import EvidenceError, resolve_pointer
from capbench_nb.records.evidence import EvidenceResolver, read_evidence_file
from capbench_nb.records.exact_reader import CATEGORIES, canonical_json

__all__ = ["CHUNK_BYTES", "MIN_RECORD_BYTES", "arrow_schema", "read_results_fast", "MemoResolver"]

#: Bytes the fast path reads (and parses) at a time; a chunk ends at a newline.
CHUNK_BYTES = 16 << 20

#: Rows after which each numeric column's per-chunk arrays (small, so in malloc's heap, where freed
#: memory stays resident) are joined into one block, mapped on its own and returned when freed: the
#: heap then holds one block's parts at a time (10 million attempts: a 6.6 GB peak without blocks).
BLOCK_ROWS = 1 << 22
_STRING_COLUMNS = ("task_id", "artifact_dir")  # pyarrow arrays, joined once at the end
_ARROW: dict[str, Any] = {}

#: Fields that must not be null; containers that may be absent (their default) but not null.
_REQUIRED = tuple(f.name for f in RECORD if f.required)

#: Fewest bytes of a line holding every required key (braces; per key its quoted name, a colon, a
#: value of one character; commas).  pyarrow's parse costs memory per row, so a shorter line (10
#: million ``{}`` lines: 5 GB) is declined unparsed: it is invalid, which the exact path names.
MIN_RECORD_BYTES = 2 + sum(len(name) + 4 for name in _REQUIRED) + len(_REQUIRED) - 1
_CONTAINERS = tuple(f.name for f in RECORD if not f.required and not f.nullable)
_TELEMETRY = tuple((f.name.split(".", 1)[1], f) for f in RECORD_TELEMETRY)


class _Fallback(Exception):
    """The fast path declines the file: the exact path decides."""


def _arrow_type(pa, name: str):
    """The pyarrow type an ``arrow_type`` of the field tables names."""
    simple = {"large_string": pa.large_string, "string": pa.string, "int64": pa.int64, "float64": pa.float64,
              "bool": pa.bool_}
    if name in simple:
        return simple[name]()
    if name == "list<string>":
        return pa.list_(pa.string())
    if name == "struct<telemetry>":
        return pa.struct([(key, _arrow_type(pa, f.arrow_type)) for key, f in _TELEMETRY])
    if name == "struct<string>":
        return pa.struct([(key, pa.string()) for key in TELEMETRY_FIELDS])
    raise ValueError(f"unknown arrow type {name!r}")


def arrow_schema():
    """The pyarrow schema of a record, from :data:`~capbench_nb.format.RECORD`."""
    import pyarrow as pa

    return pa.schema([(f.name, _arrow_type(pa, f.arrow_type)) for f in RECORD])


def _arrow() -> dict:
    """pyarrow, the record schema and the vocabularies (imported on first use)."""
    if not _ARROW:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.json as pj

        schema = arrow_schema()
        _ARROW.update(
            pa=pa, pc=pc, pj=pj, schema=schema,
            parse=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error"),
            vocabularies={name: pa.array(values, pa.string()) for name, values in CATEGORIES.items()},
        )
    return _ARROW


class _ChunkReader:
    """Reads results.jsonl in chunks ending at a newline; checks the line structure, parses.

    Runs in one worker thread, chunk after chunk; each chunk goes to ``hasher`` (one more thread,
    so the hash sees the bytes in order) while the next is parsed.
    """

    def __init__(self, fh, hasher) -> None:
        self.fh = fh
        self.hasher = hasher
        self.offset = 0
        self.lines = 0
        self.digest = hashlib.sha256()

    def next(self):
        """The next chunk's table, or None at the end of the file."""
        ar = _arrow()
        self.fh.seek(self.offset)
        block = self.fh.read(CHUNK_BYTES)
        if not block:
            return None
        if len(block) == CHUNK_BYTES:  # more follows: stop at the last newline
            cut = block.rfind(b"\n") + 1
            if cut == 0:
                raise _Fallback("a line longer than a chunk")
        else:
            cut = len(block)
        view = memoryview(block)[:cut]
        self.offset += cut
        self.hasher.submit(self.digest.update, view)
        data = np.frombuffer(view, dtype=np.uint8)
        newlines = np.flatnonzero(data == 0x0A)
        # One JSON object per line and no blank line: every line starts with "{" and ends with "}"
        # (before an optional "\r").  Then no value can span two lines, and a line holding two
        # objects shows as more rows than lines.  (This also keeps a leading BOM, and a first line
        # that is not an object, away from the JSON reader.)
        if data[0] != 0x7B:
            raise _Fallback("a line does not start with '{'")
        ends = newlines
        if newlines.size and newlines[-1] == data.size - 1:
            starts = newlines[:-1] + 1
        else:  # the file's last line has no newline
            starts = newlines + 1
            ends = np.append(newlines, data.size)
        if not (data[starts] == 0x7B).all():
            raise _Fallback("a line does not start with '{'")
        if (ends - np.append(0, starts)).min() < MIN_RECORD_BYTES:
            raise _Fallback("a line too short to hold a record")
        before = data[ends - 1]
        if not (before == 0x7D).all():
            cr = before == 0x0D
            if not ((before == 0x7D) | cr).all() or not (data[ends[cr] - 2] == 0x7D).all():
                raise _Fallback("a line does not end with '}'")
        plain = data.max() < 0x80
        table = ar["pj"].read_json(
            ar["pa"].BufferReader(ar["pa"].py_buffer(view)),
            read_options=ar["pj"].ReadOptions(use_threads=False, block_size=max(cut + 1, 1 << 20)),
            parse_options=ar["parse"],
        )
        if table.num_rows != ends.size:
            raise _Fallback("rows and lines differ")
        if not plain:  # pyarrow copies the bytes of strings as they are: refuse invalid UTF-8
            table.validate(full=True)
        self.lines += ends.size
        return table, _Lines(block, cut, np.append(0, starts), ends)


class _Lines:
    """One chunk: ``block[:size]``, and where each of its lines starts and ends."""

    def __init__(self, block: bytes, size: int, starts: np.ndarray, ends: np.ndarray) -> None:
        self.block, self.size, self.starts, self.ends = block, size, starts, ends

    def count(self, text: bytes) -> int:
        return self.block.count(text, 0, self.size)

    def holds(self, text: bytes, i: int | None = None) -> bool:
        if i is None:
            return self.block.find(text, 0, self.size) >= 0
        return self.block.find(text, int(self.starts[i]), int(self.ends[i])) >= 0


class _Columns:
    """The checked columns of every accepted chunk, assembled into the records DataFrame."""

    def __init__(self, resolver: EvidenceResolver | None) -> None:
        self.resolver = resolver
        self.parts: dict[str, list] = {}
        self.blocks = 0  # leading entries of each numeric column's parts that are joined blocks
        self.pending = 0  # rows since the last block
        self.texts: dict[str, dict[str, int]] = {"evidence": {}, "telemetry_source": {}, "cost_source": {}}
        self.evidence_text: dict[tuple, str] = {}

    def add(self, name: str, value) -> None:
        self.parts.setdefault(name, []).append(value)

    def text_ids(self, name: str, texts: list[str]) -> np.ndarray:
        ids = self.texts[name]
        return np.array([ids.setdefault(t, len(ids)) for t in texts], dtype=np.int64)

    # ---- one chunk

    def check(self, table, lines: _Lines) -> None:
        ar = _arrow()
        pc = ar["pc"]
        if not table.schema.equals(ar["schema"]):
            raise _Fallback("schema")
        col = {name: table.column(name).combine_chunks() for name in table.column_names}
        n = table.num_rows
        for name in _REQUIRED:
            if col[name].null_count:
                raise _Fallback(f"null {name}")
        for name in _CONTAINERS:
            if col[name].null_count:
                self._absent(name, col[name], lines)

        attempt = col["attempt"].to_numpy()
        field = RECORD_FIELDS["attempt"]
        if not ((attempt >= field.minimum) & (attempt <= field.maximum)).all():
            raise _Fallback("attempt")
        success = col["success"].to_numpy(zero_copy_only=False)
        eligible = col["agent_eligible"].to_numpy(zero_copy_only=False)
        fclass = self._codes(col, "failure_class")
        stage = self._codes(col, "failure_stage")

        quality, quality_null = self._numbers(col["quality_score"], RECORD_FIELDS["quality_score"].maximum)
        cost, cost_null = self._numbers(col["cost"], RECORD_FIELDS["cost"].maximum)
        source_null = col["cost_source"].is_null().to_numpy(zero_copy_only=False)

        evidence = col["evidence"]
        if pc.list_flatten(evidence).null_count:
            raise _Fallback("null evidence reference")
        n_evidence = pc.fill_null(pc.list_value_length(evidence), 0).to_numpy()

        # The invariants (a broken one: the exact path names it).
        facts = Facts(success, eligible, fclass, stage, n_evidence, ~cost_null, ~source_null)
        for rule in INVARIANTS:
            if rule.broken(facts).any():
                raise _Fallback(rule.id)

        artifact_dir = col["artifact_dir"]
        self._check_artifact_dirs(artifact_dir)

        self._telemetry(col["telemetry"])

        evidence_ids = self._evidence_ids(artifact_dir, evidence, n_evidence)

        self.add("task_id", col["task_id"])
        self.add("attempt", attempt)
        self.add("artifact_dir", artifact_dir)
        self.add("success", success)
        self.add("agent_eligible", eligible)
        self.add("failure_class", fclass)
        self.add("failure_stage", stage)
        self.add("evidence", evidence_ids)
        self.add("quality_score", (quality, quality_null))
        self.add("cost", (cost, cost_null))
        self.add("cost_source", self._dictionary_ids("cost_source", col["cost_source"]))
        self.add("telemetry_source", self._source_ids(col["telemetry_source"], n))
        self.pending += n
        if self.pending >= BLOCK_ROWS:
            self._join_block()

    def _join_block(self) -> None:
        """Join each numeric column's parts since the last block into one array (see BLOCK_ROWS)."""
        for name, parts in self.parts.items():
            tail = parts[self.blocks:]
            if name in _STRING_COLUMNS or len(tail) < 2:
                continue
            if isinstance(tail[0], tuple):
                parts[self.blocks:] = [(np.concatenate([v for v, _ in tail]), np.concatenate([m for _, m in tail]))]
            else:
                parts[self.blocks:] = [np.concatenate(tail)]
        self.blocks += 1
        self.pending = 0

    @staticmethod
    def _codes(col: dict, name: str) -> np.ndarray:
        """Codes of a column with a vocabulary: positions in it (as the invariants' Facts take
        them), -1 for null; declines a value outside it."""
        pc = _arrow()["pc"]
        values = col[name]
        codes = pc.index_in(values, value_set=_arrow()["vocabularies"][name])
        if codes.null_count != (values.null_count if RECORD_FIELDS[name].nullable else 0):
            raise _Fallback(name)
        return pc.fill_null(codes, -1).to_numpy().astype(np.int8)

    def _telemetry(self, tele) -> None:
        """Check and keep each telemetry field (its row of RECORD_TELEMETRY: kind and range)."""
        pc = _arrow()["pc"]
        for name, field in _TELEMETRY:
            child = tele.field(name) if not tele.null_count else pc.struct_field(tele, name)
            mask = child.is_null().to_numpy(zero_copy_only=False)
            if field.json_type == "boolean":
                values = pc.fill_null(child, False).to_numpy(zero_copy_only=False)
            elif field.json_type == "integer":
                values = pc.fill_null(child, 0).to_numpy()
                if not safe_numbers(values, field.maximum):
                    raise _Fallback(name)
            else:
                values, mask = self._numbers(child, field.maximum)
            self.add(name, (values, mask))

    def _evidence_ids(self, artifact_dir, evidence, n_evidence: np.ndarray) -> np.ndarray:
        """Ids of each record's evidence text, after checking that every reference resolves (spec section 8)."""
        n = len(n_evidence)
        rows = np.flatnonzero(n_evidence)
        evidence_ids = np.full(n, -1, dtype=np.int64)
        if rows.size < n:
            evidence_ids[:] = self.text_ids("evidence", ["[]"])[0]
        if rows.size:
            texts = []
            for adir, refs in zip(artifact_dir.take(rows).to_pylist(), evidence.take(rows).to_pylist()):
                if adir is None:
                    raise _Fallback("evidence without artifact_dir")
                for ref in refs:
                    if self.resolver is not None and not self.resolver.resolves(adir, ref):
                        raise _Fallback("evidence")
                key = tuple(refs)
                text = self.evidence_text.get(key)
                if text is None:
                    text = self.evidence_text[key] = canonical_json(refs)
                texts.append(text)
            evidence_ids[rows] = self.text_ids("evidence", texts)
        return evidence_ids

    @staticmethod
    def _absent(name: str, array, lines: _Lines) -> None:
        """Accept null ``name`` values only where the key is surely absent (it may be), not null (invalid).

        pyarrow reads both as null.  The chunk must hold the text ``"name"`` exactly once per
        non-null row (the key itself: then no null row holds it), and a null row no ``\\u`` escape
        (which could spell the key).
        """
        key = b'"' + name.encode() + b'"'
        if lines.count(key) != len(array) - array.null_count:
            raise _Fallback(f"null {name}")
        if lines.holds(b"\\u"):
            for i in np.flatnonzero(array.is_null().to_numpy(zero_copy_only=False)):
                if lines.holds(b"\\u", i):
                    raise _Fallback(f"null {name}")

    @staticmethod
    def _numbers(array, upper: float) -> tuple[np.ndarray, np.ndarray]:
        """Values (nulls as 0.0) and null mask of a float64 column; declines NaN, infinities,
        negatives, values above ``upper``, and -0.0 (:func:`~capbench_nb.format.safe_numbers`)."""
        pc = _arrow()["pc"]
        mask = array.is_null().to_numpy(zero_copy_only=False)
        values = pc.fill_null(array, 0.0).to_numpy()
        if not safe_numbers(values, float(upper)):
            raise _Fallback("number")
        return values, mask

    @staticmethod
    def _check_artifact_dirs(array) -> None:
        """The lexical rule of :func:`~capbench_nb.io.files.check_relative_path`, on a whole column."""
        pc = _arrow()["pc"]
        if os.name != "posix":  # other path rules: the exact check, value by value
            for value in array.drop_null().to_pylist():
                try:
                    check_relative_path(value, "artifact_dir")
                except EvidenceError:
                    raise _Fallback("artifact_dir") from None
            return
        valid = array.drop_null()
        if not len(valid):
            return
        if (pc.any(pc.starts_with(valid, "/")).as_py() or pc.any(pc.starts_with(valid, "\\")).as_py()
                or pc.any(pc.match_substring(valid, "\x00")).as_py()):
            raise _Fallback("artifact_dir")
        if pc.any(pc.match_substring(valid, "..")).as_py() and pc.any(
                pc.match_substring_regex(valid, r"(^|[/\\])\.\.($|[/\\])")).as_py():
            raise _Fallback("artifact_dir")

    def _dictionary_ids(self, name: str, array) -> np.ndarray:
        """Chunk-wide ids of a string column's values (-1 for null)."""
        pc = _arrow()["pc"]
        encoded = pc.dictionary_encode(array)
        ids = self.text_ids(name, encoded.dictionary.to_pylist())
        index = pc.fill_null(encoded.indices, -1).to_numpy().astype(np.int64)
        return np.where(index >= 0, ids[np.maximum(index, 0)] if ids.size else -1, -1)

    def _source_ids(self, struct, n: int) -> np.ndarray:
        """Ids of the canonical text of each record's telemetry_source (its non-null entries)."""
        pc = _arrow()["pc"]
        key = np.zeros(n, dtype=np.int64)
        span = 1
        indices, values = [], []
        for name in TELEMETRY_FIELDS:
            child = struct.field(name) if not struct.null_count else pc.struct_field(struct, name)
            encoded = pc.dictionary_encode(child)
            index = pc.fill_null(encoded.indices, -1).to_numpy().astype(np.int64) + 1  # 0: null
            size = len(encoded.dictionary) + 1
            if span * size >= 2**62:  # renumber the combinations seen so far
                _, key = np.unique(key, return_inverse=True)
                span = int(key.max()) + 1
            key = key * size + index
            span *= size
            indices.append(index)
            values.append(encoded.dictionary.to_pylist())
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        texts = []
        for row in first:
            source = {name: values[i][indices[i][row] - 1]
                      for i, name in enumerate(TELEMETRY_FIELDS) if indices[i][row]}
            texts.append(canonical_json(source))
        return self.text_ids("telemetry_source", texts)[inverse.reshape(-1)]

    # ---- the DataFrame

    def frame(self, lines: int) -> pd.DataFrame:
        pa = _arrow()["pa"]
        parts = self.parts

        # Each column's parts are dropped (pop) once it is joined: the peak is the parts and one column.
        def cat(name: str) -> np.ndarray:
            return np.concatenate(parts.pop(name))

        def masked(name: str, dtype: str):
            chunks = parts.pop(name)
            values = np.concatenate([v for v, _ in chunks])
            mask = np.concatenate([m for _, m in chunks])
            if dtype == "Float64":
                return pd.arrays.FloatingArray(values, mask)
            if dtype == "Int64":
                return pd.arrays.IntegerArray(values, mask)
            return pd.arrays.BooleanArray(values, mask)

        def strings(name: str):  # what pd.array(values, dtype="string") gives
            array = pa.chunked_array(parts.pop(name)).combine_chunks()
            dtype = pd.StringDtype()
            if dtype.storage == "pyarrow":
                return pd.arrays.ArrowStringArray(array)
            return pd.array(array.to_numpy(zero_copy_only=False), dtype=dtype)  # pandas 2: Python storage

        def categorical(name: str, codes: np.ndarray) -> pd.Categorical:
            texts = list(self.texts[name])
            # the categories the exact path infers from its values (None included when there is one)
            categories = pd.Categorical(texts + [None] * bool((codes < 0).any())).categories
            position = np.asarray(categories.get_indexer(texts), dtype=np.int64)
            codes = np.where(codes >= 0, position[np.maximum(codes, 0)] if position.size else -1, -1)
            return pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(categories))

        def fixed(name: str) -> pd.Categorical:
            dtype = pd.CategoricalDtype(pd.Categorical([], categories=CATEGORIES[name]).categories)
            return pd.Categorical.from_codes(cat(name), dtype=dtype)

        attempt = cat("attempt")
        data: dict[str, Any] = {
            "line": np.arange(1, lines + 1, dtype="int64"),
            "task_id": strings("task_id"),
            "attempt": pd.arrays.IntegerArray(attempt, np.zeros(attempt.size, dtype=bool)),
            "artifact_dir": strings("artifact_dir"),
            "success": pd.arrays.BooleanArray(cat("success"), np.zeros(attempt.size, dtype=bool)),
            "agent_eligible": pd.arrays.BooleanArray(cat("agent_eligible"), np.zeros(attempt.size, dtype=bool)),
            "failure_class": fixed("failure_class"),
            "failure_stage": fixed("failure_stage"),
            "evidence": categorical("evidence", cat("evidence")),
            "quality_score": masked("quality_score", "Float64"),
            "cost": masked("cost", "Float64"),
            "cost_source": categorical("cost_source", cat("cost_source")),
            "telemetry_source": categorical("telemetry_source", cat("telemetry_source")),
        }
        for name in TELEMETRY_FIELDS:
            data[name] = masked(name, RECORD_DTYPES[name])
        records = pd.DataFrame(data, copy=False)  # the arrays are ours alone
        # (task_id, attempt) unique; a duplicate is the exact path's to report
        codes, uniques = pd.factorize(records["task_id"])
        top = int(attempt.max()) + 1
        if len(uniques) * top < 2**62:
            duplicated = pd.Series(codes.astype(np.int64) * top + attempt).duplicated().any()
        else:
            duplicated = records.duplicated(["task_id", "attempt"]).any()
        if duplicated:
            raise _Fallback("duplicate")
        return records


def read_results_fast(path: str | os.PathLike, *, run_dir: str | os.PathLike | None,
                      skip_evidence: bool = False) -> tuple[pd.DataFrame, str] | None:
    """``(records, sha256)`` when the fast path accepts the file (see the module docstring), else None.

    With ``skip_evidence`` evidence references are not resolved (spec section 8, ``--skip-evidence``).
    """
    try:
        fh = open_input(path)
    except OSError:
        return None  # the exact path names the problem
    from concurrent.futures import ThreadPoolExecutor

    resolver = None if skip_evidence else MemoResolver(run_dir if run_dir is not None else Path(path).parent)
    columns = _Columns(resolver)
    ar = _arrow()
    try:
        with fh, ThreadPoolExecutor(max_workers=1) as hasher, ThreadPoolExecutor(max_workers=1) as pool:
            reader = _ChunkReader(fh, hasher)
            pending = pool.submit(reader.next)
            chunks = 0
            while True:
                item = pending.result()
                if item is None:
                    break
                pending = pool.submit(reader.next)  # read and parse ahead
                columns.check(*item)
                chunks += 1
            if not chunks:
                return None  # an empty file: nothing to gain
            records = columns.frame(reader.lines)
    except (_Fallback, ar["pa"].ArrowException, OSError, ValueError, EvidenceError):
        return None
    return records, "sha256:" + reader.digest.hexdigest()  # the hasher has finished (left its with)


class MemoResolver(EvidenceResolver):
    """Whether evidence references resolve, as :meth:`EvidenceResolver.resolve` decides, for one load.

    Only success matters here: any failure sends the file to the exact path, whose own resolver
    gives the reason.  The rules are :class:`EvidenceResolver`'s own (:meth:`~EvidenceResolver.locate`,
    then :func:`~capbench_nb.io.pointer.resolve_pointer`); what repeats is remembered: real paths
    of directories (``os.path.realpath`` costs one ``lstat`` per component; a path below a resolved
    directory costs one, as ``realpath(p/name) == realpath(realpath(p)/name)``), artifact roots,
    the last file read, and the answer for each (artifact_dir, reference).
    """

    def __init__(self, run_dir) -> None:
        super().__init__(run_dir)
        self._real: dict[str, str] = {}
        self._roots: dict[str, str | EvidenceError] = {}
        self._resolved: dict[tuple[str, str], bool] = {}  # records may share an artifact directory
        self._last_file: str | None = None
        self._last_doc: Any = None

    def realpath(self, path: str) -> str:
        """``os.path.realpath(path)``, remembered, and computed from the parent's when that is known."""
        hit = self._real.get(path)
        if hit is not None:
            return hit
        parent, name = os.path.split(path)
        if not name or name in (".", "..") or not parent or parent == path or not os.path.isabs(path):
            real = os.path.realpath(path)
        else:
            candidate = os.path.join(self.realpath(parent), name)
            try:
                link = stat.S_ISLNK(os.lstat(candidate).st_mode)
            except OSError:
                link = False
            real = os.path.realpath(candidate) if link else candidate
        self._real[path] = real
        return real

    def artifact_root(self, artifact_dir: str) -> str:
        """:meth:`EvidenceResolver.artifact_root`, remembered (its error too)."""
        hit = self._roots.get(artifact_dir)
        if hit is None:
            try:
                hit = super().artifact_root(artifact_dir)
            except EvidenceError as exc:
                hit = exc
            self._roots[artifact_dir] = hit
        if isinstance(hit, EvidenceError):
            raise hit
        return hit

    def _document(self, real_file: str) -> Any:
        """The file's JSON as :meth:`EvidenceResolver._load` reads it (:func:`read_evidence_file`); raises on
        any failure."""
        if real_file == self._last_file:
            return self._last_doc
        doc = read_evidence_file(real_file)
        self._last_file, self._last_doc = real_file, doc
        return doc

    def resolves(self, artifact_dir: str | None, reference: str) -> bool:
        """True where :meth:`EvidenceResolver.resolve` returns, False where it raises."""
        if artifact_dir is None:
            return False
        key = (artifact_dir, reference)
        hit = self._resolved.get(key)
        if hit is None:
            if len(self._resolved) >= 1 << 16:
                self._resolved.clear()
            hit = self._resolved[key] = self._resolves(artifact_dir, reference)
        return hit

    def _resolves(self, artifact_dir: str, reference: str) -> bool:
        try:
            real_file, _, pointer = self.locate(artifact_dir, reference)
        except EvidenceError:
            return False
        try:
            document = self._document(real_file)
        except Exception:  # unreadable, not UTF-8, not JSON, nested too deeply, ...
            return False
        try:
            resolve_pointer(document, pointer)
        except EvidenceError:
            return False
        return True
