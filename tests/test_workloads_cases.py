"""The end-to-end workloads' registration and planning: cases per suite and device, without torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from collector.suites import END_TO_END, SUITES
from collector.workloads import FAMILIES, DeviceInfo, registry
from collector.workloads._models import tier
from collector.workloads.max_batch import memory_estimate, search_max_batch
from collector.workloads.multigpu import replica_counts, torchrun_command
from runformat.policy import SUITE_POLICIES
from runformat.workloads import WORKLOADS

ROOT = Path(__file__).resolve().parent.parent

CPU = DeviceInfo(type="cpu", name="cpu", cpu_count=2, bf16=True, extras={"torchvision": True, "transformers": True})
GPU1 = DeviceInfo(
    type="cuda", name="NVIDIA H200", count=1, capability=(9, 0), total_memory=141 << 30, bf16=True, fp16=True, tf32=True, cpu_count=16
)
GPU8 = DeviceInfo(
    type="cuda", name="NVIDIA H200", count=8, capability=(9, 0), total_memory=141 << 30, bf16=True, fp16=True, tf32=True, cpu_count=128
)


def cases(name: str, suite: str, device: DeviceInfo) -> list[dict]:
    return registry()[name].cases(suite, device)


def test_listing_cases_does_not_import_torch():
    code = (
        "import sys\n"
        "from collector.suites import SUITES, END_TO_END\n"
        "from collector.workloads import registry, DeviceInfo\n"
        "devices = [DeviceInfo(type='cpu', name='c', cpu_count=2), DeviceInfo(type='cuda', name='g', count=4, bf16=True, cpu_count=8)]\n"
        "n = sum(len(registry()[w].cases(s, d)) for w in END_TO_END for s in SUITES for d in devices)\n"
        "assert 'torch' not in sys.modules, 'torch imported while listing cases'\n"
        "print(n)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) > 100


@pytest.mark.parametrize("name", END_TO_END)
def test_every_workload_is_registered_and_described(name):
    w = registry()[name]
    assert w.family in FAMILIES and w.family != "basic"
    assert w.title and w.title_zh and len(w.method) > 300 and len(w.method_zh) > 150
    assert 60 <= w.timeout_s <= 3600


def test_the_registry_and_the_run_formats_descriptions_name_the_same_workloads():
    """The reporter reads what a workload is from ``runformat.workloads`` without the collector: a
    shipped workload without an entry there would lose its title and methodology paragraph."""
    assert set(registry()) == set(WORKLOADS)
    for name, info in WORKLOADS.items():
        assert info.family in FAMILIES, name
        w = registry()[name]
        assert (w.family, w.title, w.method, w.title_zh, w.method_zh) == (info.family, info.title, info.method, info.title_zh, info.method_zh)


def test_every_suite_has_its_policy_in_the_run_format():
    """The reporter shows an old run's policy from ``runformat.policy`` by its suite's name."""
    assert set(SUITE_POLICIES) == set(SUITES)
    assert all(SUITES[name].policy is SUITE_POLICIES[name] for name in SUITES)


@pytest.mark.parametrize("name", END_TO_END)
@pytest.mark.parametrize("device", [CPU, GPU1, GPU8], ids=["cpu", "cuda1", "cuda8"])
def test_cases_are_unique_plain_parameters(name, device):
    for suite in SUITES:
        listed = registry()[name].make_cases(suite, device)
        ids = [c.case_id for c in listed]
        assert len(ids) == len(set(ids)), f"{name} {suite}: duplicate cases"
        for c in listed:
            json.dumps(dict(c.params))  # stored as JSON
            assert all(isinstance(v, (str, int, float, bool)) for v in c.params.values())


def test_tiers():
    assert tier("smoke", GPU1) == "tiny" and tier("smoke", CPU) == "tiny"
    assert tier("cpu", CPU) == "small" and tier("cpu", GPU1) == "small"
    assert tier("full", CPU) == "small"  # a GPU suite asked for on a CPU stays small
    assert [tier(s, GPU1) for s in ("quick", "standard", "full")] == ["quick", "standard", "full"]


def test_cpu_suite_is_small_and_has_no_gpu_only_cases():
    for name in ("allocator", "max_batch"):
        assert cases(name, "cpu", CPU) == []
    assert cases("allocator", "smoke", CPU) == []
    assert len(cases("max_batch", "smoke", CPU)) == 1  # one tiny capped search, for the tests
    assert cases("bert_train", "cpu", CPU) == [dict(model="bert-mini", batch=4, seq=32)]
    assert all(c["model"] == "cnn-tiny" for c in cases("compile", "cpu", CPU))
    for c in cases("resnet50_train", "cpu", CPU):
        assert c["image_size"] == 32 and c["batch"] <= 8
    dl = cases("dataloader", "cpu", CPU)
    assert {c["num_workers"] for c in dl} == {0, 2} and not any(c["pin_memory"] for c in dl)
    # fp16 stays listed on the CPU so that the run records why it was skipped
    assert {c["precision"] for c in cases("amp", "cpu", CPU)} == {"fp32", "bf16", "fp16"}
    assert [c["replicas"] for c in cases("multigpu", "cpu", CPU)] == [1, 2]


def test_gpu_headline_shapes_match_the_seeds():
    rn = cases("resnet50_train", "quick", GPU1)
    assert {(c["image_size"], c["batch"], c["num_classes"]) for c in rn} == {(32, 128, 10), (224, 256, 1000)}
    assert cases("bert_train", "quick", GPU1) == [dict(model="bert-base", batch=8, seq=128)]
    amp = cases("amp", "quick", GPU1)
    assert {c["precision"] for c in amp} == {"fp32", "bf16", "fp16"} and all(c["batch"] == 256 for c in amp)
    inf = cases("inference", "standard", GPU1)
    assert {(c["batch"], c["precision"]) for c in inf} == {(b, p) for b in (1, 16, 32, 64) for p in ("fp32", "bf16")}
    assert {c["tasks"] for c in cases("concurrent_inference", "standard", GPU1)} == {2, 4, 6}
    assert {c["num_workers"] for c in cases("dataloader", "standard", GPU1)} == {0, 2, 4, 8}
    assert {c["pin_memory"] for c in cases("dataloader", "standard", GPU1)} == {False, True}


def test_compile_cases_pair_eager_with_compile():
    listed = cases("compile", "standard", GPU1)
    assert cases("compile", "quick", GPU1) == []
    by_rest: dict[str, set[str]] = {}
    for c in listed:
        rest = json.dumps({k: v for k, v in c.items() if k != "mode"}, sort_keys=True)
        by_rest.setdefault(rest, set()).add(c["mode"])
    assert by_rest and all(modes == {"eager", "compile"} for modes in by_rest.values())
    assert {json.loads(r)["model"] for r in by_rest} == {"resnet50", "bert-base"}


def test_multigpu_cases_follow_the_gpu_count():
    assert cases("multigpu", "quick", GPU1) == []
    assert [(c["mode"], c["replicas"]) for c in cases("multigpu", "standard", GPU1)] == [("ddp", 1)]
    eight = [(c["mode"], c["replicas"]) for c in cases("multigpu", "standard", GPU8)]
    assert eight == [("ddp", k) for k in (1, 2, 4, 8)] + [("dp", k) for k in (1, 2, 4, 8)]
    assert [(c["mode"], c["replicas"]) for c in cases("multigpu", "quick", GPU8)] == [("ddp", 1), ("ddp", 8), ("dp", 1), ("dp", 8)]
    six = DeviceInfo(type="cuda", name="g", count=6, bf16=True, cpu_count=8)
    assert [c["replicas"] for c in cases("multigpu", "full", six) if c["mode"] == "ddp"] == [1, 2, 4, 6]
    assert replica_counts(1) == [1] and replica_counts(3) == [1, 2, 3]


def test_memory_workloads_on_gpus():
    assert [c["pattern"] for c in cases("allocator", "standard", GPU1)] == ["random_tensors"] * 2
    full = cases("allocator", "full", GPU1)
    assert {(c["pattern"], c["alloc_conf"]) for c in full} == {
        (p, a) for p in ("random_tensors", "varlen_transformer") for a in ("default", "expandable_segments")
    }
    assert cases("max_batch", "standard", GPU1) == []
    assert {c["model"] for c in cases("max_batch", "full", GPU1)} == {"resnet50", "bert-base"}
    ck = cases("checkpointing", "standard", GPU8)
    assert {c["checkpoint"] for c in ck} == {False, True}
    assert len(cases("numerics", "standard", GPU1)) == 2 and len(cases("numerics", "quick", GPU1)) == 1


def test_suites_grow_from_quick_to_full():
    for name in END_TO_END:
        for device in (GPU1, GPU8):
            quick, standard, full = (cases(name, s, device) for s in ("quick", "standard", "full"))
            assert len(quick) <= len(standard) <= len(full), name


# -- the largest-batch search ---------------------------------------------------------------------
@pytest.mark.parametrize("limit", [1, 5, 63, 64, 65, 100, 1000, 1537, 5000])
@pytest.mark.parametrize("start", [1, 8, 64, 256])
def test_search_max_batch_finds_the_limit_within_resolution(limit, start):
    best, probed = search_max_batch(lambda b: b <= limit, start=start, cap=4096, resolution=8)
    expected = min(limit, 4096)
    assert expected - 8 < best <= expected
    assert len(probed) == len(set(probed))


def test_search_max_batch_stops_at_the_cap_and_reports_zero_when_nothing_fits():
    best, probed = search_max_batch(lambda b: True, start=4, cap=16, resolution=4)
    assert best == 16 and probed == [4, 8, 16]
    best, probed = search_max_batch(lambda b: False, start=64, cap=1024, resolution=32)
    assert best == 0 and probed[-1] == 1


@pytest.mark.parametrize("limit", [1, 300, 512, 600, 1664, 1700, 1792, 3000, 9000])
@pytest.mark.parametrize("error", [0.5, 0.8, 0.97, 1.0, 1.03, 1.3, 3.0])
def test_search_max_batch_from_an_estimate_finds_the_limit_however_far_off_it_is(limit, error):
    best, probed = search_max_batch(
        lambda b: b <= limit, start=512, cap=8192, resolution=128, estimate=lambda b: limit * error
    )
    expected = min(limit, 8192)
    assert expected - 128 < best <= expected
    assert len(probed) == len(set(probed))


def test_a_good_estimate_saves_probes():
    def fits(b: int) -> bool:
        return b <= 1700  # an H200's ResNet-50 FP32 limit is near this

    _, blind = search_max_batch(fits, start=512, cap=8192, resolution=128)
    best, guided = search_max_batch(fits, start=512, cap=8192, resolution=128, estimate=lambda b: 1750.0)
    assert best == 1664 and guided == [512, 1664, 1792]
    assert len(guided) < len(blind) == 6


def test_memory_estimate_extrapolates_what_grows_with_the_batch():
    gib = 1 << 30
    # 2 GiB resident, 10 GiB peak at batch 512: 1/64 GiB a sample; 130 GiB of room -> (130 - 2) * 64.
    assert memory_estimate({"resident": 2 * gib, "peak_reserved": 10 * gib, "capacity": 130 * gib}, 512) == 128 * 64
    assert memory_estimate({}, 512) is None  # a CPU probe reports no device memory
    assert memory_estimate({"resident": 4, "peak_reserved": 4, "capacity": 100}, 8) is None  # nothing grows


def test_torchrun_command_passes_multi_node_arguments_through(monkeypatch):
    monkeypatch.delenv("IMAGEBENCH_TORCHRUN_ARGS", raising=False)
    cmd = torchrun_command(2, ["--out", "x"])
    assert cmd[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert cmd[cmd.index("--nproc_per_node") + 1] == "2" and "--master_port" in cmd
    monkeypatch.setenv("IMAGEBENCH_TORCHRUN_ARGS", "--nnodes 2 --node_rank 1 --master_addr 10.1.2.3 --master_port 29600")
    assert "--nnodes" not in torchrun_command(4, [])  # a one-node case keeps its own rendezvous
    cmd = torchrun_command(4, [], nodes=2, case_key="a")
    assert cmd.count("--master_port") == 1 and "29600" in cmd and "10.1.2.3" in cmd
    assert cmd.index("--nnodes") < cmd.index("--nproc_per_node")
    other = torchrun_command(4, [], nodes=2, case_key="b")
    assert cmd[cmd.index("--rdzv_id") + 1] != other[other.index("--rdzv_id") + 1]  # cases never share a rendezvous


def test_multi_node_settings_add_cases_with_their_node_count(monkeypatch):
    from collector.workloads.multigpu import parse_torchrun_args

    s = parse_torchrun_args("--nnodes=2 --nproc_per_node 4 --rdzv-backend c10d --rdzv-endpoint h:29400 --rdzv_id job7 --standalone")
    assert (s.nnodes, s.nproc_per_node, s.rdzv_id) == (2, 4, "job7")
    assert s.extra == ("--rdzv-backend", "c10d", "--rdzv-endpoint", "h:29400")
    with pytest.raises(ValueError, match="--nnodes '1:4'"):
        parse_torchrun_args("--nnodes 1:4")
    monkeypatch.setenv("IMAGEBENCH_TORCHRUN_ARGS", "--nnodes 2 --nproc-per-node 4 --rdzv-endpoint h:1")
    listed = cases("multigpu", "standard", GPU8)
    assert [(c["replicas"], c.get("nodes", 1)) for c in listed if c["mode"] == "ddp"] == [
        (1, 1), (2, 1), (4, 1), (1, 2), (2, 2), (4, 2)]
    assert {c.get("nodes", 1) for c in listed if c["mode"] == "dp"} == {1}
    # quick on one GPU has no one-node DDP case, but two nodes have something to scale across
    monkeypatch.setenv("IMAGEBENCH_TORCHRUN_ARGS", "--nnodes 2 --rdzv-endpoint h:1")
    assert [(c["replicas"], c["nodes"]) for c in cases("multigpu", "quick", GPU1)] == [(1, 2)]
