"""Release series of a device class: which labels form one, and their order by recorded torch version.

A series is the labels of one device class whose names differ only in their versions
(``torch-2.10.0`` ... ``torch-2.14.1``; ``torch-2.13.0-cpu`` and ``torch-2.14.1-cpu`` form
another), since such labels were recorded the same way. Labels whose names match no
other's form one series of the rest. Within a series the labels are ordered by the torch
version their runs recorded (``collect_env torch_version``, e.g. ``2.13.0+cu130``, read
with ``packaging.version``), then by the versions in their names, not by date; when
some label recorded none that parses, the series falls back to the date of each label's
first run, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import pandas as pd
from packaging.version import InvalidVersion, Version

from reporter.data.load import Archive
from reporter.article.config import _CUDA_TOKEN, _VERSION_TOKEN, DeviceClass, name_versions


@dataclass(frozen=True)
class LabelInfo:
    """What orders a label in its series: its recorded torch version and its runs' dates."""

    version: str | None  # as recorded by the label's latest run; None when none was
    first: pd.Timestamp | None
    last: pd.Timestamp | None


@dataclass(frozen=True)
class Series:
    """The labels of one series in release order, and the labels that are its points.

    ``points``: the labels change points and neighbouring comparisons are computed over,
    in order; every label is one, so labels that recorded the same torch version (an image
    rebuilt with other packages around it) are each compared with their neighbour. ``by_version``: ordered by recorded version (else by
    date of first run).
    """

    name: str
    labels: tuple[str, ...]
    points: tuple[str, ...]
    versions: Mapping[str, str | None]
    by_version: bool

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """Neighbouring points: (previous version's label, label)."""
        return list(zip(self.points, self.points[1:]))


def series_stem(label: str) -> str:
    """A label with its versions and CUDA suffix replaced by ``*``: ``torch-2.13.0-cpu`` -> ``torch-*-cpu``."""
    return _CUDA_TOKEN.sub("cu*", _VERSION_TOKEN.sub("*", label))


def compute_label_info(archive: Archive, run_ids: frozenset[str] | None = None) -> dict[str, LabelInfo]:
    """Per label (of ``run_ids``, or every run): its latest run's recorded torch version, first and last run."""
    runs = archive.runs
    if run_ids is not None:
        runs = runs[runs["run_id"].astype(str).isin(list(run_ids))]
    out = {}
    for label, r in runs.sort_values("started_at", kind="stable").groupby(runs["label"].astype(str), sort=True):
        versions = [str(v) for v in r["torch"] if v is not None and v == v and str(v)]
        out[str(label)] = LabelInfo(versions[-1] if versions else None,
                                    r["started_at"].min() if r["started_at"].notna().any() else None,
                                    r["started_at"].max() if r["started_at"].notna().any() else None)
    return out


def _parsed(version: str | None) -> Version | None:
    try:
        return Version(version) if version else None
    except InvalidVersion:
        return None


def compute_series(cls: DeviceClass, info: Mapping[str, LabelInfo]) -> list[Series]:
    """The series of a device class, each in release order; the series of the rest last."""
    stems: dict[str, list[str]] = {}
    for label in cls.labels:
        stems.setdefault(series_stem(label), []).append(label)
    groups = [(stem, labels) for stem, labels in sorted(stems.items()) if len(labels) >= 2]
    rest = [label for labels in stems.values() if len(labels) < 2 for label in labels]
    if rest:
        groups.append(("", rest))
    never = pd.Timestamp.max.tz_localize("UTC")
    out = []
    for stem, labels in groups:
        parsed = {lab: _parsed(info[lab].version if lab in info else None) for lab in labels}
        first = {lab: (info[lab].first if lab in info and info[lab].first is not None else never) for lab in labels}
        last = {lab: (info[lab].last if lab in info and info[lab].last is not None else never) for lab in labels}
        by_version = all(v is not None for v in parsed.values())
        if by_version:
            # Labels that recorded one torch version (images rebuilt around the same torch) keep
            # their own points, in the order of the versions in their names.
            ordered = sorted(labels, key=lambda lab: (parsed[lab], name_versions(lab), first[lab], lab))
        else:
            ordered = sorted(labels, key=lambda lab: (first[lab], lab))
        points = tuple(ordered)
        out.append(Series(stem, tuple(ordered), points,
                          {lab: info[lab].version if lab in info else None for lab in labels}, by_version))
    return out
