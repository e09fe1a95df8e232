"""Reading the run archive (``runs/<label>/<run_id>/*.parquet``) into validated pandas tables.

Each run's three files are read with pyarrow and checked against ``runformat.schema``;
a run whose environment or case list fails is reported as a ``Problem`` (file, reason)
and skipped, the rest load (asv's ``iter_results`` does the same); a run with damaged
samples loads with what is readable, and the damage is named. Valid runs are concatenated as Arrow tables and
converted to pandas once, with categoricals for the repeated strings, so 1,000 runs and
5M samples load in seconds.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from runformat.archive import ArchiveError, has_parts, merge_parts, read_table
from runformat.redact import redact_entry
from runformat.schema import (
    CASES_FILE,
    METRICS,
    CASES_SCHEMA,
    ENVIRONMENT_FILE,
    ENVIRONMENT_SCHEMA,
    GPU_STATE_FILE,
    GPU_STATE_SCHEMA,
    PARTS_FOLDER,
    legacy_case_id,
    RUN_FILES,
    SAMPLES_FILE,
    SAMPLES_SCHEMA,
    STATUS_FAILED,
    STATUS_INTERRUPTED,
    STATUS_OK,
    STATUS_TIMEOUT,
    is_valid_run_id,
)
from reporter.errors import ReporterError
from reporter.data.problem import Problem
from reporter.data.cache import ArchiveId, CachedRun, SummaryCache, fingerprint, read_cache, run_key, write_cache
from reporter.data.scan import MAX_ROWS, row_limit_problem, scan_tables, value_problem

# String columns stored as dictionaries (pandas categoricals): few distinct values, many rows.
_CATEGORICAL = {
    ENVIRONMENT_FILE: ("section", "key"),
    CASES_FILE: ("case_id", "workload", "params", "status", "timing", "device", "items_unit"),
    SAMPLES_FILE: ("case_id", "metric", "unit", "better"),
    GPU_STATE_FILE: ("case_id", "source", "reasons"),
}
_SCHEMAS = {ENVIRONMENT_FILE: ENVIRONMENT_SCHEMA, CASES_FILE: CASES_SCHEMA, SAMPLES_FILE: SAMPLES_SCHEMA,
            GPU_STATE_FILE: GPU_STATE_SCHEMA}
# The tables every Archive holds: the three run files, and the optional GPU state.
_TABLES = (*RUN_FILES, GPU_STATE_FILE)
_FAILED = (STATUS_FAILED, STATUS_TIMEOUT, STATUS_INTERRUPTED)

# (column in Archive.runs, environment section, key); the first present key wins.
_RUN_FIELDS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("status", (("run", "status"),)),
    ("suite", (("run", "suite"),)),
    ("device_name", (("gpu0", "name"), ("cpu", "model"))),
    ("torch", (("torch", "version"),)),
    ("cuda", (("cuda", "runtime"),)),
    ("cudnn", (("cuda", "cudnn"),)),
    ("driver", (("driver", "version"),)),
    ("hostname", (("host", "hostname"),)),
    ("image", (("container", "image"),)),
)
RUN_COLUMNS = (
    "label", "run_id", "path", "started_at", "finished_at", "status", "suite", "device_type", "device_name",
    "torch", "cuda", "cudnn", "driver", "hostname", "image", "cases_ok", "cases_failed", "cases_total",
)


@dataclass
class Archive:
    """The valid runs of an archive as pandas tables, plus every problem met loading it.

    ``runs``: one row per valid run (``RUN_COLUMNS``). ``environment``: label, run_id,
    section, key, value. ``cases``: label, run_id and the cases.parquet columns.
    ``samples``: label, run_id and the samples.parquet columns. ``gpu_state``: label,
    run_id and the gpu_state.parquet columns (no rows for runs that have none).
    ``label``, ``run_id`` and the repeated strings are categoricals. ``selector`` is the
    selector this archive was narrowed to by ``select`` (``None`` for the whole archive).

    Case ids are read as compared: an old strict ``fp32`` matmul/conv2d case (one that
    recorded no settings) is ``dtype=fp32-strict`` (``runformat.schema.legacy_case_id``).
    ``source``: the archive's folder and its id in the reporter's cache (``ArchiveId``), made once by
    ``load_archive``; ``root`` is its folder.
    """

    source: ArchiveId
    runs: pd.DataFrame
    environment: pd.DataFrame
    cases: pd.DataFrame
    samples: pd.DataFrame
    problems: list[Problem] = field(default_factory=list)
    selector: str | None = None
    gpu_state: pd.DataFrame = field(default_factory=pd.DataFrame)
    # Per run id, the key of its summaries in ``summaries`` (``reporter.data.cache``);
    # empty when the archive was loaded without a cache. They stand for every sample of
    # the run: an archive whose samples are narrowed other than by run must drop both.
    run_keys: dict[str, str] = field(default_factory=dict)
    summaries: Any = None  # a reporter.data.cache.SummaryCache, shared by every selection
    # The samples of a set of run ids (all when None) read from their sources, when
    # ``samples`` is not in memory: a selection of runs reads only its own.
    sample_source: Any = None  # a _SampleSource: called with a set of run ids (or None), it returns their samples
    # What of the run cache was refused (``reporter.data.cache.read_cache``): derived data
    # whose runs were read from their own files instead, so nothing of the archive is missing.
    cache_problems: list[Problem] = field(default_factory=list)

    @property
    def root(self) -> Path:
        """The archive's folder (for a URL, the local mirror of its finished runs)."""
        return self.source.path

    def writes_deferred(self) -> Any:
        """A context inside which the summaries computed are kept in memory and written to the
        summaries cache once, on leaving, not one comparison at a time (nothing when there is no cache)."""
        return self.summaries.deferred() if self.summaries is not None else nullcontext()

    def labels(self) -> list[str]:
        """The labels that hold at least one valid run, sorted."""
        return sorted(self.runs["label"].astype(str).unique())

    def select(self, selector: str) -> "Archive":
        """The runs of ``LABEL``, or the one run ``LABEL@RUN_ID`` (a unique id prefix will do).

        Raises ``ReporterError`` naming the labels (or runs) that exist when nothing
        matches, and the candidates when a run id prefix is ambiguous.
        """
        # Kept per selector: an archive's tables are not changed once loaded, and a label is one side
        # of several comparisons (each side's own results, such as ok_samples, are then found once).
        selections = self.__dict__.setdefault("_selections", {})
        if selector in selections:
            return selections[selector]
        runs = self._selected_runs(selector)
        keep = set(runs["run_id"].astype(str))
        selected = replace(
            self,
            runs=runs.reset_index(drop=True),
            environment=_rows_of(self.environment, keep),
            cases=_rows_of(self.cases, keep),
            samples=self.lazy_rows(keep),
            gpu_state=_rows_of(self.gpu_state, keep) if len(self.gpu_state.columns) else self.gpu_state,
            selector=selector,
        )
        selections[selector] = selected
        return selected

    def select_ids(self, selector: str) -> list[str]:
        """The run ids ``select(selector)`` keeps, without copying their rows."""
        return self._selected_runs(selector)["run_id"].astype(str).tolist()

    def _selected_runs(self, selector: str) -> pd.DataFrame:
        label, _, prefix = selector.partition("@")
        if not label:
            raise ReporterError(f"selector {selector!r} has no label; use LABEL or LABEL@RUN_ID")
        runs = self.runs[self.runs["label"].astype(str) == label]
        if runs.empty:
            known = ", ".join(self.labels()) or "none: the archive holds no valid runs"
            raise ReporterError(f"no label {label!r} under {self.root}; labels: {known}")
        if "@" in selector:
            ids = runs["run_id"].astype(str)
            hits = ids[ids.str.startswith(prefix)] if prefix else ids.iloc[0:0]
            if hits.empty:
                raise ReporterError(f"no run {prefix!r} under label {label!r}; its runs: {', '.join(ids)}")
            exact = hits[hits == prefix]
            if len(hits) > 1 and exact.empty:
                raise ReporterError(f"run id prefix {prefix!r} of label {label!r} is ambiguous: {', '.join(hits)}")
            runs = runs[runs["run_id"].astype(str) == (exact.iloc[0] if len(exact) else hits.iloc[0])]
        return runs

    def lazy_rows(self, run_ids: set[str]) -> "pd.DataFrame | Callable[[], pd.DataFrame]":
        """The samples of ``run_ids``: at once when this archive's samples are loaded, else when first used."""
        if self.samples_loaded:
            return _rows_of(self.samples, run_ids)
        if self.sample_source is not None:
            source = self.sample_source
            return lambda: source(set(run_ids))
        return lambda: _rows_of(self.samples, run_ids)

    @property
    def samples_loaded(self) -> bool:
        """Whether ``samples`` is in memory (it is read on first use when the summaries were cached)."""
        return not callable(self.__dict__["_samples"])

    @property
    def samples_used(self) -> bool:
        """Whether any samples were turned into a table since loading (all of them, or a selection's)."""
        return self.samples_loaded or (self.sample_source is not None and self.sample_source.frames > 0)

    def ok_samples(self) -> pd.DataFrame:
        """The samples of attempts recorded ``ok`` in cases.parquet.

        Samples are written before their case row, so a run killed in between holds
        samples of an attempt that has no row yet (and that ``--resume`` measures
        again); those, and any of a failed attempt, are left out.
        """
        s, c = self.samples, self.cases
        found = self.__dict__.get("_ok_samples")
        if found is not None and found[0] is s and found[1] is c:
            return found[2]
        ok = self._ok_samples(s, c)
        self.__dict__["_ok_samples"] = (s, c, ok)
        return ok

    @staticmethod
    def _ok_samples(s: pd.DataFrame, c: pd.DataFrame) -> pd.DataFrame:
        if s.empty:
            return s
        ok = c[c["status"] == STATUS_OK]
        n_proc = int(max(s["process"].max(), ok["process"].max() if len(ok) else 0)) + 1
        n_case = len(s["case_id"].cat.categories) + 1
        case_codes = ok["case_id"].cat.set_categories(s["case_id"].cat.categories).cat.codes.to_numpy(np.int64)
        ok_keys = (ok["run_id"].cat.codes.to_numpy(np.int64) * n_case + case_codes) * n_proc + ok["process"].to_numpy(np.int64)
        ok_keys = ok_keys[case_codes >= 0]
        keys = (s["run_id"].cat.codes.to_numpy(np.int64) * n_case + s["case_id"].cat.codes.to_numpy(np.int64)) * n_proc
        keys += s["process"].to_numpy(np.int64)
        space = max(len(s["run_id"].cat.categories), len(ok["run_id"].cat.categories)) * n_case * n_proc
        if space <= 8 * len(keys) + (1 << 20):  # a table of every possible attempt: one lookup per sample
            table = np.zeros(space, bool)
            table[ok_keys] = True
            mask = table[keys]
        else:
            mask = np.isin(keys, ok_keys)
        return s if mask.all() else s[mask].reset_index(drop=True)


def _get_samples(self: Archive) -> pd.DataFrame:
    value = self.__dict__["_samples"]
    if callable(value):  # read on first use: a report from cached summaries never needs them
        value = self.__dict__["_samples"] = value()
    return value


def _set_samples(self: Archive, value: "pd.DataFrame | Callable[[], pd.DataFrame]") -> None:
    self.__dict__["_samples"] = value


# ``samples`` may be given as a function that returns them; dataclasses.replace passes it on unread.
Archive.samples = property(_get_samples, _set_samples)  # type: ignore[assignment]


def _rows_of(df: pd.DataFrame, run_ids: set[str]) -> pd.DataFrame:
    cats = df["run_id"].cat.categories
    codes = np.flatnonzero(cats.isin(list(run_ids)))
    return df[np.isin(df["run_id"].cat.codes.to_numpy(), codes)].reset_index(drop=True)


@dataclass
class _RunTables:
    label: str
    run_id: str
    path: Path
    tables: dict[str, pa.Table]
    warnings: list[Problem] = field(default_factory=list)
    fingerprint: list[list[Any]] | None = None  # of the folder as read (reporter.data.cache)
    from_cache: bool = False
    from_files: tuple[str, ...] = ()  # kinds whose table is the run's file as it reads (not copied into the cache)


def load_archive(runs_dir: str | os.PathLike[str], strict: bool = False, *, cache: bool = True) -> Archive:
    """Read every run under ``runs_dir`` (``<label>/<run_id>/{environment,cases,samples}.parquet``).

    A run whose folder name is not a run id, that lacks its environment or case list, or
    whose environment or case file does not read or validate (``runformat.schema.validate_table``:
    schema version, columns, types, nulls, statuses) is skipped and listed in
    ``Archive.problems``. A run whose samples.parquet is missing, unreadable or invalid
    (metrics, units, NaN/inf/non-positive values) is loaded without its samples, and one
    whose ok attempts lack samples is loaded without those attempts; both are listed in
    ``Archive.problems`` too; with ``strict=True`` any problem raises ``ReporterError``
    instead. Hidden entries (``.name``) and plain files are ignored. A run's label is
    its folder's name. A missing ``runs_dir`` raises ``ReporterError``. A URL
    (``s3://bucket/prefix``) is read through a local mirror of its finished runs.

    With ``cache`` (the default), what was read of each valid run is kept in the reporter's
    cache (``reporter.data.cache``, outside the archive) and a run whose files have not changed
    since is taken from there instead of being read and checked again.
    """
    from reporter.data.remote import resolve_archive  # a URL (s3://...): its finished runs, mirrored into a local cache

    root, problems = resolve_archive(runs_dir)
    if not root.exists():
        raise ReporterError(f"runs folder {str(root)!r} does not exist")
    if not root.is_dir():
        raise ReporterError(f"runs folder {str(root)!r} is not a folder")
    source = ArchiveId.of(root)  # from here on the archive is passed by its id, not its path
    folders: list[tuple[str, Path]] = []
    for label_dir in _subfolders(source.path, problems):
        for run_dir in _subfolders(label_dir, problems):
            if not is_valid_run_id(run_dir.name):
                problems.append(Problem(str(run_dir), "folder name is not a run id (like 20261202T140512Z-3fa9c1)"))
                continue
            folders.append((label_dir.name, run_dir))

    refused: list[tuple[str, str]] = []
    results, cached_keys = _read_runs(source, folders, cache, refused)
    by_id: dict[str, list[_RunTables]] = {}
    for r in results:
        if isinstance(r, Problem):
            problems.append(r)
        else:
            by_id.setdefault(r.run_id, []).append(r)
    valid: list[_RunTables] = []
    for run_id, copies in by_id.items():
        if len(copies) == 1:
            valid.append(copies[0])
            problems += copies[0].warnings
            continue
        where = ", ".join(str(c.path) for c in copies)
        problems += [Problem(str(c.path), f"run id {run_id} is recorded {len(copies)} times ({where}); every copy skipped") for c in copies]
    if strict and problems:
        shown = "; ".join(f"{p.path}: {p.reason}" for p in problems[:3])
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise ReporterError(f"--strict: {len(problems)} invalid run(s): {shown}{more}")
    valid.sort(key=lambda r: (r.label, r.run_id))
    if cache and (any(not r.from_cache for r in valid) or {(r.label, r.run_id) for r in valid} != cached_keys):
        _write_cache(source, valid)
    archive = _assemble(source, valid, sorted(problems, key=lambda p: p.path), cache)
    archive.cache_problems = [Problem(path, reason) for path, reason in refused]
    return archive


def _read_runs(source: ArchiveId, folders: list[tuple[str, Path]], cache: bool,
               refused: list[tuple[str, str]] | None = None) -> tuple[list["_RunTables | Problem"], set[tuple[str, str]]]:
    """Every folder's run (from the cache when its files are unchanged) in ``folders``' order, and the cache's runs;
    what of the cache was refused is appended to ``refused`` (file, reason)."""
    cached = read_cache(source, _TABLES, lazy=(SAMPLES_FILE,), refused=refused) if cache else {}
    results: list[_RunTables | Problem | None] = [None] * len(folders)
    todo: list[int] = []
    prefix = str(source.path) + os.sep
    originals = _OriginalSamples()  # the samples the cache does not copy, read from the runs at first use
    for i, (label, folder) in enumerate(folders):
        hit = cached.get((label, folder.name))
        fp = fingerprint(folder) if cache else None
        if hit is not None and fp is not None and hit.fingerprint == fp:
            warnings = [Problem(prefix + path, reason) for path, reason in hit.warnings]
            tables = dict(hit.tables)
            if SAMPLES_FILE in hit.from_files:
                tables[SAMPLES_FILE] = originals.add(folder)
            results[i] = _RunTables(label, folder.name, folder, tables, warnings, fp, from_cache=True,
                                    from_files=hit.from_files)
        else:
            todo.append(i)

    for i, r in _read_fresh(folders, todo, cache).items():
        results[i] = r
    return results, set(cached)  # type: ignore[return-value]


# Runs read (scanned and checked) together; past KEEP_SAMPLE_ROWS, memory holds about one such batch of samples.
READ_BATCH_RUNS = 1000


def _read_fresh(folders: list[tuple[str, Path]], todo: list[int], cache: bool) -> dict[int, "_RunTables | Problem"]:
    """The runs ``folders[i]`` for ``i`` in ``todo``, read from their files (each fingerprinted when ``cache``),
    ``READ_BATCH_RUNS`` at a time, the samples let go of once more than ``KEEP_SAMPLE_ROWS`` are held."""
    out: dict[int, _RunTables | Problem] = {}
    for at in range(0, len(todo), READ_BATCH_RUNS):
        out.update(_read_batch(folders, todo[at:at + READ_BATCH_RUNS], cache))
        _let_go_of_samples([r for r in out.values() if isinstance(r, _RunTables)])
    return out


def _read_batch(folders: list[tuple[str, Path]], todo: list[int], cache: bool) -> dict[int, "_RunTables | Problem"]:
    """``_read_fresh`` of one batch: each kind of file of all its runs in one scan (``reporter.data.scan``),
    checked across files in bulk (``_read_scanned``); a run that is not whole there (a file
    damaged or invalid, part files, a cross-file problem) is read file by file (``_read_run``),
    which names what is wrong with it.
    """
    fps = {i: fingerprint(folders[i][1]) for i in todo} if cache else {}  # before reading: a change made meanwhile reads again next time
    whole = [i for i in todo if not has_parts(folders[i][1])]
    given: dict[int, dict[str, pa.Table]] = {i: {} for i in todo}
    for kind in (*RUN_FILES, GPU_STATE_FILE):
        these = whole if kind != GPU_STATE_FILE else [i for i in whole if (folders[i][1] / kind).is_file()]
        scanned = scan_tables(kind, [folders[i][1] / kind for i in these], [folders[i][1].name for i in these],
                              dictionary=_CATEGORICAL[kind])
        for j, table in scanned.items():
            given[these[j]][kind] = table
    out: dict[int, _RunTables | Problem] = {}
    for i, r in _read_scanned(folders, {i: given[i] for i in whole}).items():
        r.fingerprint = fps.get(i)
        out[i] = r
    rest = [i for i in todo if i not in out]

    def read(i: int) -> _RunTables | Problem:
        label, folder = folders[i]
        r = _read_run(label, folder, {k: _plain(t, k) for k, t in given[i].items()})
        if isinstance(r, _RunTables):
            r.fingerprint = fps.get(i)
        return r

    workers = min(8, (os.cpu_count() or 1) + 2)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for i, r in zip(rest, pool.map(read, rest)):
            out[i] = r
    return out


def _plain(table: pa.Table, kind: str) -> pa.Table:
    """``table`` with its dictionary columns decoded, in ``kind``'s schema: as ``_read_file`` reads one file."""
    decoded = table.cast(pa.schema([pa.field(f.name, f.type) for f in _SCHEMAS[kind]]))
    return pa.Table.from_arrays(decoded.columns, schema=_SCHEMAS[kind])


def _write_cache(source: ArchiveId, valid: list["_RunTables"]) -> None:
    prefix = str(source.path) + os.sep
    keep = []
    for r in valid:
        # What the old cache holds is read before it is replaced; what the runs' own files hold is not copied.
        r.tables = {k: t() if callable(t) and k not in r.from_files else t for k, t in r.tables.items()}
        if r.fingerprint is None or not all(w.path.startswith(prefix) for w in r.warnings):
            continue
        keep.append(CachedRun(r.label, r.run_id, r.fingerprint, r.tables,
                              [(w.path[len(prefix):], w.reason) for w in r.warnings], r.from_files))
    write_cache(source, _TABLES, keep)


# Samples read and checked at load are kept for the summaries up to this many rows (about
# 1 GB); beyond it they are let go and read again from the runs, a few labels at a time.
KEEP_SAMPLE_ROWS = 20_000_000


def _let_go_of_samples(valid: list[_RunTables]) -> None:
    """Past ``KEEP_SAMPLE_ROWS``, replace the samples tables that are the runs' own files by readers of them."""
    held = [r for r in valid if SAMPLES_FILE in r.from_files and isinstance(r.tables.get(SAMPLES_FILE), pa.Table)]
    if not held or sum(r.tables[SAMPLES_FILE].num_rows for r in held) <= KEEP_SAMPLE_ROWS:
        return
    originals = _OriginalSamples()
    for r in held:
        r.tables[SAMPLES_FILE] = originals.add(r.path)


class _OriginalSamples:
    """The samples of cached runs whose samples.parquet the cache does not copy, read from the
    runs when used (checked when each run was first loaded; its folder's fingerprint is
    unchanged since). The runs asked for together are read in one scan (``reporter.data.scan``)."""

    def __init__(self) -> None:
        self.folders: list[Path] = []

    def add(self, folder: Path) -> "_OriginalPart":
        self.folders.append(folder)
        return _OriginalPart(self, len(self.folders) - 1)

    def read(self, indices: list[int]) -> dict[int, pa.Table]:
        paths = [self.folders[i] / SAMPLES_FILE for i in indices]
        got = scan_tables(SAMPLES_FILE, paths, [self.folders[i].name for i in indices],
                          dictionary=_CATEGORICAL[SAMPLES_FILE], check=False)
        missing = [str(paths[j]) for j in range(len(indices)) if j not in got]
        if missing:
            raise ReporterError(f"{missing[0]} changed or went while the archive was read"
                                + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "") + "; load the archive again")
        return {i: got[j] for j, i in enumerate(indices)}


@dataclass(frozen=True)
class _OriginalPart:
    """One run's table of an ``_OriginalSamples``: called alone it reads its file; ``_materialise`` reads many at once."""

    group: _OriginalSamples
    index: int

    def __call__(self) -> pa.Table:
        return self.group.read([self.index])[self.index]


def _materialise(parts: list[Any]) -> list[pa.Table]:
    """``parts`` as tables: each ``_OriginalSamples`` read once for all its parts, other functions called."""
    wanted: dict[int, tuple[_OriginalSamples, list[int]]] = {}
    for p in parts:
        if isinstance(p, _OriginalPart):
            wanted.setdefault(id(p.group), (p.group, []))[1].append(p.index)
    read = {gid: group.read(indices) for gid, (group, indices) in wanted.items()}
    return [read[id(p.group)][p.index] if isinstance(p, _OriginalPart) else p() if callable(p) else p for p in parts]


def _subfolders(folder: Path, problems: list[Problem]) -> list[Path]:
    try:
        entries = sorted(folder.iterdir())
    except OSError as e:
        problems.append(Problem(str(folder), f"cannot list the folder ({e.strerror or e})"))
        return []
    found = []
    for p in entries:
        if p.name.startswith("."):
            continue
        if p.is_symlink() and not p.exists():  # exists() is False for a loop too
            problems.append(Problem(str(p), "a symlink that does not resolve (broken, or a loop)"))
        elif p.is_dir():
            if not _is_utf8(p.name):  # a label or run id must print and render as text
                problems.append(Problem(os.fsencode(p).decode("utf-8", "backslashreplace"), "folder name is not valid UTF-8"))
            else:
                found.append(p)
    return found


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes arrive as lone surrogates
        return False
    return True


def _read_run(label: str, folder: Path, given: dict[str, pa.Table] | None = None) -> _RunTables | Problem:
    """One run's tables, or the Problem that skips it.

    A run needs its environment and its case list; damaged samples cost only the samples:
    the run is loaded without them and the damage is named (``_RunTables.warnings``).
    ``given``: files of the run already read and checked (``reporter.data.scan``), by name.
    """
    given = given or {}
    tables: dict[str, pa.Table] = {}
    raw: dict[str, pa.Table] = {}
    warnings: list[Problem] = []
    for kind in RUN_FILES:
        if kind in given:
            raw[kind] = _redact_environment(given[kind]) if kind == ENVIRONMENT_FILE else given[kind]
            continue
        problem = _read_file(folder, kind, raw)
        if problem is None:
            continue
        if kind != SAMPLES_FILE:
            return problem
        raw[kind] = SAMPLES_SCHEMA.empty_table()
        warnings.append(Problem(problem.path, f"{problem.reason}; the run is loaded without its samples "
                                              "and the ok attempts they measured"))
    gpu_path = folder / GPU_STATE_FILE
    if GPU_STATE_FILE in given:
        raw[GPU_STATE_FILE] = given[GPU_STATE_FILE]
    elif gpu_path.exists():  # damaged GPU state costs the run its GPU state only
        problem = _read_file(folder, GPU_STATE_FILE, raw)
        if problem is not None:
            warnings.append(Problem(problem.path, f"{problem.reason}; the run is loaded without its GPU state"))
    if has_parts(folder):  # a run still recording, or killed: its part files count
        parts_path = str(folder / PARTS_FOLDER)
        try:
            problem = _parts_problem(folder)
            if problem is not None:
                return problem
            merged = merge_parts(folder, {k: raw[k] for k in (CASES_FILE, SAMPLES_FILE, GPU_STATE_FILE) if k in raw})
            raw.update({k: _in_schema(t, k) for k, t in merged.items()})
        except ArchiveError as e:
            return Problem(parts_path, _strip_prefix(str(e), parts_path))
        except Exception as e:  # noqa: BLE001 - whatever damaged parts provoke is one line, not a crash
            return Problem(parts_path, f"cannot merge the run's part files ({type(e).__name__}: {e})")
        for kind in (CASES_FILE, SAMPLES_FILE, GPU_STATE_FILE):
            reason = value_problem(kind, raw[kind])
            if reason is not None:
                return Problem(parts_path, f"{kind} with its parts merged: {reason}")
    raw.setdefault(GPU_STATE_FILE, GPU_STATE_SCHEMA.empty_table())
    problem, more = _check_run(folder, raw, samples_named=bool(warnings))
    if problem is not None:
        if Path(problem.path).name != SAMPLES_FILE:
            return problem
        raw[SAMPLES_FILE] = SAMPLES_SCHEMA.empty_table()
        warnings.append(Problem(problem.path, f"{problem.reason}; the run is loaded without its samples "
                                              "and the ok attempts they measured"))
        problem, more = _check_run(folder, raw, samples_named=True)
        if problem is not None:
            return problem
    raw[CASES_FILE], _ = _drop_unsampled(raw[CASES_FILE], raw[SAMPLES_FILE])  # named by _check_run
    raw = _legacy_ids(raw)
    for kind, table in raw.items():
        tables[kind] = _encode(table, _CATEGORICAL[kind])
    return _RunTables(label, folder.name, folder, tables, warnings + more)


def _read_scanned(folders: list[tuple[str, Path]], given: dict[int, dict[str, pa.Table]]) -> dict[int, _RunTables]:
    """The runs whose files were all scanned and that ``_read_run`` would load unchanged, in bulk.

    Such a run's files are valid one by one (``reporter.data.scan``, samples in their units
    included); what ``_read_run`` checks across them is done here for all runs at once:
    one row per attempt, a row for every sampled attempt, samples for every ok attempt, no
    legacy case id to rename. A run that fails any of it is left for ``_read_run``, which
    names the problem. The environment is redacted once for all of them; the repeated
    strings come dictionary encoded from the scan.
    """
    kinds = (*RUN_FILES, GPU_STATE_FILE)
    chosen = [i for i, files in given.items() if all(k in files for k in RUN_FILES)
              and (GPU_STATE_FILE in files or not (folders[i][1] / GPU_STATE_FILE).exists())]
    if not chosen:
        return {}
    # Each run keeps its own tables (slicing joint tables of thousands of chunks costs a walk
    # over the chunks per slice); the joint ones, concatenated without a copy, are for the checks.
    counts = {k: np.array([given[i][k].num_rows if k in given[i] else 0 for i in chosen], np.int64) for k in RUN_FILES}
    joint = {k: pa.concat_tables([given[i][k] for i in chosen]) for k in RUN_FILES}
    redacted = _redact_environment(joint[ENVIRONMENT_FILE])
    env_starts = np.cumsum(counts[ENVIRONMENT_FILE]) - counts[ENVIRONMENT_FILE]
    bad = _bad_attempts(joint[CASES_FILE], counts[CASES_FILE], joint[SAMPLES_FILE], counts[SAMPLES_FILE])
    bad |= _legacy_runs(joint[CASES_FILE], counts[CASES_FILE])
    no_gpu_state = _encode(GPU_STATE_SCHEMA.empty_table(), _CATEGORICAL[GPU_STATE_FILE])
    out = {}
    for j, i in enumerate(chosen):
        if bad[j]:
            continue
        label, folder = folders[i]
        tables = {k: _encode(given[i][k], _CATEGORICAL[k]) if k in given[i] else no_gpu_state for k in kinds}
        if redacted is not joint[ENVIRONMENT_FILE]:  # some value redacted now: this run's rows of the redacted table
            tables[ENVIRONMENT_FILE] = _encode(redacted.slice(int(env_starts[j]), int(counts[ENVIRONMENT_FILE][j])),
                                               _CATEGORICAL[ENVIRONMENT_FILE])
        out[i] = _RunTables(label, folder.name, folder, tables, from_files=(SAMPLES_FILE,))
    return out


def _run_index(counts: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(counts.size, dtype=np.int64), counts)


DENSE_SLACK = 1_000_000  # entries a lookup table may have beyond 8 per row (else the keys are sorted)


def _bad_attempts(cases: pa.Table, case_counts: np.ndarray, samples: pa.Table, sample_counts: np.ndarray) -> np.ndarray:
    """Per run: whether an attempt (case, process) has two rows, sampled attempts lack a row,
    or an ok attempt lacks samples (what ``_check_run`` names beyond units)."""
    n_runs = case_counts.size
    names = pc.unique(pa.chunked_array([c.dictionary for c in cases["case_id"].chunks] + [pa.array([], pa.string())]))

    def lookup(chunk: pa.DictionaryArray) -> np.ndarray:  # each dictionary entry's position in names (-1: none)
        return np.asarray(pc.fill_null(pc.index_in(chunk.dictionary, value_set=names), -1).to_numpy(), np.int64)

    def indices(chunk: pa.DictionaryArray) -> np.ndarray:
        return np.asarray(chunk.indices.to_numpy(zero_copy_only=False), np.int64)

    c_case = np.concatenate([np.zeros(0, np.int64)] + [lookup(c)[indices(c)] for c in cases["case_id"].chunks])
    c_proc = cases["process"].to_numpy().astype(np.int64)
    c_run = _run_index(case_counts)
    # Samples are stored by attempt: only the rows where a new (run, case, process) begins are keyed.
    ends = np.cumsum(sample_counts)
    s_case_parts, s_proc_parts, s_run_parts = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    offset = 0
    for batch in samples.to_batches():
        n = batch.num_rows
        if not n:
            continue
        case = batch.column(batch.schema.get_field_index("case_id"))
        idx = indices(case)
        proc = np.asarray(batch.column(batch.schema.get_field_index("process")).to_numpy(zero_copy_only=False), np.int64)
        begins = np.flatnonzero(np.r_[True, (idx[1:] != idx[:-1]) | (proc[1:] != proc[:-1])])
        s_case_parts.append(lookup(case)[idx[begins]])
        s_proc_parts.append(proc[begins])
        s_run_parts.append(np.searchsorted(ends, offset + begins, side="right"))
        offset += n
    s_case, s_proc, s_run = (np.concatenate(p) for p in (s_case_parts, s_proc_parts, s_run_parts))
    bad = np.zeros(n_runs, bool)
    bad[s_run[s_case < 0]] = True  # samples of a case no run of these has a row for
    for proc, run in ((c_proc, c_run), (s_proc, s_run)):
        bad[run[proc < 0]] = True
    span_p = int(max(c_proc.max(initial=0), s_proc.max(initial=0))) + 1
    span_c = len(names) + 1
    c_key = (c_run * span_c + c_case) * span_p + np.maximum(c_proc, 0)
    s_key = (s_run * span_c + np.maximum(s_case, 0)) * span_p + np.maximum(s_proc, 0)
    ok = pc.equal(cases["status"].cast(pa.string()) if cases.num_rows else pa.array([], pa.string()), STATUS_OK)
    ok = np.asarray(ok.to_numpy(zero_copy_only=False), bool) if cases.num_rows else np.zeros(0, bool)
    space = n_runs * span_c * span_p
    if space <= 8 * (c_key.size + s_key.size) + DENSE_SLACK:  # a table of every possible attempt: no sort
        rows = np.bincount(c_key, minlength=space)
        bad[np.flatnonzero(rows > 1) // span_p // span_c] = True  # an attempt with two rows
        sampled = np.zeros(space, bool)
        sampled[s_key] = True
        bad[np.flatnonzero(sampled & (rows == 0)) // span_p // span_c] = True  # samples without their row
        unsampled = c_key[ok & ~sampled[c_key]]
    else:
        order = np.sort(c_key)
        bad[(order[1:][order[1:] == order[:-1]] // span_p) // span_c] = True
        distinct = np.unique(s_key)
        bad[(distinct[~np.isin(distinct, c_key)] // span_p) // span_c] = True
        unsampled = c_key[ok & ~np.isin(c_key, distinct)]
    bad[(unsampled // span_p) // span_c] = True  # an ok attempt without samples
    return bad


def _legacy_runs(cases: pa.Table, counts: np.ndarray) -> np.ndarray:
    """Per run: whether one of its case ids is an old strict ``fp32`` one that ``_legacy_ids`` renames."""
    bad = np.zeros(counts.size, bool)
    if not cases.num_rows:
        return bad
    combos = pa.table({c: cases[c].cast(pa.string()) for c in ("case_id", "workload", "settings")})
    combos = combos.group_by(["case_id", "workload", "settings"]).aggregate([])
    renamed = [c for c, w, st in zip(combos["case_id"].to_pylist(), combos["workload"].to_pylist(), combos["settings"].to_pylist())
               if legacy_case_id(c, w, st) != c]
    if renamed:
        hit = pc.is_in(cases["case_id"].cast(pa.string()), value_set=pa.array(renamed, pa.string()))
        bad[np.unique(_run_index(counts)[np.asarray(hit.to_numpy(zero_copy_only=False), bool)])] = True
    return bad


def _read_file(folder: Path, kind: str, raw: dict[str, pa.Table]) -> Problem | None:
    """Read and validate one of a run's files into ``raw[kind]``; the Problem when it cannot."""
    path = folder / kind
    if not path.is_file():
        if path.exists():
            return Problem(str(path), "is not a regular file (a folder or something else is in its place)")
        return Problem(str(path), "file missing")
    problem = _footer_problem(path, kind)
    if problem is not None:
        return problem
    try:
        table, meta = read_table(path, kind)
    except ArchiveError as e:
        return Problem(str(path), _strip_prefix(str(e), str(path)))
    reason = value_problem(kind, table)
    if reason is not None:
        return Problem(str(path), reason)
    if meta.get("run_id") != folder.name:
        return Problem(str(path), f"run_id {meta.get('run_id')!r} in the file's metadata does not match the folder name")
    schema = _SCHEMAS[kind]
    try:
        table = table.select(schema.names).cast(schema).replace_schema_metadata(None)
    except (pa.ArrowException, ValueError) as e:  # validated, so unexpected: still one line, not a crash
        return Problem(str(path), f"cannot convert to the schema ({e})")
    raw[kind] = _redact_environment(table) if kind == ENVIRONMENT_FILE else table
    return None


def _footer_problem(path: Path, kind: str) -> Problem | None:
    """A file refused before its rows are read: empty, or announcing more rows than ``MAX_ROWS``."""
    try:
        if path.stat().st_size == 0:
            return Problem(str(path), "not a readable Parquet file (it is empty: 0 bytes)")
        rows = pq.ParquetFile(path).metadata.num_rows
    except Exception:  # noqa: BLE001 - unreadable: read_table names why
        return None
    reason = row_limit_problem(kind, rows)
    return Problem(str(path), reason) if reason is not None else None


def _parts_problem(folder: Path) -> Problem | None:
    """Part files refused before they are read: together, more rows of a kind than ``MAX_ROWS`` allows."""
    parts = folder / PARTS_FOLDER
    rows: dict[str, int] = {}
    try:
        for p in parts.iterdir():
            kind = p.name.partition(".")[2]
            if p.name.startswith(".") or kind not in MAX_ROWS:
                continue
            if p.is_file() and p.stat().st_size == 0:
                return Problem(str(p), "not a readable Parquet file (it is empty: 0 bytes)")
            try:
                rows[kind] = rows.get(kind, 0) + pq.ParquetFile(p).metadata.num_rows
            except Exception:  # noqa: BLE001 - unreadable: merge_parts names it
                continue
    except OSError as e:
        return Problem(str(parts), f"cannot list the folder ({e.strerror or e})")
    for kind, n in rows.items():
        reason = row_limit_problem(kind, n)
        if reason is not None:
            return Problem(str(parts), f"its {kind} parts: {reason}")
    return None


def _drop_unsampled(cases: pa.Table, samples: pa.Table) -> tuple[pa.Table, int]:
    """``cases`` without the ok attempts that have no samples (in their order), and how many went."""
    keys = ["case_id", "process"]
    ok = pc.equal(cases["status"], STATUS_OK)
    indexed = cases.append_column("_row", pa.array(range(cases.num_rows), pa.int64()))
    ok_rows = indexed.filter(ok)
    kept_ok = ok_rows.join(samples.group_by(keys).aggregate([]), keys, join_type="left semi")
    if kept_ok.num_rows == ok_rows.num_rows:
        return cases, 0
    kept = pa.concat_tables([indexed.filter(pc.invert(ok)), kept_ok.select(indexed.schema.names).cast(indexed.schema)]).sort_by("_row")
    return kept.drop_columns(["_row"]).cast(cases.schema), ok_rows.num_rows - kept_ok.num_rows


def _redact_environment(table: pa.Table) -> pa.Table:
    """The environment with ``runformat.redact`` applied again, so every view shows redacted
    values even for runs recorded before the collector redacted that form (each distinct
    entry redacted once: runs repeat most of their environment)."""
    if not table.num_rows:
        return table
    entries = pa.table({c: table.column(c).cast(pa.string()) for c in ("section", "key", "value")})
    distinct = entries.group_by(["section", "key", "value"]).aggregate([])
    changed = [(s, k, v, r) for s, k, v in zip(distinct["section"].to_pylist(), distinct["key"].to_pylist(),
                                              distinct["value"].to_pylist())
               if v and (r := redact_entry(s, k, v)) != v]
    if not changed:
        return table
    values = table.column("value").to_pylist()
    fix = {(s, k, v): r for s, k, v, r in changed}
    redacted = [fix.get((s, k, v), v) for s, k, v in zip(entries["section"].to_pylist(), entries["key"].to_pylist(), values)]
    i = table.schema.get_field_index("value")
    return table.set_column(i, table.schema.field(i), pa.array(redacted, type=table.schema.field(i).type))


def _check_run(folder: Path, tables: dict[str, pa.Table], samples_named: bool = False) -> tuple[Problem | None, list[Problem]]:
    """Checks across a run's files: one row per attempt, metrics in their own units, samples
    for every ``ok`` attempt. Returns the problem that rejects a file (a problem of
    samples.parquet costs the run its samples only), or None and warnings: samples of
    attempts with no case row (left out by ``ok_samples``) and ok attempts with no samples
    (left out by ``_drop_unsampled``; not named again when ``samples_named``: the samples
    file's own problem says they are gone); the rest of the run is used."""
    cases, samples = tables[CASES_FILE], tables[SAMPLES_FILE]
    cases_path, samples_path = str(folder / CASES_FILE), str(folder / SAMPLES_FILE)
    keys = ["case_id", "process"]

    def first(t: pa.Table) -> str:
        row = t.sort_by([(k, "ascending") for k in keys]).slice(0, 1).to_pylist()[0]
        return f"{row['case_id']!r} process {row['process']}"

    attempts = cases.group_by(keys).aggregate([([], "count_all")])
    repeated = attempts.filter(pc.greater(attempts["count_all"], 1))
    if repeated.num_rows:
        return Problem(cases_path, f"case {first(repeated)} has {repeated['count_all'][0].as_py()} rows; an attempt has one"), []
    kinds = samples.group_by(["metric", "unit", "better"]).aggregate([]).to_pylist()
    for k in sorted(kinds, key=lambda k: (k["metric"], k["unit"], k["better"])):
        spec = METRICS[k["metric"]]
        if k["unit"] != spec.unit:
            return Problem(samples_path, f"metric {k['metric']!r} is recorded in {k['unit']!r}; its unit is {spec.unit!r}"), []
        if k["better"] != spec.better:
            return Problem(samples_path, f"metric {k['metric']!r} is marked better={k['better']!r}; it is {spec.better!r}"), []
    sampled = samples.group_by(keys).aggregate([([], "count_all")])
    ok = cases.filter(pc.equal(cases["status"], STATUS_OK)).select(keys)
    unsampled = ok.join(sampled.select(keys), keys, join_type="left anti")
    named: list[Problem] = []
    if unsampled.num_rows and not samples_named:
        named.append(Problem(samples_path, f"{unsampled.num_rows} attempt(s) recorded ok in cases.parquet but have no "
                                           f"samples (first: {first(unsampled)}); left out, the rest of the run is used "
                                           "(collector run --resume measures them again)"))
    orphans = sampled.join(cases.select(keys), keys, join_type="left anti")
    if not orphans.num_rows:
        return None, named
    n = pc.sum(orphans["count_all"]).as_py()
    return None, named + [Problem(samples_path, f"{n} sample(s) of {orphans.num_rows} attempt(s) have no row in cases.parquet "
                                        f"(first: {first(orphans)}); left out, the rest of the run is used (a run killed "
                                        "between its two writes looks like this; collector run --resume repairs it)")]


def _in_schema(table: pa.Table, kind: str) -> pa.Table:
    schema = _SCHEMAS[kind]
    return table.select(schema.names).cast(schema).replace_schema_metadata(None)


def _legacy_ids(raw: dict[str, pa.Table]) -> dict[str, pa.Table]:
    """Rename an old run's strict ``fp32`` case ids to ``fp32-strict`` in every table."""
    cases = raw[CASES_FILE]
    if not cases.num_rows:
        return raw
    rows = zip(cases["case_id"].to_pylist(), cases["workload"].to_pylist(), cases["settings"].to_pylist())
    renames = {c: n for c, w, st in rows if (n := legacy_case_id(c, w, st)) != c}
    if not renames:
        return raw
    out = dict(raw)
    for kind in (CASES_FILE, SAMPLES_FILE, GPU_STATE_FILE):
        t = out[kind]
        if not t.num_rows:
            continue
        ids = [renames.get(c, c) for c in t["case_id"].to_pylist()]
        t = t.set_column(t.schema.get_field_index("case_id"), "case_id", pa.array(ids, pa.string()))
        if kind == CASES_FILE:
            params = [p.replace('"dtype":"fp32"', '"dtype":"fp32-strict"') if c in renames else p
                      for c, p in zip(cases["case_id"].to_pylist(), t["params"].to_pylist())]
            t = t.set_column(t.schema.get_field_index("params"), "params", pa.array(params, pa.string()))
        out[kind] = t
    return out


def _strip_prefix(message: str, path: str) -> str:
    return message[len(path) + 2 :] if message.startswith(path + ": ") else message


def _encode(table: pa.Table, columns: tuple[str, ...]) -> pa.Table:
    for name in columns:
        i = table.schema.get_field_index(name)
        if pa.types.is_dictionary(table.schema.field(i).type):
            continue  # read as Parquet stored it (reporter.data.scan)
        table = table.set_column(i, name, pc.dictionary_encode(table.column(name)))
    return table


def _assemble(source: ArchiveId, valid: list[_RunTables], problems: list[Problem], cache: bool = False) -> Archive:
    run_ids = [r.run_id for r in valid]
    labels = sorted({r.label for r in valid})
    label_code = np.array([labels.index(r.label) for r in valid], dtype=np.int32)

    def frame(kind: str, only: set[str] | None = None) -> pd.DataFrame:
        """The table of ``kind`` of every valid run, or of the run ids in ``only`` (categories those of all runs)."""
        chosen = [j for j, r in enumerate(valid) if only is None or r.run_id in only]
        parts = _materialise([valid[j].tables[kind] for j in chosen])
        counts = np.array([t.num_rows for t in parts], dtype=np.int64)
        schema = _empty_schema(kind)
        table = pa.concat_tables(parts).unify_dictionaries() if parts else schema.empty_table()
        del parts
        df = table.to_pandas()
        del table
        run_index = np.repeat(np.array(chosen, dtype=np.int32), counts)
        df.insert(0, "run_id", pd.Categorical.from_codes(run_index, categories=run_ids))
        df.insert(0, "label", pd.Categorical.from_codes(label_code[run_index], categories=labels))
        return df

    frames = {kind: frame(kind) for kind in _TABLES if kind != SAMPLES_FILE}
    runs = _runs_table(valid, frames[ENVIRONMENT_FILE], frames[CASES_FILE])
    keys = {r.run_id: run_key(r.label, r.run_id, r.fingerprint) for r in valid if r.fingerprint is not None} if cache else {}
    # With every run's summaries keyed, samples are read when first used, and only those used.
    samples = _SampleSource(frame, valid) if len(keys) == len(valid) else None
    return Archive(
        source=source,
        runs=runs,
        environment=frames[ENVIRONMENT_FILE],
        cases=frames[CASES_FILE],
        samples=(lambda: samples(None)) if samples is not None else frame(SAMPLES_FILE),
        problems=problems,
        gpu_state=frames[GPU_STATE_FILE],
        run_keys=keys,
        summaries=SummaryCache(source, set(keys.values())) if cache else None,
        sample_source=samples,
    )


class _SampleSource:
    """An archive's samples read when used: of a few runs, those runs' tables only; of every run,
    the whole frame once (kept, and the runs' tables let go), every later selection cut from it."""

    def __init__(self, frame: Callable[..., pd.DataFrame], valid: list[_RunTables]) -> None:
        self.frame = frame
        self.valid = valid
        self.ids = {r.run_id for r in valid}
        self.full: pd.DataFrame | None = None
        self.frames = 0  # tables made

    def __call__(self, only: set[str] | None) -> pd.DataFrame:
        self.frames += 1
        if only is not None and self.ids <= only:
            only = None
        if self.full is None and only is None:
            self.full = self.frame(SAMPLES_FILE)
            for r in self.valid:
                r.tables[SAMPLES_FILE] = None
        if self.full is not None:
            return self.full if only is None else _rows_of(self.full, only)
        return self.frame(SAMPLES_FILE, only)


def _empty_schema(kind: str) -> pa.Schema:
    schema = _SCHEMAS[kind]
    fields = [
        pa.field(f.name, pa.dictionary(pa.int32(), f.type)) if f.name in _CATEGORICAL[kind] else f for f in schema
    ]
    return pa.schema(fields)


def _runs_table(valid: list[_RunTables], env: pd.DataFrame, cases: pd.DataFrame) -> pd.DataFrame:
    runs = pd.DataFrame(
        {
            "label": pd.Categorical([r.label for r in valid], categories=sorted({r.label for r in valid})),
            "run_id": pd.Series([r.run_id for r in valid], dtype=object),
            "path": pd.Series([str(r.path) for r in valid], dtype=object),
        }
    )
    wanted = {(s, k) for _, keys in _RUN_FIELDS for s, k in keys} | {("run", "started_at"), ("run", "finished_at"), ("run", "device")}
    sk = env["section"].astype(str) + "\x00" + env["key"].astype(str)
    sub = env[sk.isin({f"{s}\x00{k}" for s, k in wanted})]
    table = (
        sub.assign(sk=sk[sub.index], run_id=sub["run_id"].astype(str))
        .drop_duplicates(["run_id", "sk"])
        .pivot(index="run_id", columns="sk", values="value")
        .reindex(runs["run_id"])
    )

    def get(section: str, key: str) -> pd.Series:
        col = f"{section}\x00{key}"
        return table[col].reset_index(drop=True) if col in table else pd.Series([None] * len(runs), dtype=object)

    stamp = pd.to_datetime(runs["run_id"].str.slice(0, 16), format="%Y%m%dT%H%M%SZ", utc=True, errors="coerce")
    runs["started_at"] = pd.to_datetime(get("run", "started_at"), utc=True, errors="coerce").fillna(stamp)
    runs["finished_at"] = pd.to_datetime(get("run", "finished_at"), utc=True, errors="coerce")
    for column, keys in _RUN_FIELDS:
        value = pd.Series([None] * len(runs), dtype=object)
        for section, key in keys:
            value = value.where(value.notna() & (value != ""), get(section, key))
        runs[column] = value.astype(object).where(value.notna() & (value != ""), None)

    # Device type from the cases (cuda, cpu): the most common per run, the first in sort
    # order of a tie (``Series.mode``); the run's --device request otherwise.
    if len(cases):
        per = cases.groupby(["run_id", "device"], observed=True).size().reset_index(name="n")
        per["device"] = per["device"].astype(str)
        per = per.sort_values(["run_id", "n", "device"], ascending=[True, False, True]).drop_duplicates("run_id")
        runs["device_type"] = runs["run_id"].map(dict(zip(per["run_id"].astype(str), per["device"])))
    else:
        runs["device_type"] = None
    device = runs["device_type"].where(runs["device_type"].notna(), get("run", "device")).astype(object)
    runs["device_type"] = device.where(device.notna() & (device != ""), None)

    if len(cases):
        # Per (run, case): ok when every attempt is ok, failed when any failed; then counted per run.
        run_code = cases["run_id"].cat.codes.to_numpy(np.int64)
        case_code = cases["case_id"].cat.codes.to_numpy(np.int64)
        status = cases["status"]
        per_case = pd.DataFrame(
            {
                "key": run_code * (int(case_code.max()) + 1) + case_code,
                "ok": (status == STATUS_OK).to_numpy(bool),
                "failed": status.isin(_FAILED).to_numpy(bool),
            }
        ).groupby("key").agg(ok=("ok", "all"), failed=("failed", "any"))
        run_of = per_case.index.to_numpy(np.int64) // (int(case_code.max()) + 1)
        n = len(runs)
        counts = pd.DataFrame(
            {
                "cases_ok": np.bincount(run_of, weights=per_case["ok"].to_numpy(), minlength=n).astype(int),
                "cases_failed": np.bincount(run_of, weights=per_case["failed"].to_numpy(), minlength=n).astype(int),
                "cases_total": np.bincount(run_of, minlength=n).astype(int),
            }
        )
    else:
        counts = pd.DataFrame({c: np.zeros(len(runs), dtype=int) for c in ("cases_ok", "cases_failed", "cases_total")})
    runs = pd.concat([runs, counts], axis=1)
    runs["run_id"] = pd.Categorical(runs["run_id"], categories=[r.run_id for r in valid])
    return runs[list(RUN_COLUMNS)]
