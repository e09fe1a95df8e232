"""An article's phrases said in one language: ``in_language`` turns the ``ArticleData`` computed
once (reporter.article.compute: codes, numbers and phrases) into the same data in words.

Each phrase (reporter.article.data) is said by the catalogue of the language and the device's
own words; a row's name within its block is said with the other rows of its workload, so two
cases that would read the same are told apart in that language.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from runformat.vocabulary import Note
from reporter.article.data import (
    ArticleData,
    Block,
    CaseName,
    CaseRow,
    Caveat,
    ChartData,
    Heading,
    HostName,
    InLanguage,
    Joined,
    Message,
    NumericBlock,
    PerSecond,
    Phrase,
    Rate,
    RowName,
    Section,
    StackRow,
)
from reporter.present.labels import block_heading, case_label, distinct_labels, distinct_params, host_label, params_of
from reporter.present.messages import Catalogue, catalogue

PHRASES = (Message, CaseName, RowName, Heading, Joined, PerSecond, HostName, InLanguage)


def in_language(data: ArticleData, lang: str) -> ArticleData:
    """``data`` with every phrase said in ``lang`` (``lang`` set); its numbers and codes as they are."""
    return Sayer(catalogue(lang, data.words), data.rows).article(data)


class Sayer:
    """Says the phrases of one article in the language of ``t``; ``rows`` are the article's compared rows."""

    def __init__(self, t: Catalogue, rows: tuple[CaseRow, ...]) -> None:
        self.t = t
        self.names: dict[RowName, str] = {}  # a row's name within its block, said with its workload's rows
        by_workload: dict[str, list[RowName]] = {}
        for r in rows:
            if isinstance(r.label, RowName):
                by_workload.setdefault(r.workload, []).append(r.label)
        for workload, names in by_workload.items():
            params = [params_of(n.params) for n in names]
            _, named = block_heading(t, workload, distinct_params(params))
            labels = distinct_labels(t, workload, params,
                                     lambda p: case_label(t, workload, p, omit=named) or case_label(t, workload, p))
            for n, label in zip(names, labels):
                self.names[n] = self._with_metric(label, n.metric)
        self.rows = {(r.case_id, r.metric): self.row(r) for r in rows}

    # ---- phrases

    def say(self, phrase: Phrase | None) -> str | None:
        t = self.t
        if phrase is None or isinstance(phrase, str):
            return phrase
        if isinstance(phrase, Message):
            if phrase.otherwise is not None and not t.has(phrase.key):
                return self.say(phrase.otherwise)
            return t.plain(phrase.key, **{k: self.value(v) for k, v in phrase.fields})
        if isinstance(phrase, CaseName):
            text = case_label(t, phrase.workload, phrase.params, with_workload=phrase.with_workload)
            return text or (self.say(phrase.otherwise) if phrase.otherwise is not None else text)
        if isinstance(phrase, RowName):
            if not phrase.full:
                return self.names[phrase]
            return self._with_metric(case_label(t, phrase.workload, phrase.params, with_workload=True), phrase.metric)
        if isinstance(phrase, Heading):
            return block_heading(t, phrase.workload, [params_of(p) for p in phrase.params])[0]
        if isinstance(phrase, Joined):
            return str(self.say(phrase.sep)).join(str(self.say(p)) for p in phrase.parts)
        if isinstance(phrase, PerSecond):
            word = phrase.word
            return f"{t.plain(f'unit.{word}') if t.has(f'unit.{word}') else word}/s"
        if isinstance(phrase, HostName):
            return host_label({k: list(v) for k, v in phrase.entries}, t)
        if isinstance(phrase, InLanguage):
            return dict(phrase.texts).get(t.lang) or self.say(phrase.otherwise)
        raise TypeError(f"not a phrase: {phrase!r}")

    def value(self, v: Any) -> Any:
        """A field or parameter: a phrase said, a tuple of them said one by one, anything else as it is."""
        if isinstance(v, PHRASES):
            return self.say(v)
        if isinstance(v, tuple):
            return tuple(self.value(x) for x in v)
        return v

    def _with_metric(self, label: str, metric: str | None) -> str:
        if metric is None:
            return label
        t = self.t
        name = t.plain(f"metric.{metric}") if t.has(f"metric.{metric}") else metric
        return t.plain("label.metric_suffix", label=label, metric=name)

    # ---- the article's parts

    def row(self, r: CaseRow) -> CaseRow:
        return replace(r, label=self.say(r.label), full_label=self.say(r.full_label), unit=self.say(r.unit),
                       rates=tuple(self.rate(x) for x in r.rates), notes=tuple(self.note(n) for n in r.notes))

    def rate(self, r: Rate | None) -> Rate | None:
        return None if r is None else replace(r, unit=self.say(r.unit))

    def note(self, n: Note) -> Note:
        if not any(isinstance(v, PHRASES) for _, v in n.params):
            return n
        return Note(n.code, tuple((k, self.value(v)) for k, v in n.params))

    def said(self, rows: tuple[CaseRow, ...]) -> tuple[CaseRow, ...]:
        return tuple(self.rows[(r.case_id, r.metric)] for r in rows)

    def article(self, a: ArticleData) -> ArticleData:
        h, box = a.headline, a.verdict
        headline = replace(h, families=tuple(replace(f, changes=self.said(f.changes)) for f in h.families))
        caveats = tuple(c for c in (self.caveat(c) for c in box.caveats) if c is not None)
        verdict = replace(box, better=self.said(box.better), worse=self.said(box.worse), caveats=caveats)
        stacks = tuple(s for s in (StackRow(s.name, self.say(s.baseline), self.say(s.candidate)) for s in a.stacks)
                       if s.baseline or s.candidate)
        return replace(
            a, title=self.say(a.title), headline=headline, verdict=verdict, stacks=stacks,
            sections=tuple(self.section(s) for s in a.sections), rows=self.said(a.rows), best=self.said(a.best),
            worst=self.said(a.worst), not_measured=tuple(replace(n, title=self.say(n.title)) for n in a.not_measured),
            unmatched=tuple((self.say(name), side) for name, side in a.unmatched), lang=self.t.lang,
        )

    def caveat(self, c: Caveat) -> Caveat | None:
        """The caveat in words; None for a title's that names nothing in this language (another's title did)."""
        said = replace(c, params={k: self.value(v) for k, v in c.params.items()})
        return None if c.code == "title" and not said.params.get("terms") else said

    def section(self, s: Section) -> Section:
        return replace(s, blocks=tuple(self.block(b) for b in s.blocks),
                       numerics=tuple(self.numeric_block(n) for n in s.numerics), chart=self.chart(s.chart))

    def block(self, b: Block) -> Block:
        derived = tuple(replace(d, rows=tuple(replace(x, label=self.say(x.label), unit=self.say(x.unit),
                                                      detail=self.say(x.detail)) for x in d.rows))
                        for d in b.derived)
        return replace(b, title=self.say(b.title), rows=self.said(b.rows), derived=derived,
                       charts=tuple(self.chart(c) for c in b.charts))

    def numeric_block(self, b: NumericBlock) -> NumericBlock:
        """Its heading and its rows' names, told apart (the parameters the heading names left out)."""
        t, workload = self.t, b.workload
        shared = b.title.params if isinstance(b.title, Heading) else ()
        title, named = block_heading(t, workload, [params_of(p) for p in shared])
        params = [params_of(r.label.params) if isinstance(r.label, RowName) else {} for r in b.rows]
        labels = distinct_labels(t, workload, params, lambda p: case_label(t, workload, p, omit=named))
        return replace(b, title=title, rows=tuple(replace(r, label=label) for r, label in zip(b.rows, labels)))

    def chart(self, c: ChartData | None) -> ChartData | None:
        if c is None:
            return None
        if c.kind == "lines":  # each point named by its series (stack · variant), in the order of series and x
            points = []
            for p in c.points:
                stack, variant = self.say(p["stack"]), self.say(p["variant"]) or ""
                points.append({"x": p["x"], "y": p["y"], "y_low": p["y_low"], "y_high": p["y_high"],
                               "series": stack + (f" · {variant}" if variant else ""), "stack": stack, "variant": variant})
            points.sort(key=lambda d: (d["series"], d["x"]))
        else:
            points = [{k: self.value(v) for k, v in p.items()} for p in c.points]
        return replace(c, title=self.say(c.title), points=tuple(points), x_title=self.say(c.x_title),
                       y_title=self.say(c.y_title), unit=self.say(c.unit), stacks=tuple(self.say(s) for s in c.stacks))
