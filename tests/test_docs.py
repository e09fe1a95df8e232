"""The user guide (the site's guide pages, in English and Chinese) documents every command and
option, as sqlite-utils' test_docs does, and every command line in it parses; the README stays
short and leads to the guide."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from collector.cli import build_parser
from reporter.site.build import GUIDE_ORDER, guide_pages

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
GUIDES = {lang: "\n".join(text for _, text in guide_pages(lang)) for lang in ("en", "zh")}
MAX_README_LINES = 250


def _collector_commands():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, subparser in sub.choices.items():
        options = [o for a in subparser._actions for o in a.option_strings if o.startswith("--") and o != "--help"]
        yield name, options


def _reporter_commands():
    from reporter.cli import cli as group

    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # `build` too, which the group imports when asked for
        command = group.get_command(ctx, name)
        options = [o for p in command.params for o in getattr(p, "opts", []) if o.startswith("--") and o != "--help"]
        yield name, options


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name, options", list(_collector_commands()))
def test_collector_commands_are_documented(name, options, lang):
    guide = GUIDES[lang]
    assert re.search(rf"collector {name}\b", guide), f"`collector {name}` is not in the {lang} guide"
    missing = [o for o in options if o not in guide]
    assert not missing, f"collector {name}: options missing from the {lang} guide: {missing}"


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name, options", list(_reporter_commands()))
def test_reporter_commands_are_documented(name, options, lang):
    guide = GUIDES[lang]
    assert re.search(rf"reporter {name}\b", guide), f"`reporter {name}` is not in the {lang} guide"
    missing = [o for o in options if o not in guide]
    assert not missing, f"reporter {name}: options missing from the {lang} guide: {missing}"


def _command_lines(text: str) -> list[str]:
    """The collector and reporter command lines of the fenced shell blocks of ``text``."""
    found = []
    for block in re.findall(r"```(?:bash|sh)?\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].split("&&")[0].strip()
            if re.match(r"(python -m )?(collector|reporter) ", line):
                found.append(line)
    return found


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_command_line_of_the_guide_and_the_readme_parses(lang):
    """Each `collector …` line parses with the collector's own parser, each `reporter …` line
    with the reporter's (click, no command run)."""
    from reporter.cli import cli as group

    lines = _command_lines(GUIDES[lang]) + _command_lines(README)
    assert len(lines) >= 10
    for line in lines:
        words = [w for w in shlex.split(line.replace("$(which python)", "/usr/bin/python3"))]
        if words[:2] == ["python", "-m"]:
            words = words[2:]
        tool, args = words[0], words[1:]
        if tool == "collector":
            build_parser().parse_args(args)
            continue
        names = group.list_commands(click.Context(group))
        command = group.get_command(click.Context(group), args[0]) if args and args[0] in names else None
        if command is None:  # `reporter --runs URL build`: the group's own options first
            ctx = group.make_context("reporter", list(args), resilient_parsing=True)
            assert ctx.protected_args or ctx.args, line
            continue
        try:
            command.make_context(args[0], list(args[1:]))
        except click.exceptions.Exit:
            pass


def test_the_readme_is_short_and_leads_to_every_guide_page():
    assert len(README.splitlines()) <= MAX_README_LINES
    for name in GUIDE_ORDER[1:]:
        assert f"reporter/present/guide/en/{name}.md" in README, name
    for lang in ("en", "zh"):
        assert [p for p, _ in guide_pages(lang)] == [f"guide/{n}.md" for n in GUIDE_ORDER]
    assert all((ROOT / "reporter" / "present" / "guide" / "zh" / f"{n}.md").is_file() for n in GUIDE_ORDER)
