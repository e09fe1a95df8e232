"""Which comparisons the site publishes: the config file, or the default chain of versions.

The config file (``imagebench.toml`` at the repository root by default, or
``reporter build --config FILE``) is TOML::

    [site]
    lang = "en"                 # language of the pages (en or zh); --lang overrides it

    [[comparison]]
    baseline = "torch-2.8.0-cu128"            # a label, or LABEL@RUN_ID for one run
    candidate = "torch-2.9.0-cu128"
    title = "PyTorch 2.9 against 2.8 on H200"  # optional
    lang = "zh"                                # optional: this article's language
    noise = 0.01                               # optional: the noise band (±1%)
    single_band = 0.10                         # optional: CIs beyond it are noted as too noisy
    correction = "bh"                          # optional: bh or holm
    section = "validation"                     # optional: a check of imagebench itself, not an
                                               # upgrade answer (default: validation when both
                                               # sides are one label, an A/A pair)

    [[set_aside]]                 # runs no page compares, summarises or borrows from
    runs = ["torch-2.10.0@20261206T161641Z-0c23be-5bce98"]   # LABEL@RUN_ID (full run ids)
    reason = "recorded while other work loaded the host"   # required: the runs index says it

With no ``[[comparison]]``, every label is compared with the previous version of the
same device class: labels are grouped by the device their runs were recorded on, and
ordered by the versions they carry (``packaging.version``: 2.10 after 2.9), or by the
date of their first run when some label carries none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd
from packaging.version import InvalidVersion, Version

from reporter.errors import ReporterError
from reporter.data.load import Archive, _rows_of
from reporter.options import LANGUAGES
from reporter.article.paths import slug

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

DEFAULT_CONFIG = "imagebench.toml"
_COMPARISON_KEYS = {"baseline", "candidate", "title", "lang", "noise", "single_band", "correction", "section"}
# Where the site lists an article: with the answers a reader acts on, or with the checks of the tool.
SECTIONS = ("comparisons", "validation")
_SITE_KEYS = {"lang"}
# A version is dotted (2.9, 2.10.0rc1): "h200" or "a100" in a label is hardware, not a version.
_VERSION_TOKEN = re.compile(r"(?<![\d.])\d+(?:\.\d+)+(?:(?:a|b|rc|\.dev|\.post)\d+)*")
_CUDA_TOKEN = re.compile(r"cu(\d{2,3})(?!\d)")


@dataclass(frozen=True)
class ComparisonSpec:
    """One article: a candidate selection against a baseline selection.

    ``run_ids``, when set, restricts both sides to those runs (the runs of one device
    class, for labels recorded on several machines); ``device`` names that class.
    ``section`` is where the site lists it (``SECTIONS``; None: ``validation`` for two runs of
    one label, else ``comparisons``).
    """

    baseline: str
    candidate: str
    title: str | None = None
    lang: str | None = None
    noise: float = 0.01
    single_band: float = 0.10
    correction: str = "bh"
    device: str | None = None
    run_ids: frozenset[str] | None = None
    section: str | None = None

    @property
    def validates(self) -> bool:
        """Whether the article checks imagebench itself (A/A pairs, collectors, hosts, stop rules)."""
        if self.section is not None:
            return self.section == "validation"
        return self.baseline.partition("@")[0] == self.candidate.partition("@")[0]

    @property
    def slug(self) -> str:
        base = f"{slug(self.baseline.replace('@', '-at-'))}--vs--{slug(self.candidate.replace('@', '-at-'))}"
        if self.device and self.run_ids is not None:
            base = f"{base}--{slug(self.device)}"
        # The same comparison may be published in several languages: one page each.
        return f"{base}--{self.lang}" if self.lang and self.lang != "en" else base


@dataclass
class SiteConfig:
    """The parsed config file (or the defaults when there is none)."""

    lang: str | None = None
    comparisons: list[ComparisonSpec] = field(default_factory=list)
    source: Path | None = None
    set_aside: dict[str, str] = field(default_factory=dict)  # LABEL@RUN_ID -> why it is set aside


def load_config(path: Path | None, *, explicit: bool) -> SiteConfig:
    """Read the config file; a missing default file means no config, a missing ``--config`` is an error."""
    if path is None:
        return SiteConfig()
    path = Path(path)
    if not path.exists():
        if explicit:
            raise ReporterError(f"--config {str(path)!r}: file not found")
        return SiteConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ReporterError(f"{path}: cannot read ({e})") from None
    except tomllib.TOMLDecodeError as e:
        raise ReporterError(f"{path}: not valid TOML ({e})") from None
    unknown = set(data) - {"site", "comparison", "set_aside"}
    if unknown:
        raise ReporterError(f"{path}: unknown table(s) {', '.join(sorted(unknown))}; "
                            "expected [site], [[comparison]] and [[set_aside]]")
    site = data.get("site", {})
    if not isinstance(site, dict):
        raise ReporterError(f"{path}: [site] must be a table")
    _check_keys(path, "[site]", site, _SITE_KEYS)
    lang = site.get("lang")
    if lang is not None and lang not in LANGUAGES:
        raise ReporterError(f"{path}: [site] lang = {lang!r}; choose one of: {', '.join(LANGUAGES)}")
    entries = data.get("comparison", [])
    if not isinstance(entries, list):
        raise ReporterError(f"{path}: comparisons are declared as [[comparison]] tables")
    specs = [_parse_comparison(path, i, entry) for i, entry in enumerate(entries, 1)]
    slugs = [s.slug for s in specs]
    dup = sorted({s for s in slugs if slugs.count(s) > 1})
    if dup:
        raise ReporterError(f"{path}: the same comparison is declared twice ({', '.join(dup)})")
    return SiteConfig(lang=lang, comparisons=specs, source=path, set_aside=_parse_set_aside(path, data.get("set_aside", [])))


def _parse_set_aside(path: Path, entries: Any) -> dict[str, str]:
    """``[[set_aside]]`` tables: ``LABEL@RUN_ID`` -> reason."""
    if not isinstance(entries, list):
        raise ReporterError(f"{path}: runs set aside are declared as [[set_aside]] tables")
    out: dict[str, str] = {}
    for i, entry in enumerate(entries, 1):
        where = f"set_aside #{i}"
        if not isinstance(entry, dict):
            raise ReporterError(f"{path}: {where} must be a table")
        _check_keys(path, where, entry, {"runs", "reason"})
        runs, reason = entry.get("runs"), entry.get("reason")
        if not isinstance(runs, list) or not runs or not all(isinstance(r, str) and "@" in r[1:-1] for r in runs):
            raise ReporterError(f"{path}: {where} needs runs = [\"LABEL@RUN_ID\", ...]")
        if not isinstance(reason, str) or not reason.strip():
            raise ReporterError(f"{path}: {where} needs reason = \"...\": the runs index says why the runs are set aside")
        for r in runs:
            if r.strip() in out:
                raise ReporterError(f"{path}: {where} sets aside run {r.strip()} a second time")
            out[r.strip()] = reason.strip()
    return out


def apply_set_aside(archive: Archive, config: SiteConfig) -> tuple[Archive, list[tuple[str, str, str]], list[str]]:
    """The archive without the runs ``config`` sets aside; those runs as (label, run id, reason); and the
    entries that name a label the archive holds but a run it does not (a typo, to warn of).

    An entry whose label the archive does not hold is for another archive: ignored.
    """
    if not config.set_aside:
        return archive, [], []
    held = set(zip(archive.runs["label"].astype(str), archive.runs["run_id"].astype(str)))
    labels = {label for label, _ in held}
    aside, unknown = [], []
    for selector, why in sorted(config.set_aside.items()):
        label, _, run_id = selector.partition("@")
        if (label, run_id) in held:
            aside.append((label, run_id, why))
        elif label in labels:
            unknown.append(selector)
    if not aside:
        return archive, [], unknown
    drop = {r for _, r, _ in aside}
    return restrict(archive, frozenset(r for _, r in held if r not in drop)), aside, unknown


def _check_keys(path: Path, where: str, table: dict[str, Any], allowed: set[str]) -> None:
    unknown = set(table) - allowed
    if unknown:
        raise ReporterError(f"{path}: {where} has unknown key(s) {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(allowed))}")


def _parse_comparison(path: Path, i: int, entry: Any) -> ComparisonSpec:
    where = f"comparison #{i}"
    if not isinstance(entry, dict):
        raise ReporterError(f"{path}: {where} must be a table")
    _check_keys(path, where, entry, _COMPARISON_KEYS)
    for key in ("baseline", "candidate"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            raise ReporterError(f"{path}: {where} needs {key} = \"LABEL\" or \"LABEL@RUN_ID\"")
    for key in ("title", "lang", "correction", "section"):
        if key in entry and not isinstance(entry[key], str):
            raise ReporterError(f"{path}: {where} {key} must be a string")
    if entry.get("lang") is not None and entry["lang"] not in LANGUAGES:
        raise ReporterError(f"{path}: {where} lang = {entry['lang']!r}; choose one of: {', '.join(LANGUAGES)}")
    if entry.get("section") is not None and entry["section"] not in SECTIONS:
        raise ReporterError(f"{path}: {where} section = {entry['section']!r}; choose one of: {', '.join(SECTIONS)}")
    if entry.get("correction", "bh") not in ("holm", "bh"):
        raise ReporterError(f"{path}: {where} correction = {entry['correction']!r}; choose holm or bh")
    for key in ("noise", "single_band"):
        if key in entry and not (isinstance(entry[key], (int, float)) and 0 <= entry[key] < 1):
            raise ReporterError(f"{path}: {where} {key} = {entry[key]!r} must be a fraction in [0, 1)")
    return ComparisonSpec(
        baseline=entry["baseline"].strip(),
        candidate=entry["candidate"].strip(),
        title=entry.get("title"),
        lang=entry.get("lang"),
        noise=float(entry.get("noise", 0.01)),
        single_band=float(entry.get("single_band", 0.10)),
        correction=entry.get("correction", "bh"),
        section=entry.get("section"),
    )


# ------------------------------------------------------------------------- device classes


@dataclass(frozen=True)
class DeviceClass:
    """The labels recorded on one kind of device, in version (or date) order, and their runs."""

    name: str
    labels: tuple[str, ...]
    run_ids: frozenset[str]
    by_version: bool
    # Runs of a label recorded with an older timing method than its latest run: left out of
    # ``run_ids`` (a label's figures pool one way of measuring), by label.
    set_aside: tuple[tuple[str, int], ...] = ()

    @property
    def words(self) -> str | None:
        """The device's own words (``cpu``: processes, not GPUs), as an article of its runs speaks."""
        return "cpu" if self.name.endswith("(cpu)") else None


def device_class_of(device_type: Any, device_name: Any) -> str:
    """The class a run belongs to: the device's name, with its type (``cuda``, ``cpu``)."""
    name = str(device_name) if device_name is not None and device_name == device_name else "unknown device"
    kind = str(device_type) if device_type is not None and device_type == device_type else "?"
    return f"{name} ({kind})"


def name_versions(label: str) -> tuple[Version, ...]:
    """The dotted versions written in a label's name, in order: ``img-1.10-torch-2.9`` -> (1.10, 2.9)."""
    out = []
    for token in _VERSION_TOKEN.findall(label):
        try:
            out.append(Version(token))
        except InvalidVersion:
            continue
    return tuple(out)


def label_version(label: str) -> tuple[Version, ...] | None:
    """The versions a label carries: its dotted versions in order, then a ``cuNNN`` suffix.

    ``torch-2.9.0-cu128`` -> (2.9.0, 128); ``h200-check`` -> None (no dotted version).
    """
    out = list(name_versions(label))
    if not out:
        return None
    out += [Version(m) for m in _CUDA_TOKEN.findall(label)]
    return tuple(out)


def compute_device_classes(archive: Archive) -> list[DeviceClass]:
    """Group the archive's runs by device class and order each class's labels."""
    runs = archive.runs
    if runs.empty:
        return []
    frame = pd.DataFrame(
        {
            "label": runs["label"].astype(str),
            "run_id": runs["run_id"].astype(str),
            "started_at": runs["started_at"],
            "cls": [device_class_of(t, n) for t, n in zip(runs["device_type"], runs["device_name"])],
        }
    )
    from reporter.model.compare import run_methods

    # A label whose runs were timed in more than one way (a collector upgrade changed how a
    # GPU call is timed, say) is summarised from the runs of its latest run's method only:
    # pooled, the older runs would mix two measurements of one case. The timing method
    # alone, not the suite's policy: a label's full and standard runs time the same way,
    # and each holds cases the other lacks.
    methods = frame["run_id"].map(run_methods(archive, policy=False)).fillna("")
    latest = frame.assign(method=methods).sort_values("started_at", kind="stable").groupby("label")["method"].last()
    newest = methods.to_numpy() == frame["label"].map(latest).to_numpy()
    classes = []
    for name, group in frame.groupby("cls", sort=True):
        kept = group[newest[group.index]]
        aside = group[~newest[group.index]].groupby("label").size()
        first = group.groupby("label")["started_at"].min()
        labels = list(first.index)
        versions = {lab: label_version(lab) for lab in labels}
        by_version = all(v is not None for v in versions.values())
        if by_version:
            labels.sort(key=lambda lab: (versions[lab], first[lab], lab))
        else:
            labels.sort(key=lambda lab: (first[lab], lab))
        classes.append(DeviceClass(str(name), tuple(labels), frozenset(kept["run_id"]), by_version,
                                   tuple((str(k), int(v)) for k, v in aside.items())))
    return classes


def default_comparisons(classes: list[DeviceClass], archive: Archive) -> list[ComparisonSpec]:
    """Each label against the previous one of its device class."""
    labels_in = pd.Series([c.name for c in classes for _ in c.labels], index=[lab for c in classes for lab in c.labels])
    shared = set(labels_in.index[labels_in.index.duplicated()])
    specs = []
    for cls in classes:
        for before, after in zip(cls.labels, cls.labels[1:]):
            restrict = before in shared or after in shared or bool(cls.set_aside)
            specs.append(
                ComparisonSpec(
                    baseline=before,
                    candidate=after,
                    device=cls.name,
                    run_ids=cls.run_ids if restrict else None,
                )
            )
    return specs


def restrict(archive: Archive, run_ids: frozenset[str] | None) -> Archive:
    """The archive with only ``run_ids`` (all of it for ``None``)."""
    if run_ids is None:
        return archive
    keep = set(run_ids)

    def rows(df: pd.DataFrame) -> pd.DataFrame:
        if isinstance(df["run_id"].dtype, pd.CategoricalDtype):  # by the codes: no string per sample
            return _rows_of(df, keep)
        return df[df["run_id"].astype(str).isin(list(keep))].reset_index(drop=True)

    return replace(
        archive,
        runs=rows(archive.runs),
        environment=rows(archive.environment),
        cases=rows(archive.cases),
        samples=archive.lazy_rows(keep),
    )
