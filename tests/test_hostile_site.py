"""Hostile strings from a recorded run stay text on the published site; secrets never get there.

A real collector run is recorded with a label, an image name, environment values, an
error text and case parameters that hold ``<script>``, ``<img onerror=...>``,
``[x](javascript:...)``, ``{{ 7*7 }}``, Jinja statements and Markdown table pipes, while
secrets sit in its environment (HF_TOKEN, AWS_SECRET_ACCESS_KEY, a proxy URL with a
password, a token-like value in an allow-listed variable). The run is also filed under a
label folder whose very name is hostile (runs are merged by copying folders, so a folder
name is input too). The site is built (Markdown, then MkDocs), served on 127.0.0.1 and
every page is opened in headless Chromium: no script runs, no handler fires, ``{{ 7*7 }}``
is shown as typed and never as 49, no ``javascript:`` link exists, and every table row
has as many cells as its header. Skipped only when Chromium is missing.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import socketserver
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

import pyarrow.parquet as pq
import pytest

from runformat import schema as s
from runformat.archive import RunWriter, read_table

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]

# «...» marks where a template expression would land: «49» on a page means it was evaluated.
HOSTILE = (
    "«{{ 7*7 }}» <script>window.__pwned='script'</script> <img src=x onerror=\"window.__pwned='img'\"> "
    "[x](javascript:window.__pwned='link') {% if true %}«jinja-stmt»{% endif %} ${7*7} a|b|c `code` *em* _u_ # h"
)
HOSTILE_LABEL = "evil|<img src=x onerror=window.__pwned='label'>«{{ 7*7 }}»[x](javascript:alert(1))"
SECRETS = {
    "HF_TOKEN": "hf_HostileTestTokenAbcdefghijklmnop0123456789",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRETKEY99",
    "HTTPS_PROXY": "http://alice:pr0xy-Passw0rd@proxy.example:3128",
    "TORCH_TEST_UPLOAD": "ghp_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2",  # allow-listed names, credential-like values
    "NCCL_TEST_VALUE": "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9/Ab3De5Gh7Jk",
}
SECRET_VALUES = ("hf_HostileTestTokenAbcdefghijklmnop0123456789", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRETKEY99",
                 "pr0xy-Passw0rd", "ghp_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2", "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9/Ab3De5Gh7Jk")

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def _clone(folder: Path, root: Path, label: str, run_id: str) -> Path:
    """The run in ``folder`` filed again under ``label`` with ``run_id`` (as a merged copy would be)."""
    target = root / label / run_id
    target.mkdir(parents=True)
    writer = RunWriter(folder=target, run_id=run_id, label=label)
    for kind in s.RUN_FILES:
        rows = read_table(folder / kind, kind)[0].to_pylist()
        for row in rows:
            if kind == s.CASES_FILE:
                row["started_at"] = row["started_at"].timestamp()
            if kind == s.ENVIRONMENT_FILE and row["section"] == "run" and row["key"] == "run_id":
                row["value"] = run_id
        writer.write(kind, rows)
    return target


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A real collector run full of hostile strings and secrets, and its hostile-named copy."""
    tmp = tmp_path_factory.mktemp("hostile")
    runs = tmp / "runs"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.update(SECRETS)
    env.update({
        "IMAGEBENCH_EXTRA_WORKLOADS": "tests.fault_workloads",
        "IMAGEBENCH_TEST_HOSTILE": HOSTILE,  # the error text of fault_hostile[fail=true]
        "IMAGEBENCH_HOSTILE_NOTE": HOSTILE,  # an allow-listed environment value
    })
    result = subprocess.run(
        [sys.executable, "-m", "collector", "run", "--suite", "smoke", "--only", "fault_hostile", "--only", "fault_ok",
         "--processes", "1", "--label", "hostile " + HOSTILE, "--image", "img:" + HOSTILE, "--out", str(runs),
         "--no-progress"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    folder = Path(result.stdout.strip().splitlines()[-1])
    copy = _clone(folder, runs, HOSTILE_LABEL, "20261201T000000Z-0e0e0e")
    return {"runs": runs, "folder": folder, "copy": copy, "tmp": tmp}


def test_the_run_holds_the_hostile_strings_as_data(recorded: dict[str, Path]) -> None:
    env, _ = read_table(recorded["folder"] / s.ENVIRONMENT_FILE, s.ENVIRONMENT_FILE)
    values = {(r["section"], r["key"]): r["value"] for r in env.to_pylist()}
    assert values[("container", "image")] == "img:" + HOSTILE
    assert values[("env", "IMAGEBENCH_HOSTILE_NOTE")] == HOSTILE
    assert values[("run", "label_given")] == "hostile " + HOSTILE
    # the folder name is the sanitised label: no path syntax survives
    assert re.fullmatch(r"[A-Za-z0-9._-]+", recorded["folder"].parent.name)
    cases, _ = read_table(recorded["folder"] / s.CASES_FILE, s.CASES_FILE)
    rows = {r["case_id"]: r for r in cases.to_pylist()}
    assert rows["fault_hostile[fail=true]"]["error"].startswith("RuntimeError: " + HOSTILE)
    assert any("<script>" in c for c in rows)  # a case id (its parameters) carries markup too


def test_secrets_are_never_recorded(recorded: dict[str, Path]) -> None:
    env, _ = read_table(recorded["folder"] / s.ENVIRONMENT_FILE, s.ENVIRONMENT_FILE)
    values = {(r["section"], r["key"]): r["value"] for r in env.to_pylist()}
    assert not {("env", "HF_TOKEN"), ("env", "AWS_SECRET_ACCESS_KEY")} & set(values)
    assert values[("env", "HTTPS_PROXY")] == "http://alice:[redacted]@proxy.example:3128"
    assert values[("env", "TORCH_TEST_UPLOAD")] == values[("env", "NCCL_TEST_VALUE")] == "[redacted]"
    for kind in s.RUN_FILES:
        text = repr(pq.read_table(recorded["folder"] / kind).to_pylist())
        for secret in SECRET_VALUES:
            assert secret not in text, (kind, secret)


# -- the site ----------------------------------------------------------------------------------


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site(recorded: dict[str, Path]) -> Iterator[dict[str, Any]]:
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium is not installed at {CHROMIUM}")
    from fault_workloads import WORKLOADS

    from reporter.site.build import build_site
    from reporter.present.views import WorkloadInfo

    tmp = recorded["tmp"]
    workloads = {w.name: WorkloadInfo(w.name, w.family, w.title, w.method) for w in WORKLOADS}
    cwd = os.getcwd()
    os.chdir(tmp)  # the build names the runs folder relative to where it runs
    try:
        result = build_site(recorded["runs"], tmp / "site", tmp / "public", workloads=workloads)
    finally:
        os.chdir(cwd)
    handler = functools.partial(_QuietHandler, directory=str(tmp / "public"))
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield {"url": f"http://127.0.0.1:{server.server_address[1]}/", "result": result, "site": tmp / "site",
               "public": tmp / "public"}
    finally:
        server.shutdown()
        server.server_close()


def test_secrets_never_reach_the_site(site: dict[str, Any]) -> None:
    for folder in (site["site"], site["public"]):
        for path in folder.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                for secret in SECRET_VALUES:
                    assert secret.encode() not in data, (path, secret)


def test_the_build_wrote_every_file_inside_site_and_public(site: dict[str, Any]) -> None:
    tmp = site["site"].parent
    outside = [p for p in tmp.rglob("*") if p.is_file() and not p.is_relative_to(tmp / "runs")
               and not p.is_relative_to(site["site"]) and not p.is_relative_to(site["public"])]
    assert outside == []
    assert site["result"].reports, "no comparison article was built"


_PAGE_CHECK = """() => {
  const bad = [];
  for (const el of document.querySelectorAll('article *')) {
    for (const a of el.attributes) {
      if (a.name.toLowerCase().startsWith('on')) bad.push(`handler ${a.name} on <${el.tagName}>`);
      if (/^\\s*javascript:/i.test(a.value)) bad.push(`javascript: URL in ${a.name} of <${el.tagName}>`);
    }
    if (el.tagName === 'SCRIPT') bad.push('a script element inside the article');
    if (el.tagName === 'IMG' && !/\\.(svg|png)$/.test(el.getAttribute('src') || '')) bad.push(`img src=${el.getAttribute('src')}`);
  }
  for (const table of document.querySelectorAll('article table')) {
    const head = table.querySelectorAll('thead tr:first-child th').length;
    table.querySelectorAll('tbody tr').forEach((tr, i) => {
      const n = [...tr.children].reduce((k, td) => k + (td.colSpan || 1), 0);
      if (head && n !== head) bad.push(`table row ${i} has ${n} cells, its header ${head}: ${tr.innerText.slice(0, 80)}`);
    });
  }
  return {bad, pwned: window.__pwned === undefined ? null : String(window.__pwned), text: document.body.innerText};
}"""


def _pages(public: Path) -> list[str]:
    pages = []
    for path in sorted(public.rglob("index.html")):
        rel = path.parent.relative_to(public).as_posix()
        if rel.startswith(("search", "assets", "404")):
            continue
        pages.append("" if rel == "." else rel + "/")
    return pages


def test_every_page_shows_the_hostile_strings_as_text(site: dict[str, Any]) -> None:
    from playwright.sync_api import sync_playwright

    pages = _pages(site["public"])
    assert len(pages) >= 6, pages
    found_literal = 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            events: list[str] = []
            page.on("dialog", lambda d: (events.append(f"dialog: {d.message}"), d.dismiss()))
            page.on("pageerror", lambda e: events.append(f"page error: {e}"))
            page.on("request", lambda r: events.append(f"request off-site: {r.url}") if not r.url.startswith(site["url"]) else None)
            page.on("response", lambda r: events.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
            for rel in pages:
                events.clear()
                page.goto(site["url"] + rel)
                page.wait_for_load_state("load")
                state = page.evaluate(_PAGE_CHECK)
                assert state["pwned"] is None, (rel, state["pwned"])
                assert state["bad"] == [], (rel, state["bad"])
                assert events == [], (rel, events)
                text = state["text"]
                assert "«49»" not in text and "«jinja-stmt»" not in text.replace("{% if true %}«jinja-stmt»{% endif %}", ""), rel
                found_literal += text.count("«{{ 7*7 }}»")
        finally:
            browser.close()
    # the hostile strings were rendered (as typed), not dropped: label, image, env value, error, params
    assert found_literal >= 5, found_literal


def test_the_run_page_shows_each_hostile_field_verbatim(site: dict[str, Any]) -> None:
    from playwright.sync_api import sync_playwright

    run_pages = [rel for rel in _pages(site["public"]) if rel.startswith("runs/") and rel.count("/") == 3]
    assert run_pages
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            texts = []
            for rel in run_pages:
                page.goto(site["url"] + rel)
                texts.append(page.locator("article").inner_text())
        finally:
            browser.close()
    joined = "\n".join(texts)
    line = HOSTILE.split(" # ")[0]  # a heading marker is shown too, but a Markdown line may wrap before it
    assert line in joined or HOSTILE.replace("  ", " ") in joined
    assert "evil|<img src=x onerror=window.__pwned='label'>" in joined  # the hostile folder name, as text
