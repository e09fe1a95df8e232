"""reporter.model.compare on synthetic archives and on the public H200 A/A reference data."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from reporter.model.compare import SUMMARY_COLUMNS, compare_labels, compute_summaries
from reporter.errors import ReporterError
from reporter.data.load import load_archive
from runformat.vocabulary import Analysis, NoteCode, Verdict
from reporter.model.stats import VERDICT_BETTER, VERDICT_WORSE, VERDICTS
from reporter.present.tables import comparison_records
from test_reporter_support import lognormal_processes, load_reference_aa, run_id, write_run

ROW_COLUMNS = {
    "case_id", "workload", "family", "params", "metric", "unit", "better", "baseline_value", "candidate_value",
    "baseline_ci_low", "baseline_ci_high", "candidate_ci_low", "candidate_ci_high", "baseline_median",
    "candidate_median", "ratio", "ci_low", "ci_high", "p_value", "p_adjusted", "verdict", "notes", "analysis",
    "mde", "processes_needed", "n_baseline_units", "n_candidate_units", "n_baseline_runs", "n_candidate_runs",
    "n_baseline_samples", "n_candidate_samples", "flops", "bytes", "items", "items_unit",
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
    # The values shown are the estimates the ratio comes from: never a contradiction.
    assert time.ratio == pytest.approx(time.baseline_value / time.candidate_value)
    assert thr.ratio == pytest.approx(thr.candidate_value / thr.baseline_value)
    assert time.baseline_ci_low < time.baseline_value < time.baseline_ci_high
    assert not Verdict(conv.verdict).is_call
    assert time.flops == 2.0e9 and time.workload == "mm" and time.family == "other"
    assert (time.n_baseline_units, time.n_candidate_units, time.analysis) == (5, 5, Analysis.HIERARCHICAL.value)
    assert 0.01 < time.mde < 0.2 and time.processes_needed >= 2
    codes = {n.code for n in time.notes}
    assert NoteCode.RUN_LEVEL_NOT_COVERED in codes and "note" not in c.rows  # codes; the present stage writes the text
    record = next(r for r in comparison_records(c) if (r["case"], r["metric"]) == ("mm[n=4096]", "time"))
    assert "run-to-run variation is not in the CI" in record["note"]
    assert ("mm[n=4096]", "loss") not in rows.index  # better="none" is informational, never compared
    assert c.unmatched == [("only_stack-a[x=1]", "time", "baseline"), ("only_stack-b[x=1]", "time", "candidate")]
    assert sum(c.counts.values()) == len(c.rows) and set(c.counts) == set(VERDICTS)
    assert c.geomean_metric == "time" and c.geomean.n_cases == 2 and c.geomean.n_units == 5
    assert c.geomean.ci_low < c.geomean.ratio < c.geomean.ci_high
    assert set(c.geomeans) == {"other"} and c.geomeans["other"].n_cases == 2
    assert (c.baseline, c.candidate) == ("stack-a", "stack-b")
    assert c.correction == "bh" and c.analysis == "hierarchical" and not c.run_level_covered
    assert c.mde == pytest.approx(np.median(c.rows["mde"].dropna()))
    assert c.advice is not None and c.advice.family == "other"
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
    holm = compare_labels(ab_archive, "stack-a", "stack-b", correction="holm")
    bh = compare_labels(ab_archive, "stack-a", "stack-b")
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
    assert row.ci_low <= row.estimate <= row.ci_high and row.q1 <= row["median"] <= row.q3
    assert not row.runs_covered
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
    assert (same.ratio, same.verdict, same.analysis) == (1.0, Verdict.UNCHANGED.value, Analysis.DETERMINISTIC.value)
    assert math.isnan(same.ci_low) and math.isnan(same.p_value)  # no CI pretence
    const = rows.loc[("const[n=1]", "time")]
    assert const.ratio == pytest.approx(0.5) and const.verdict == Verdict.CHANGED.value
    assert const.baseline_value == 1.0e-3 and const.candidate_value == 2.0e-3
    assert const.notes[0].code == NoteCode.VALUE_CHANGED
    zeros = rows.loc[("same[n=1]", "graph_breaks")]
    assert (zeros.ratio, zeros.verdict) == (1.0, Verdict.UNCHANGED.value)
    zero_vs_two = rows.loc[("const[n=1]", "graph_breaks")]
    assert math.isnan(zero_vs_two.ratio) and zero_vs_two.verdict == Verdict.CHANGED.value
    single = rows.loc[("single[n=1]", "time")]
    # 30% slower, but one process a side: an estimate, never a verdict.
    assert single.verdict == Verdict.TOO_FEW.value and single.analysis == Analysis.ESTIMATE.value
    assert single.ratio == pytest.approx(1.0 / 1.3, rel=0.02) and math.isnan(single.ci_low)
    assert single.notes[0].code == NoteCode.TOO_FEW_UNITS and single.processes_needed >= 2


def test_a_time_recorded_once_a_side_is_too_few_not_changed(tmp_path):
    # One cold compile a side (one process, one sample): two draws of a measurement. A count
    # recorded once a side is still compared for equality.
    root = tmp_path / "runs"
    for i, label in enumerate(("x", "y")):
        write_run(
            root, label,
            {"compile[model=m]": [[1.0e-3, 1.1e-3, 0.9e-3]] * 3},
            extra_metrics={
                "compile_time": {"compile[model=m]": [[40.0 if label == "x" else 43.0]]},
                "graph_breaks": {"compile[model=m]": [[0 if label == "x" else 1]]},
                "peak_allocated": {"compile[model=m]": [[2.0e9]]},
            },
            run_id=run_id(i),
        )
    rows = compare_labels(load_archive(root), "x", "y").rows.set_index(["case_id", "metric"])
    compile_time = rows.loc[("compile[model=m]", "compile_time")]
    assert compile_time.verdict == Verdict.TOO_FEW.value and compile_time.analysis == Analysis.ESTIMATE.value
    assert compile_time.ratio == pytest.approx(40.0 / 43.0, rel=1e-9)
    breaks = rows.loc[("compile[model=m]", "graph_breaks")]
    assert (breaks.verdict, breaks.analysis) == (Verdict.CHANGED.value, Analysis.DETERMINISTIC.value)
    peak = rows.loc[("compile[model=m]", "peak_allocated")]
    assert (peak.ratio, peak.verdict) == (1.0, Verdict.UNCHANGED.value)


def test_varying_zero_values_have_no_ratio(tmp_path):
    root = tmp_path / "runs"
    for i, label in enumerate(("x", "y")):
        write_run(root, label, {"c[n=1]": [[1e-3, 1.1e-3]] * 3},
                  extra_metrics={"graph_breaks": {"c[n=1]": [[0, 1], [0, 0], [2, 0]]}}, run_id=run_id(i))
    row = compare_labels(load_archive(root), "x", "y").rows.set_index(["case_id", "metric"]).loc[("c[n=1]", "graph_breaks")]
    assert row.verdict == Verdict.NO_RATIO.value == "no ratio" and math.isnan(row.ratio) and row.notes[0].code == NoteCode.NONPOSITIVE


def _interleaved_pair(root, rng, *, effect, schema2=True, n_proc=4, start_c="2026-12-02T14:05:13+00:00"):
    """Two runs recorded together: a shared per-round level, so pairing removes it."""
    levels = 0.2 * rng.standard_normal(n_proc)  # large round-to-round drift shared by both stacks
    ids = []
    for i, (label, speed) in enumerate((("a", 1.0), ("b", effect))):
        env = {("run", "interleaved"): "True",
               ("run", "started_at"): "2026-12-02T14:05:12+00:00" if i == 0 else start_c}
        if schema2:
            env[("run", "interleave_group")] = "g1"
        cases = {f"k[i={j}]": [list(1e-3 / speed * np.exp(levels[p] + 0.01 * rng.standard_normal(10))) for p in range(n_proc)]
                 for j in range(6)}
        rid = run_id(i, f"0000a{i}")
        write_run(root, label, cases, run_id=rid, environment=env)
        ids.append(rid)
    return ids


@pytest.mark.parametrize("schema2", [True, False])
def test_interleaved_runs_are_paired_by_round(tmp_path, schema2):
    rng = np.random.default_rng(4)
    _interleaved_pair(tmp_path / "runs", rng, effect=1.05, schema2=schema2)
    c = compare_labels(load_archive(tmp_path / "runs"), "a", "b")
    assert c.analysis == Analysis.PAIRED.value
    assert (c.rows["analysis"] == Analysis.PAIRED.value).all()
    assert all(n.code == NoteCode.PAIRED_ROUNDS and n.values["n_pairs"] == 4 for n in (r[0] for r in c.rows["notes"]))
    # The shared 20% drift cancels: a 5% change is called in every case.
    assert (c.rows["verdict"] == VERDICT_BETTER).all(), c.rows[["ratio", "ci_low", "ci_high"]]
    np.testing.assert_allclose(c.rows["ratio"], c.rows["baseline_value"] / c.rows["candidate_value"])
    assert c.geomean.analysis == Analysis.PAIRED.value and c.geomean.n_units == 4 and c.geomean.ci_low > 1.0


def test_runs_started_apart_are_not_paired(tmp_path):
    rng = np.random.default_rng(4)
    _interleaved_pair(tmp_path / "runs", rng, effect=1.05, schema2=False, start_c="2026-12-02T15:05:12+00:00")
    c = compare_labels(load_archive(tmp_path / "runs"), "a", "b")
    assert c.analysis == Analysis.HIERARCHICAL.value
    assert not c.rows["verdict"].isin([VERDICT_BETTER, VERDICT_WORSE]).any()  # the drift swamps 5% unpaired


def test_several_runs_a_side_put_the_run_level_in_the_ci(tmp_path):
    root = tmp_path / "runs"
    rng = np.random.default_rng(8)
    for label in ("x", "y"):
        for r in range(3):
            shift = 0.1 * rng.standard_normal()  # a run effect shared by every case and process
            cases = {f"k[i={j}]": [list(1e-3 * np.exp(shift + 0.005 * rng.standard_normal(8))) for _ in range(3)] for j in range(8)}
            write_run(root, label, cases, run_id=run_id(10 * (label == "y") + r, f"{10 * (label == 'y') + r:06x}"))
    c = compare_labels(load_archive(root), "x", "y")
    assert c.run_level_covered and (c.rows["n_baseline_runs"] == 3).all()
    assert not c.rows["verdict"].isin([VERDICT_BETTER, VERDICT_WORSE]).any()
    assert c.geomean.run_level == "replicated" and c.geomean.ci_low < 1.0 < c.geomean.ci_high
    assert not any(NoteCode.RUN_LEVEL_NOT_COVERED in {n.code for n in notes} for notes in c.rows["notes"])
    # Two single runs of one label: the run level is borrowed from the label's three runs.
    ids = sorted(load_archive(root).runs.query("label == 'x'")["run_id"].astype(str))
    one = compare_labels(load_archive(root), f"x@{ids[0]}", f"x@{ids[1]}")
    assert all(NoteCode.RUN_LEVEL_BORROWED in {n.code for n in notes} for notes in one.rows["notes"])
    assert one.run_level_covered and one.geomean.run_level == "borrowed"


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
    assert (c.rows["analysis"] == Analysis.HIERARCHICAL.value).all()
    assert c.geomean.ci_low <= 1.0 <= c.geomean.ci_high


def test_reference_aa_single_process_is_never_a_verdict(tmp_path, reference_aa):
    """One process against one: the 25% matmul swing gets an estimate and "not enough replicates"."""
    names = sorted(reference_aa)
    for i, (p, q) in enumerate(itertools.permutations(names, 2)):
        root = tmp_path / f"runs{i}"
        base, cand = _write_aa(root, reference_aa, [p], [q], same_label=False)
        rows = compare_labels(load_archive(root), base, cand).rows
        assert (rows["verdict"] == Verdict.TOO_FEW.value).all()
        assert rows["ratio"].notna().all() and rows["ci_low"].isna().all()


def test_a_lender_run_in_which_a_few_rows_moved_widens_those_rows_only(tmp_path):
    """A lender run where two short kernels read 1.6x slower (an older timer, say) and the
    rest did not: the run-to-run variance it lends is large for those two rows and small for
    the others. Taking its shared effect as the mean over rows spread the two rows' jump
    over every row, and an H200 A/A article read +-20% on rows that move 1% between runs."""
    rng = np.random.default_rng(11)
    cases = [f"matmul[n={n}]" for n in (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)]

    def procs(level, moved=()):
        return {c: [list(level * (1.6 if c in moved else 1.0) * np.exp(rng.normal(0, 0.003, 20)))
                    for _ in range(3)] for c in cases}

    for i in range(4):
        write_run(tmp_path, "stack", procs(1e-3 * np.exp(rng.normal(0, 0.003)), cases[:2] if i == 3 else ()), run_id=run_id(i))
    result = compare_labels(load_archive(tmp_path), f"stack@{run_id(0)}", f"stack@{run_id(1)}")
    rows = result.rows[(result.rows["metric"] == "time") & result.rows["case_id"].isin(cases)].set_index("case_id")
    half = np.log(rows["ci_high"] / rows["ci_low"]) / 2
    assert not rows["verdict"].isin([VERDICT_BETTER, VERDICT_WORSE]).any()
    assert (half[cases[2:]] < 0.05).all(), half.tolist()
    assert (half[cases[:2]] > 0.1).all(), half.tolist()  # where runs did move, the interval says so


def test_run_level_variance_is_borrowed_within_one_timing_method_only(tmp_path):
    """One run a side borrows the run-to-run variance from labels with several runs on the
    device, but only from runs recorded with the same timing method: two runs of another
    collector revision, far apart, must not widen the interval of a quiet A/A pair."""
    rng = np.random.default_rng(7)
    cases = [f"matmul[n={n}]" for n in (256, 512, 1024, 2048, 4096, 8192)]

    def procs(level):
        return [list(level * np.exp(rng.normal(0, 0.002, 20))) for _ in range(3)]

    new = {("run", "timing_method"): "2"}
    old = {("imagebench", "git_commit"): "0" * 40}
    write_run(tmp_path, "stack", {c: procs(1e-3) for c in cases}, run_id=run_id(0), environment=new)
    write_run(tmp_path, "stack", {c: procs(1e-3) for c in cases}, run_id=run_id(1), environment=new)
    # Another method: its two runs are 30% apart (a timer change, not chance).
    write_run(tmp_path, "stack", {c: procs(1e-3) for c in cases}, run_id=run_id(2), environment=old)
    write_run(tmp_path, "stack", {c: procs(1.3e-3) for c in cases}, run_id=run_id(3), environment=old)
    archive = load_archive(tmp_path)
    from reporter.model.compare import run_methods

    methods = run_methods(archive)
    assert methods[run_id(0)] == methods[run_id(1)] != methods[run_id(2)] == methods[run_id(3)]
    result = compare_labels(archive, f"stack@{run_id(0)}", f"stack@{run_id(1)}")
    rows = result.rows[(result.rows["metric"] == "time") & ~result.rows["case_id"].str.startswith("geomean")]
    assert len(rows) == len(cases)
    assert not rows["verdict"].isin([VERDICT_BETTER, VERDICT_WORSE]).any()
    half = np.log(rows["ci_high"] / rows["ci_low"]) / 2
    assert (half < 0.05).all(), half.tolist()
