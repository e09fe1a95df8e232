"""``compute_article``: one comparison, computed into ``ArticleData`` (reporter.article.data).

Pure: it reads an ``Archive`` and a ``ComparisonSpec``, asks reporter.model.compare for the
comparison and reporter.model.stats for every interval, and returns frozen dataclasses in no
language (their words are phrases, which reporter.present.wording says in each). The
article follows the source write-ups' order (environment and method; basic operations;
training; compile, AMP, data loading and multi-GPU; inference; numerical drift;
conclusion), keeps only the sections these runs measured, and lists what was not measured
with the reason. Derived figures (compile and AMP speed-ups, memory saved, DataLoader
throughput and its knee, scaling efficiency, inference throughput, GPU against CPU) are
ratios between cases of one side, computed on the per-process medians grouped by run
(``reporter.model.stats.compute_comparison``), so each carries its CI.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from pathlib import PurePosixPath
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

import numpy as np
import pandas as pd
from packaging.version import InvalidVersion, Version

from runformat.schema import BETTER_HIGHER, BETTER_NONE, distinct_params, params_from_json as params_of, params_to_json
from runformat.vocabulary import (
    FAMILIES,
    FINGERPRINT_KEYS,
    OTHER_FAMILY,
    SECTIONS,
    UNSETTLED,
    Note,
    NoteCode,
    ValueFormat,
    Verdict,
    format_cudnn_version,
    is_volatile,
)
from reporter.article.data import (
    Advice,
    ArticleData,
    Block,
    CaseName,
    Caveat,
    CaseRow,
    ChartData,
    Confounder,
    DerivedRow,
    DerivedTable,
    FamilyHeadline,
    Heading,
    Headline,
    HostName,
    InLanguage,
    Interval,
    Joined,
    Message,
    Method,
    NotMeasured,
    NumericBlock,
    NumericRow,
    PerSecond,
    Percentiles,
    Phrase,
    PolicyRow,
    Rate,
    Reproduce,
    RowName,
    RunRef,
    Section,
    Side,
    StackRow,
    VerdictBox,
)
from reporter.model.aa import aa_figures
from reporter.model.compare import Comparison, compare_labels, compute_summaries, counted, timing_methods
from reporter.article.config import ComparisonSpec
from reporter.article.confounders import (
    compute_case_confounders,
    compute_confounder_summary,
    compute_precision_changes,
    interleaved_siblings,
)
from reporter.data.load import Archive
from reporter.article.paths import article_page, distinct, run_page
from reporter.model.scaling import WITHIN_UNIT, ScalingEfficiency, compute_scaling_table
from reporter.model.stats import MAX_PROCESSES, MAX_RUNS, Geomean, compute_comparison, compute_percentiles

# Metrics the article leaves to the raw files: the host-side mirror of every device time.
HIDDEN_METRICS = ("wall_time",)
# Metrics a main table shows; the rest (reserved memory, utilisation, counts) are in the details.
# Metrics that are a time per item of work, from which a rate (TFLOP/s, GB/s, items/s) follows.
RATE_METRICS = ("time", "latency")
# Parameters a scaling curve can run along, in order of preference, and those along
# which it is a throughput curve rather than a time curve.
SCALE_PARAMS = ("n", "elements", "replicas", "num_workers", "tasks", "batch", "seq", "image_size")
PARALLEL_PARAMS = ("replicas", "num_workers", "tasks")
TOP_N = 5
HEADLINE_CHANGES = 2
# The z-values of a two-sided 5% test and 80% power: MDE = (z_α/2 + z_β) · se.
# A DataLoader curve's knee: the fewest workers reaching this share of the best throughput.
KNEE_SHARE = 0.9
MAX_VALUE_CHARS = 400


# ---- the comparison, read through the statistics contract ----------------------------------------


def _contract_rows(c: Comparison, families: Mapping[str, str]) -> pd.DataFrame:
    """``c.rows`` with every row's family: the recorded one, else the registry's, else "other"."""
    rows = c.rows.copy()
    known = rows["family"].where(rows["family"].notna(), None)
    rows["family"] = [f if isinstance(f, str) and f else families.get(str(w), OTHER_FAMILY)
                      for f, w in zip(known, rows["workload"])]
    return rows


# ---- the article --------------------------------------------------------------------------------


def compute_article(
    archive: Archive,
    spec: ComparisonSpec,
    *,
    comparison: Comparison | None = None,
    families: Mapping[str, str] | None = None,
    titles: Mapping[str, str] | None = None,
    page_titles: Mapping[str, str] | None = None,
    build_command: str = "reporter build",
    cache: dict[Any, Any] | None = None,
) -> ArticleData:
    """The whole article comparing ``spec.candidate`` with ``spec.baseline`` in ``archive``, in no language
    (its words are phrases: reporter.present.wording says them in each).

    ``comparison`` is ``compare_labels``' result when the caller has it already;
    ``families`` maps a workload to its family where the runs did not record one (the
    registry's), ``titles`` a workload to its methodology title. ``page_titles``: the
    publisher's title of the article in each language that has one (the rest get the default
    title); without it, ``spec.title`` is the title in every language. ``cache`` may be shared
    between articles of one build (a side's informational summaries are computed once).
    """
    cache = cache if cache is not None else {}
    c = comparison or compare_labels(archive, spec.baseline, spec.candidate, noise=spec.noise,
                                     single_band=spec.single_band, correction=spec.correction)
    b = _archive_parts(archive, spec, c, families, cache)
    # Words of the device: an article whose runs are all on CPUs speaks of processes, not GPUs.
    kinds = set(pd.concat([a.runs["device_type"] for a in b["sides"].values()]).dropna().astype(str))
    words = "cpu" if kinds == {"cpu"} else None
    sides, families, fps, devices, device = b["sides"], b["families"], b["fps"], b["devices"], b["device"]
    rows_df, units, confounders, cross_device = b["rows_df"], b["units"], b["confounders"], b["cross_device"]
    rows = _with_disagreements(_case_rows(rows_df, sides, b["case_notes"], b["latency"]),
                               dict(zip(rows_df["case_id"].astype(str), rows_df["params"])))

    sections = _sections(rows, rows_df, units, sides, spec, cache)
    geomeans = dict(c.geomeans)
    warnings = tuple(x.note() for x in compute_confounder_summary(
        {r.case_id: list(r.notes) for r in rows if r.main}, sum(r.main for r in rows)) if x.widespread)
    hardware = any(x.what != TIMING_CONFOUNDER for x in confounders)
    timed_apart = any(x.what == TIMING_CONFOUNDER for x in confounders)
    headline = _headline(rows, geomeans, c, cross_device, hardware, warnings, timed_apart=timed_apart)
    headline = _with_shared_shift(headline, rows, c, archive, None if cross_device else device, cache)
    calls = [r for r in rows if r.main and r.verdict.is_call]
    best = tuple(sorted((r for r in calls if r.verdict is Verdict.BETTER), key=lambda r: -r.ratio.value)[:TOP_N])
    worst = tuple(sorted((r for r in calls if r.verdict is Verdict.WORSE), key=lambda r: r.ratio.value)[:TOP_N])
    numerics = [n for s in sections for n in s.numerics]
    method = b["method"]
    own = dict(page_titles) if page_titles is not None else {"": spec.title} if spec.title else {}
    default = Message.of("article.default_title", candidate=spec.candidate, baseline=spec.baseline, device=device)
    title: Phrase = own[""] if "" in own else InLanguage(tuple(sorted(own.items())), default) if own else default
    not_measured = _not_measured(sides, {r.workload for r in rows} | {b.workload for b in numerics}, families,
                                 titles or {}, c)
    verdict = _verdict_box(spec, own, rows, fps, confounders, b["changes"], not_measured, b["runs"], method, cross_device)
    return ArticleData(
        title=title,
        page=article_page(spec.slug),
        baseline=Side("baseline", spec.baseline, spec.baseline.partition("@")[0], ", ".join(devices["baseline"]) or None),
        candidate=Side("candidate", spec.candidate, spec.candidate.partition("@")[0], ", ".join(devices["candidate"]) or None),
        device=device,
        headline=headline,
        verdict=verdict,
        stacks=_stacks(sides, fps),
        changes=b["changes"],
        confounders=confounders,
        method=method,
        runs=b["runs"],
        sections=sections,
        rows=tuple(rows),
        best=best,
        worst=worst,
        advice=_advice(c, rows, confounders, cross_device, method, numerics),
        not_measured=not_measured,
        unmatched=tuple(_unmatched(c)),
        reproduce=b["reproduce"],
        build_command=build_command,
        gpus=b["gpus"],
        words=words,
    )


def _archive_parts(archive: Archive, spec: ComparisonSpec, c: Comparison,
                   families: Mapping[str, str] | None, cache: dict[Any, Any]) -> dict[str, Any]:
    """The parts of ``compute_article`` that read the archive (a side's, once for every article of that side)."""

    def of_side(a: Archive, compute: Callable[[Archive], Any]) -> Any:  # a label is a side of several articles
        key = (compute.__name__, a.selector, spec.run_ids)
        if key not in cache:
            cache[key] = compute(a)
        return cache[key]

    sides = {role: archive.select(sel) for role, sel in (("baseline", spec.baseline), ("candidate", spec.candidate))}
    families = {**dict(families or {}), **recorded_families(archive)}
    fps = {role: of_side(a, _fingerprint) for role, a in sides.items()}
    devices = {role: distinct(a.runs["device_name"]) for role, a in sides.items()}
    rows_df = _contract_rows(c, families)
    rows_df = rows_df[~rows_df["metric"].isin(HIDDEN_METRICS)].reset_index(drop=True)
    # Per case: what other than the stack could explain a difference (precision in effect, GPU state).
    idle = {role: interleaved_siblings(a.runs["run_id"].astype(str), archive.environment) for role, a in sides.items()}
    case_notes = compute_case_confounders(sides["baseline"].cases, sides["candidate"].cases,
                                          sides["baseline"].gpu_state, sides["candidate"].gpu_state,
                                          case_ids=sorted(set(rows_df["case_id"].astype(str))), idle_siblings=idle)
    return {
        "sides": sides,
        "families": families,
        "fps": fps,
        "devices": devices,
        "device": ", ".join(distinct(devices["baseline"] + devices["candidate"])) or "?",
        "rows_df": rows_df,
        "case_notes": case_notes,
        "units": {role: of_side(a, _unit_moments) for role, a in sides.items()},
        "latency": {role: of_side(a, _latency_samples) for role, a in sides.items()},
        "confounders": _confounders(fps["baseline"], fps["candidate"]) + _timing_confounder(archive, sides),
        "cross_device": devices["baseline"] != devices["candidate"]
        or distinct(sides["baseline"].runs["device_type"]) != distinct(sides["candidate"].runs["device_type"]),
        "method": _method(sides, fps, c),
        "changes": _changes(fps["baseline"], fps["candidate"])
        + tuple((f"settings.{p.setting}", _setting(p.baseline), _setting(p.candidate))
                for p in compute_precision_changes(sides["baseline"].cases, sides["candidate"].cases)),
        "gpus": _gpu_boards(fps["baseline"], fps["candidate"]),
        "runs": tuple(_run_refs(sides)),
        "reproduce": _reproduce(spec, fps),
    }


# ---- rows ---------------------------------------------------------------------------------------


def _case_rows(df: pd.DataFrame, sides: Mapping[str, Archive],
               case_notes: Mapping[str, list[Note]] | None = None,
               latency: Mapping[str, Mapping[str, np.ndarray]] | None = None) -> list[CaseRow]:
    """Every compared row, named within its workload's block, with rates, latency percentiles and
    the statistics' notes followed by the case's confounder notes (``case_notes``)."""
    case_notes = case_notes or {}
    latency = latency if latency is not None else {role: _latency_samples(a) for role, a in sides.items()}
    records = dict(zip(df.index, df.to_dict("records")))
    rates = _rates(df, records)
    out: list[CaseRow] = []
    for workload, sub in df.groupby("workload", sort=False):
        for i in sub.index:
            r = records[i]
            metric = str(r["metric"])
            params = _params_text(r["params"])
            suffix = None if metric in ("time", "latency") else metric
            label = RowName(str(workload), params, suffix)
            # A compile row's time is the compiled step, not the compile.
            full_label = RowName(str(workload), params, "compiled_step" if workload == "compile" and metric == "time"
                                 else suffix, full=True)
            verdict = Verdict(str(r["verdict"]))
            lat = (None, None)
            if metric == "latency":
                lat = tuple(_percentiles(latency[role].get(str(r["case_id"]))) for role in ("baseline", "candidate"))
            main = counted(metric, verdict)
            out.append(CaseRow(
                case_id=str(r["case_id"]), workload=str(workload), family=str(r["family"]), label=label,
                full_label=full_label, metric=metric, unit=_unit(str(r["unit"])), better=str(r["better"]),
                baseline=Interval(float(r["baseline_value"]), float(r["baseline_ci_low"]), float(r["baseline_ci_high"])),
                candidate=Interval(float(r["candidate_value"]), float(r["candidate_ci_low"]), float(r["candidate_ci_high"])),
                ratio=Interval(float(r["ratio"]), float(r["ci_low"]), float(r["ci_high"])),
                p_adjusted=float(r["p_adjusted"]), verdict=verdict,
                notes=tuple(n for n in (r["notes"] or ()) if isinstance(n, Note))
                + tuple(case_notes.get(str(r["case_id"]), ())),
                mde=_finite_or_none(r["mde"]),
                n_units=(int(r["n_baseline_units"]), int(r["n_candidate_units"])),
                n_samples=(int(r["n_baseline_samples"]), int(r["n_candidate_samples"])),
                rates=rates.get(i, (None, None)), latency=lat, main=main,
            ))
    return out


def _params_text(params: Any) -> str:
    """A case's recorded parameters as JSON text (as recorded where they are text)."""
    return params if isinstance(params, str) else params_to_json(params_of(params))


def _rates(df: pd.DataFrame, records: Mapping[Any, dict[str, Any]] | None = None
           ) -> dict[int, tuple[Rate | None, Rate | None]]:
    """TFLOP/s, GB/s or items/s per side and row, with % of the best rate of the same workload, kind and dtype on that side."""
    raw: dict[str, dict[int, tuple[str, str, float, Phrase]]] = {"baseline": {}, "candidate": {}}
    for i, r in (records or dict(zip(df.index, df.to_dict("records")))).items():
        if r["metric"] not in RATE_METRICS or r["unit"] != "s":
            continue
        # The best rate of the same workload and dtype: a TF32 convolution is no peak for an fp32 matmul.
        dtype = f'{r["workload"]}:{params_of(r["params"]).get("dtype", "")}'
        for side in raw:
            median = r[f"{side}_median"]
            if not (_positive(median)):
                continue
            if _positive(r.get("flops")):
                raw[side][i] = ("flops", dtype, r["flops"] / median / 1e12, "TFLOP/s")
            elif _positive(r.get("bytes")):
                raw[side][i] = ("bytes", str(r["workload"]), r["bytes"] / median / 1e9, "GB/s")
            elif _positive(r.get("items")):
                unit = r.get("items_unit") if isinstance(r.get("items_unit"), str) and r.get("items_unit") else "items"
                raw[side][i] = ("items", "", r["items"] / median, PerSecond(unit))
    out: dict[int, list[Rate | None]] = {}
    for s_index, side in enumerate(("baseline", "candidate")):
        peaks: dict[tuple[str, str], float] = {}
        groups: dict[tuple[str, str], int] = {}
        for kind, dtype, value, _ in raw[side].values():
            peaks[(kind, dtype)] = max(peaks.get((kind, dtype), 0.0), value)
            groups[(kind, dtype)] = groups.get((kind, dtype), 0) + 1
        for i, (kind, dtype, value, unit) in raw[side].items():
            fraction = value / peaks[(kind, dtype)] if kind != "items" and groups[(kind, dtype)] > 1 else None
            out.setdefault(i, [None, None])[s_index] = Rate(value, unit, fraction)
    return {i: (v[0], v[1]) for i, v in out.items()}


def _latency_samples(a: Archive) -> dict[str, np.ndarray]:
    s = a.ok_samples()
    s = s[s["metric"] == "latency"]
    return {str(k): g.to_numpy(np.float64) for k, g in s.groupby("case_id", observed=True)["value"]}


def _percentiles(values: np.ndarray | None) -> Percentiles | None:
    if values is None or values.size == 0:
        return None
    q = compute_percentiles(values)
    return Percentiles(q[0], q[1], q[2], int(values.size))


# Workloads that time one training step of a model: the same model, batch and shape at FP32 is
# one setting, whichever of them measured it (AMP's FP32 rows against the training workloads).
TRAINING_STEP = ("bert_train", "resnet50_train", "amp")


def _training_setting(row: CaseRow, params: Any) -> tuple[Any, ...] | None:
    """The setting a training-step row times (model, batch, shape), or None for other rows."""
    if row.workload not in TRAINING_STEP or row.metric != "time":
        return None
    p = params_of(params)
    if (p.get("precision") or "fp32") != "fp32" or p.get("data", "synthetic") != "synthetic":
        return None
    return tuple(sorted((k, str(v)) for k, v in p.items() if k not in ("precision", "data")))


def _with_disagreements(rows: list[CaseRow], params: Mapping[str, Any]) -> list[CaseRow]:
    """The rows, each noted where another workload timed the same setting and reads otherwise
    (the verdicts differ and one of them is a call): a reader sees both readings where either is."""
    from dataclasses import replace

    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, r in enumerate(rows):
        key = _training_setting(r, params.get(r.case_id))
        if key is not None:
            groups.setdefault(key, []).append(i)
    out = list(rows)
    for members in groups.values():
        for i in members:
            for j in members:
                a, b = rows[i], rows[j]
                if a.workload == b.workload or a.verdict is b.verdict or not (a.verdict.is_call or b.verdict.is_call):
                    continue
                out[i] = replace(out[i], notes=out[i].notes + (Note.of(
                    NoteCode.DISAGREES, other=b.full_label, verdict=b.verdict.name.lower(), ratio=f"{b.ratio.value:.3f}×"),))
    return out


# ---- sections and blocks ----------------------------------------------------------------------------


def _sections(rows: list[CaseRow], df: pd.DataFrame, units: Mapping[str, pd.DataFrame], sides: Mapping[str, Archive],
              spec: ComparisonSpec, cache: dict[Any, Any]) -> tuple[Section, ...]:
    out: list[Section] = []
    numerics = _numerics(sides, spec, cache)
    first = _first_rows(df)  # for every block
    stacks = _stack_names(sides)
    for key, families in SECTIONS:
        number = 2 + len(out)
        if key == "numerics":
            if numerics:
                out.append(Section(key, number, numerics=tuple(numerics)))
            continue
        sub = [r for r in rows if r.family in families]
        if not sub:
            continue
        order = {f: i for i, f in enumerate(families)}
        workloads = sorted({r.workload for r in sub}, key=lambda w: (order[next(r.family for r in sub if r.workload == w)], w))
        blocks = tuple(_block(w, [r for r in sub if r.workload == w], df, units, sides, cache, first, stacks)
                       for w in workloads)
        main = [r for r in sub if r.main]
        chart = _ratio_chart(key, main) if len(main) >= 2 else None
        out.append(Section(key, number, blocks=blocks, chart=chart))
    return tuple(out)


def _block(workload: str, rows: list[CaseRow], df: pd.DataFrame, units: Mapping[str, pd.DataFrame],
           sides: Mapping[str, Archive] | None = None, cache: dict[Any, Any] | None = None,
           first: Mapping[str, tuple[Any, Any]] | None = None, stacks: Mapping[str, str] | None = None) -> Block:
    params = distinct_params([params_of(p) for p in df.loc[df["workload"] == workload, "params"]])
    derived = tuple(d for d in _derived(workload, rows, df, units, sides, cache) if d.rows)
    return Block(
        workload=workload, title=Heading(workload, tuple(params_to_json(p) for p in params)), rows=tuple(rows),
        derived=derived,
        charts=tuple(c for c in (_scaling_chart(workload, rows, df, _stack_names(sides) if stacks is None else stacks,
                                                first),) if c is not None),
        has_latency=any(r.latency[0] or r.latency[1] for r in rows),
        has_peak=any(rate is not None and rate.peak_fraction is not None for r in rows if r.main for rate in r.rates),
    )


def _ratio_chart(key: str, rows: list[CaseRow]) -> ChartData:
    points = tuple({"case": r.full_label, "ratio": r.ratio.value, "ci_low": r.ratio.low, "ci_high": r.ratio.high,
                    "verdict": r.verdict.value} for r in rows)
    return ChartData("ratios", Message.of("chart.ratio_title", section=Message(f"section.{key}.title")), points,
                     x_title=Message("chart.ratio_axis"))


def _stack_names(sides: Mapping[str, Archive] | None) -> dict[str, str]:
    """The name each side's stack goes by in a chart legend: its label(s); when both sides
    are one label (an A/A pair), the label with the run it came from."""
    if not sides:
        return {}
    names = {role: " / ".join(distinct(a.runs["label"])) for role, a in sides.items()}
    if len(set(names.values())) < len(names):
        names = {role: f"{names[role]} @ {' / '.join(distinct(a.runs['run_id']))[:15]}" for role, a in sides.items()}
    return names


def _first_rows(df: pd.DataFrame) -> dict[str, tuple[Any, Any]]:
    """Each case's (params, items) from its first row of ``df``."""
    first = df.drop_duplicates("case_id")
    return {str(c): (p, i) for c, p, i in zip(first["case_id"], first["params"], first["items"])}


def _scaling_chart(workload: str, rows: list[CaseRow], df: pd.DataFrame,
                   stacks: Mapping[str, str] | None = None,
                   first: Mapping[str, tuple[Any, Any]] | None = None) -> ChartData | None:
    """Medians along the parameter that varies (size, GPUs, workers, batch): one line per side and variant.

    Along a parallelism axis the curve shows throughput (measured, or items per step over
    the step time); along a size axis, time. Its points are in no order: a series is named in
    the page's language, and the view sorts them by series and x.
    """
    primary = [r for r in rows if r.metric in RATE_METRICS]
    measured = not primary
    if measured:
        primary = [r for r in rows if r.metric == "throughput"]
    if len(primary) < 2:
        return None
    if first is None:
        first = _first_rows(df)
    params = {r.case_id: params_of(first[r.case_id][0]) for r in primary}
    axis = None
    for name in SCALE_PARAMS:
        values = {p.get(name) for p in params.values() if isinstance(p.get(name), (int, float)) and not isinstance(p.get(name), bool)}
        if len(values) >= (2 if name in PARALLEL_PARAMS else 3) and all(name in p for p in params.values()):
            axis = name
            break
    if axis is None:
        return None
    items = {r.case_id: first[r.case_id][1] for r in primary}
    items_unit = next((u for u in df.loc[df["workload"] == workload, "items_unit"] if isinstance(u, str) and u), "items")
    derived = not measured and axis in PARALLEL_PARAMS and all(_positive(items[r.case_id]) for r in primary)
    as_rate = measured or derived
    points = []
    for r in primary:
        p = params[r.case_id]
        variant = CaseName(workload, params_to_json({k: v for k, v in p.items() if k != axis}))
        for role, value in (("baseline", r.baseline), ("candidate", r.candidate)):
            med, lo, hi = value.value, value.low, value.high
            if derived:
                med, lo, hi = items[r.case_id] / med, items[r.case_id] / hi, items[r.case_id] / lo
            stack = (stacks or {}).get(role) or Message(f"side.{role}")
            points.append({"x": p[axis], "y": med, "y_low": lo, "y_high": hi, "stack": stack, "variant": variant})
    unit = primary[0].unit if measured else (PerSecond(items_unit) if derived else "s")
    axis_name = Message(f"axis.{axis}", otherwise=axis)
    y_title = Message.of("chart.throughput_axis", unit=unit) if as_rate else Message("chart.time_axis")
    title_key = "chart.scaling_items_title" if as_rate else "chart.scaling_time_title"
    name = Message(f"workload_name.{workload}", otherwise=workload)
    return ChartData("lines", Message.of(title_key, workload=name, axis=axis_name), tuple(points), x_title=axis_name,
                     y_title=y_title, log_x=axis not in PARALLEL_PARAMS, log_y=not as_rate, unit=unit,
                     stacks=tuple((stacks or {}).get(r) or Message(f"side.{r}") for r in ("baseline", "candidate")))


# ---- derived figures ------------------------------------------------------------------------------


def _unit_moments(a: Archive) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    """Per (case_id, metric) of one side: every worker process's median and the run it belongs to
    (of its positive samples; from the summaries cache's per-process medians where every sample of
    a process is positive, which is the same figure, in the same order: runs, then processes)."""
    from reporter.model.compare import _cached_units

    u = _cached_units(a)
    if u is not None:
        u = u[u["better"] != BETTER_NONE]
        positive = u["vmin"].to_numpy(np.float64) > 0
        if not (~positive & (u["vmax"].to_numpy(np.float64) > 0)).any():  # no process with some samples <= 0
            u = u[positive]
            out: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
            case, metric = u["case_id"].astype(str).to_numpy(), u["metric"].astype(str).to_numpy()
            med, run = u["median"].to_numpy(np.float64), u["run_id"].astype(str).to_numpy()
            key = pd.factorize(pd.Series(case) + "\x00" + pd.Series(metric))[0]
            order = np.argsort(key, kind="stable")
            starts = np.flatnonzero(np.r_[True, key[order][1:] != key[order][:-1]]) if len(order) else np.zeros(0, int)
            for at, end in zip(starts, np.r_[starts[1:], len(order)]):
                rows = order[at:end]
                out[(case[rows[0]], metric[rows[0]])] = (med[rows], run[rows])
            return out
    s = a.ok_samples()
    s = s[(s["better"] != BETTER_NONE) & (s["value"] > 0)]
    if s.empty:
        return {}
    med = s.groupby(["case_id", "metric", "run_id", "process"], observed=True)["value"].median().reset_index()
    out = {}
    for (case_id, metric), sub in med.groupby(["case_id", "metric"], observed=True):
        out[(str(case_id), str(metric))] = (sub["value"].to_numpy(np.float64), sub["run_id"].astype(str).to_numpy())
    return out


def _side_ratio(units: Mapping[tuple[str, str], tuple[np.ndarray, np.ndarray]], reference: str, other: str,
                metric: str, higher: bool) -> Interval | None:
    """How much better ``other`` is than ``reference`` on one side (> 1: better), with its 95% CI.

    The per-process medians of the two cases are the replicates, grouped by run
    (``reporter.model.stats.compute_comparison``: run, then process, as in every comparison).
    """
    a, b = units.get((reference, metric)), units.get((other, metric))
    if a is None or b is None:
        return None
    r = compute_comparison(a[0], b[0], "higher" if higher else "lower", baseline_runs=a[1], candidate_runs=b[1])
    return Interval(r.ratio, r.ci_low, r.ci_high) if math.isfinite(r.ratio) else None


def _pairs(df: pd.DataFrame, workload: str, key: str, reference: Any) -> list[tuple[dict[str, Any], str, str, Any]]:
    """(the other parameters, reference case, other case, other value) for cases differing only in ``key``."""
    cases = df[df["workload"] == workload].drop_duplicates("case_id")
    by_rest: dict[str, dict[Any, str]] = {}
    rest_params: dict[str, dict[str, Any]] = {}
    for case_id, params in zip(cases["case_id"], cases["params"]):
        p = params_of(params)
        if key not in p:
            continue
        rest = {k: v for k, v in p.items() if k != key}
        k = json.dumps(rest, sort_keys=True)
        by_rest.setdefault(k, {})[p[key]] = str(case_id)
        rest_params[k] = rest
    out = []
    for k, variants in by_rest.items():
        if reference not in variants:
            continue
        for value, case_id in variants.items():
            if value != reference:
                out.append((rest_params[k], variants[reference], case_id, value))
    return out


def _derived(workload: str, rows: list[CaseRow], df: pd.DataFrame, units: Mapping[str, pd.DataFrame],
             sides: Mapping[str, Archive] | None = None,
             cache: dict[Any, Any] | None = None) -> list[DerivedTable]:
    """The figures the source write-ups lead with, per side, where this workload's cases allow them."""

    def per_side(reference: str, other: str, metric: str, higher: bool = False,
                 scale: float = 1.0) -> tuple[Interval | None, Interval | None]:
        out = []
        for role in ("baseline", "candidate"):
            v = _side_ratio(units[role], reference, other, metric, higher)
            out.append(Interval(v.value * scale, v.low * scale, v.high * scale) if v else None)
        return out[0], out[1]

    def label(p: Mapping[str, Any]) -> Phrase:
        return CaseName(workload, params_to_json(p), otherwise=Message(f"workload_name.{workload}"))

    tables: list[DerivedTable] = []
    if workload == "compile":
        speed, ctime = [], []
        for rest, eager, compiled, _ in _pairs(df, workload, "mode", "eager"):
            b, c = per_side(eager, compiled, "time")
            if b or c:
                speed.append(DerivedRow(label(rest), b, c, "x"))
            tb, tc = _summary(rows, "compile_time").get(compiled, (None, None))
            if tb or tc:
                ctime.append(DerivedRow(label(rest), tb, tc, "s"))
        tables += [DerivedTable("compile_speedup", tuple(speed)), DerivedTable("compile_time", tuple(ctime))]
    elif workload == "amp":
        speed, saved = [], []
        for rest, fp32, amp, precision in _pairs(df, workload, "precision", "fp32"):
            what = Joined((label(rest), Message.of("label.amp", dtype=precision)))
            b, c = per_side(fp32, amp, "time")
            if b or c:
                speed.append(DerivedRow(what, b, c, "x"))
            mb, mc = per_side(fp32, amp, "peak_allocated")
            if mb or mc:
                saved.append(DerivedRow(what, _saved(mb), _saved(mc), "fraction"))
        tables += [DerivedTable("amp_speedup", tuple(speed)), DerivedTable("amp_memory_saved", tuple(saved))]
    elif workload == "dataloader":
        tables.append(_loader_table(rows, df))
    elif workload == "multigpu" and sides is not None:
        tables.append(_scaling_table(sides, cache))
    elif workload == "cpu_vs_gpu":
        speed = []
        for rest, cpu, gpu, _ in _pairs(df, workload, "on", "cpu"):
            b, c = per_side(cpu, gpu, "time")
            if b or c:
                speed.append(DerivedRow(label(rest), b, c, "x"))
        tables.append(DerivedTable("gpu_speedup", tuple(speed)))
    elif workload == "inference":
        tables.append(_throughput_table(rows, df, "inference_throughput"))
    return tables


def _scaling_table(sides: Mapping[str, Archive], cache: dict[Any, Any] | None = None) -> DerivedTable:
    """DDP/DataParallel scaling efficiency per (mode, model, nodes, devices) on each side (reporter.model.scaling);
    each side's efficiencies computed once in ``cache`` (shared by the articles of that side)."""
    cache = cache if cache is not None else {}
    points: dict[tuple[str, str, int, int], list[ScalingEfficiency | None]] = {}
    for i, role in enumerate(("baseline", "candidate")):
        a = sides[role]
        key = ("scaling", tuple(sorted(a.runs["run_id"].astype(str))))  # a side is its runs: shared by articles
        if key not in cache:
            cache[key] = (a, compute_scaling_table(a.cases, a.ok_samples()))
        for e in cache[key][1]:
            points.setdefault((e.mode, e.model, e.nodes, e.devices), [None, None])[i] = e
    out = []
    for (mode, model, nodes, devices), (b, c) in sorted(points.items()):
        params: dict[str, Any] = {"mode": mode, "model": model, "replicas": devices // max(nodes, 1)}
        what: Phrase = CaseName("multigpu", params_to_json({k: v for k, v in params.items() if v != ""}))
        if nodes > 1:
            what = Message.of("derived.on_nodes", label=what, nodes=nodes)
        within = tuple(Message(f"side.{role}") for role, e in (("baseline", b), ("candidate", c))
                       if e and e.basis == WITHIN_UNIT)
        out.append(DerivedRow(what, *(Interval(e.efficiency, e.ci_low, e.ci_high) if e else None for e in (b, c)),
                              "fraction", Message.of("derived.within_unit", sides=Joined(within, " & ")) if within else None))
    return DerivedTable("scaling_efficiency", tuple(out))


def _saved(ratio: Interval | None) -> Interval | None:
    """Memory saved (a fraction) from the ratio fp32 / AMP memory (> 1: AMP uses less)."""
    if ratio is None:
        return None
    return Interval(1 - 1 / ratio.value, 1 - 1 / ratio.low, 1 - 1 / ratio.high)


def _summary(rows: list[CaseRow], metric: str) -> dict[str, tuple[Interval | None, Interval | None]]:
    return {r.case_id: (r.baseline, r.candidate) for r in rows if r.metric == metric}


def _throughput_table(rows: list[CaseRow], df: pd.DataFrame, kind: str) -> DerivedTable:
    """Items per second per case and side, from the items per request over the median time (CI alike)."""
    out = []
    for r in rows:
        if r.metric not in RATE_METRICS:
            continue
        info = df[df["case_id"] == r.case_id].iloc[0]
        items = info.get("items")
        if not _positive(items):
            continue
        unit = PerSecond(info["items_unit"] if isinstance(info.get("items_unit"), str) and info["items_unit"] else "items")
        b, c = (Interval(items / v.value, items / v.high, items / v.low) if _positive(v.value) else None
                for v in (r.baseline, r.candidate))
        out.append(DerivedRow(r.label, b, c, unit))
    return DerivedTable(kind, tuple(out))


def _loader_table(rows: list[CaseRow], df: pd.DataFrame) -> DerivedTable:
    """Throughput per worker count, one curve per configuration, with the knee of each side's curve."""
    curves: dict[str, list[tuple[int, CaseRow]]] = {}
    rests: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r.metric != "throughput":
            continue
        p = params_of(df.loc[df["case_id"] == r.case_id, "params"].iloc[0])
        if "num_workers" not in p:
            continue
        rest = {k: v for k, v in p.items() if k != "num_workers"}
        key = json.dumps(rest, sort_keys=True)
        curves.setdefault(key, []).append((int(p["num_workers"]), r))
        rests[key] = rest
    out = []
    for key, points in curves.items():
        points.sort(key=lambda x: x[0])
        knees = []
        for role in (0, 1):
            values = [(n, (r.baseline, r.candidate)[role].value) for n, r in points]
            best = max(v for _, v in values)
            knees.append(next(n for n, v in values if v >= KNEE_SHARE * best) if best > 0 else None)
        for n, r in points:
            detail = None
            if n in knees:
                who = tuple(Message(f"side.{role}") for role, k in zip(("baseline", "candidate"), knees) if k == n)
                detail = Message.of("derived.knee_here", sides=Joined(who, " & "))
            out.append(DerivedRow(CaseName("dataloader", params_to_json({**rests[key], "num_workers": n})), r.baseline,
                                  r.candidate, r.unit, detail))
    return DerivedTable("loader_throughput", tuple(out))


# ---- the headline -------------------------------------------------------------------------------


def _headline(rows: list[CaseRow], geomeans: Mapping[str, Geomean], c: Comparison, cross_device: bool,
              confounded: bool, warnings: tuple[Note, ...] = (), *, timed_apart: bool = False) -> Headline:
    """Per family in article order: its largest significant changes (never averaged away), counts and MDE."""
    families = []
    for family in (*FAMILIES, OTHER_FAMILY):
        sub = [r for r in rows if r.family == family and r.main]
        if not sub:
            continue
        calls = sorted((r for r in sub if r.verdict.is_call), key=lambda r: -abs(math.log(r.ratio.value)))
        g = geomeans.get(family)
        mdes = [r.mde for r in sub if r.mde is not None]
        families.append(FamilyHeadline(
            family=family, changes=tuple(calls[:HEADLINE_CHANGES]), n_significant=len(calls),
            n_equivalent=sum(r.verdict is Verdict.EQUIVALENT for r in sub),
            n_inconclusive=sum(r.verdict in UNSETTLED for r in sub), n_total=len(sub),
            geomean=Interval(g.ratio, g.ci_low, g.ci_high) if g and math.isfinite(g.ratio) and g.n_cases >= 2 else None,
            mde=float(np.median(mdes)) if mdes else None,
        ))
    g = c.geomean
    counted = [r for r in rows if r.main]  # the rows the verdict box, the indexes and the CLI count
    counts = {v.value: sum(r.verdict is v for r in counted) for v in Verdict}
    return Headline(
        families=tuple(families),
        geomean=Interval(g.ratio, g.ci_low, g.ci_high) if g.n_cases >= 2 and math.isfinite(g.ratio) else None,
        n_geomean=g.n_cases, counts=counts, total=len(counted), cross_device=cross_device, confounded=confounded,
        warnings=warnings, timed_apart=timed_apart, equivalence=c.equivalence,
    )


def _verdict_box(spec: ComparisonSpec, own_titles: Mapping[str, str], rows: list[CaseRow], fps: Mapping[str, Mapping[tuple[str, str], list[str]]],
                 confounders: Sequence[Confounder], changes: Sequence[tuple[str, str | None, str | None]],
                 not_measured: Sequence[NotMeasured], runs: Sequence[RunRef], method: Method,
                 cross_device: bool) -> VerdictBox:
    """The answer (every call, what the rest could tell) and what it rests on (caveats, evidence).

    ``own_titles``: the publisher's title per language ("": in every language); a title naming what
    these runs did not compare is a caveat in its language."""
    main = [r for r in rows if r.main]
    by_size = lambda r: -abs(math.log(r.ratio.value))  # noqa: E731 - a sort key
    better = tuple(sorted((r for r in main if r.verdict is Verdict.BETTER), key=by_size))
    worse = tuple(sorted((r for r in main if r.verdict is Verdict.WORSE), key=by_size))
    same = sum(r.verdict in (Verdict.EQUIVALENT, Verdict.UNCHANGED) for r in main)
    unsettled = [r for r in main if r.verdict in UNSETTLED]
    mdes = [r.mde for r in unsettled if r.mde is not None and math.isfinite(r.mde)]
    caveats: list[Caveat] = []
    builds = {role: sorted({"+" + v.partition("+")[2] if "+" in v else v for v in fps[role].get(("torch", "version"), [])})
              for role in ("baseline", "candidate")}
    if builds["baseline"] and builds["candidate"] and builds["baseline"] != builds["candidate"]:
        caveats.append(Caveat("build", {"baseline": ", ".join(builds["baseline"]), "candidate": ", ".join(builds["candidate"])}))
    missing: dict[tuple[str, str], list[str]] = {}
    for n in not_measured:
        if n.reason == "missing_package" and n.side:
            missing.setdefault((n.side, n.detail or "?"), []).append(n.title)
    for (side, package), workloads in missing.items():
        caveats.append(Caveat("missing_package", {"side": side, "package": package, "workloads": tuple(workloads)}))
    settings = [key.removeprefix("settings.") for key, _, _ in changes if key.startswith("settings.")]
    if settings:
        caveats.append(Caveat("precision", {"settings": ", ".join(settings)}))
    disagree = [r.full_label for r in main if any(n.code is NoteCode.DISAGREES for n in r.notes)]
    if disagree:
        caveats.append(Caveat("disagree", {"cases": tuple(disagree)}))
    untitled = {lang: ", ".join(terms) for lang, title in own_titles.items() if (terms := _named_but_not_compared(title, rows))}
    if "" in untitled:
        caveats.append(Caveat("title", {"terms": untitled[""]}))
    elif untitled:  # in the languages whose title it is: said as nothing in the others, where it is dropped
        caveats.append(Caveat("title", {"terms": InLanguage(tuple(sorted(untitled.items())), "")}))
    if cross_device:
        caveats.append(Caveat("cross_device"))
    for x in confounders:
        caveats.append(Caveat("timed_apart" if x.what == TIMING_CONFOUNDER else "hardware",
                              {"what": x.what, "baseline": x.baseline, "candidate": x.candidate}))
    count = {role: len({r.run_id for r in runs if r.role == role}) for role in ("baseline", "candidate")}
    versions = {role: sorted({v.partition("+")[0] for v in fps[role].get(("torch", "version"), [])})
                for role in ("baseline", "candidate")}
    moved = (", ".join(versions["baseline"]), ", ".join(versions["candidate"]))
    releases = [_release(v) for v in moved]
    return VerdictBox(
        candidate=spec.candidate, better=better, worse=worse, same=same, unsettled=len(unsettled), total=len(main),
        mde=float(np.median(mdes)) if mdes else None, caveats=tuple(caveats),
        runs=(count["baseline"], count["candidate"]), processes=(method.baseline_units, method.candidate_units),
        versions=moved if all(moved) and moved[0] != moved[1] and not cross_device else None,
        upgrade=None not in releases and releases[1] > releases[0],
    )


def _release(version: str) -> Version | None:
    """A side's torch release (the first, where a side ran several), or None when it does not parse."""
    try:
        return Version(version.split(",")[0].strip())
    except InvalidVersion:
        return None


# What a title may name, and the workloads any one of which, compared, bears it out. A title
# is the publisher's words: one that promises what these runs did not compare is flagged.
TITLE_TERMS: tuple[tuple[tuple[str, ...], frozenset[str]], ...] = (
    (("matrix multipl", "matmul", "gemm", "矩阵乘法"), frozenset({"matmul", "cpu_vs_gpu"})),
    (("convolution", "conv2d", "卷积"), frozenset({"conv2d"})),
    (("memory-bound", "memory op", "bandwidth", "带宽", "访存"), frozenset({"memory"})),
    (("torch.compile", "compil", "编译"), frozenset({"compile"})),
    (("amp", "mixed precision", "mixed-precision", "autocast", "混合精度"), frozenset({"amp"})),
    (("dataloader", "data loading", "数据加载"), frozenset({"dataloader"})),
    (("ddp", "multi-gpu", "multiple gpus", "dataparallel", "多卡", "多 gpu", "多gpu"), frozenset({"multigpu"})),
    (("inference", "latency", "推理", "延迟"), frozenset({"inference", "concurrent_inference"})),
    (("bert",), frozenset({"bert_train", "amp", "compile"})),
    (("resnet",), frozenset({"resnet50_train", "inference", "concurrent_inference", "amp", "compile", "dataloader"})),
    (("training", "训练"), frozenset({"resnet50_train", "bert_train", "amp", "compile", "dataloader", "multigpu"})),
)


def _named_but_not_compared(title: str | None, rows: Sequence[CaseRow]) -> list[str]:
    """The terms of ``title`` (``TITLE_TERMS``) that no compared workload bears out."""
    if not title:
        return []
    text = title.casefold()
    compared = {r.workload for r in rows if r.main}
    found = []
    for terms, workloads in TITLE_TERMS:
        term = next((t for t in terms if re.search(rf"(?<![a-z]){re.escape(t)}", text)), None)
        if term and not compared & workloads:
            found.append(re.search(re.escape(term) + r"[A-Za-z-]*", title, re.I).group(0))
    return found


# The share of the timed cases that must move the geomean's way for it to be read as a shift they share.
SHARED_SHARE = 0.8
SHARED_MIN_CASES = 5


def _with_shared_shift(h: Headline, rows: list[CaseRow], c: Comparison, archive: Archive, device: str | None,
                       cache: dict[Any, Any]) -> Headline:
    """The headline with the device's A/A figures and, when the cases moved together, their shared shift."""
    from dataclasses import replace

    aa = None
    if device:
        key = ("aa", device)
        if key not in cache:  # one device's A/A pairs serve every article on it
            cache[key] = aa_figures(archive, {device}).get(device)
        aa = cache[key]
    g = c.geomean
    timed = [r for r in rows if (c.geomean_metric is None or r.metric == c.geomean_metric)
             and math.isfinite(r.p_adjusted) and _positive(r.ratio.value)]
    shared = share = None
    if (device and len(timed) >= SHARED_MIN_CASES and math.isfinite(g.ci_low) and math.isfinite(g.ci_high)
            and (g.ci_low > 1 or g.ci_high < 1)):
        # Shared: the cases' own intervals hold the common shift, not only lean its way.
        share = sum(bool(r.ratio.low <= g.ratio <= r.ratio.high) for r in timed) / len(timed)
        if share >= SHARED_SHARE:
            shared = Interval(g.ratio, g.ci_low, g.ci_high)
    return replace(h, shared_shift=shared, shared_share=share if shared else None, aa=aa)


# ---- numerics -------------------------------------------------------------------------------------


def _numerics(sides: Mapping[str, Archive], spec: ComparisonSpec, cache: dict[Any, Any]) -> list[NumericBlock]:
    """Informational metrics (better = none) both sides recorded: each side's median, identical or how far apart."""
    frames = {}
    for role, a in sides.items():
        key = ("informational", a.selector, spec.run_ids)
        if key not in cache:  # a label is on one side of several articles: summarise it once
            from dataclasses import replace

            if a.summaries is not None:  # the cached summaries of its labels hold every metric: no samples read
                cache[key] = compute_summaries(a)
            else:
                informational = replace(a, samples=a.samples[a.samples["better"] == BETTER_NONE].reset_index(drop=True))
                cache[key] = compute_summaries(informational)
        s = cache[key]
        frames[role] = s[s["better"] == BETTER_NONE][["case_id", "workload", "params", "metric", "median"]]
    merged = frames["baseline"].merge(frames["candidate"][["case_id", "metric", "median"]], on=["case_id", "metric"],
                                      suffixes=("_b", "_c"))
    blocks = []
    for workload, sub in merged.sort_values(["workload", "case_id", "metric"]).groupby("workload", sort=True):
        params = distinct_params([params_of(p) for p in sub["params"]])
        out = []
        for _, r in sub.iterrows():
            b, c = float(r["median_b"]), float(r["median_c"])
            rel = (c - b) / abs(b) if b != 0 and math.isfinite(b) and math.isfinite(c) else (0.0 if b == c else None)
            out.append(NumericRow(RowName(str(workload), _params_text(r["params"])), str(r["metric"]), b, c, rel))
        blocks.append(NumericBlock(str(workload), Heading(str(workload), tuple(params_to_json(p) for p in params)),
                                   tuple(out)))
    return blocks


# ---- environment, method, runs --------------------------------------------------------------------


def _fingerprint(a: Archive) -> dict[tuple[str, str], list[str]]:
    env = a.environment
    out: dict[tuple[str, str], list[str]] = {}
    for section, key, value in zip(env["section"].astype(str), env["key"].astype(str), env["value"].astype(str)):
        values = out.setdefault((section, key), [])
        if value not in values:
            values.append(value)
    return out


def _shown(values: Sequence[str], fmt: ValueFormat) -> str | None:
    values = [v for v in values if v]
    if fmt is ValueFormat.CUDNN_VERSION:
        values = [format_cudnn_version(v) for v in values]
    elif fmt is ValueFormat.BYTES:
        values = [f"{int(v) / 2**30:.1f} GiB" if v.isdigit() else v for v in values]
    return ", ".join(values) or None


def _stacks(sides: Mapping[str, Archive], fps: Mapping[str, Mapping[tuple[str, str], list[str]]]
            ) -> tuple[StackRow, ...]:
    rows = [StackRow("label", sides["baseline"].selector, sides["candidate"].selector),
            StackRow("runs", str(len(sides["baseline"].runs)), str(len(sides["candidate"].runs)))]
    for k in FINGERPRINT_KEYS:
        if k.name in ("cpu_cores", "memory"):
            continue  # part of the host's label
        if k.name == "host":
            b, c = _host(fps["baseline"]), _host(fps["candidate"])
        else:
            b = _shown(fps["baseline"].get((k.section, k.key), []), k.format)
            c = _shown(fps["candidate"].get((k.section, k.key), []), k.format)
        if b or c:
            rows.append(StackRow(k.name, b, c))
    return tuple(rows)


# The fingerprint entries a host is named by (reporter.present.labels.host_label).
HOST_ENTRIES = (("cpu", "model"), ("cpu", "logical_cores"), ("memory", "total_bytes"), ("host", "hostname"),
                ("container", "docker"))


def _host(fp: Mapping[tuple[str, str], list[str]]) -> HostName | None:
    entries = tuple((k, tuple(fp[k])) for k in HOST_ENTRIES if fp.get(k))
    return HostName(entries) if entries else None


def _changes(fp_b: Mapping[tuple[str, str], list[str]], fp_c: Mapping[tuple[str, str], list[str]]
             ) -> tuple[tuple[str, str | None, str | None], ...]:
    out = []
    for sk in sorted(set(fp_b) | set(fp_c)):
        if is_volatile(*sk):
            continue
        b, c = fp_b.get(sk, []), fp_c.get(sk, [])
        if b != c:
            out.append((f"{sk[0]}.{sk[1]}", _shorten(", ".join(b) or None), _shorten(", ".join(c) or None)))
    return tuple(out)


def _gpu_boards(fp_b: Mapping[tuple[str, str], list[str]], fp_c: Mapping[tuple[str, str], list[str]]
                ) -> Literal["same", "different", "mixed"] | None:
    """``same`` when both sides ran on the same GPUs (by the UUIDs their runs recorded),
    ``different`` when they have none in common, ``mixed`` otherwise; ``None`` where a side
    recorded none. UUIDs are volatile for the list of changes (a fleet's runs of one stack
    differ in them); this says whether a difference may be the machine's."""

    def uuids(fp: Mapping[tuple[str, str], list[str]]) -> set[str]:
        return {v for (section, key), values in fp.items() if section.startswith("gpu") and key == "uuid" for v in values if v}

    b, c = uuids(fp_b), uuids(fp_c)
    if not b or not c:
        return None
    if b == c:
        return "same"
    return "mixed" if b & c else "different"


def _confounders(fp_b: Mapping[tuple[str, str], list[str]], fp_c: Mapping[tuple[str, str], list[str]]) -> tuple[Confounder, ...]:
    out = []
    for k in FINGERPRINT_KEYS:
        if not k.confounder:
            continue
        b, c = fp_b.get((k.section, k.key), []), fp_c.get((k.section, k.key), [])
        if b != c:
            out.append(Confounder(k.name, ", ".join(b) or "—", ", ".join(c) or "—"))
    return tuple(out)


TIMING_CONFOUNDER = "timing_method"


def _timing_confounder(archive: Archive, sides: Mapping[str, Archive]) -> tuple[Confounder, ...]:
    """The collector's timing method of each side, when they differ: a newer collector that
    times GPU calls another way (a cold L2 cache before every call, say) moves short cases
    by itself, whatever the stacks do. ``legacy``: runs recorded before methods were numbered."""
    methods = timing_methods(archive)

    def of(side: Archive) -> list[str]:
        return sorted({methods.get(r, "") for r in side.runs["run_id"].astype(str)} - {""})

    b, c = of(sides["baseline"]), of(sides["candidate"])
    return (Confounder(TIMING_CONFOUNDER, ", ".join(b), ", ".join(c)),) if b and c and b != c else ()


def _method(sides: Mapping[str, Archive], fps: Mapping[str, Mapping[tuple[str, str], list[str]]], c: Comparison) -> Method:
    from runformat.policy import SUITE_POLICIES, TimingPolicy

    def units(a: Archive) -> int:
        ok = a.cases[a.cases["status"] == "ok"]
        return int(len(ok[["run_id", "process"]].astype(str).drop_duplicates()))

    cases = pd.concat([a.cases for a in sides.values()])
    timers: list[tuple[str, int]] = []
    if len(cases):
        ok = cases[cases["status"] == "ok"]
        per = ok.groupby(ok["timing"].astype(str))["case_id"].nunique()
        timers = [(str(m), int(n)) for m, n in per.items() if n]
    suites = distinct(fps["baseline"].get(("run", "suite"), []) + fps["candidate"].get(("run", "suite"), []))
    # The policy each run recorded (run.policy); older runs fall back to their suite's current one.
    policies = []
    for text in distinct(fps["baseline"].get(("run", "policy"), []) + fps["candidate"].get(("run", "policy"), [])):
        try:
            policies.append((", ".join(suites) or "?", TimingPolicy(**json.loads(text))))
        except (ValueError, TypeError):
            continue
    if not policies:
        policies = [(name, SUITE_POLICIES[name]) for name in suites if name in SUITE_POLICIES]
    return Method(
        baseline_units=units(sides["baseline"]), candidate_units=units(sides["candidate"]),
        suites=", ".join(suites) or "?", timers=tuple(timers),
        policy=tuple(PolicyRow(name, p.warmup_s, p.min_warmup, p.min_samples, p.max_samples, p.min_block_s,
                               p.target_rel_ci, p.budget_s) for name, p in policies),
        noise=c.noise, single_band=c.single_band, correction=c.correction,
    )


def _run_refs(sides: Mapping[str, Archive]) -> Iterable[RunRef]:
    for role, a in sides.items():
        counts = _run_status_counts(a.cases)
        for r in a.runs.itertuples():
            ok, failed, skipped = counts.get(str(r.run_id), (0, 0, 0))
            yield RunRef(role, str(r.label), str(r.run_id), run_page(str(r.label), str(r.run_id)), _date(r.started_at),
                         str(r.status) if r.status else None, r.hostname if isinstance(r.hostname, str) else None,
                         ok, failed, skipped)


def _run_status_counts(cases: pd.DataFrame) -> dict[str, tuple[int, int, int]]:
    """Per run: how many of its cases are ok (every worker process ok), skipped (every one skipped) and failed."""
    if cases.empty:
        return {}
    run, runs = pd.factorize(cases["run_id"].astype(str))
    case, _ = pd.factorize(cases["case_id"].astype(str))
    status = cases["status"].astype(str).to_numpy()
    group = np.unique(run.astype(np.int64) * (int(case.max()) + 1) + case, return_inverse=True)[1].ravel()
    n = np.bincount(group)
    ok = np.bincount(group, weights=status == "ok") == n
    skipped = ~ok & (np.bincount(group, weights=status == "skipped") == n)
    run_of = np.zeros(n.size, np.int64)
    run_of[group] = run
    n_cases, n_ok, n_skipped = (np.bincount(run_of, weights=w, minlength=len(runs)).astype(np.int64)
                                for w in (None, ok, skipped))
    return {str(name): (int(n_ok[i]), int(n_cases[i] - n_ok[i] - n_skipped[i]), int(n_skipped[i]))
            for i, name in enumerate(runs)}


# ---- what was not measured ------------------------------------------------------------------------

_NO_MODULE = re.compile(r"No module named '([^']+)'")


def _not_measured(sides: Mapping[str, Archive], compared: set[str], families: Mapping[str, str],
                  titles: Mapping[str, str], c: Comparison) -> tuple[NotMeasured, ...]:
    unmatched: dict[tuple[str, str], int] = {}
    for case_id, metric, side in c.unmatched:
        if metric not in HIDDEN_METRICS:
            key = (case_id.partition("[")[0], side)
            unmatched[key] = unmatched.get(key, 0) + 1
    attempts = {role: a.cases for role, a in sides.items()}
    workloads = sorted(set().union(*(set(c["workload"].astype(str)) for c in attempts.values())) - compared,
                       key=lambda w: (FAMILIES.index(families[w]) if families.get(w) in FAMILIES else len(FAMILIES), w))
    out = []
    for w in workloads:
        title = Message(f"workload_name.{w}", otherwise=titles.get(w, w))
        per_side = {role: c[c["workload"].astype(str) == w] for role, c in attempts.items()}
        ok = {role: bool((c["status"] == "ok").any()) for role, c in per_side.items()}
        if ok["baseline"] and ok["candidate"]:
            out.append(NotMeasured(w, title, "no_common_case"))  # both measured it, but not one case alike
            continue
        reasons = {role: _reason(c) for role, c in per_side.items() if not ok[role] and not c.empty}
        if len(reasons) == 2 and reasons["baseline"] == reasons["candidate"]:
            reason, detail = reasons["baseline"]
            out.append(NotMeasured(w, title, reason, None, detail))
            continue
        for role, (reason, detail) in reasons.items():
            out.append(NotMeasured(w, title, reason, role, detail))
        for role in ("baseline", "candidate"):
            if per_side[role].empty:
                out.append(NotMeasured(w, title, "not_run", role))
    # Cases of compared workloads that only one side measured: counted per workload, never listed one by one.
    listed = {n.workload for n in out}
    for (w, side), n in sorted(unmatched.items()):
        if w not in listed:
            title = Message(f"workload_name.{w}", otherwise=titles.get(w, w))
            out.append(NotMeasured(w, title, "cases_one_side", side, str(n)))
    return tuple(out)


def _other(role: str) -> str:
    return "candidate" if role == "baseline" else "baseline"


def _reason(cases: pd.DataFrame) -> tuple[str, str | None]:
    """Why a workload has no result on a side, from what its attempts recorded."""
    errors = [e for e in cases["error"].astype(object) if isinstance(e, str) and e]
    statuses = set(cases["status"].astype(str))
    text = errors[0] if errors else ""
    if "skipped" not in statuses:
        return "failed", None
    m = _NO_MODULE.search(text)
    if m:
        return "missing_package", m.group(1)
    if "--data-dir" in text:
        return "no_data_dir", None
    if "GPU" in text or "CUDA" in text or (cases["device"].astype(str) == "cpu").all() and "gpu" in text.lower():
        return "no_gpu", None
    return "skipped", _shorten(text)


def _unmatched(c: Comparison) -> Iterable[tuple[Phrase, str]]:
    for case_id, metric, side in c.unmatched:
        if metric in HIDDEN_METRICS:
            continue
        workload, _, rest = case_id.partition("[")
        params = dict(kv.split("=", 1) for kv in rest.rstrip("]").split(",") if "=" in kv)
        yield RowName(workload, params_to_json({k: _number(v) for k, v in params.items()}),
                      None if metric in ("time", "latency") else metric, full=True), side


def _number(v: str) -> Any:
    if v in ("true", "false"):
        return v == "true"
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v


# ---- advice ---------------------------------------------------------------------------------------


def _advice(c: Comparison, rows: list[CaseRow], confounders: Sequence[Confounder], cross_device: bool, method: Method,
            numerics: Sequence[NumericBlock]) -> tuple[Advice, ...]:
    better = sum(r.verdict is Verdict.BETTER for r in rows)
    worse = sum(r.verdict is Verdict.WORSE for r in rows)
    same = sum(r.verdict is Verdict.EQUIVALENT for r in rows)
    inconclusive = sum(r.verdict in UNSETTLED for r in rows)
    out: list[Advice] = []
    hardware = tuple(x.what for x in confounders if x.what != TIMING_CONFOUNDER)
    if hardware:
        out.append(Advice("confounded", {"what": hardware}))
    if len(hardware) < len(confounders):
        out.append(Advice("timed_apart", {}))
    if worse:
        out.append(Advice("regressions", {"n": worse}))
    if better and not worse and not confounders:
        out.append(Advice("faster", {"n": better}))
    if not better and not worse and same and not inconclusive:
        out.append(Advice("no_difference"))
    if not better and not worse and inconclusive:
        out.append(Advice("nothing_settled", {"n": inconclusive, "total": same + inconclusive}))
    if better and worse:
        out.append(Advice("mixed"))
    if inconclusive:
        out.append(Advice("inconclusive", {"n": inconclusive}))
    plan = c.advice
    if plan is not None and plan.mde > plan.target:
        if plan.resolvable:
            out.append(Advice("resolve", {"family": plan.family, "target": plan.target, "mde": plan.mde,
                                          "processes": plan.processes or "—", "runs": plan.runs or "—"}))
        else:
            out.append(Advice("unresolvable_paired" if plan.paired else "unresolvable",
                              {"family": plan.family, "target": plan.target, "mde": plan.mde,
                               "processes": MAX_PROCESSES, "runs": MAX_RUNS}))
    units = min([min(r.n_units) for r in rows] or [0])
    if units < 3:
        out.append(Advice("few_processes", {"n": units}))
    if any(not row.identical for block in numerics for row in block.rows):
        out.append(Advice("drift"))
    return tuple(out)


# ---- reproduce ------------------------------------------------------------------------------------

# Options of `collector run` a run records in its fingerprint ("run" section) and a reproduction repeats.
_RECORDED_OPTIONS = (("suite", "--suite"), ("processes", "--processes"), ("time_budget", "--time-budget"),
                     ("case_timeout", "--case-timeout"))


def _stack_argument(role: str, fp: Mapping[tuple[str, str], list[str]]) -> tuple[str, str | None]:
    """The ``--stack`` value that measures this side again, and the variable a reader sets first (or None).

    An image the run was recorded in is run as one (``docker:IMAGE``); a Python interpreter inside
    the checkout is named as recorded; one elsewhere (a path of the recording machine) becomes a
    variable the reader points at their own copy of that stack."""
    image = _first(fp, "container", "image")
    stack = _first(fp, "run", "stack") or ""
    kind, _, target = stack.partition(":")
    if kind in ("docker", "podman", "apptainer") and target:
        return shlex.quote(f"{kind}:{target}"), None
    if image:
        return shlex.quote(f"docker:{image}"), None
    python = target if kind == "python" else _first(fp, "run", "python")
    if python and _inside_checkout(python):
        return shlex.quote(f"python:{python}"), None
    variable = f"{role.upper()}_PYTHON"
    return f'python:"${variable}"', variable


def _stack_flags(role: str, label: str, fp: Mapping[tuple[str, str], list[str]]) -> str:
    """The flags of one stack: ``--stack``, its ``--label`` and the variables it was given (``--env``)."""
    stack, _ = _stack_argument(role, fp)
    flags = f"--stack {stack} --label {shlex.quote(label)}"
    try:
        env = json.loads(_first(fp, "run", "stack_env") or "{}")
    except ValueError:
        env = {}
    for name, value in sorted(env.items()) if isinstance(env, dict) else ():
        flags += " --env " + shlex.quote(f"{name}={value}")
    return flags


def _inside_checkout(path: str) -> bool:
    p = PurePosixPath(path)
    return not p.is_absolute() and not path.startswith("~") and ".." not in p.parts


def _recorded_options(fp: Mapping[tuple[str, str], list[str]]) -> list[str]:
    args: list[str] = []
    for key, flag in _RECORDED_OPTIONS:
        value = _first(fp, "run", key)
        if value:
            args += [flag, value]
    device = _first(fp, "run", "device")
    if device and device != "auto":
        args += ["--device", device]
    try:
        only = json.loads(_first(fp, "run", "only") or "[]")
    except ValueError:
        only = []
    for pattern in only:
        args += ["--only", str(pattern)]
    return args


def _reproduce(spec: ComparisonSpec, fps: Mapping[str, Mapping[tuple[str, str], list[str]]]) -> Reproduce:
    """Commands that record both sides again on one host and rebuild this article: runnable from a
    checkout, with no path of the recording machine and nothing redacted in them."""
    labels = {"baseline": spec.baseline.partition("@")[0], "candidate": spec.candidate.partition("@")[0]}
    stacks = {role: _stack_argument(role, fps[role]) for role in ("baseline", "candidate")}
    options = {role: _recorded_options(fps[role]) for role in ("baseline", "candidate")}
    head = ["python", "-m", "collector", "run", "--out", "runs"]
    if options["baseline"] == options["candidate"] and labels["baseline"] != labels["candidate"]:
        # One invocation, the sides' cases alternating (A B, then B A), as DESIGN's head-to-head asks.
        lines = [" ".join(shlex.quote(a) for a in head + options["baseline"] + ["--interleave"])]
        lines += [_stack_flags(r, labels[r], fps[r]) for r in ("baseline", "candidate")]
        record = (" \\\n  ".join(lines),)
    else:  # different selections (or one label twice): one invocation a side
        record = tuple(" ".join(shlex.quote(a) for a in head + options[r]) + " \\\n  " + _stack_flags(r, labels[r], fps[r])
                       for r in ("baseline", "candidate"))
    variables = tuple((v, labels[r]) for r, (_, v) in stacks.items() if v)
    compare = " ".join(shlex.quote(a) for a in ["reporter", "compare", spec.baseline, spec.candidate])
    return Reproduce(record=record, variables=variables, compare=compare)


def _first(fp: Mapping[tuple[str, str], list[str]], section: str, key: str) -> str | None:
    """The first run's value of a fingerprint entry, or None."""
    values = fp.get((section, key)) or [None]
    return values[0]


# ---- small helpers --------------------------------------------------------------------------------


def recorded_families(a: Archive) -> dict[str, str]:
    """The family each workload's cases recorded (schema 2), so old runs are read by what they recorded."""
    if "family" not in a.cases:
        return {}
    c = a.cases[a.cases["family"].notna()]
    return {str(w): str(f) for w, f in zip(c["workload"], c["family"])}


def _unit(unit: str) -> Phrase:
    """A recorded unit as the page says it: the schema units (s, bytes, ...) as they are, items/s in words."""
    return PerSecond(unit[:-2]) if unit.endswith("/s") else unit


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float, np.floating)) and math.isfinite(value) and value > 0


def _finite_or_none(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _setting(value: Any) -> str | None:
    """A recorded precision setting as the what-changed table shows it (``None``: not set)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _shorten(value: str | None) -> str | None:
    if value is None or len(value) <= MAX_VALUE_CHARS:
        return value
    return value[:MAX_VALUE_CHARS] + " …"


def _date(value: Any) -> str | None:
    if value is None or pd.isna(value):
        return None
    return pd.Timestamp(value).strftime("%Y-%m-%d %H:%M UTC")
