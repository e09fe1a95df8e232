"""Charts a reader can read: full labels, units that fit, round ticks, one colour per stack.

The specifications are checked as data; a few are rendered with vl-convert (as the build
does) and their SVG text read back.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reporter.present.charts import (
    STACK_COLORS,
    VERDICT_COLORS,
    chart_lines,
    chart_ratios,
    linear_ticks,
    log_ticks,
    measures_chinese,
    render_svg,
    scale_unit,
    text_width,
    wrap_label,
)

BASE, CAND = "h200-torch-2.11.0-cu130@20261202T161602Z", "h200-torch-2.11.0-cu130-tf32-override"
ROOT = Path(__file__).resolve().parent.parent
ROUND_MANTISSAS = {1, 1.1, 1.2, 1.25, 1.3, 1.4, 1.5, 1.6, 1.8, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9}


def _encodings(spec: dict) -> list[dict]:
    return [e for layer in [spec, *spec.get("layer", [])] for e in layer.get("encoding", {}).values() if isinstance(e, dict)]


def _by_field(spec: dict, field: str) -> list[dict]:
    return [e for e in _encodings(spec) if e.get("field") == field]


def _svg_texts(svg: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", t) for t in re.findall(r"<text\b[^>]*>(.*?)</text>", svg, re.S)]


def _matmul_rows(stacks: tuple[str, str] = (BASE, CAND)) -> list[dict]:
    rows = []
    for dtype, t256 in (("bf16", 3.5e-6), ("fp32", 8e-6)):
        for n in (256, 1024, 4096):
            for stack, k in zip(stacks, (1.0, 0.8)):
                y = t256 * (n / 256) ** 2.5 * k
                rows.append({"x": n, "y": y, "y_low": y * 0.97, "y_high": y * 1.04, "series": f"{stack} · dtype={dtype}"})
    return rows


# ---- labels ------------------------------------------------------------------------------------


def test_long_labels_wrap_at_commas_and_keep_ids_whole() -> None:
    text = f"{BASE} · batch=256, channels_last=True, model=resnet50, num_classes=1000, precision=amp-bf16"
    wrapped = wrap_label(text, 40)
    lines = wrapped.split("\n")
    assert len(lines) >= 3 and lines[0] == f"{BASE} ·"
    assert all(text_width(line) <= 44 for line in lines)  # the id alone is 41 wide: its line is whole
    assert " ".join(lines) == text  # nothing cut, nothing added
    assert "…" not in wrapped and "..." not in wrapped


def test_chinese_labels_wrap_between_characters_and_count_double() -> None:
    text = "矩阵乘法 4096³ bf16，通道在后布局，前向加反向，批量 256"
    lines = wrap_label(text, 24).split("\n")
    assert len(lines) >= 2 and all(text_width(line) <= 24 for line in lines)
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")
    assert text_width("矩阵") == 4


@given(st.lists(st.text(alphabet="abcdefgh-_.=,·矩阵乘法 ", min_size=1, max_size=12), min_size=1, max_size=12))
@settings(max_examples=150, deadline=None)
def test_wrapping_never_loses_or_splits_a_word(words: list[str]) -> None:
    text = " ".join(words)
    wrapped = wrap_label(text, 16)
    assert "".join(wrapped.split()) == "".join(text.split())
    latin = {w for w in " ".join(text.split()).replace(",", " ").replace("·", " ").split()
             if not re.search(r"[\u3400-\u9fff]", w)}
    for word in latin:  # a word without Chinese characters is never broken across lines
        assert any(word in line for line in wrapped.split("\n")), word


# ---- units and ticks ---------------------------------------------------------------------------


@pytest.mark.parametrize(("values", "unit", "expected"), [
    ([3e-6, 4e-4], "s", "µs"),
    ([3e-6, 2e-3], "s", "ms"),
    ([0.4, 12.0], "s", "s"),
    ([2e-9, 8e-9], "s", "ns"),
    ([3e8, 5e9], "bytes", "GiB"),
    ([2e6, 9e7], "bytes", "MiB"),
    ([1.0e4], "items/s", "items/s"),
])
def test_time_and_memory_take_the_unit_that_fits(values: list[float], unit: str, expected: str) -> None:
    assert scale_unit(values, unit)[0] == expected


@given(st.floats(1e-9, 1e9), st.floats(1.001, 1e6))
@settings(max_examples=300, deadline=None)
def test_log_ticks_are_few_round_and_inside(low: float, span: float) -> None:
    high = low * span
    ticks = log_ticks(low, high)
    assert 2 <= len(ticks) <= 7 or (len(ticks) == 1 and high / low < 1.1)
    assert all(low * (1 - 1e-9) <= v <= high * (1 + 1e-9) for v in ticks)
    assert ticks == sorted(ticks)
    for v in ticks:  # a mantissa from the round sets, or a linear step of 1, 2, 2.5 or 5
        mantissa = round(v / 10 ** math.floor(math.log10(v)), 6)
        assert mantissa in ROUND_MANTISSAS or _on_round_step(v, ticks), (v, ticks)


def _on_round_step(v: float, ticks: list[float]) -> bool:
    if len(ticks) < 2:
        return True
    step = float(f"{ticks[1] - ticks[0]:.6g}")
    m = round(step / 10 ** math.floor(math.log10(step)), 6)
    return m in (1, 2, 2.5, 5) and abs(v / step - round(v / step)) < 1e-6


def test_ticks_of_familiar_ranges() -> None:
    assert log_ticks(0.9, 1.3) == [0.9, 1.0, 1.1, 1.2, 1.3]
    assert log_ticks(3e-3, 30) == [0.01, 0.1, 1.0, 10.0] or len(log_ticks(3e-3, 30)) <= 7
    assert log_ticks(1e-6, 1e3) == [1e-06, 0.0001, 0.01, 1.0, 100.0]
    assert linear_ticks(0.98, 1.02) == [0.98, 0.99, 1.0, 1.01, 1.02]


# ---- specifications ----------------------------------------------------------------------------


def test_time_axis_in_the_unit_of_the_data_with_round_ticks() -> None:
    spec = chart_lines(_matmul_rows(), x_title="n", y_title="median time", y_unit="s", stacks=(BASE, CAND))
    y = next(e for e in _by_field(spec, "y") if "title" in e)
    assert y["title"] == "median time (ms)"
    data = spec["datasets"]["rows"]
    assert max(d["y"] for d in data) == pytest.approx(8e-6 * 16**2.5 * 1e3)  # stored seconds, shown in ms
    ticks = y["axis"]["values"]
    assert ticks and all(round(v / 10 ** math.floor(math.log10(v)), 6) in ROUND_MANTISSAS for v in ticks)
    x = next(e for e in _by_field(spec, "x") if "axis" in e)
    assert x["axis"]["values"] == [256, 1024, 4096]  # the measured sizes, not the scale's minor ticks


def test_a_chinese_title_gets_chinese_brackets() -> None:
    spec = chart_lines(_matmul_rows(), x_title="n", y_title="中位时间", y_unit="s", stacks=(BASE, CAND))
    assert any(e.get("title") == "中位时间（ms）" for e in _by_field(spec, "y"))


def test_one_colour_per_stack_the_same_in_every_chart() -> None:
    both = chart_lines(_matmul_rows(), x_title="n", y_title="t", y_unit="s", stacks=(BASE, CAND))
    only_candidate = chart_lines([r for r in _matmul_rows() if r["series"].startswith(CAND)], x_title="n",
                                 y_title="t", y_unit="s", stacks=(BASE, CAND))
    for spec in (both, only_candidate):
        colours = [e["scale"] for e in _by_field(spec, "stack") if "scale" in e]
        assert colours and all(c["domain"] == [BASE, CAND] and c["range"] == list(STACK_COLORS) for c in colours)
    shapes = _by_field(both, "variant")
    assert shapes and {d["variant"] for d in both["datasets"]["rows"]} == {"dtype=bf16", "dtype=fp32"}


def test_explicit_stack_and_variant_keys_win_over_the_series_name() -> None:
    rows = [{"x": w, "y": 1000.0 + w, "y_low": 990.0, "y_high": 1010.0 + w, "series": f"candidate · {w}",
             "stack": "candidate", "variant": ""} for w in (0, 2, 4)]
    spec = chart_lines(rows, x_title="workers", y_title="throughput (images/s)", log_x=False, log_y=False,
                       stacks=("baseline", "candidate"))
    assert {d["stack"] for d in spec["datasets"]["rows"]} == {"candidate"}
    assert not _by_field(spec, "variant"), "a single variant needs no legend"
    x = next(e for e in _by_field(spec, "x") if "axis" in e)
    assert x["axis"]["values"] == [0, 2, 4]


def test_ratio_chart_keeps_every_case_whole_and_apart() -> None:
    case = "conv2d: batch=16, channels=64, layout=channels_last, pass=forward_backward, size=224"
    rows = [{"case": case, "ratio": 1.02, "ci_low": 0.99, "ci_high": 1.05, "verdict": "inconclusive"},
            {"case": case, "ratio": 1.30, "ci_low": 1.2, "ci_high": 1.4, "verdict": "better"}]
    spec = chart_ratios(rows, x_title="ratio", verdict_names={"better": "better", "inconclusive": "inconclusive"})
    labels = [d["case"] for d in spec["datasets"]["rows"]]
    assert len(set(labels)) == 2 and all(label.replace("\u200b", "").replace("\n", " ") == case for label in labels)
    assert not any("#" in label or "…" in label for label in labels)
    colours = next(e["scale"] for e in _by_field(spec, "verdict_name") if "scale" in e)
    assert colours["domain"] == ["better", "inconclusive"]  # only the verdicts shown, in their fixed order
    assert colours["range"] == [VERDICT_COLORS["better"], VERDICT_COLORS["inconclusive"]]
    x = next(e for e in _by_field(spec, "ci_low") if "axis" in e)
    assert x["scale"]["domain"][0] < 0.99 and x["scale"]["domain"][1] > 1.4 and 1.0 in x["axis"]["values"]


def test_a_cross_device_ratio_axis_counts_in_powers_of_ten() -> None:
    rows = [{"case": "matmul 8192³ bf16", "ratio": 240.0, "ci_low": 200.0, "ci_high": 290.0, "verdict": "better"},
            {"case": "conv 3×3", "ratio": 12.0, "ci_low": 10.0, "ci_high": 15.0, "verdict": "better"}]
    spec = chart_ratios(rows, x_title="ratio", verdict_names={"better": "better"})
    ticks = next(e for e in _by_field(spec, "ci_low") if "axis" in e)["axis"]["values"]
    assert 1.0 in ticks and 100.0 in ticks and len(ticks) <= 7


# ---- rendered ----------------------------------------------------------------------------------


def test_rendered_chart_text_is_whole() -> None:
    spec = chart_lines(_matmul_rows(), x_title="n", y_title="median time", y_unit="s", stacks=(BASE, CAND))
    texts = _svg_texts(render_svg(spec))
    joined = " ".join(texts)
    assert BASE in joined and CAND in joined and "median time (ms)" in joined
    assert not any("…" in t or "..." in t or re.search(r"#\d", t) for t in texts)


@pytest.mark.skipif(not measures_chinese(),
                    reason="no font with Chinese glyphs installed (scripts/setup.sh installs fonts-wqy-microhei)")
def test_chinese_legend_entries_do_not_overlap() -> None:
    stacks = ("基线 torch-2.13.0-cpu 加一段很长的中文说明", "候选 torch-2.14.1-cpu 加一段很长的中文说明")
    rows = [{"x": w, "y": 100.0 + w + i, "y_low": 95.0, "y_high": 110.0, "series": s}
            for i, s in enumerate(stacks) for w in (0, 2)]
    svg = render_svg(chart_lines(rows, x_title="进程数", y_title="吞吐量", log_x=False, log_y=False, stacks=stacks))
    # Each legend entry is a group at translate(x, y) with a background as wide as Vega measured it.
    legend = svg[svg.index("role-legend-entry"):]
    entries = [(float(x), float(y), float(w)) for x, y, w in re.findall(
        r'<g transform="translate\(([\d.]+),([\d.]+)\)"><path class="background"[^>]*d="M0,0h([\d.]+)v', legend)
        if float(w) > 0][:2]
    assert len(entries) == 2
    for (x0, y0, w0), (x1, y1, _) in zip(entries, entries[1:]):
        assert y1 != y0 or x1 >= x0 + w0, "legend entries overlap"
    assert min(w for _, _, w in entries) >= 16 + 10 * 10, "Chinese characters measured too narrow"


def test_charts_measure_with_the_shipped_latin_font_and_one_chinese_font(tmp_path) -> None:
    """In a fresh process: vl-convert's fonts start from a fontconfig file naming only the Chinese
    font, the environment is as it was afterwards, and a Latin label is as wide as vl-convert's
    own Liberation Sans makes it whatever else is installed."""
    import json
    import subprocess
    import sys

    code = """
import json, os, sys
from reporter.present.charts import chart_fonts, chinese_font_file, render_svg
os.environ["FONTCONFIG_FILE"] = "/nonexistent/fonts.conf"
fonts = chart_fonts()
spec = {"data": {"values": [{"a": "scale-2.11.0 matmul"}]}, "mark": "point",
        "encoding": {"color": {"field": "a", "type": "nominal", "legend": {"title": None, "labelLimit": 0}}},
        "config": {"aria": False}}
print(json.dumps({"fonts": fonts, "chinese": chinese_font_file(), "env": os.environ["FONTCONFIG_FILE"],
                  "svg": render_svg(spec)}))
"""
    env = {**os.environ, "IMAGEBENCH_CACHE": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, cwd=ROOT)
    got = json.loads(out.stdout)
    assert got["env"] == "/nonexistent/fonts.conf"  # put back once the fonts started
    assert got["fonts"].startswith("Liberation Sans (vl-convert's)")
    confs = list(tmp_path.glob("fonts/*/fonts.conf"))
    assert len(confs) == 1
    text = confs[0].read_text(encoding="utf-8")
    if got["chinese"]:
        assert got["fonts"].endswith(os.path.basename(got["chinese"]))
        *subset, folder = re.findall(r"<dir>(.*)</dir>", text)
        (held,) = Path(folder).iterdir()
        if subset:  # first, so a character found in it is measured from a file of 0.3 MB, not 4.6
            (cut,) = subset
            (cut,) = Path(cut).iterdir()
            assert cut.stat().st_size < held.stat().st_size
        if Path(got["chinese"]).read_bytes()[:4] == b"ttcf":  # a collection: the face fontconfig picks, apart
            assert not held.is_symlink() and held.suffix == ".ttf" and held.read_bytes()[:4] != b"ttcf"
        else:
            assert held.resolve() == Path(got["chinese"]).resolve()
    else:
        assert "<dir>" not in text  # no Chinese font: vl-convert's Latin font alone
    # The legend entry is a 16 px symbol, then the label: 89 px in Liberation Sans at 10 px
    # (103 px in DejaVu Sans, the sans-serif of many Linux systems).
    width = float(re.search(r'role-legend-entry.*?d="M0,0h0v0h0Z".*?d="M0,0h([\d.]+)v', got["svg"], re.S).group(1))
    assert 85 < width - 16 < 95


def test_the_cut_down_chinese_face_measures_as_the_whole_face(tmp_path) -> None:
    """A label of catalog characters, of symbols the reporter writes itself (³, µ, ×) and of rare
    characters the cut-down face lacks comes out the same from the cut-down face listed first as
    from the whole face alone: the same SVG, byte for byte."""
    import json
    import subprocess
    import sys

    pytest.importorskip("fontTools")
    from reporter.present.charts import chinese_font_face

    if chinese_font_face() is None:
        pytest.skip("no Chinese font installed")
    code = """
import json, sys
from pathlib import Path
import reporter.present.charts as charts
if sys.argv[1] == "whole":
    conf = charts._fontconfig_file(*charts.chinese_font_face())
    text = conf.read_text(encoding="utf-8")
    dirs = charts.re.findall(r"<dir>(.*)</dir>", text)
    whole = conf.with_name("whole.conf")
    whole.write_text(text.replace(f"  <dir>{dirs[0]}</dir>\\n", "") if len(dirs) > 1 else text, encoding="utf-8")
    charts._fontconfig_file = lambda font, index=0: whole
labels = ["矩阵乘法 1024³ bf16", "卷积 16×64×224² µs ≥ 2%", "龘靐齉爨 骉（罕见）猋", "吞吐量：样本/秒"]
spec = {"data": {"values": [{"a": a, "v": i} for i, a in enumerate(labels)]}, "mark": "bar",
        "encoding": {"y": {"field": "a", "type": "nominal", "axis": {"labelLimit": 0}}, "x": {"field": "v", "type": "quantitative"},
                     "color": {"field": "a", "type": "nominal", "legend": {"labelLimit": 0}}},
        "config": {"aria": False}}
print(json.dumps({"svg": charts.render_svg(spec), "fonts": charts.chart_fonts()}))
"""
    env = {**os.environ, "IMAGEBENCH_CACHE": str(tmp_path)}
    got = {}
    for how in ("cut", "whole"):
        out = subprocess.run([sys.executable, "-c", code, how], capture_output=True, text=True, env=env, check=True, cwd=ROOT)
        got[how] = json.loads(out.stdout)["svg"]
    (conf,) = tmp_path.glob("fonts/*/fonts.conf")
    assert len(re.findall(r"<dir>", conf.read_text(encoding="utf-8"))) == 2  # the cut-down face, then the whole
    assert "矩阵乘法" in got["cut"] and got["cut"] == got["whole"]


def test_without_fonttools_the_whole_face_alone_serves(tmp_path, monkeypatch) -> None:
    """No fontTools (or a face it cannot read): the fontconfig file lists the whole face alone."""
    import sys

    from reporter.present import charts

    font = tmp_path / "plain.ttf"
    font.write_bytes(b"\0\1\0\0" + b"\0" * 60)  # not a collection: linked as it is
    assert charts._subset_face(font, "汉") is None  # unreadable as a font: the subsetter gives up cleanly
    monkeypatch.setenv("IMAGEBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(sys.modules, "fontTools", None)  # import fontTools raises ImportError
    conf = charts._fontconfig_file(str(font))
    (folder,) = re.findall(r"<dir>(.*)</dir>", conf.read_text(encoding="utf-8"))
    assert [p.name for p in Path(folder).iterdir()] == ["plain.ttf"]


def test_a_face_of_a_font_collection_becomes_a_font_of_its_own(tmp_path) -> None:
    """Two faces sharing a table, packed as a collection the OpenType way: each face comes out as its
    table directory and its tables, at new aligned offsets, checksums kept."""
    import struct

    from reporter.present.charts import _collection_faces

    shared, own = b"glyf-shared-data", [b"name-zero", b"name-one!!"]
    faces_tables = [{b"glyf": shared, b"name": own[0]}, {b"glyf": shared, b"name": own[1]}]
    # Layout: header (12 + 4 * 2), two directories (12 + 16 * 2 each), then the table data.
    head = 12 + 4 * 2
    dirs = [head, head + 44]
    data_at = head + 88
    blobs, where = bytearray(), {}
    for blob in (shared, *own):
        where[blob] = data_at + len(blobs)
        blobs += blob + b"\0" * (-len(blob) % 4)
    out = bytearray(b"ttcf" + struct.pack(">II", 0x00010000, 2) + struct.pack(">2I", *dirs))
    for tables in faces_tables:
        out += struct.pack(">IHHHH", 0x00010000, len(tables), 32, 1, 0)
        for tag, blob in sorted(tables.items()):
            out += struct.pack(">4sIII", tag, 0x1234, where[blob], len(blob))
    out += blobs
    path = tmp_path / "pair.ttc"
    path.write_bytes(bytes(out))
    faces = _collection_faces(path)
    assert faces is not None and len(faces) == 2
    for face, tables in zip(faces, faces_tables):
        version, n = struct.unpack_from(">IH", face, 0)
        assert (version, n) == (0x00010000, 2)
        for i in range(n):
            tag, checksum, at, length = struct.unpack_from(">4sIII", face, 12 + 16 * i)
            assert checksum == 0x1234 and at % 4 == 0
            assert face[at:at + length] == tables[tag]
    plain = tmp_path / "one.ttf"
    plain.write_bytes(faces[0])
    assert _collection_faces(plain) is None  # not a collection: used as it is
    broken = tmp_path / "broken.ttc"
    broken.write_bytes(bytes(out[:60]))
    assert _collection_faces(broken) is None  # cut short: used as it is, never half read


def test_chart_processes_start_early_and_this_process_never_starts_vl_convert(tmp_path) -> None:
    """``ChartRenderer.start``: the renderer's version (a chart cache key's part, which starts
    vl-convert and its fonts) and whether it measures Chinese text are found in a chart
    process; the SVGs are those rendered here."""
    import json
    import subprocess
    import sys

    code = """
import json, sys
from reporter.present.charts import ChartRenderer
specs = [{"data": {"values": [{"a": a, "v": i}]}, "mark": "bar",
          "encoding": {"x": {"field": "a", "type": "nominal"}, "y": {"field": "v", "type": "quantitative"}},
          "config": {"aria": False}} for i, a in enumerate(["matmul", "矩阵乘法", "conv"])]
r = ChartRenderer(2, cache=True)
r.start()
r.submit(specs[:2])
r.submit(specs[2:])
svgs = r.results()
chinese = r.measures_chinese()
started_here = "vl_convert" in sys.modules
from reporter.present.charts import _renderer_version, measures_chinese, render_svg, render_svgs
print(json.dumps({"started_here": started_here, "version": r.version, "here": _renderer_version(render_svgs),
                  "chinese": chinese, "chinese_here": measures_chinese(),
                  "same": svgs == [render_svg(s) for s in specs]}))
"""
    env = {**os.environ, "IMAGEBENCH_CACHE": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, cwd=ROOT)
    got = json.loads(out.stdout)
    assert got["started_here"] is False
    assert got["version"] == got["here"] and "fonts=" in got["version"]
    assert got["chinese"] is got["chinese_here"]  # the chart process's answer, without vl-convert here
    assert got["same"] is True


def test_direct_labels_name_each_line_at_its_end_and_never_overlap() -> None:
    from reporter.present.charts import LINE_HEIGHT, MORE_COLORS

    rows = []
    for x, label in enumerate(["a-1", "a-2", "a-3"]):
        for j in range(8):  # eight lines, four pairs of which end at the same height
            v = (j // 2 + 1) * 1e-3 * (1 + 0.02 * x)
            rows.append({"x": label, "y": v, "y_low": v * 0.98, "y_high": v * 1.02,
                         "series": f"matmul {256 * (j + 1)}², fp32-strict, a name long enough to wrap"})
    spec = chart_lines(rows, x_title="label", y_title="time", y_unit="s", x_type="N", log_x=False, log_y=True,
                       direct_labels=True)
    ends = sorted((d for d in spec["datasets"]["rows"] if d.get("end")), key=lambda d: d["end_y"])
    assert len(ends) == 8 and all(d["x"] == "a-3" for d in ends)
    for above, below in zip(ends, ends[1:]):  # each name's lines end before the next name begins
        assert above["end_y"] + above["series"].count("\n") * LINE_HEIGHT + LINE_HEIGHT <= below["end_y"] + 1e-6
    assert spec["layer"][1]["encoding"]["color"]["legend"] is None
    svg = render_svg(spec)
    for d in ends:
        assert d["series"].split("\n")[0] in svg
    with pytest.raises(ValueError, match="at most 8"):
        chart_lines([dict(r, series=f"s{i}") for i, r in enumerate(rows[:len(MORE_COLORS) + 1])], x_title="x",
                    y_title="y", x_type="N", log_x=False, direct_labels=True)
