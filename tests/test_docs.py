"""Every CLI command and option is documented in the README (as sqlite-utils' test_docs does)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from collector.cli import build_parser

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def _collector_commands():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, subparser in sub.choices.items():
        options = [o for a in subparser._actions for o in a.option_strings if o.startswith("--") and o != "--help"]
        yield name, options


def _reporter_commands():
    from reporter.cli import cli as group

    for name, command in group.commands.items():
        options = [o for p in command.params for o in getattr(p, "opts", []) if o.startswith("--") and o != "--help"]
        yield name, options


@pytest.mark.parametrize("name, options", list(_collector_commands()))
def test_collector_commands_are_documented(name, options):
    assert re.search(rf"collector {name}\b", README), f"`collector {name}` is not in README.md"
    missing = [o for o in options if o not in README]
    assert not missing, f"collector {name}: options missing from README.md: {missing}"


@pytest.mark.parametrize("name, options", list(_reporter_commands()))
def test_reporter_commands_are_documented(name, options):
    assert re.search(rf"reporter {name}\b", README), f"`reporter {name}` is not in README.md"
    missing = [o for o in options if o not in README]
    assert not missing, f"reporter {name}: options missing from README.md: {missing}"
