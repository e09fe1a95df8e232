"""click parameter types of the reporter's options: finite numbers in range, non-empty paths; the languages.

The rules are ``runformat.options``' (the collector's argparse uses the same), so a bad
value gets the same one-line message from either CLI, naming the option:
``Error: Invalid value for '--noise': must be a finite number at least 0 and below 100, not 'nan'``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from runformat.options import parse_number, parse_path

# The languages a page is written in (``--lang``, ``[site] lang``): each has its message catalogue
# (reporter/present/i18n/<lang>.toml).
LANGUAGES = ("en", "zh")


class Number(click.ParamType):
    """A finite number within bounds (default: greater than 0); NaN and infinities are refused."""

    name = "number"

    def __init__(self, *, integer: bool = False, minimum: float = 0.0, minimum_allowed: bool = False,
                 maximum: float | None = None, maximum_allowed: bool = True) -> None:
        self.bounds: dict[str, Any] = dict(integer=integer, minimum=minimum, minimum_allowed=minimum_allowed,
                                           maximum=maximum, maximum_allowed=maximum_allowed)
        self.name = "integer" if integer else "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float | int:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = repr(value)
        try:
            number = parse_number(str(value), **self.bounds)
        except ValueError as e:
            self.fail(str(e), param, ctx)
        return int(number) if self.bounds["integer"] else number


# A percentage: 0 is a meaningful band (no band), 100% or more is not.
PERCENT = Number(minimum=0.0, minimum_allowed=True, maximum=100.0, maximum_allowed=False)


class FolderPath(click.Path):
    """A folder path as a ``Path`` (a file in its place is refused); the empty string, which
    would mean ``.``, is refused too."""

    def __init__(self) -> None:
        super().__init__(file_okay=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, Path):
            try:
                parse_path(str(value))
            except ValueError as e:
                self.fail(str(e), param, ctx)
        return super().convert(value, param, ctx)


FOLDER = FolderPath()


class RunsLocation(FolderPath):
    """``--runs``: an archive folder (as ``FOLDER``, given back as text) or a URL
    (``s3://bucket/prefix``, any pyarrow or fsspec filesystem), passed on unchanged."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and "://" in value:
            return value
        return str(super().convert(value, param, ctx))


RUNS = RunsLocation()


def one_line(error: click.ClickException) -> click.ClickException:
    """``error`` as a ClickException whose message is one line (no usage block, no hint), exit 2."""
    message = " ".join(error.format_message().split())
    if isinstance(error, click.UsageError) and error.ctx is not None and not isinstance(error, click.BadParameter):
        message += f" (see {error.ctx.command_path} --help)"
    plain = click.ClickException(message)
    plain.exit_code = 2
    return plain
