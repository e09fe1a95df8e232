"""Models, synthetic batches and training steps the end-to-end workloads share.

Not a workload (the leading underscore keeps it out of the registry). Importing it does not
import torch: the torch-using helpers import it when they are called, so workload modules
can import this one at module level and still list cases without torch.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Any, Callable, Iterator, Mapping

from collector.workloads import DeviceInfo

# GPU suites in increasing order of cost; a case listed for one is listed for the later ones.
GPU_LEVELS = ("quick", "standard", "full")

# BERT sizes. "base" is BertConfig()'s defaults (BERT-base: 12 layers, hidden 768, 110M
# parameters), the MRPC fine-tuning model of the published write-ups. "mini" and "tiny" exist only so the
# CPU suites finish on two cores; their names say they are not BERT-base.
BERT_CONFIGS: dict[str, dict[str, int]] = {
    "bert-base": {},
    "bert-mini": dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512),
    "bert-tiny": dict(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=256,
        vocab_size=1024,
        max_position_embeddings=128,
    ),
}
IMAGE_MODELS = ("resnet50", "resnet18", "cnn-tiny")


# -- planning (no torch) -----------------------------------------------------------------
def tier(suite: str, device: DeviceInfo) -> str:
    """The scale a suite runs at on a device: ``tiny`` (smoke), ``small`` (the CPU suite, or
    any suite on a CPU device), else the GPU suite's own name (quick, standard, full)."""
    if suite == "smoke":
        return "tiny"
    if suite == "cpu" or not device.is_cuda or suite not in GPU_LEVELS:
        return "small"
    return suite


def at_least(level: str, minimum: str) -> bool:
    """True when GPU level ``level`` includes the cases of ``minimum`` (quick < standard < full)."""
    return level in GPU_LEVELS and GPU_LEVELS.index(level) >= GPU_LEVELS.index(minimum)


def is_bert(model: str) -> bool:
    return model in BERT_CONFIGS


def packages_for(params: Mapping[str, Any]) -> tuple[str, ...]:
    """The packages beside torch that a case's model is built with (none for a tensor case).

    A worker imports them before its first case (``collector.worker``), together with
    the other workers, so that no case waits for ``import transformers``.
    """
    model = str(params.get("model", ""))
    if is_bert(model):
        # BERT's own module, not only the package: transformers imports its models lazily, and
        # the first BertForSequenceClassification of a process took 1-3 s more (modeling_utils).
        return ("transformers.models.bert.modeling_bert",)
    if model.startswith("resnet"):
        return ("torchvision",)
    return ()


# -- packages ------------------------------------------------------------------------------
def require(ctx: Any, package: str, what: str) -> Any:
    """Import ``package`` or skip the case with a reason that names it."""
    import importlib

    try:
        return importlib.import_module(package)
    except ImportError as e:
        ctx.skip(f"{package} is not installed in this stack ({e}); {what} needs it")


def require_model(ctx: Any, model: str) -> None:
    """Skip when the package that builds ``model`` is missing."""
    if is_bert(model):
        require(ctx, "transformers", f"{model} (BertForSequenceClassification)")
    elif model.startswith("resnet"):
        require(ctx, "torchvision", f"{model} (torchvision.models)")


# -- models --------------------------------------------------------------------------------
def build_image_model(name: str, num_classes: int) -> Any:
    """A classifier built from code with random weights (nothing is ever downloaded).

    A worker builds the same ResNet-50 for dozens of cases, each time right after seeding
    the generator (0.2 s on a CPU core for its random initialisation). The first build of a
    (model, classes) is kept on the CPU with the generator's state before and after it; a
    later build that starts from the same state gets a copy and leaves the generator where
    building it would have, so every case sees the same weights and random numbers as if
    it had built the model itself.
    """
    import copy

    import torch

    key = (name, num_classes)
    before = torch.get_rng_state()
    kept = _BUILT.get(key)
    if kept is not None and torch.equal(kept[0], before):
        torch.set_rng_state(kept[2])
        return copy.deepcopy(kept[1])
    model = _build_image_model(name, num_classes)
    _BUILT[key] = (before, copy.deepcopy(model), torch.get_rng_state())
    return model


# (model, classes) -> (generator state before the build, the model as built, state after)
_BUILT: dict[tuple[str, int], tuple[Any, Any, Any]] = {}


def _build_image_model(name: str, num_classes: int) -> Any:
    import torch.nn as nn

    if name == "resnet50":
        import torchvision

        return torchvision.models.resnet50(weights=None, num_classes=num_classes)
    if name == "resnet18":
        import torchvision

        return torchvision.models.resnet18(weights=None, num_classes=num_classes)
    if name == "cnn-tiny":
        # Two conv blocks: enough layers for autograd, compile and DDP to have real work,
        # small enough for a CPU test to compile in seconds.
        return nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1, stride=2, bias=False),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(32, num_classes),
        )
    raise ValueError(f"unknown image model {name!r}; known: {', '.join(IMAGE_MODELS)}")


def build_bert(name: str) -> Any:
    """``BertForSequenceClassification(BertConfig(...))`` with random weights (no download)."""
    from transformers import BertConfig, BertForSequenceClassification

    if name not in BERT_CONFIGS:
        raise ValueError(f"unknown BERT size {name!r}; known: {', '.join(BERT_CONFIGS)}")
    return BertForSequenceClassification(BertConfig(**BERT_CONFIGS[name]))


# -- precision -----------------------------------------------------------------------------
def check_precision(ctx: Any, precision: str) -> None:
    """Skip precisions this device cannot train in (with the reason)."""
    if precision not in ("fp32", "bf16", "fp16"):
        raise ValueError(f"unknown precision {precision!r}; known: fp32, bf16, fp16")
    if precision == "fp16" and ctx.device != "cuda":
        ctx.skip(
            "fp16 autocast with GradScaler is measured on GPUs only: CPUs have no fp16 matrix "
            "units worth comparing, so the CPU suites measure fp32 and bf16"
        )
    if precision == "bf16" and ctx.device == "cuda" and not ctx.info.bf16:
        ctx.skip(f"{ctx.info.name} does not support bf16 (torch.cuda.is_bf16_supported() is False)")


def autocast_for(torch: Any, device: str, precision: str) -> Callable[[], Any]:
    """A factory of the autocast context for ``precision`` (a no-op context for fp32)."""
    if precision == "fp32":
        return contextlib.nullcontext
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return lambda: torch.autocast(device_type=device, dtype=dtype)


def dtype_for(torch: Any, precision: str) -> Any:
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


# -- training steps ------------------------------------------------------------------------
class Training:
    """A model with its optimizer and one whole training step (forward, loss, backward, update)."""

    def __init__(
        self,
        torch: Any,
        model: Any,
        forward: Any,
        optimizer: Any,
        loss_of_batch: Callable[[Any], Any],
        next_batch: Callable[[], Any],
        device: str,
        precision: str,
        items: int,
        items_unit: str,
    ) -> None:
        self.torch = torch
        self.model = model
        self.forward = forward  # the model, or its torch.compile wrapper
        self.optimizer = optimizer
        self.loss_of_batch = loss_of_batch
        self.next_batch = next_batch
        self.autocast = autocast_for(torch, device, precision)
        # fp16 needs loss scaling against gradient underflow; bf16 has fp32's range and does not.
        self.scaler = torch.amp.GradScaler(device) if precision == "fp16" else None
        self.items = items
        self.items_unit = items_unit
        self.closers: list[Callable[[], None]] = []

    def step(self) -> Any:
        self.optimizer.zero_grad(set_to_none=True)
        batch = self.next_batch()
        with self.autocast():
            loss = self.loss_of_batch(batch)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            loss.backward()
            self.optimizer.step()
        return loss

    def close(self) -> None:
        for close in self.closers:
            close()
        self.closers.clear()


def image_training(
    ctx: Any,
    *,
    model: str,
    batch: int,
    image_size: int,
    num_classes: int,
    precision: str = "fp32",
    channels_last: bool = False,
    compile_model: bool = False,
    next_batch: Callable[[], Any] | None = None,
) -> Training:
    """An image classifier on a fixed synthetic batch (or ``next_batch``), SGD with momentum."""
    torch = ctx.torch
    import torch.nn.functional as F

    net = build_image_model(model, num_classes).to(ctx.device)
    memory_format = torch.channels_last if channels_last else torch.contiguous_format
    net = net.to(memory_format=memory_format)
    net.train()
    forward = torch.compile(net) if compile_model else net
    # lr and momentum of the published write-ups' ResNet-50 recipe; random data, so convergence is moot.
    optimizer = torch.optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
    if next_batch is None:
        x = torch.randn(batch, 3, image_size, image_size, device=ctx.device).contiguous(memory_format=memory_format)
        y = torch.randint(0, num_classes, (batch,), device=ctx.device)
        next_batch = lambda: (x, y)  # noqa: E731

    def loss_of_batch(b: Any) -> Any:
        return F.cross_entropy(forward(b[0]), b[1])

    return Training(torch, net, forward, optimizer, loss_of_batch, next_batch, ctx.device, precision, batch, "images")


def bert_training(
    ctx: Any, *, model: str, batch: int, seq: int, precision: str = "fp32", compile_model: bool = False
) -> Training:
    """BertForSequenceClassification on random token ids (two labels, as MRPC), AdamW."""
    torch = ctx.torch
    with torch.device(ctx.device):  # initialise the weights where they will live: seconds on a CPU
        net = build_bert(model)
    net.train()
    forward = torch.compile(net) if compile_model else net
    optimizer = torch.optim.AdamW(net.parameters(), lr=2e-5)
    vocab = net.config.vocab_size
    ids = torch.randint(0, vocab, (batch, seq), device=ctx.device)
    mask = torch.ones_like(ids)
    labels = torch.randint(0, 2, (batch,), device=ctx.device)

    def loss_of_batch(_: Any) -> Any:
        return forward(input_ids=ids, attention_mask=mask, labels=labels).loss

    return Training(torch, net, forward, optimizer, loss_of_batch, lambda: None, ctx.device, precision, batch, "sequences")


def training_for(ctx: Any, params: Mapping[str, Any], *, compile_model: bool = False) -> Training:
    """The training setup a case's parameters describe (``model`` picks image or BERT)."""
    model = params["model"]
    require_model(ctx, model)
    precision = params.get("precision", "fp32")
    check_precision(ctx, precision)
    if is_bert(model):
        return bert_training(
            ctx, model=model, batch=params["batch"], seq=params["seq"], precision=precision, compile_model=compile_model
        )
    return image_training(
        ctx,
        model=model,
        batch=params["batch"],
        image_size=params["image_size"],
        num_classes=params.get("num_classes", 1000),
        precision=precision,
        channels_last=bool(params.get("channels_last", False)),
        compile_model=compile_model,
    )


@contextlib.contextmanager
def cudnn_default(torch: Any) -> Iterator[None]:
    """cuDNN's autotuner (``cudnn.benchmark``) at the stack's default (off) for the block.

    The worker runs cases one after another in one process and an earlier case (a
    microbenchmark) may have turned it on; the end-to-end workloads measure the stack as a
    user's script gets it. On an H200 it changed no ResNet-50 training step but cost seconds
    of search per new shape; the previous value is restored after.
    """
    saved = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = False
    try:
        yield
    finally:
        torch.backends.cudnn.benchmark = saved


def measure_training(ctx: Any, training: Training, *, warmup: int | None = None) -> None:
    """Time whole training steps and record step time and (on a GPU) peak memory."""
    ctx.set_work(items=training.items, items_unit=training.items_unit)
    ctx.reset_peak_memory()
    with cudnn_default(training.torch):
        # The first GPU steps load cuDNN/cuBLAS kernels and pick algorithms: keep them out.
        ctx.time_steps(training.step, warmup=warmup if warmup is not None else (5 if ctx.device == "cuda" else 2))
    ctx.record_peak_memory()


@contextlib.contextmanager
def fresh_compile_caches() -> Iterator[str]:
    """Point inductor's and triton's on-disk caches at an empty folder for the block.

    A compile that finds its kernels cached from an earlier process measures a cache hit, so
    compile time would depend on what ran before; an empty cache measures a cold compile,
    which is what a fresh container pays. That includes inductor's precompiled C++ headers,
    which torch keeps in its default cache folder whatever ``TORCHINDUCTOR_CACHE_DIR`` says
    (``torch._inductor.codecache._HEADER_DIR``): left there, a CPU compile of the tiny CNN read
    11.8 s in a machine's first run and 8.3 s in every later one (2 cores), and each new
    environment left another 158 MB header in the system temp folder.
    """
    keys = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
    saved = {k: os.environ.get(k) for k in keys}
    with tempfile.TemporaryDirectory(prefix="imagebench-compile-") as folder:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(folder, "inductor")
        os.environ["TRITON_CACHE_DIR"] = os.path.join(folder, "triton")
        headers = _HeaderFolder(os.path.join(folder, "precompiled_headers"))
        try:
            yield folder
        finally:
            headers.restore()
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


class _HeaderFolder:
    """Inductor's precompiled-header folder moved to ``folder`` until ``restore``.

    A private part of torch: where this torch has no such folder (other versions), nothing
    is moved. The header paths already made in this process are forgotten both ways
    (``_precompile_header`` caches them), so none points into a removed folder.
    """

    def __init__(self, folder: str) -> None:
        # torch.compile() imports this module itself, before the first (timed) step: importing
        # it here moves no time out of the compile.
        self.saved: dict[str, str] = {}
        try:
            from torch._inductor import codecache
        except Exception:
            self.codecache = None
            return
        self.codecache = codecache
        places = {"_HEADER_DIR": folder, "_HEADER_LOCK_DIR": os.path.join(folder, "locks")}
        if not isinstance(getattr(codecache, "_HEADER_DIR", None), str):
            return
        for name, place in places.items():
            if isinstance(getattr(codecache, name, None), str):
                self.saved[name] = getattr(codecache, name)
                setattr(codecache, name, place)
        self._forget()

    def _forget(self) -> None:
        clear = getattr(getattr(self.codecache, "_precompile_header", None), "cache_clear", None)
        if clear is not None:
            clear()

    def restore(self) -> None:
        if not self.saved:
            return
        for name, value in self.saved.items():
            setattr(self.codecache, name, value)
        self._forget()
        self.saved = {}
