"""What the fonts vl-convert sees cost a chart: every system font against the two the reporter gives it.

SYNTHETIC INPUT, FOR TIMING THE TOOL ONLY: the charts are those of a site built from a small
generated archive (benchmarks/site_scale.py's generator, in a temporary folder), rendered twice,
each time in a fresh process: with vl-convert's default font database (every font of the system)
and with ``reporter.present.charts.chart_fonts`` (vl-convert's own Liberation Sans and one font with
Chinese glyphs). Prints the time per chart in each language and how many SVGs differ.

    .venv/bin/python benchmarks/chart_fonts.py [--labels 6 --runs 12]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RENDER = """
import json, pickle, re, sys, time
specs = pickle.load(open(sys.argv[1], "rb"))
if sys.argv[2] == "system":
    import vl_convert as vlc
    render = vlc.vegalite_to_svg
else:
    from reporter.present.charts import chart_fonts, render_svg as render
    chart_fonts()
render(specs[0])  # vl-convert's start is not a chart's time
cjk = re.compile("[\\u3400-\\u9fff]")
out, times = [], {"en": [0.0, 0], "zh": [0.0, 0]}
for spec in specs:
    lang = "zh" if cjk.search(json.dumps(spec, ensure_ascii=False)) else "en"
    t = time.perf_counter()
    out.append(render(spec))
    times[lang][0] += time.perf_counter() - t
    times[lang][1] += 1
pickle.dump((out, times), open(sys.argv[3], "wb"))
"""


def chart_specs(folder: Path, labels: int, runs: int) -> list[dict]:
    """Every chart specification of the site of a generated archive (its pages are thrown away)."""
    import benchmarks.site_scale as site_scale
    import reporter.site.build as build

    site_scale.write_archive(folder / "runs", labels, runs)
    specs: list[dict] = []

    def keep(batch: list[dict]) -> list[str]:
        specs.extend(batch)
        return ["<svg></svg>"] * len(batch)

    build.render_svgs = keep
    os.environ["IMAGEBENCH_CACHE"] = str(folder / "cache")
    cwd = os.getcwd()
    os.chdir(folder)  # no imagebench.toml: the default comparisons
    try:
        build.build_site(folder / "runs", folder / "site", None, chart_workers=1)
    finally:
        os.chdir(cwd)
    return specs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=6)
    parser.add_argument("--runs", type=int, default=12)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="imagebench-chart-fonts-") as tmp:
        folder = Path(tmp)
        specs = chart_specs(folder, args.labels, args.runs)
        (folder / "specs.pickle").write_bytes(pickle.dumps(specs))
        results = {}
        for fonts in ("system", "reporter"):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", RENDER, str(folder / "specs.pickle"), fonts, str(folder / fonts)],
                           check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
            svgs, times = pickle.loads((folder / fonts).read_bytes())
            results[fonts] = svgs
            each = ", ".join(f"{lang} {s / n * 1e3:.1f} ms a chart ({n})" for lang, (s, n) in times.items() if n)
            print(f"{fonts} fonts: {each}; {time.perf_counter() - t:.1f} s with the process's start")
        differ = sum(a != b for a, b in zip(results["system"], results["reporter"]))
        print(f"{differ} of {len(specs)} SVGs differ (Latin text: the system's Liberation Sans against vl-convert's)")
        print(json.dumps({"charts": len(specs), "differ": differ}))


if __name__ == "__main__":
    main()
