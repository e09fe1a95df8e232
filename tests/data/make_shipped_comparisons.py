"""Write ``shipped_comparisons.json``: every comparison imagebench.toml publishes, as computed
from the shipped runs/, so that a change to the reporter's loading or summaries can be checked
to leave every figure as it was (``tests/test_shipped_comparisons.py``).

    PYTHONPATH=. .venv/bin/python tests/data/make_shipped_comparisons.py

The figures must come from the reference reporter, not the one under test: commit 0663d09
(run-level variance borrowed within a timing method), the last before the columnar loading,
summary cache and incremental build, with the statistical model's deliberate changes since
applied to it (``reference_model_changes.patch``: the borrow pool's key, a lending run's
common shift as its median over the rows, a time recorded once a side is too few). When runs
are added or the model changes (extend the patch), recompute them with that reporter over the
new archive:

    git worktree add /tmp/ref 0663d09 && git -C /tmp/ref apply "$PWD/tests/data/reference_model_changes.patch"
    rm -rf /tmp/ref/runs /tmp/ref/imagebench.toml && cp -r runs imagebench.toml /tmp/ref/
    (cd /tmp/ref && PYTHONPATH=. python tests/data/make_shipped_comparisons.py)
    cp /tmp/ref/tests/data/shipped_comparisons.json tests/data/
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
    from reporter.article.config import load_config, restrict
    from reporter.data.load import load_archive
    from reporter.present.tables import comparison_records, _plain

    archive = load_archive(runs_dir)
    out: dict[str, object] = {}
    for spec in load_config(config, explicit=True).comparisons:
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
    OUT.write_text(json.dumps(shipped_comparisons(), indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    print(f"wrote {OUT}")
