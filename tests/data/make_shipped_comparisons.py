"""Write ``shipped_comparisons.json``: every comparison imagebench.toml publishes, as computed
from the shipped runs/, so that a change to the reporter's loading or summaries can be checked
to leave every figure as it was (``tests/test_shipped_comparisons.py``).

    PYTHONPATH=. .venv/bin/python tests/data/make_shipped_comparisons.py

The figures were first taken from a reference reporter (commit 0663d09, the last before the
columnar loading, summary cache and incremental build, with ``reference_model_changes.patch``),
to show that those refactors left every figure as it was. Statistics round 3 then changed the
model on purpose (verdicts ``equivalent``/``inconclusive`` by two one-sided tests, intervals at
the false-coverage-adjusted level where the corrected test needs it, replicate advice bounded
at 30 processes / 20 runs, lenders named per row), so since then the figures are this
reporter's, written from the committed runs only (a recording in progress is left out):

    rm -rf /tmp/trk && mkdir /tmp/trk && git archive HEAD runs | tar -x -C /tmp/trk
    PYTHONPATH=. .venv/bin/python tests/data/make_shipped_comparisons.py /tmp/trk/runs

The runs the config sets aside (``[[set_aside]]``) are left out, as the site leaves them out.
A change to loading, caching or presentation must leave them as they are; a change to the
model regenerates them, and its commit names every figure that moved and why.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).with_name("shipped_comparisons.json")


def shipped_comparisons(runs_dir: Path = ROOT / "runs", config: Path = ROOT / "imagebench.toml") -> dict[str, object]:
    """``{"BASELINE vs CANDIDATE": {...}}`` for every distinct comparison of the config whose labels exist,
    and ``"summaries"``: ``compute_summaries`` of the whole archive."""
    from reporter.model.compare import compare_labels, compute_summaries
    from reporter.errors import ReporterError
    from reporter.article.config import apply_set_aside, load_config, restrict
    from reporter.data.load import load_archive
    from reporter.present.tables import comparison_records, _plain

    site = load_config(config, explicit=True)
    archive, _, _ = apply_set_aside(load_archive(runs_dir), site)  # as the site leaves them out
    out: dict[str, object] = {}
    for spec in site.comparisons:
        key = f"{spec.baseline} vs {spec.candidate}"
        if key in out:
            continue
        try:
            c = compare_labels(restrict(archive, spec.run_ids), spec.baseline, spec.candidate, noise=spec.noise,
                               single_band=spec.single_band, correction=spec.correction)
        except ReporterError:  # a label this archive does not hold (the build skips it the same way)
            continue
        advice = None if c.advice is None else {k: _plain(getattr(c.advice, k)) for k in ("family", "mde", "processes", "runs")}
        out[key] = {
            "records": comparison_records(c),
            "analysis": c.analysis,
            "run_level_covered": bool(c.run_level_covered),
            "mde": _plain(c.mde),
            "counts": {k: int(v) for k, v in c.counts.items()},
            "advice": advice,
        }
    summaries = compute_summaries(archive).sort_values(["label", "case_id", "metric"])
    out["summaries"] = [{k: _plain(v) for k, v in r.items()} for r in summaries.to_dict("records")]
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    runs = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "runs"
    OUT.write_text(json.dumps(shipped_comparisons(runs), indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    print(f"wrote {OUT}")
