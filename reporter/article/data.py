"""The typed model of one comparison article: what ``compute_article`` returns and views format.

Frozen dataclasses only: every number in them was computed by reporter.model.compare or
reporter.model.stats (or derived from those by reporter.article.compute, with its CI), and
verdicts and notes are enums and codes. No field is in a language: what a page says in words
is a ``Phrase`` (a message key with its fields, a case's parameters, a unit), computed once
for every language; reporter.present.wording says an article's phrases in one language, and a
view never computes: it looks up words and formats numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from runformat.vocabulary import Note, Verdict
from reporter.model.aa import AAFigure


# ---- phrases: words said in the page's language (reporter.present.wording) ------------------------


@dataclass(frozen=True)
class Message:
    """The catalogues' message ``key``, its fields filled in (values or phrases); ``otherwise`` is
    said where the catalogue has no ``key`` (a workload's own title, say)."""

    key: str
    fields: tuple[tuple[str, Any], ...] = ()
    otherwise: "Phrase | None" = None

    @classmethod
    def of(cls, key: str, otherwise: "Phrase | None" = None, **fields: Any) -> "Message":
        return cls(key, tuple(fields.items()), otherwise)


@dataclass(frozen=True)
class CaseName:
    """A case named by its parameters (``params``: JSON text), as reporter.present.labels.case_label says it;
    ``otherwise`` is said where that is empty."""

    workload: str
    params: str
    with_workload: bool = False
    otherwise: "Phrase | None" = None


@dataclass(frozen=True)
class RowName:
    """A compared row's name: within its workload's block (the parameters its heading names left out,
    told apart from the block's other rows), or ``full``: with its workload, as the headline names it.
    ``metric`` is added after the case where the row is not a time ("compiled_step": the compiled step)."""

    workload: str
    params: str
    metric: str | None = None
    full: bool = False


@dataclass(frozen=True)
class Heading:
    """A block's heading: the workload's name and what all its cases (``params``, JSON texts) share."""

    workload: str
    params: tuple[str, ...]


@dataclass(frozen=True)
class Joined:
    """Phrases joined by ``sep`` (a plain separator, or a phrase)."""

    parts: tuple["Phrase", ...]
    sep: "Phrase" = ", "


@dataclass(frozen=True)
class PerSecond:
    """A rate's unit: ``word`` per second (images/s, 图像/s)."""

    word: str


@dataclass(frozen=True)
class HostName:
    """A host as a reader knows it (reporter.present.labels.host_label): from its recorded fingerprint entries."""

    entries: tuple[tuple[tuple[str, str], tuple[str, ...]], ...]


@dataclass(frozen=True)
class InLanguage:
    """The publisher's own words in some languages (``texts``: language, text); ``otherwise`` in the rest."""

    texts: tuple[tuple[str, str], ...]
    otherwise: "Phrase"


Phrase = Union[str, Message, CaseName, RowName, Heading, Joined, PerSecond, HostName, InLanguage]



@dataclass(frozen=True)
class Interval:
    """An estimate with its 95% CI (NaN where there is none)."""

    value: float
    low: float = math.nan
    high: float = math.nan

    @property
    def finite(self) -> bool:
        return math.isfinite(self.value)

    @property
    def has_ci(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)


@dataclass(frozen=True)
class Rate:
    """A rate derived from the work per iteration (TFLOP/s, GB/s, items/s) and its share of the side's best."""

    value: float
    unit: Phrase
    peak_fraction: float | None = None


@dataclass(frozen=True)
class Percentiles:
    """p50/p95/p99 of every recorded request of a case on one side (seconds)."""

    p50: float
    p95: float
    p99: float
    n: int


@dataclass(frozen=True)
class CaseRow:
    """One compared (case, metric): both sides' medians, the ratio (> 1: candidate better), the verdict.

    ``label`` is the case's name within its block (the heading names what all cases
    share); ``full_label`` names the workload too, for the headline and the conclusion.
    ``main`` says whether the row is in the block's main table or only in its details.
    """

    case_id: str
    workload: str
    family: str
    label: Phrase
    full_label: Phrase
    metric: str
    unit: Phrase
    better: str
    baseline: Interval
    candidate: Interval
    ratio: Interval
    p_adjusted: float
    verdict: Verdict
    notes: tuple[Note, ...] = ()
    mde: float | None = None
    n_units: tuple[int, int] = (0, 0)
    n_samples: tuple[int, int] = (0, 0)
    rates: tuple[Rate | None, Rate | None] = (None, None)
    latency: tuple[Percentiles | None, Percentiles | None] = (None, None)
    main: bool = True


@dataclass(frozen=True)
class FamilyHeadline:
    """What the headline says about one family: its largest significant changes, counts, geomean, MDE."""

    family: str
    changes: tuple[CaseRow, ...]  # the largest significant changes, largest first
    n_significant: int
    n_equivalent: int  # equivalent: the CI inside the equivalence band
    n_inconclusive: int  # inconclusive, too few replicates or no ratio: these runs cannot tell
    n_total: int
    geomean: Interval | None
    mde: float | None  # the median minimum detectable effect of its rows (fraction)


@dataclass(frozen=True)
class Headline:
    """The "In short" paragraph: per family, then the overall geomean and counts."""

    families: tuple[FamilyHeadline, ...]
    geomean: Interval | None
    n_geomean: int
    counts: dict[str, int]
    total: int
    cross_device: bool  # sides on different devices: changes are read as speed-ups (N×)
    confounded: bool
    # Confounders touching many of the cases (reporter.article.confounders): code, cases, total, sides.
    warnings: tuple[Note, ...] = ()
    timed_apart: bool = False  # the sides' runs were timed by different collector methods
    equivalence: float = 0.02  # the equivalence band of the verdicts (fraction)
    # A shift shared by the cases: the time geomean, when its CI leaves 1 out and the CIs of
    # most timed cases (shared_share of them) hold it; None otherwise.
    shared_shift: Interval | None = None
    shared_share: float | None = None
    # The A/A pairs of the device (reporter.model.aa): how often its repeats call rows and shift.
    aa: AAFigure | None = None


@dataclass(frozen=True)
class DerivedRow:
    """A derived figure on each side (a speed-up, memory saved, a throughput), with its CI."""

    label: Phrase
    baseline: Interval | None
    candidate: Interval | None
    unit: Phrase  # "x" (a factor), "fraction", "s", or a rate unit such as "images/s"
    detail: Phrase | None = None  # e.g. the knee of a DataLoader curve


@dataclass(frozen=True)
class DerivedTable:
    """One kind of derived figure: ``kind`` names its title and lead in the catalogues."""

    kind: str
    rows: tuple[DerivedRow, ...]


@dataclass(frozen=True)
class ChartData:
    """A chart's data; the view turns it into a Vega-Lite specification (reporter.present.charts).

    A point of "lines" names its ``stack`` and ``variant`` (phrases); said in a language, it is named
    by its ``series`` too, and the points are in the order of their series and x."""

    kind: str  # "lines" or "ratios"
    title: Phrase
    points: tuple[dict[str, Any], ...]
    x_title: Phrase = ""
    y_title: Phrase = ""
    log_x: bool = False
    log_y: bool = False
    unit: Phrase = ""  # the unit of y for the chart's data table
    stacks: tuple[Phrase, ...] = ()  # the stacks the points name in ``stack``, baseline first (one colour each)


@dataclass(frozen=True)
class Block:
    """One workload's part of a section: its heading from what ran, main rows, details, figures."""

    workload: str
    title: Phrase
    rows: tuple[CaseRow, ...]  # every compared row (the details table)
    derived: tuple[DerivedTable, ...] = ()
    charts: tuple[ChartData, ...] = ()
    has_latency: bool = False
    has_peak: bool = False

    @property
    def main_rows(self) -> tuple[CaseRow, ...]:
        return tuple(r for r in self.rows if r.main)


@dataclass(frozen=True)
class NumericRow:
    """An informational value both sides recorded (loss, checksum): identical, or how far apart."""

    label: Phrase
    metric: str
    baseline: float
    candidate: float
    rel_diff: float | None  # (candidate - baseline) / |baseline|; None when undefined

    @property
    def identical(self) -> bool:
        return self.baseline == self.candidate


@dataclass(frozen=True)
class NumericBlock:
    workload: str
    title: Phrase
    rows: tuple[NumericRow, ...]


@dataclass(frozen=True)
class Section:
    key: str
    number: int
    blocks: tuple[Block, ...] = ()
    numerics: tuple[NumericBlock, ...] = ()
    chart: ChartData | None = None


@dataclass(frozen=True)
class NotMeasured:
    """A workload these runs did not compare, and why (``reason`` is a code of ``[not_measured]``)."""

    workload: str
    title: Phrase
    reason: str  # skipped, no_gpu, no_data_dir, missing_package, failed, one_side
    side: str | None = None  # baseline, candidate, or None for both
    detail: str | None = None  # the package name, or the recorded text for a plain skip


@dataclass(frozen=True)
class StackRow:
    name: str  # the key of its label ([stack] name)
    baseline: Phrase | None
    candidate: Phrase | None

    @property
    def changed(self) -> bool:
        return self.baseline != self.candidate


@dataclass(frozen=True)
class Confounder:
    what: str
    baseline: str
    candidate: str


@dataclass(frozen=True)
class RunRef:
    """A run of one side, as the article lists it (``page`` relative to the site root)."""

    role: str
    label: str
    run_id: str
    page: str
    started: str | None
    status: str | None
    host: str | None
    cases_ok: int
    cases_failed: int
    cases_skipped: int


@dataclass(frozen=True)
class PolicyRow:
    suite: str
    warmup_s: float
    min_warmup: int
    min_samples: int
    max_samples: int
    min_block_s: float
    target_rel_ci: float
    budget_s: float


@dataclass(frozen=True)
class Method:
    baseline_units: int
    candidate_units: int
    suites: str
    timers: tuple[tuple[str, int], ...]
    policy: tuple[PolicyRow, ...]
    noise: float
    single_band: float
    correction: str


@dataclass(frozen=True)
class Advice:
    key: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reproduce:
    """How to record both sides again and rebuild the article, runnable from a checkout.

    ``record``: the ``collector run`` invocations (one, interleaving the sides, when both record
    the same selection); ``variables``: (name, label) of the Python interpreters a reader points
    at their own copy of a stack, where the recorded path was the recording machine's;
    ``compare``: the ``reporter compare`` that prints this article's rows."""

    record: tuple[str, ...]
    variables: tuple[tuple[str, str], ...]
    compare: str


@dataclass(frozen=True)
class Side:
    role: str
    selector: str
    label: str
    device: str | None


@dataclass(frozen=True)
class Caveat:
    """Something other than the stacks' code that the answer depends on (``code`` names its
    sentence in ``[verdict_box.caveat]``): a torch build of another kind, a package missing on
    one side, precision settings that differ, other hardware, another timing method."""

    code: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class VerdictBox:
    """The article's answer in one sentence a reader can act on, then what it rests on.

    ``better`` and ``worse`` hold every call (never folded into "and N more"), largest first;
    ``same`` counts the rows equivalent within the band or identical, ``unsettled`` those the
    runs cannot tell, whose median minimum detectable effect is ``mde`` (a fraction): below it
    these runs cannot see a change. ``runs`` and ``processes`` are the evidence of each side
    (baseline, candidate): runs, and worker processes in all. ``versions``: the torch
    versions of the two sides (baseline, candidate) where they differ, an upgrade or a
    downgrade the sentence names; None when both sides run the same torch or on other
    devices (then the comparison is of machines).
    """

    candidate: str
    better: tuple[CaseRow, ...]
    worse: tuple[CaseRow, ...]
    same: int
    unsettled: int
    total: int
    mde: float | None
    caveats: tuple[Caveat, ...]
    runs: tuple[int, int]
    processes: tuple[int, int]
    versions: tuple[str, str] | None = None
    upgrade: bool = False  # the candidate's torch is the later release (``versions`` set)


@dataclass(frozen=True)
class ArticleData:
    """Everything one article shows, computed; ``page`` is its path under the site root.

    ``lang`` is None as computed (every word a phrase), and the language its phrases were said
    in (reporter.present.wording.in_language). ``rows``: every compared row, in the order of the
    comparison."""

    title: Phrase
    page: str
    baseline: Side
    candidate: Side
    device: str
    headline: Headline
    verdict: VerdictBox
    stacks: tuple[StackRow, ...]
    changes: tuple[tuple[str, str | None, str | None], ...]
    confounders: tuple[Confounder, ...]
    method: Method
    runs: tuple[RunRef, ...]
    sections: tuple[Section, ...]
    rows: tuple[CaseRow, ...]
    best: tuple[CaseRow, ...]
    worst: tuple[CaseRow, ...]
    advice: tuple[Advice, ...]
    not_measured: tuple[NotMeasured, ...]
    unmatched: tuple[tuple[Phrase, str], ...]  # (name, side) of what only one side measured
    reproduce: Reproduce
    build_command: str
    # Whether the sides ran on the same GPUs, by the UUIDs their runs recorded: "same",
    # "different" (none in common) or "mixed"; None where a side recorded none.
    gpus: Literal["same", "different", "mixed"] | None = None
    # The device's own words in the catalogues ("cpu": every run on CPUs), or None.
    words: str | None = None
    lang: str | None = None

    @property
    def conclusion_number(self) -> int:
        return 2 + len(self.sections)
