"""Adaptive replication: processes go to the cases with the widest CIs, within the budget and cap."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from runformat.archive import RunWriter, read_run
from collector.run.adaptive import compute_widths, replicate
from collector.run.plan import plan_tasks
from collector.run.schedule import Runner
from collector.runner import Planned, RunOptions, Stack, Task
from collector.workloads import Case, DeviceInfo

WIDE = Case("matmul", {"n": 64, "dtype": "fp32"})
TIGHT = Case("matmul", {"n": 128, "dtype": "fp32"})


def fake_runner(tmp_path: Path, budget_cap: int = 4) -> Runner:
    writer = RunWriter.create(tmp_path / "runs", "adaptive")
    writer.write_environment([])
    writer.write_cases([], [])
    planned = Planned(Stack("python"), DeviceInfo(type="cpu", name="cpu"), [], writer, [WIDE, TIGHT],
                      run_entries={"suite": "smoke"})
    options = RunOptions(out=tmp_path / "runs", stacks=[planned.stack], processes=2, max_processes=budget_cap)
    runner = Runner(options, [planned], progress=False)
    rng = random.Random(0)

    def run_task(task):
        # WIDE: process medians 20% apart; TIGHT: all alike.
        centre = 1e-3 * (1 + 0.2 * (task.process % 2)) if task.case is WIDE else 1e-3
        runner.in_flight = task
        runner.record(task, {
            "status": "ok", "timing": "perf_counter", "started_at": 1.7e9, "duration_s": 0.01,
            "samples": [dict(metric="time", unit="s", better="lower", index=i, value=centre * (1 + rng.gauss(0, 0.002)),
                             iterations=1) for i in range(15)],
        })

    runner.run_task = run_task  # type: ignore[method-assign]
    return runner


def test_processes_go_to_the_widest_case_up_to_the_cap(tmp_path):
    runner = fake_runner(tmp_path)
    runner.run(plan_tasks(runner.planned, runner.options, set()))
    before = compute_widths(runner.planned[0])
    assert before[WIDE.case_id][0] > 5 * before[TIGHT.case_id][0]
    replicate(runner, budget_s=60)
    procs: dict[str, set[int]] = {}
    for r in runner.planned[0].records:
        procs.setdefault(r.case_id, set()).add(r.process)
    assert procs[WIDE.case_id] == {0, 1, 2, 3}  # up to the cap of 4
    assert procs[TIGHT.case_id] == {0, 1}
    entry = json.loads(runner.planned[0].run_entries["replication"])
    assert entry["added"] == {WIDE.case_id: 2} and entry["cap"] == 4 and entry["rounds"] == 2
    # every added attempt was written like any other
    runner.planned[0].writer.compact()
    rows = read_run(runner.planned[0].writer.folder)["cases.parquet"][0].to_pylist()
    assert len(rows) == 6


def test_no_time_left_adds_nothing(tmp_path):
    runner = fake_runner(tmp_path)
    runner.run(plan_tasks(runner.planned, runner.options, set()))
    runner.worker_start_s = 100.0  # a worker would take longer to start than the budget allows
    replicate(runner, budget_s=10)
    assert len(runner.planned[0].records) == 4
    assert json.loads(runner.planned[0].run_entries["replication"])["added"] == {}


def test_workers_start_together_before_the_first_case_with_their_model_libraries(tmp_path):
    import sys
    import time

    from collector.runner import Task

    writer = RunWriter.create(tmp_path / "runs", "prestart")
    cases = [Case("inference", {"model": "resnet18", "batch": 1}), Case("matmul", {"n": 64, "dtype": "fp32"})]
    planned = Planned(Stack(sys.executable), DeviceInfo(type="cpu", name="cpu"), [], writer, cases,
                      run_entries={"suite": "smoke"})
    options = RunOptions(out=tmp_path / "runs", stacks=[planned.stack], processes=2)
    runner = Runner(options, [planned], progress=False)
    pool = runner.pool
    tasks = plan_tasks(runner.planned, options, set())
    try:
        pool.prestart(tasks)
        assert set(pool.spares) == {(0, 0), (0, 1)}
        spares = dict(pool.spares)
        # Both started before either was waited for: their imports overlap.
        assert abs(spares[(0, 0)].started - spares[(0, 1)].started) < 1.0
        for task in (Task(0, 0, cases[0]), Task(0, 1, cases[0])):
            time.sleep(0.5)
            worker = pool.worker_for(task)
            assert worker is spares[(task.stack_index, task.process)]
            assert worker.ready["preloaded"] == ["torchvision"]
        assert not pool.spares
        # What a worker took to start, not how long its spare waited for its turn.
        assert runner.worker_start_s == max(w.ready_at - w.started for w in spares.values())
    finally:
        pool.kill_all()
        shutil.rmtree(pool.log_dir, ignore_errors=True)  # run() would have removed it


def test_a_model_library_that_does_not_import_is_left_to_its_cases(monkeypatch):
    from collector import worker

    monkeypatch.setenv(worker.PRELOAD_ENV, "json,no_such_package_here")
    reply = worker._ready()
    assert reply["event"] == "ready" and "error" not in reply
    assert reply["preloaded"] == ["json"]


def test_workers_started_before_the_probe_are_prepared_for_their_planned_cases(tmp_path):
    """``EarlyWorkers``: started while the stack is probed, then told their cases' packages
    and whether their cases fork (only process 0 forks numerics' child, one process a case)."""
    import sys

    from collector.run.pool import EarlyWorkers

    writer = RunWriter.create(tmp_path / "runs", "early")
    cases = [Case("inference", {"model": "resnet18", "batch": 1}), Case("numerics", {"model": "cnn-tiny"})]
    planned = Planned(Stack(sys.executable), DeviceInfo(type="cpu", name="cpu"), [], writer, cases,
                      run_entries={"suite": "smoke"})
    options = RunOptions(out=tmp_path / "runs", stacks=[planned.stack], processes=2)
    early = EarlyWorkers.start(options)
    started = dict(early.workers)
    assert set(started) == {(0, 0), (0, 1)}
    pool = Runner(options, [planned], progress=False, early=early).pool
    try:
        pool.prestart(plan_tasks([planned], options, set()))
        assert not pool.early and {k: id(w) for k, w in pool.spares.items()} == {k: id(w) for k, w in started.items()}
        first = pool.worker_for(Task(0, 0, cases[0]))
        assert first is started[(0, 0)]
        assert first.ready["preloaded"] == ["torchvision"] and isinstance(first.ready["fork_server"], int)
        second = pool.worker_for(Task(0, 1, cases[0]))
        assert second.ready["preloaded"] == ["torchvision"] and second.ready["fork_server"] is None
        # Ready means prepared: the start-up time counts the model libraries' import too.
        assert first.ready_at is not None and first.ready_at - first.started > 0
    finally:
        pool.kill_all()
        shutil.rmtree(pool.log_dir, ignore_errors=True)  # run() would have removed it
    assert all(w.proc.poll() is not None for w in started.values())


def test_early_workers_guess_their_packages_and_fork_server_from_the_suite(tmp_path):
    """``speculated``: the cases planned without the device, for each type --device allows."""
    import sys

    from collector.run.plan import speculated

    def guess(**kw):
        return speculated(RunOptions(out=tmp_path, stacks=[Stack(sys.executable)], **kw))

    models = ("torchvision", "transformers.models.bert.modeling_bert")
    assert guess() == (models, {0})  # the default suites: BERT and ResNets; numerics forks in process 0
    assert guess(suite="standard", device="cuda") == (models, {0})
    assert guess(suite="cpu", only=["matmul*"]) == ((), set())  # tensors only: nothing to import, nothing forks
    assert guess(suite="cpu", only=["inference"]) == (("torchvision",), set())
    assert guess(suite="cpu", only=["numerics"], processes=2) == ((), {0})
    assert guess(suite="no-such-suite") == ((), set())  # the probe's planning reports it


def test_a_fork_server_started_on_a_guess_is_replaced_or_stopped_when_prepared(tmp_path):
    """A worker started with a fork server its planned cases do not need stops it; one whose
    server lacks a package the children would import starts another with it."""
    import os
    import sys

    from collector import worker as worker_module
    from collector.run.worker_ipc import Worker
    from collector.stacks.python import PythonLauncher

    def alive(pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True

    def prepare(w, preload, fork_server):
        w.send({"cmd": "prepare", "preload": list(preload), "fork_server": fork_server})
        reply = w.receive(120)
        assert reply["event"] == "prepared" and "error" not in reply
        return reply

    env = {worker_module.FORK_SERVER_ENV: "1"}
    launcher = PythonLauncher(Stack(sys.executable))
    first = Worker(launcher, tmp_path / "a.log", env=env, preload=("json",))
    second = Worker(launcher, tmp_path / "b.log", env=env, preload=("json",))
    try:
        first.wait_ready(120)
        second.wait_ready(120)
        guessed = first.ready["fork_server"]
        assert isinstance(guessed, int) and alive(guessed)
        reply = prepare(first, ["json"], fork_server=False)  # its cases fork nothing after all
        assert reply["fork_server"] is None and reply["preloaded"] == ["json"]
        assert not alive(guessed)  # killed and reaped, not left importing beside the cases

        kept = second.ready["fork_server"]
        assert prepare(second, ["json"], fork_server=True)["fork_server"] == kept  # the guess was right
        reply = prepare(second, ["json", "csv"], fork_server=True)  # csv was not in the guess: a new server
        assert reply["fork_server"] not in (None, kept) and not alive(kept)
        assert reply["preloaded"] == ["json", "csv"]
        last = reply["fork_server"]
    finally:
        for w in (first, second):
            w.close()
    assert not alive(last)  # the worker's exit stops it


def test_early_workers_of_a_run_that_never_starts_are_stopped(tmp_path):
    from collector.run.pool import EarlyWorkers
    from collector.runner import RunError, execute

    options = RunOptions(out=tmp_path / "runs", stacks=[Stack("/no/such/python")], processes=2)
    early = EarlyWorkers.start(options)
    assert early.workers == {}  # the interpreter does not start: nothing is left running
    early.kill()
    assert not early.log_dir.exists()
    import pytest

    with pytest.raises(RunError, match="/no/such/python"):
        execute(options, progress=False)


def test_no_case_is_timed_while_a_spare_is_still_starting(tmp_path):
    """Spares import torch and the model libraries ahead of their turn, but a case is handed
    its worker only once every spare has finished starting, so no import shares the cores
    with a timed case."""
    import sys
    import time

    writer = RunWriter.create(tmp_path / "runs", "spares")
    cases = [Case("inference", {"model": "resnet18", "batch": 1})]
    planned = Planned(Stack(sys.executable), DeviceInfo(type="cpu", name="cpu"), [], writer, cases,
                      run_entries={"suite": "smoke"})
    options = RunOptions(out=tmp_path / "runs", stacks=[planned.stack], processes=3)
    pool = Runner(options, [planned], progress=False).pool
    try:
        pool.prestart(plan_tasks([planned], options, set()))
        spares = dict(pool.spares)
        assert set(spares) == {(0, 0), (0, 1), (0, 2)}
        first = pool.worker_for(Task(0, 0, cases[0]))
        handed_over = time.monotonic()
        for key, spare in pool.spares.items():
            assert spare.wait_settled(0), f"spare {key} still starting when the first case began"
            assert spare.ready_at is not None and spare.ready_at <= handed_over
        assert first.ready_at <= handed_over
    finally:
        pool.kill_all()
        shutil.rmtree(pool.log_dir, ignore_errors=True)


def test_a_spare_that_never_settles_is_waited_for_once(tmp_path, monkeypatch):
    import sys

    from collector.run import pool as pool_module

    class Hung:
        waits = 0

        def wait_settled(self, timeout):
            Hung.waits += 1
            return False

    writer = RunWriter.create(tmp_path / "runs", "hung")
    planned = Planned(Stack(sys.executable), DeviceInfo(type="cpu", name="cpu"), [], writer, [WIDE],
                      run_entries={"suite": "smoke"})
    pool = Runner(RunOptions(out=tmp_path / "runs", stacks=[planned.stack]), [planned], progress=False).pool
    monkeypatch.setattr(pool_module, "PROBE_TIMEOUT_S", 0.01)
    pool.spares[(0, 1)] = Hung()  # type: ignore[assignment]
    pool.wait_for_spares()
    pool.wait_for_spares()
    assert Hung.waits == 1
    shutil.rmtree(pool.log_dir, ignore_errors=True)
