"""Training workloads run for real on the CPU at smoke scale: ResNet-50, BERT, AMP, compile, checkpointing."""

from __future__ import annotations

import math
import pickle
import sys
from pathlib import Path

import pytest

from collector.context import Context, SkipCase
from collector.suites import SUITES
from collector.workloads import registry

from workload_support import INFO, make_ctx, recorded  # noqa: E402


def assert_step_times(ctx: Context, *, minimum: int) -> list[float]:
    values = recorded(ctx)
    times = values["time"]
    assert len(times) >= minimum
    assert all(math.isfinite(t) and 0 < t < 60 for t in times)
    assert ctx.recorded.timing == "wall"
    return times


def run_case(name: str, params: dict, ctx: Context | None = None) -> Context:
    ctx = ctx or make_ctx()
    registry()[name].run(params, ctx)
    return ctx


# -- ResNet-50 ----------------------------------------------------------------------------------
def test_resnet50_synthetic_cifar_shape():
    params = next(p for p in registry()["resnet50_train"].cases("smoke", INFO) if p["data"] == "synthetic")
    ctx = run_case("resnet50_train", params)
    assert_step_times(ctx, minimum=SUITES["smoke"].policy.min_samples)
    assert ctx.recorded.items == params["batch"] and ctx.recorded.items_unit == "images"
    assert "peak_allocated" not in recorded(ctx)  # GPU memory only on a GPU


def test_resnet50_real_cifar10_is_skipped_without_data(tmp_path):
    params = next(p for p in registry()["resnet50_train"].cases("smoke", INFO) if p["data"] == "cifar10")
    with pytest.raises(SkipCase, match="never downloads"):
        run_case("resnet50_train", params)
    with pytest.raises(SkipCase, match="not found under"):
        run_case("resnet50_train", params, make_ctx(data_dir=str(tmp_path)))


def write_fake_cifar10(root: Path, per_file: int = 16) -> None:
    """Small files in torchvision's CIFAR-10 layout (random pixels; the md5 checks are patched)."""
    import numpy as np

    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        entry = {"data": rng.integers(0, 256, (per_file, 3072), dtype=np.uint8), "labels": rng.integers(0, 10, per_file).tolist()}
        (folder / name).write_bytes(pickle.dumps(entry))
    (folder / "batches.meta").write_bytes(pickle.dumps({"label_names": [f"c{i}" for i in range(10)]}))


def test_resnet50_real_cifar10_through_torchvision(tmp_path, monkeypatch):
    import torchvision.datasets.cifar

    write_fake_cifar10(tmp_path / "cifar10")
    # The files are ours, not the published ones: let torchvision's md5 checks pass.
    monkeypatch.setattr(torchvision.datasets.cifar, "check_integrity", lambda *args, **kwargs: True)
    params = next(p for p in registry()["resnet50_train"].cases("smoke", INFO) if p["data"] == "cifar10")
    ctx = run_case("resnet50_train", params, make_ctx(data_dir=str(tmp_path)))
    assert_step_times(ctx, minimum=3)
    assert any("real CIFAR-10" in n for n in ctx.recorded.notes)


def test_missing_torchvision_and_transformers_skip_with_a_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "torchvision", None)  # makes `import torchvision` fail
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(SkipCase, match="torchvision is not installed"):
        run_case("resnet50_train", registry()["resnet50_train"].cases("smoke", INFO)[0])
    with pytest.raises(SkipCase, match="transformers is not installed"):
        run_case("bert_train", registry()["bert_train"].cases("smoke", INFO)[0])
    with pytest.raises(SkipCase, match="transformers is not installed"):
        run_case("amp", dict(model="bert-tiny", batch=2, seq=16, precision="fp32"))


# -- BERT, AMP, checkpointing -------------------------------------------------------------------------
def test_bert_tiny_training_step():
    (params,) = registry()["bert_train"].cases("smoke", INFO)
    assert params["model"] == "bert-tiny"  # the smoke suite says it is not BERT-base
    ctx = run_case("bert_train", params)
    assert_step_times(ctx, minimum=3)
    assert ctx.recorded.items == 2 and ctx.recorded.items_unit == "sequences"


def test_amp_fp32_and_bf16_run_and_fp16_is_skipped_on_the_cpu():
    by_precision: dict[str, list[str]] = {}
    for params in registry()["amp"].cases("smoke", INFO):
        if params["precision"] == "fp16":
            with pytest.raises(SkipCase, match="GPUs only"):
                run_case("amp", params)
            by_precision.setdefault("fp16", []).append("skipped")
            continue
        ctx = run_case("amp", params)
        assert_step_times(ctx, minimum=3)
        by_precision.setdefault(params["precision"], []).append(params["model"])
    assert set(by_precision) == {"fp32", "bf16", "fp16"}
    assert sorted(by_precision["bf16"]) == ["bert-tiny", "resnet50"]


def test_checkpointing_with_and_without():
    listed = registry()["checkpointing"].cases("smoke", INFO)
    assert [p["checkpoint"] for p in listed] == [False, True]
    for params in listed:
        ctx = run_case("checkpointing", params)
        assert_step_times(ctx, minimum=3)
        assert ctx.recorded.items_unit == "tokens"


# -- compile ------------------------------------------------------------------------------------------
def test_compile_counts_graph_breaks_and_recompiles():
    import torch

    from collector.workloads.compile import compile_counts, reset_dynamo

    reset_dynamo(torch)

    def f(x):
        y = x * 2
        torch._dynamo.graph_break()
        return y + 1

    g = torch.compile(f, backend="eager", dynamic=False)
    g(torch.ones(3))
    g(torch.ones(5))  # a new static shape: a recompilation
    breaks, recompiles = compile_counts(torch)
    reset_dynamo(torch)
    assert breaks >= 1
    assert recompiles is not None and recompiles >= 1


def test_compile_smoke_cases_compile_for_real(tmp_path, monkeypatch):
    from torch._inductor import codecache

    listed = registry()["compile"].cases("smoke", INFO)
    assert [p["mode"] for p in listed] == ["eager", "compile"]
    eager = run_case("compile", listed[0])
    assert_step_times(eager, minimum=3)
    # torch's own folder for precompiled headers, empty here, as on a fresh machine
    default = tmp_path / "torchinductor" / "precompiled_headers"
    if isinstance(getattr(codecache, "_HEADER_DIR", None), str):
        monkeypatch.setattr(codecache, "_HEADER_DIR", str(default))
        monkeypatch.setattr(codecache, "_HEADER_LOCK_DIR", str(default / "locks"))
        codecache._precompile_header.cache_clear()
    ctx = run_case("compile", listed[1])  # inductor, C++ for the CPU: tens of seconds on two cores
    # the case's headers were made in its own fresh cache folder and went with it
    assert not default.exists()
    values = recorded(ctx)
    assert len(values["compile_time"]) == 1 and values["compile_time"][0] > 0
    assert_step_times(ctx, minimum=3)
    assert values["graph_breaks"] == [0] and values["recompiles"] == [0]
    # the compile is cold: the first step took longer than any steady-state step
    assert values["compile_time"][0] > max(values["time"])


def test_fresh_compile_caches_move_inductors_precompiled_headers_and_put_them_back():
    import os

    from torch._inductor import codecache

    from collector.workloads._models import fresh_compile_caches

    if not isinstance(getattr(codecache, "_HEADER_DIR", None), str):
        pytest.skip("this torch keeps no precompiled-header folder of its own")
    before = (codecache._HEADER_DIR, codecache._HEADER_LOCK_DIR)
    with fresh_compile_caches() as folder:
        assert codecache._HEADER_DIR.startswith(folder) and codecache._HEADER_LOCK_DIR.startswith(folder)
        assert os.environ["TORCHINDUCTOR_CACHE_DIR"].startswith(folder)
        assert codecache._precompile_header.cache_info().currsize == 0  # no path made before is reused
    assert (codecache._HEADER_DIR, codecache._HEADER_LOCK_DIR) == before


def test_a_model_built_again_from_the_same_seed_is_a_copy_that_leaves_the_generator_where_a_build_would():
    import torch

    from collector.workloads import _models

    def build(seed: int) -> tuple[object, object]:
        torch.manual_seed(seed)
        model = _models.build_image_model("resnet18", 10)
        return model, torch.randn(4)  # the generator's state after the build

    _models._BUILT.clear()
    first, after_first = build(0)
    second, after_second = build(0)  # from the kept model
    assert ("resnet18", 10) in _models._BUILT
    assert torch.equal(after_first, after_second)
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), second.state_dict().values()))
    first.fc.weight.data.zero_()  # a case that changes its model changes no other case's
    third, _ = build(0)
    assert not torch.equal(third.fc.weight, first.fc.weight) and torch.equal(third.fc.weight, second.fc.weight)
    other, _ = build(1)  # another generator state: built anew, other weights
    assert not torch.equal(other.fc.weight, second.fc.weight)
    torch.manual_seed(1)
    fresh = _models._build_image_model("resnet18", 10)
    assert torch.equal(fresh.fc.weight, other.fc.weight)
