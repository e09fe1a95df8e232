"""Helpers shared by workloads: dtypes by name, element sizes, precision regimes.

A float32 case runs in one of three regimes, named by its ``dtype`` parameter:

* ``fp32``: the stack **as shipped**. No TF32 flag and no matmul precision is touched,
  so a stack (or an environment variable such as ``NVIDIA_TF32_OVERRIDE``) that changes
  the default precision shows in the figures.
* ``fp32-strict``: TF32 off everywhere (cuBLAS and cuDNN), matmul precision ``highest``.
* ``tf32``: TF32 on everywhere, matmul precision ``high``.

Every case records the settings it was measured with (``effective_precision``), so the
reporter can warn where the two sides of a comparison ran differently.
"""

from __future__ import annotations

import os
from typing import Any

from collector.workloads import DeviceInfo

# Names used in case parameters: fp32, fp32-strict and tf32 are float32 storage.
DTYPE_BYTES = {"fp32": 4, "fp32-strict": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp64": 8}
FP32_REGIMES = ("fp32", "fp32-strict", "tf32")
# Environment variables read by cuBLAS/cuDNN or torch that change float32 precision.
PRECISION_ENV = ("NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE")


def torch_dtype(torch: Any, name: str) -> Any:
    """The torch dtype stored for a parameter name."""
    return {
        "fp32": torch.float32,
        "fp32-strict": torch.float32,
        "tf32": torch.float32,
        "bf16": torch.bfloat16,
        "fp16": torch.float16,
        "fp64": torch.float64,
    }[name]


def matmul_dtypes(device: DeviceInfo) -> list[str]:
    """The matmul dtypes this device supports natively (fp32 at the stack's defaults first)."""
    if not device.is_cuda:
        return ["fp32", "bf16"]
    names = ["fp32"]
    if device.tf32:
        names += ["fp32-strict", "tf32"]  # without TF32 units, fp32 is already strict
    if device.bf16:
        names.append("bf16")
    if device.fp16:
        names.append("fp16")
    return names


def effective_precision(torch: Any) -> dict[str, Any]:
    """The float32 precision settings in force now, as JSON-ready values.

    Keys: ``matmul_allow_tf32`` (``torch.backends.cuda.matmul.allow_tf32``),
    ``cudnn_allow_tf32``, ``float32_matmul_precision``, ``cudnn_benchmark``,
    ``cudnn_deterministic``, and each of ``PRECISION_ENV`` (``None`` when unset).
    A setting this torch does not have is ``None``.
    """

    def get(fn: Any) -> Any:
        try:
            return fn()
        except Exception:  # an older or newer torch without the attribute
            return None

    b = torch.backends
    out: dict[str, Any] = {
        "matmul_allow_tf32": get(lambda: bool(b.cuda.matmul.allow_tf32)),
        "cudnn_allow_tf32": get(lambda: bool(b.cudnn.allow_tf32)),
        "float32_matmul_precision": get(lambda: str(torch.get_float32_matmul_precision())),
        "cudnn_benchmark": get(lambda: bool(b.cudnn.benchmark)),
        "cudnn_deterministic": get(lambda: bool(b.cudnn.deterministic)),
    }
    for name in PRECISION_ENV:
        out[name] = os.environ.get(name)
    return out


class Precision:
    """Context manager: put a case's precision regime in force, restore the defaults after.

    ``fp32`` (and every non-float32 name) touches nothing: the stack's defaults apply.
    ``fp32-strict`` turns TF32 off for cuBLAS and cuDNN and sets matmul precision
    ``highest``; ``tf32`` turns both on and sets ``high``.
    """

    def __init__(self, torch: Any, regime: str) -> None:
        self.torch = torch
        self.regime = regime
        self.saved: tuple[Any, Any, Any] | None = None

    def __enter__(self) -> "Precision":
        if self.regime not in ("fp32-strict", "tf32"):
            return self
        torch, b = self.torch, self.torch.backends
        self.saved = (b.cuda.matmul.allow_tf32, b.cudnn.allow_tf32, torch.get_float32_matmul_precision())
        on = self.regime == "tf32"
        torch.set_float32_matmul_precision("high" if on else "highest")
        b.cuda.matmul.allow_tf32 = on
        b.cudnn.allow_tf32 = on
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.saved is None:
            return
        torch, b = self.torch, self.torch.backends
        matmul, cudnn, precision = self.saved
        torch.set_float32_matmul_precision(precision)
        b.cuda.matmul.allow_tf32, b.cudnn.allow_tf32 = matmul, cudnn
