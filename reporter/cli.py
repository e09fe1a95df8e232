"""The ``reporter`` command line: one click group; ReporterError becomes a one-line error, exit 2."""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

import click
from rich.console import Console

from reporter.model.compare import compare_labels
from reporter.errors import ReporterError
from reporter.data.load import load_archive
from reporter.options import FOLDER, PERCENT, RUNS, one_line
from reporter.present.terminal_table import (
    FAIL_ON_FORMS, FailOn, build_report, check_fail_on, md, parse_fail_on, render_gate_text, render_markdown_report,
    render_runs_text, render_text, wrap,
)
from reporter.present.tables import RENDERERS, render_problems, runs_cells, runs_records
from reporter.present.terminal import inert, inert_json

EXIT_BAD_INPUT = 2
EXIT_GATE = 1  # --fail-on: a case got worse
# `text` is what a person reads; `table` is its former name, still accepted.
FORMATS = ("text", "markdown", "csv", "json", "table")
DEFAULT_WIDTH = 100  # a pipe or a CI log with no COLUMNS


class ReporterGroup(click.Group):
    """A click group that shows a ``ReporterError`` from any subcommand as ``Error: ...``, exit 2.

    ``lazy``: commands imported only when run or listed (``reporter build`` brings the site's
    modules, which ``reporter compare`` does not need).
    """

    lazy = {"build": ("reporter.site.build", "build_command")}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy and name not in self.commands:
            import importlib

            module, attribute = self.lazy[name]
            self.add_command(getattr(importlib.import_module(module), attribute), name)
        return super().get_command(ctx, name)

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.UsageError as e:  # `reporter --bogus`: one line, not a usage block
            raise one_line(e) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.UsageError as e:  # a subcommand's bad option or value: one line naming it
            raise one_line(e) from None
        except ReporterError as e:
            error = click.ClickException(inert(str(e), keep_newlines=True))
            error.exit_code = EXIT_BAD_INPUT
            raise error from None
        except BrokenPipeError:  # `reporter runs | head`: the reader left, nothing to report
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(0)


def _console(stderr: bool = False) -> Console:
    file = sys.stderr if stderr else sys.stdout
    return Console(file=file, width=None if file.isatty() else 200, soft_wrap=False)


def _width(width: int | None) -> int:
    """``--width``, else COLUMNS, else the terminal's width, else ``DEFAULT_WIDTH`` (a pipe)."""
    if width:
        return width
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns


def _color() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


def _fail_on(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> list[FailOn]:
    rules = []
    for value in values:
        try:
            rules.append(parse_fail_on(value))
        except ValueError as e:
            raise click.BadParameter(str(e), ctx=ctx, param=param) from None
    return rules


runs_option = click.option(
    "--runs", "runs_dir", default="runs", show_default=True, type=RUNS,
    help="The archive: a folder runs/<label>/<run_id>/*.parquet, or a URL (s3://bucket/prefix) mirrored into a local cache.",
)
strict_option = click.option("--strict", is_flag=True, help="Fail (exit 2) if any run is invalid instead of skipping it.")


def _percent(ctx: click.Context, param: click.Parameter, value: float) -> float:
    return value / 100.0  # PERCENT checked the range: [0, 100), finite


@click.group(cls=ReporterGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="imagebench", prog_name="reporter")
def cli() -> None:
    """Statistics and comparisons of recorded imagebench runs."""


width_option = click.option("--width", type=click.IntRange(40, 1000), default=None, metavar="COLUMNS",
                            help=f"Width of text output (default: COLUMNS, the terminal's, or {DEFAULT_WIDTH} in a pipe).")


@cli.command("compare")
@click.argument("baseline")
@click.argument("candidate")
@runs_option
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="text (for a terminal; `table` is its old name), markdown (GitHub: a pull-request comment or a CI "
                   "job summary), csv or json (every row, numbers at full precision).")
@click.option("--details", is_flag=True, help="Every row, with p (adj.), processes, MDE and notes, as the site's data tables.")
@click.option("--fail-on", "fail_on", multiple=True, callback=_fail_on, metavar="RULE",
              help=f"Exit 1 when a case is called worse: {FAIL_ON_FORMS} (repeatable). The last line says why.")
@width_option
@click.option("--lang", type=click.Choice(["en", "zh"]), default="en", show_default=True, help="Language of text and markdown.")
@click.option("--noise", type=PERCENT, default=1.0, show_default=True, callback=_percent, metavar="PCT",
              help="Noise band in percent: better/worse needs the whole CI beyond it.")
@click.option("--single-band", type=PERCENT, default=10.0, show_default=True, callback=_percent, metavar="PCT",
              help="A row with no significant difference whose CI reaches beyond this band (percent) is noted as too noisy.")
@click.option("--correction", type=click.Choice(["holm", "bh"]), default="bh", show_default=True,
              help="Multiple-comparison correction across the rows: bh (false discovery rate) or holm (family-wise).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="The site's config, whose [[set_aside]] runs are left out as the site leaves them out "
                   "(default: imagebench.toml where there is one).")
@strict_option
def compare_command(
    baseline: str, candidate: str, runs_dir: str, fmt: str, details: bool, fail_on: list[FailOn], width: int | None,
    lang: str, noise: float, single_band: float, correction: str, config_path: str | None, strict: bool,
) -> None:
    """Compare CANDIDATE with BASELINE (each LABEL, or LABEL@RUN_ID for one run; a unique id prefix will do).

    The figures are the site's article's: its case labels, rows, headline and verdicts.
    A ratio above 1 means the candidate is better. Worker processes, not samples, are
    the unit of replication. Exit 0; 1 when a --fail-on rule fails; 2 for bad input.
    """
    from reporter.article.compute import compute_article
    from pathlib import Path

    from reporter.article.config import DEFAULT_CONFIG, ComparisonSpec, apply_set_aside, load_config
    from reporter.present.messages import catalogue
    from reporter.present.views import load_workloads
    from reporter.present.wording import in_language

    config = load_config(Path(config_path or DEFAULT_CONFIG), explicit=config_path is not None)
    archive = load_archive(runs_dir, strict=strict)
    render_problems(archive, _console(stderr=True))  # first: they may be why a label is missing
    archive, set_aside, unknown = apply_set_aside(archive, config)
    if set_aside:
        click.echo(f"note: {len(set_aside)} run(s) set aside by {config.source} ([[set_aside]]) are left out", err=True)
    for selector in unknown:
        click.echo(f"warning: {config.source}: [[set_aside]] names {selector}, a run this archive's label does not hold",
                   err=True)
    article = None
    with archive.writes_deferred():  # the summaries cache written once, when the figures are done
        comparison = compare_labels(archive, baseline, candidate, noise=noise, single_band=single_band,
                                    correction=correction)
        if fmt in ("text", "table", "markdown") or fail_on:
            workloads = load_workloads()
            spec = ComparisonSpec(baseline, candidate, noise=noise, single_band=single_band, correction=correction)
            article = in_language(compute_article(archive, spec, comparison=comparison,
                                                  families={k: w.family for k, w in workloads.items()},
                                                  titles={k: w.title_in(lang) for k, w in workloads.items()}), lang)
    t = catalogue(lang, article.words if article is not None else None)
    if fmt in ("text", "table"):
        click.echo(render_text(build_report(article, comparison, t, details=details), _width(width), color=_color()),
                   nl=False)
    elif fmt == "markdown":
        report = build_report(article, comparison, t)
        click.echo(render_markdown_report(report, build_report(article, comparison, t, details=True),
                                          t.plain("cli.details")), nl=False)
    else:
        text = RENDERERS[fmt](comparison)
        click.echo(inert_json(text) if fmt == "json" else inert(text, keep_newlines=True), nl=False)
    if fail_on:
        failed, results = check_fail_on(fail_on, article, t)
        if fmt in ("text", "table"):
            click.echo(render_gate_text(results, _width(width)), nl=False)
        elif fmt == "markdown":  # a paragraph per rule: the cases it failed on, then why
            for line, hits in results:
                click.echo("\n" + "".join(f"- {md(h)}\n" for h in hits) + ("\n" if hits else "") + f"**{md(line)}**")
        else:  # csv, json: the data on stdout stays parseable
            for line, hits in results:
                click.echo(inert(line), err=True)
        if failed:
            sys.stdout.flush()
            raise SystemExit(EXIT_GATE)


@cli.command("runs")
@runs_option
@click.option("--format", "fmt", type=click.Choice(["text", "json", "table"]), default="text", show_default=True,
              help="text (for a terminal; `table` is its old name) or json.")
@width_option
@strict_option
def runs_command(runs_dir: str, fmt: str, width: int | None, strict: bool) -> None:
    """List the archive's runs (label, run id, status, date, cases, device, torch, CUDA) and every invalid run.

    Run ids are never cut; a narrow terminal leaves out columns from the right instead.
    """
    from reporter.present.messages import catalogue

    archive = load_archive(runs_dir, strict=strict)
    if fmt == "json":
        import json

        problems = [{"path": p.path, "reason": p.reason} for p in archive.problems]
        click.echo(inert_json(json.dumps({"runs": runs_records(archive), "problems": problems}, indent=2, allow_nan=False)))
        return
    t = catalogue("en")
    w = _width(width)
    lines = []
    if archive.runs.empty:
        lines.append(f"No valid runs under {archive.root}.")
    else:
        text, left_out = render_runs_text(runs_cells(archive), w)
        click.echo(text, nl=False)
        lines.append(t.plain("cli.runs_count", runs=len(archive.runs), labels=len(archive.labels()), root=archive.root))
        if left_out:
            lines.append(t.plain("cli.runs_left_out", width=w, columns=", ".join(left_out)))
        lines.append(t.plain("cli.runs_compare"))
    if archive.problems:
        lines.append(f"{len(archive.problems)} problem(s) reading the archive; each says what was left out:")
        lines += [f"  {p.path}: {p.reason}" for p in archive.problems]
    for line in lines:
        click.echo("\n".join(wrap(inert(line), w)))


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``reporter`` console script and ``python -m reporter``."""
    cli.main(args=argv, prog_name="reporter")
