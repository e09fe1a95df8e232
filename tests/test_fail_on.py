"""`reporter compare --fail-on`: every form on shipped runs, its exit code and its last line; and the Markdown
output read by the site's own Markdown (Python-Markdown with the extensions of mkdocs.yml)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reporter.present.terminal_table import FailOn, parse_fail_on

ROOT = Path(__file__).resolve().parent.parent
TF32 = ("h200-torch-2.11.0-cu130-defaults", "h200-torch-2.11.0-cu130-tf32-override-0")  # 10 cases worse
AA = ("h200-torch-2.11.0-cu130@20261203T091851Z", "h200-torch-2.11.0-cu130@20261203T092148Z")  # an A/A pair


def _cli(*args):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run([sys.executable, "-m", "reporter", "compare", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)


def _last(r) -> str:
    """The last paragraph of stdout (a wrapped line reads as one)."""
    return r.stdout.rstrip().split("\n- ")[-1].split("]\n")[-1].replace("\n", " ")


@pytest.mark.parametrize("rule, code, says", [
    ("worse", 1, "FAIL (--fail-on worse): 10 case(s) worse, the largest change matmul 4096³ tf32"),
    ("worse:5%", 1, "FAIL (--fail-on worse:5%): 10 case(s) worse by more than 5%"),
    ("worse:300%", 1, "FAIL (--fail-on worse:300%): 6 case(s) worse by more than 300%"),  # 4.0x slower and beyond
    ("worse:600%", 1, "FAIL (--fail-on worse:600%): 1 case(s) worse by more than 600%"),  # 0.141x: 609% slower
    ("worse:700%", 0, "ok (--fail-on worse:700%): no case worse by more than 700%."),
    ("family:basic", 1, "FAIL (--fail-on family:basic): 10 case(s) worse in Basic operations"),
    ("family:compile", 0, "ok (--fail-on family:compile): no case worse in torch.compile."),
    ("family:basic:300%", 1, "FAIL (--fail-on family:basic:300%): 6 case(s) worse in Basic operations by more than 300%"),
])
def test_each_form_on_a_pair_with_worse_cases(rule, code, says):
    r = _cli(*TF32, "--fail-on", rule)
    assert r.returncode == code, r.stderr
    assert says in _last(r), r.stdout[-600:]


def test_an_aa_pair_passes_every_form():
    r = _cli(*AA, "--fail-on", "worse", "--fail-on", "worse:5%", "--fail-on", "family:basic")
    assert r.returncode == 0, r.stderr
    tail = r.stdout.rstrip().splitlines()[-3:]
    assert tail == ["ok (--fail-on worse): no case worse.", "ok (--fail-on worse:5%): no case worse by more than 5%.",
                    "ok (--fail-on family:basic): no case worse in Basic operations."]


def test_a_failed_rule_is_the_last_line_after_those_that_passed():
    r = _cli(*TF32, "--fail-on", "worse:600%", "--fail-on", "family:compile")
    assert r.returncode == 1
    out = r.stdout.rstrip()
    assert out.index("ok (--fail-on family:compile)") < out.index("FAIL (--fail-on worse:600%)")
    assert "  - matmul 4096³ tf32: 0.141× [0.138, 0.145]" in out  # the case it failed on, listed above


def test_json_stays_parseable_and_the_verdict_goes_to_stderr():
    import json

    r = _cli(*TF32, "--format", "json", "--fail-on", "worse")
    assert r.returncode == 1
    assert json.loads(r.stdout)[-1]["case"] == "geomean"
    assert r.stderr.rstrip().splitlines()[-1].startswith("FAIL (--fail-on worse): 10 case(s) worse")


@pytest.mark.parametrize("rule, message", [
    ("bogus", "expected worse, worse:PCT%, family:NAME or family:NAME:PCT%"),
    ("family:", "name the family"),
    ("family:nope", "no family 'nope'; choose one of: basic,"),
    ("worse:abc", "'abc' must be a percentage"),
    ("worse:-5%", "'-5%' must be a percentage"),
    ("worse:5%:6%", "expected worse"),
])
def test_bad_rules_are_usage_errors_exit_2(rule, message):
    from click.testing import CliRunner

    from reporter.cli import cli

    r = CliRunner().invoke(cli, ["compare", *TF32, "--fail-on", rule], prog_name="reporter")
    assert r.exit_code == 2
    assert "Invalid value for '--fail-on'" in r.output and message in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_parse_forms():
    assert parse_fail_on("worse") == FailOn("worse")
    assert parse_fail_on("worse:5%") == FailOn("worse:5%", None, 0.05)
    assert parse_fail_on("worse:2.5") == FailOn("worse:2.5", None, 0.025)
    assert parse_fail_on("family:compile") == FailOn("family:compile", "compile", 0.0)
    assert parse_fail_on("family:amp:10%") == FailOn("family:amp:10%", "amp", 0.10)


def _site_markdown():
    """Python-Markdown as the site configures it, and md_in_html, which reads the report's collapsible box
    (the site's own pages, whose tables are HTML, need none)."""
    import markdown

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text().replace("!!python", "#"))
    extensions, configs = ["md_in_html"], {}
    for entry in config["markdown_extensions"]:
        name, options = (next(iter(entry.items())) if isinstance(entry, dict) else (entry, None))
        extensions.append(name)
        if options:
            configs[name] = options
    return markdown.Markdown(extensions=extensions, extension_configs=configs)


@pytest.mark.parametrize("pair", [TF32, ("torch-2.13.0-cpu", "torch-2.14.1-cpu")])
def test_markdown_renders_as_tables_in_the_sites_markdown(pair):
    r = _cli(*pair, "--format", "markdown", "--fail-on", "worse")
    assert r.returncode in (0, 1), r.stderr
    html = _site_markdown().convert(r.stdout)
    n_tables = r.stdout.count("\n| --- |")
    assert n_tables >= 4 and html.count("<table>") == n_tables  # the main tables and, inside <details>, the data tables
    assert "<details" in html and "<summary>" in html
    details = html[html.index("<details"):html.index("</details>")]
    assert "<table>" in details and "p (adj.)</th>" in details  # the collapsible box is read as Markdown
    assert "| Case |" not in html  # no table left as text
    assert ("FAIL (--fail-on worse)" if r.returncode else "ok (--fail-on worse)") in html
    assert re.search(r"<h4[^>]*>Basic operations", html)


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_the_terminal_and_markdown_open_with_the_articles_verdict(fmt: str) -> None:
    """`reporter compare` says first what the article's verdict box says: the sentence, every
    regression with its CI, the caveats and the evidence."""
    from click.testing import CliRunner

    from reporter.cli import cli

    out = CliRunner().invoke(cli, ["compare", "h200-torch-2.11.0-cu130@20261202T161602Z",
                                   "h200-torch-2.11.0-cu130-tf32-override", "--runs", str(ROOT / "runs"),
                                   "--format", fmt, "--width", "100"])
    assert out.exit_code == 0, out.output
    text = " ".join(out.stdout.split())
    assert "Verdict: h200-torch-2.11.0-cu130-tf32-override is better in 3 case metric(s)" in text
    assert "Every regression:" in text and "BERT-base, batch 8 × seq 128: 29.8% slower (95% CI 6.2% – 58.6%)" in text
    assert "Evidence: baseline 1 run(s), 3 worker process(es) in all" in text
    assert text.index("Verdict:") < text.index("Of 15 case metrics")
