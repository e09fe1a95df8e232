"""Human names for what ran: case labels ("matmul 4096³ bf16"), block headings, host names.

A case's parameters (the JSON recorded in cases.parquet) become a short label in the
article's language: each parameter has a renderer (``PARAM_PARTS``) and each workload the
order its parameters are read in (``WORKLOAD_ORDER``); a parameter nobody knows is shown
as ``key=value``, so a run of a newer collector still gets a label that tells its cases
apart. Words come from the ``[label]`` table of the message catalogues.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Mapping, Sequence

from runformat.schema import distinct_params, params_from_json
from reporter.present.messages import Catalogue

MODEL_NAMES = {
    "resnet50": "ResNet-50",
    "resnet18": "ResNet-18",
    "bert-base": "BERT-base",
    "bert-mini": "BERT-mini",
    "cnn-tiny": "tiny CNN",
    "small-cnn": "small CNN",
    "none": "",
}
# Parameters that only say how a case was set up, not what it measures.
QUIET_PARAMS = frozenset({"num_classes", "duration_s", "seed", "cap", "resolution", "start", "scale", "heads", "kernel"})
# The order parameters are read in, per workload (the rest follow in sorted order).
WORKLOAD_ORDER: dict[str, tuple[str, ...]] = {
    "matmul": ("n", "dtype"),
    "cpu_vs_gpu": ("n", "on"),
    "conv2d": ("batch", "channels", "size", "dtype", "layout", "pass"),
    "memory": ("op", "elements", "dtype"),
    "resnet50_train": ("model", "data", "image_size", "batch", "channels_last", "loader_workers"),
    "bert_train": ("model", "batch", "seq"),
    "compile": ("model", "mode", "batch", "seq", "image_size", "channels_last", "precision"),
    "amp": ("model", "batch", "seq", "image_size", "channels_last", "precision"),
    "dataloader": ("shape", "batch", "num_workers", "pin_memory", "model"),
    "inference": ("model", "image_size", "batch", "precision", "channels_last"),
    "concurrent_inference": ("model", "tasks", "batch", "image_size", "memory_fraction"),
    "multigpu": ("mode", "model", "replicas", "batch_per_replica", "image_size", "channels_last"),
    "max_batch": ("model", "image_size", "seq", "precision", "channels_last"),
    "checkpointing": ("layers", "d_model", "seq", "batch", "precision", "checkpoint"),
    "numerics": ("model", "precision", "steps", "batch"),
    "allocator": ("pattern", "alloc_conf"),
}


params_of = params_from_json  # the recorded parameters as a dict, as the pages read them


def _count(v: Any) -> str:
    """An element count as 1M, 256M, 16K."""
    n = int(v)
    for scale, suffix in ((2**30, "G"), (2**20, "M"), (2**10, "K")):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{suffix}"
    return f"{n:,}"


def _part(t: Catalogue, workload: str, key: str, value: Any, params: Mapping[str, Any]) -> str:
    """One parameter as a word or two ('' when it says nothing on its own)."""
    w = lambda name, **kw: t.plain(f"label.{name}", **kw)  # noqa: E731
    if key == "model":
        # A descriptive name ("tiny CNN") is said in the page's language; proper names stay.
        if t.has(f"model_name.{value}"):
            return t.plain(f"model_name.{value}")
        return MODEL_NAMES.get(str(value), str(value))
    if key == "n":
        return f"{value}³"
    if key in ("dtype",):
        return str(value)
    if key == "precision":
        if workload == "amp":
            return w("fp32_no_amp") if value == "fp32" else w("amp", dtype=value)
        return str(value)
    if key in ("image_size", "size"):
        if workload == "conv2d":
            return ""  # part of the conv shape
        return f"{value}²"
    if key == "channels":
        return ""
    if key == "batch":
        if workload == "conv2d":
            return f"{params.get('batch')}×{params.get('channels')}×{params.get('size')}²"
        if "seq" in params and workload in ("bert_train", "amp", "compile"):
            return w("batch_seq", batch=value, seq=params["seq"])
        return w("batch", v=value)
    if key == "seq":
        return "" if workload in ("bert_train", "amp", "compile") and "batch" in params else w("seq", v=value)
    if key == "channels_last":
        return "channels_last" if value else "NCHW"
    if key == "layout":
        return {"nchw": "NCHW"}.get(str(value), str(value))
    if key == "pass":
        return {"forward": w("fwd"), "forward_backward": w("fwd_bwd")}.get(str(value), str(value))
    if key == "elements":
        return _count(value)
    if key == "op":
        return {"clone": w("clone"), "broadcast_add": w("broadcast_add")}.get(str(value), str(value))
    if key == "on":
        return w("on_cpu") if value == "cpu" else w("on_gpu")
    if key == "data":
        return {"synthetic": "", "cifar10": w("real_cifar10")}.get(str(value), str(value))
    if key == "loader_workers":
        return w("loader_workers", v=value)
    if key == "mode":
        names = {"eager": w("eager"), "compile": "torch.compile", "ddp": "DDP", "dp": "DataParallel"}
        return names.get(str(value), str(value))
    if key == "shape":
        return {"cifar": w("cifar_like"), "imagenet": w("imagenet_like")}.get(str(value), str(value))
    if key == "num_workers":
        return w("workers", v=value)
    if key == "pin_memory":
        return w("pinned") if value else ""
    if key == "tasks":
        return w("tasks", v=value)
    if key == "memory_fraction":
        return w("memory_cap", v=f"{float(value) * 100:g}%")
    if key == "replicas":
        return w("replicas", v=value)
    if key == "batch_per_replica":
        return w("batch_per_gpu", v=value)
    if key == "layers":
        return w("transformer", layers=value, d=params.get("d_model", "?"))
    if key == "d_model":
        return ""
    if key == "checkpoint":
        return w("checkpoint_on") if value else w("checkpoint_off")
    if key == "steps":
        return w("steps", v=value)
    if key == "alloc_conf":
        return str(value)
    if key == "pattern":
        return {"random_tensors": w("random_tensors"), "varlen_transformer": w("varlen_transformer")}.get(str(value), str(value))
    if isinstance(value, bool):
        value = "true" if value else "false"
    return f"{key}={value}"


def _keys(workload: str, params: Mapping[str, Any]) -> list[str]:
    order = WORKLOAD_ORDER.get(workload, ())
    return [k for k in order if k in params] + sorted(k for k in params if k not in order)


def case_label(t: Catalogue, workload: str, params: str | Mapping[str, Any] | None, *,
               omit: Iterable[str] = (), with_workload: bool = False) -> str:
    """A case's short label: ``matmul 4096³ bf16``, ``ResNet-50, batch 256, AMP bf16``.

    ``omit`` leaves out parameters a heading already names; ``with_workload`` starts the
    label with the workload's short name where its parameters alone do not say what ran.
    """
    if isinstance(params, str) or params is None:  # as recorded: the same text, the same label
        key = (workload, params, tuple(sorted(omit)), with_workload)
        known = t.__dict__.setdefault("_case_labels", {})
        if key not in known:
            known[key] = _case_label(t, workload, params, omit=key[2], with_workload=with_workload)
        return known[key]
    return _case_label(t, workload, params, omit=omit, with_workload=with_workload)


def _case_label(t: Catalogue, workload: str, params: str | Mapping[str, Any] | None, *,
                omit: Iterable[str] = (), with_workload: bool = False) -> str:
    p = params_of(params)
    skip = set(omit) | QUIET_PARAMS
    parts = [_part(t, workload, k, p[k], p) for k in _keys(workload, p) if k not in skip]
    # conv2d's shape is one part whose keys may be omitted one by one.
    if workload == "conv2d" and "batch" in skip and not {"channels", "size"} <= skip:
        parts.insert(0, f"{p.get('batch')}×{p.get('channels')}×{p.get('size')}²")
    text = t.plain("label.sep").join(x for x in parts if x)
    if workload in ("matmul", "cpu_vs_gpu", "memory", "conv2d") and text:
        text = text.replace(", ", " ") if workload in ("matmul", "memory") else text
    if with_workload or workload in ("matmul", "cpu_vs_gpu", "conv2d"):
        name = t.plain(f"workload_short.{workload}") if t.has(f"workload_short.{workload}") else workload
        text = f"{name} {text}".strip() if text else name
    return text


def distinct_labels(t: Catalogue, workload: str, params_list: Sequence[Mapping[str, Any]],
                    label: Callable[[Mapping[str, Any]], str]) -> list[str]:
    """``label`` of every case, with ``key=value`` added where two cases would read the same."""
    labels = [label(p) for p in params_list]
    for i, text in enumerate(labels):
        same = [j for j, other in enumerate(labels) if other == text]
        if len(same) < 2:
            continue
        for j in same:
            differing = sorted(k for k in params_list[j]
                               if any(params_list[j].get(k) != params_list[o].get(k) for o in same if o != j))
            extra = ", ".join(f"{k}={params_list[j][k]}" for k in differing)
            labels[j] = f"{text} ({extra})" if extra else text
    return labels


def constant_params(params_list: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The parameters every case shares (the same key with the same value in each)."""
    if not params_list:
        return {}
    first = params_list[0]
    return {k: v for k, v in first.items() if all(k in p and p[k] == v for p in params_list[1:])}


def block_heading(t: Catalogue, workload: str, params_list: Sequence[Mapping[str, Any]]) -> tuple[str, set[str]]:
    """A heading naming what ran ('BERT fine-tuning step: BERT-mini, batch 4 × seq 32'), and the keys it names.

    The heading carries the parameters all of the block's cases share, so the rows need
    only say what differs between them.
    """
    name = t.plain(f"workload_name.{workload}") if t.has(f"workload_name.{workload}") else workload
    shared = constant_params(params_list)
    if len(params_list) < 2:
        shared = {k: v for k, v in shared.items() if k in ("model",)}
    # Keys rendered together must be named together.
    if workload == "conv2d" and not {"batch", "channels", "size"} <= set(shared):
        shared = {k: v for k, v in shared.items() if k not in ("batch", "channels", "size")}
    if {"batch", "seq"} & set(shared) and workload in ("bert_train", "amp", "compile") and not {"batch", "seq"} <= set(shared):
        shared = {k: v for k, v in shared.items() if k not in ("batch", "seq")}
    if "layers" in shared and "d_model" not in shared:
        shared.pop("layers")
    if MODEL_NAMES.get(str(shared.get("model")), "\0") in name:  # "ResNet-50 training step: ResNet-50"
        shared.pop("model")
    if not shared:
        return name, set()
    described = case_label(t, workload, shared) if workload not in ("matmul", "cpu_vs_gpu", "conv2d") else \
        t.plain("label.sep").join(x for x in (_part(t, workload, k, shared[k], shared) for k in _keys(workload, shared)
                                              if k not in QUIET_PARAMS) if x)
    return (t.plain("label.titled", name=name, described=described) if described else name), set(shared)


def host_label(fp: Mapping[tuple[str, str], Sequence[str]], t: Catalogue) -> str | None:
    """A host as a reader knows it: its CPU and cores, memory, and whether it ran in a container.

    Host names of cloud machines and containers ("vm", a container id) say nothing, so
    the name is kept only beside these facts.
    """
    cpu = (fp.get(("cpu", "model")) or [None])[0]
    cores = (fp.get(("cpu", "logical_cores")) or [None])[0]
    memory = (fp.get(("memory", "total_bytes")) or [None])[0]
    name = (fp.get(("host", "hostname")) or [None])[0]
    container = (fp.get(("container", "docker")) or [None])[0] == "True"
    parts = []
    if cpu:
        parts.append(t.plain("label.host_cpu", cpu=cpu, cores=cores) if cores else cpu)
    if memory and str(memory).isdigit():
        parts.append(t.plain("label.host_memory", size=f"{float(memory) / 2**30:.0f} GiB"))
    if container:
        parts.append(t.plain("label.host_container"))
    if not parts:
        return name
    listed = t.plain("label.sep").join(parts)
    return t.plain("label.host", name=name, parts=listed) if name else listed
