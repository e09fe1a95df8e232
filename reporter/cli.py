"""The ``reporter`` command line: one click group; ReporterError becomes a one-line error, exit 2."""

from __future__ import annotations

import os
import sys
from typing import Any

import click
from rich.console import Console

from reporter.model.compare import compare_labels
from reporter.errors import ReporterError
from reporter.data.load import load_archive
from reporter.options import FOLDER, PERCENT, RUNS, one_line
from reporter.present.tables import FORMATS, RENDERERS, render_comparison_table, render_problems, render_runs_table, runs_records
from reporter.present.terminal import inert, inert_json

EXIT_BAD_INPUT = 2


class ReporterGroup(click.Group):
    """A click group that shows a ``ReporterError`` from any subcommand as ``Error: ...``, exit 2."""

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
    # Piped output keeps whole rows rather than wrapping at rich's default of 80 columns.
    file = sys.stderr if stderr else sys.stdout
    return Console(file=file, width=None if file.isatty() else 200, soft_wrap=False)


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


@cli.command("compare")
@click.argument("baseline")
@click.argument("candidate")
@runs_option
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True, help="Output format.")
@click.option("--noise", type=PERCENT, default=1.0, show_default=True, callback=_percent, metavar="PCT",
              help="Noise band in percent: better/worse needs the whole CI beyond it.")
@click.option("--single-band", type=PERCENT, default=10.0, show_default=True, callback=_percent, metavar="PCT",
              help="A row with no significant difference whose CI reaches beyond this band (percent) is noted as too noisy.")
@click.option("--correction", type=click.Choice(["holm", "bh"]), default="bh", show_default=True,
              help="Multiple-comparison correction across the rows: bh (false discovery rate) or holm (family-wise).")
@strict_option
def compare_command(
    baseline: str, candidate: str, runs_dir: str, fmt: str, noise: float, single_band: float, correction: str, strict: bool
) -> None:
    """Compare CANDIDATE with BASELINE (each LABEL, or LABEL@RUN_ID for one run; a unique id prefix will do).

    A ratio above 1 means the candidate is better. Worker processes, not samples, are
    the unit of replication.
    """
    archive = load_archive(runs_dir, strict=strict)
    render_problems(archive, _console(stderr=True))  # first: they may be why a label is missing
    comparison = compare_labels(archive, baseline, candidate, noise=noise, single_band=single_band, correction=correction)
    if fmt == "table":
        render_comparison_table(comparison, _console())
    else:
        text = RENDERERS[fmt](comparison)
        click.echo(inert_json(text) if fmt == "json" else inert(text, keep_newlines=True), nl=False)


@cli.command("runs")
@runs_option
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True, help="Output format.")
@strict_option
def runs_command(runs_dir: str, fmt: str, strict: bool) -> None:
    """List the archive's runs (label, run id, date, device, torch, CUDA, cases) and every invalid run."""
    archive = load_archive(runs_dir, strict=strict)
    if fmt == "json":
        import json

        problems = [{"path": p.path, "reason": p.reason} for p in archive.problems]
        click.echo(inert_json(json.dumps({"runs": runs_records(archive), "problems": problems}, indent=2, allow_nan=False)))
    else:
        render_runs_table(archive, _console())


from reporter.site.build import build_command; cli.add_command(build_command)  # noqa: E402,E702 - `reporter build`: the published site


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``reporter`` console script and ``python -m reporter``."""
    cli.main(args=argv, prog_name="reporter")
