"""reporter.compare on synthetic archives and on the public H200 A/A reference data."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from reporter.compare import SUMMARY_COLUMNS, compare_labels, compute_summaries
from reporter.errors import ReporterError
from reporter.load import load_archive
from reporter.stats import VERDICT_BETTER, VERDICT_INCONCLUSIVE, VERDICT_SAME, VERDICT_WORSE, VERDICTS
from test_reporter_support import lognormal_processes, load_reference_aa, run_id, write_run

ROW_COLUMNS = {
    "case_id", "workload", "params", "metric", "unit", "better", "baseline_median", "candidate_median",
    "baseline_ci_low", "baseline_ci_high", "candidate_ci_low", "candidate_ci_high", "ratio", "ci_low", "ci_high",
    "p_value", "p_adjusted", "verdict", "note", "n_baseline_units", "n_candidate_units", "flops", "bytes", "items",
    "items_unit",
}


@pytest.fixture(scope="module")
def ab_archive(tmp_path_factory):
    """Synthetic: stack-b is 20% faster than stack-a on mm, equal on conv; one case on each side only."""
    root = tmp_path_factory.mktemp("ab") / "runs"
    rng = np.random.default_rng(11)
    for i, (label, speed) in enumerate([("stack-a", 1.0), ("stack-b", 1.2)]):
        write_run(
            root, label,
            {
                "mm[n=4096]": lognormal_processes(rng, 5, 20, 2e-4 / speed, 0.03, 0.01),
                "conv[k=3]": lognormal_processes(rng, 5, 20, 3e-4, 0.02, 0.005),
                f"only_{label}[x=1]": lognormal_processes(rng, 3, 5, 1e-3, 0.02, 0.0),
            },
            extra_metrics={
                "throughput": {"mm[n=4096]": lognormal_processes(rng, 5, 20, 500 * speed, 0.03, 0.01)},
                "loss": {"mm[n=4096]": [[2.3, 2.2]] * 5},
            },
            run_id=run_id(i),
        )
    return load_archive(root)


def test_ratio_is_oriented_so_above_one_is_better(ab_archive):
    c = compare_labels(ab_archive, "stack-a", "stack-b")
    assert ROW_COLUMNS <= set(c.rows.columns)
    rows = c.rows.set_index(["case_id", "metric"])
    time, thr, conv = rows.loc[("mm[n=4096]", "time")], rows.loc[("mm[n=4096]", "throughput")], rows.loc[("conv[k=3]", "time")]
    assert time.ratio == pytest.approx(1.2, rel=0.05) and time.verdict == VERDICT_BETTER
    assert thr.ratio == pytest.approx(1.2, rel=0.05) and thr.verdict == VERDICT_BETTER
    assert time.ratio == pytest.approx(time.baseline_gmean / time.candidate_gmean)
    assert thr.ratio == pytest.approx(thr.candidate_gmean / thr.baseline_gmean)
    assert conv.verdict in (VERDICT_SAME, VERDICT_INCONCLUSIVE)
    assert time.flops == 2.0e9 and time.workload == "mm"
    assert (time.n_baseline_units, time.n_candidate_units, time.level) == (5, 5, "process")
    assert ("mm[n=4096]", "loss") not in rows.index  # better="none" is informational, never compared
    assert c.unmatched == [("only_stack-a[x=1]", "time", "baseline"), ("only_stack-b[x=1]", "time", "candidate")]
    assert sum(c.counts.values()) == len(c.rows) and set(c.counts) == set(VERDICTS)
    assert c.geomean_metric == "time" and c.geomean.n_cases == 2
    assert (c.baseline, c.candidate) == ("stack-a", "stack-b")
    assert (c.rows["p_adjusted"] >= c.rows["p_value"]).all()


def test_swapping_labels_inverts_everything(ab_archive):
    ab = compare_labels(ab_archive, "stack-a", "stack-b").rows.set_index(["case_id", "metric"])
    ba = compare_labels(ab_archive, "stack-b", "stack-a").rows.set_index(["case_id", "metric"]).loc[ab.index]
    np.testing.assert_allclose(ab["ratio"] * ba["ratio"], 1.0)
    np.testing.assert_allclose(ab["ci_low"] * ba["ci_high"], 1.0)
    np.testing.assert_allclose(ab["p_value"], ba["p_value"])
    swap = {VERDICT_BETTER: VERDICT_WORSE, VERDICT_WORSE: VERDICT_BETTER}
    assert [swap.get(v, v) for v in ab["verdict"]] == list(ba["verdict"])


def test_bh_correction_and_bad_options(ab_archive):
    holm = compare_labels(ab_archive, "stack-a", "stack-b")
    bh = compare_labels(ab_archive, "stack-a", "stack-b", correction="bh")
    assert (bh.rows["p_adjusted"] <= holm.rows["p_adjusted"] + 1e-15).all()
    with pytest.raises(ReporterError, match="correction"):
        compare_labels(ab_archive, "stack-a", "stack-b", correction="none")
    with pytest.raises(ReporterError, match="noise"):
        compare_labels(ab_archive, "stack-a", "stack-b", noise=-0.1)
    with pytest.raises(ReporterError, match="share run"):
        compare_labels(ab_archive, "stack-a", f"stack-a@{run_id(0)}")
    with pytest.raises(ReporterError, match="labels: stack-a, stack-b"):
        compare_labels(ab_archive, "stack-a", "stack-c")


def test_summaries(ab_archive):
    s = compute_summaries(ab_archive)
    assert list(s.columns) == list(SUMMARY_COLUMNS)
    row = s[(s["label"] == "stack-a") & (s["case_id"] == "mm[n=4096]") & (s["metric"] == "time")].iloc[0]
    assert (row.n_samples, row.n_processes, row.n_runs, row.workload, row.unit, row.better) == (100, 5, 1, "mm", "s", "lower")
    assert row.ci_low <= row["median"] <= row.ci_high and row.q1 <= row["median"] <= row.q3
    assert "loss" in set(s["metric"])  # summaries cover informational metrics too


def test_edge_values_zero_identical_and_single_process(tmp_path):
    root = tmp_path / "runs"
    for i, label in enumerate(("x", "y")):
        write_run(
            root, label,
            {
                "same[n=1]": [[1.0e-3] * 5] * 3,  # all identical, equal on both sides
                "const[n=1]": [[1.0e-3 if label == "x" else 2.0e-3] * 5] * 3,  # identical within, differ between
                "single[n=1]": [[1.0e-3, 1.01e-3, 0.99e-3, 1.02e-3] if label == "x" else [1.3e-3, 1.31e-3, 1.29e-3, 1.32e-3]],
            },
            extra_metrics={
                "graph_breaks": {"same[n=1]": [[0, 0]] * 3, "const[n=1]": [[0, 0]] * 3 if label == "x" else [[2, 2]] * 3},
            },
            run_id=run_id(i),
        )
    c = compare_labels(load_archive(root), "x", "y")
    rows = c.rows.set_index(["case_id", "metric"])
    same = rows.loc[("same[n=1]", "time")]
    assert (same.ratio, same.ci_low, same.ci_high, same.p_value, same.verdict) == (1.0, 1.0, 1.0, 1.0, VERDICT_SAME)
    const = rows.loc[("const[n=1]", "time")]
    assert const.ratio == pytest.approx(0.5) and math.isnan(const.p_value) and const.verdict == VERDICT_INCONCLUSIVE
    assert "no variance" in const.note
    zeros = rows.loc[("same[n=1]", "graph_breaks")]
    assert (zeros.ratio, zeros.verdict) == (1.0, VERDICT_SAME)
    zero_vs_two = rows.loc[("const[n=1]", "graph_breaks")]
    assert math.isnan(zero_vs_two.ratio) and zero_vs_two.verdict == VERDICT_INCONCLUSIVE
    assert "zero or negative" in zero_vs_two.note
    single = rows.loc[("single[n=1]", "time")]
    assert single.level == "sample" and single.verdict == VERDICT_WORSE and "single process" in single.note


def test_no_common_case_is_an_error(tmp_path):
    root = tmp_path / "runs"
    write_run(root, "x", {"a[n=1]": [[1.0, 1.1]] * 3}, run_id=run_id(0))
    write_run(root, "y", {"b[n=1]": [[1.0, 1.1]] * 3}, run_id=run_id(1))
    with pytest.raises(ReporterError, match=r"no case measured on both 'x' and 'y' \(2 case/metric pair"):
        compare_labels(load_archive(root), "x", "y")


# ------------------------------------------------- the public H200 A/A reference


@pytest.fixture(scope="module")
def reference_aa():
    return load_reference_aa()


def _write_aa(root, reference, left, right, *, same_label: bool):
    """Two sides from processes of the reference; as two labels or as two runs of one label."""
    ids = []
    for i, procs in enumerate((left, right)):
        cases = {case: [reference[p][case] for p in procs] for case in reference[procs[0]]}
        label = "h200" if same_label else f"side-{i}"
        rid = run_id(i, f"00aa0{i}")
        write_run(root, label, cases, run_id=rid)
        ids.append(f"{label}@{rid}" if same_label else label)
    return ids


SPLITS = [((a, b), tuple(p for p in (1, 2, 3, 4) if p not in (a, b))) for a, b in itertools.combinations((1, 2, 3, 4), 2)]


@pytest.mark.parametrize("left, right", SPLITS)
def test_reference_aa_two_against_two_is_never_better_or_worse(tmp_path, reference_aa, left, right):
    names = sorted(reference_aa)
    root = tmp_path / "runs"
    base, cand = _write_aa(root, reference_aa, [names[p - 1] for p in left], [names[p - 1] for p in right],
                           same_label=left == (1, 2))
    c = compare_labels(load_archive(root), base, cand)
    assert len(c.rows) == 7 and not c.unmatched
    assert not c.rows["verdict"].isin([VERDICT_BETTER, VERDICT_WORSE]).any(), c.rows[["case_id", "ratio", "ci_low", "ci_high", "verdict"]]
    assert (c.rows["level"] == "process").all()
    assert c.rows["note"].str.contains("fewer than 3 processes").all()


def test_reference_aa_single_process_calls_always_carry_the_caveat(tmp_path, reference_aa):
    """One process against one: the 25% matmul swing may clear ±10%, but never without the note."""
    names = sorted(reference_aa)
    called = 0
    for i, (p, q) in enumerate(itertools.permutations(names, 2)):
        root = tmp_path / f"runs{i}"
        base, cand = _write_aa(root, reference_aa, [p], [q], same_label=False)
        rows = compare_labels(load_archive(root), base, cand).rows
        decided = rows[rows["verdict"].isin([VERDICT_BETTER, VERDICT_WORSE])]
        called += len(decided)
        assert decided["note"].str.contains("single process").all()
        assert (rows["level"] == "sample").all()
    assert called < 12 * 7
