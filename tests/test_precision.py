"""Precision regimes: fp32 at the stack's defaults, fp32-strict, tf32; settings recorded per case."""

from __future__ import annotations

import json

import pytest

from runformat.schema import legacy_case_id
from collector.workloads import registry
from tests.test_workloads_cases import GPU1 as H200
from tests.workload_support import make_ctx

torch = pytest.importorskip("torch")

from collector.workloads._common import Precision, effective_precision  # noqa: E402


def _flags():
    b = torch.backends
    return b.cuda.matmul.allow_tf32, b.cudnn.allow_tf32, torch.get_float32_matmul_precision()


def test_fp32_touches_nothing_and_the_regimes_are_restored():
    before = _flags()
    with Precision(torch, "fp32"):
        assert _flags() == before
    with Precision(torch, "tf32"):
        assert _flags() == (True, True, "high")
    assert _flags() == before
    with Precision(torch, "fp32-strict"):
        assert _flags() == (False, False, "highest")
    assert _flags() == before


def test_a_stack_default_shows_in_the_fp32_case(monkeypatch):
    """A stack whose default is TF32 on: fp32 keeps it, fp32-strict does not; both recorded."""
    saved = _flags()
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        for dtype, expected in (("fp32", True), ("fp32-strict", False), ("tf32", True)):
            ctx = make_ctx()
            registry()["matmul"].run({"n": 32, "dtype": dtype}, ctx)
            assert ctx.recorded.settings["matmul_allow_tf32"] is expected
            assert ctx.recorded.settings["NVIDIA_TF32_OVERRIDE"] == "0"
            json.dumps(ctx.recorded.settings)  # stored as JSON
        assert torch.backends.cuda.matmul.allow_tf32 is True  # the default survives the cases
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[:2]
        torch.set_float32_matmul_precision(saved[2])


def test_effective_precision_names_every_setting():
    s = effective_precision(torch)
    assert set(s) == {
        "matmul_allow_tf32", "cudnn_allow_tf32", "float32_matmul_precision", "cudnn_benchmark",
        "cudnn_deterministic", "NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
    }


def test_a_gpu_with_tf32_measures_all_three_float32_regimes():
    for name in ("matmul", "conv2d"):
        dtypes = {c["dtype"] for c in registry()[name].cases("standard", H200)}
        assert {"fp32", "fp32-strict", "tf32"} <= dtypes, name


def test_cpu_vs_gpu_leaves_the_defaults_as_it_found_them():
    before = _flags()
    with Precision(torch, "fp32-strict"):
        pass
    assert _flags() == before


def test_old_strict_fp32_ids_are_compared_as_fp32_strict():
    assert legacy_case_id("matmul[dtype=fp32,n=1024]", "matmul", None) == "matmul[dtype=fp32-strict,n=1024]"
    assert legacy_case_id("conv2d[batch=16,dtype=fp32,kernel=3]", "conv2d", None) == "conv2d[batch=16,dtype=fp32-strict,kernel=3]"
    # A new run recorded its settings: its fp32 is the stack's default, kept as is.
    assert legacy_case_id("matmul[dtype=fp32,n=1024]", "matmul", "{}") == "matmul[dtype=fp32,n=1024]"
    # Other workloads and dtypes never change.
    assert legacy_case_id("amp[precision=fp32]", "amp", None) == "amp[precision=fp32]"
    assert legacy_case_id("matmul[dtype=tf32,n=1024]", "matmul", None) == "matmul[dtype=tf32,n=1024]"
