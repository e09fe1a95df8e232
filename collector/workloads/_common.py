"""Helpers shared by workloads: dtypes by name, element sizes."""

from __future__ import annotations

from typing import Any

from collector.workloads import DeviceInfo

# Names used in case parameters; "tf32" is float32 storage with TF32 matrix units on.
DTYPE_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp64": 8}


def torch_dtype(torch: Any, name: str) -> Any:
    """The torch dtype stored for a parameter name."""
    return {
        "fp32": torch.float32,
        "tf32": torch.float32,
        "bf16": torch.bfloat16,
        "fp16": torch.float16,
        "fp64": torch.float64,
    }[name]


def matmul_dtypes(device: DeviceInfo) -> list[str]:
    """The matmul dtypes this device supports natively."""
    if not device.is_cuda:
        return ["fp32", "bf16"]
    names = ["fp32"]
    if device.tf32:
        names.append("tf32")
    if device.bf16:
        names.append("bf16")
    if device.fp16:
        names.append("fp16")
    return names


class TF32:
    """Context manager: TF32 matrix units on or off for matmul and cuDNN, restored after."""

    def __init__(self, torch: Any, enabled: bool) -> None:
        self.torch = torch
        self.enabled = enabled

    def __enter__(self) -> "TF32":
        b = self.torch.backends
        self.saved = (b.cuda.matmul.allow_tf32, b.cudnn.allow_tf32)
        b.cuda.matmul.allow_tf32 = self.enabled
        b.cudnn.allow_tf32 = self.enabled
        return self

    def __exit__(self, *exc: Any) -> None:
        b = self.torch.backends
        b.cuda.matmul.allow_tf32, b.cudnn.allow_tf32 = self.saved
