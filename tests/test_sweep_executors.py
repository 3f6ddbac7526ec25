"""Sweeps beyond one machine: the same tasks on a Ray or Dask cluster write the table `--jobs 1` writes."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from solver import api
from solver.capacity.table import write_table
from solver.cli.main import main

SWEEP = dict(model="llama-3.1-8b", hardware="h200_sxm", cards=[1, 8], scenarios=["latency", "throughput"])
CLI = ["sweep", "llama-3.1-8b", "--hardware", "h200_sxm", "--cards", "1,8", "--scenarios", "latency,throughput"]


def _bytes(df, folder: Path, name: str) -> bytes:
    return write_table(df, folder / name).read_bytes()


@pytest.fixture(scope="module")
def serial_csv(tmp_path_factory) -> bytes:
    return _bytes(api.sweep(**SWEEP), tmp_path_factory.mktemp("serial"), "serial.csv")


@pytest.fixture(scope="module")
def dask_cluster():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    yield cluster
    cluster.close()


def test_dask_cluster_sweep_is_byte_identical_to_jobs_1(serial_csv: bytes, dask_cluster, tmp_path: Path) -> None:
    df = api.sweep(**SWEEP, executor="dask", address=dask_cluster.scheduler_address)
    assert _bytes(df, tmp_path, "dask.csv") == serial_csv


def test_sweep_cli_executor_dask_writes_the_jobs_1_bytes(dask_cluster, tmp_path: Path) -> None:
    serial, remote = tmp_path / "serial.csv", tmp_path / "dask.csv"
    r1 = CliRunner().invoke(main, [*CLI, "--jobs", "1", "--out", str(serial)])
    r2 = CliRunner().invoke(main, [*CLI, "--executor", "dask", "--address", dask_cluster.scheduler_address,
                                   "--out", str(remote)])
    assert r1.exit_code == 0 and r2.exit_code == 0, r1.output + r2.output
    assert remote.read_bytes() == serial.read_bytes()


@pytest.mark.slow
def test_ray_local_cluster_sweep_is_byte_identical_to_jobs_1(serial_csv: bytes, tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        df = api.sweep(**SWEEP, executor="ray")
    finally:
        ray.shutdown()
    assert _bytes(df, tmp_path, "ray.csv") == serial_csv


def test_executor_dask_without_an_address_is_bad_input() -> None:
    result = CliRunner().invoke(main, [*CLI, "--executor", "dask"])
    assert result.exit_code == 2
    assert "--address" in result.output


def test_address_without_a_cluster_executor_is_bad_input() -> None:
    result = CliRunner().invoke(main, [*CLI, "--address", "tcp://127.0.0.1:8786"])
    assert result.exit_code == 2
    assert "--address" in result.output


def test_a_malformed_dask_address_is_bad_input_naming_it() -> None:
    pytest.importorskip("distributed")
    result = CliRunner().invoke(main, [*CLI, "--executor", "dask", "--address", "notaurl"])
    assert result.exit_code == 2 and "--address: no Dask scheduler at 'notaurl'" in result.stderr


def test_executor_ray_without_an_address_does_not_start_a_private_instance() -> None:
    pytest.importorskip("ray")
    result = CliRunner().invoke(main, [*CLI, "--executor", "ray"])
    assert result.exit_code == 2 and "--address: --executor ray needs the cluster's address" in result.stderr


def test_a_deployments_scenarios_run_in_one_worker(monkeypatch) -> None:
    """The scenario kinds of one (hardware, cards, lengths) share its tables and front, so a worker gets them
    together, in order; rows come back in task order and progress counts tasks."""
    import importlib

    from solver.capacity import executors

    sweep = importlib.import_module("solver.capacity.sweep")  # the package re-exports the function of that name
    sp = sweep.build_plan("qwen3-8b", "h200_sxm", "1,2", "throughput,latency", seq_lens="1024:128,2048:128")
    sent = []
    real = executors.run

    def record(solve, items, **kw):
        sent.extend(items)
        return real(solve, items, **kw)

    monkeypatch.setattr(executors, "run", record)
    ticks = []
    rows = sweep.run_tasks(sp.tasks, 1, lambda done, total, label: ticks.append((done, total)))
    assert [len(g.tasks) for g in sent] == [2, 2, 2, 2]
    assert all(len({(t.cards, t.scenario.isl) for t in g.tasks}) == 1 for g in sent)
    assert [t.index for g in sent for t in g.tasks] == sorted(t.index for t in sp.tasks)
    assert rows == [sweep.solve_task(t) for t in sp.tasks]
    assert ticks == [(2, 8), (4, 8), (6, 8), (8, 8)]


def test_a_local_worker_freezes_what_it_holds_before_its_last_collection() -> None:
    """A worker's exit would otherwise collect every table entry of the plans it ran (seconds, which the pool's
    shutdown waits for): the pool's workers start with an exit hook that freezes them first."""
    import subprocess
    import sys

    from solver.capacity import executors

    code = ("import atexit, gc\n"
            "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0))\n"
            "from solver.capacity.executors import _worker_start\n"
            "_worker_start()\n"
            "held = [[i] for i in range(10000)]\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parent.parent)
    assert run.stdout.strip() == "frozen True"
    seen = {}

    class Pool(executors.ProcessPoolExecutor):
        def __init__(self, *a, **kw):
            seen.update(kw)
            super().__init__(*a, **kw)

    import operator
    import types

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(executors, "ProcessPoolExecutor", Pool)
        items = [types.SimpleNamespace(cards=c) for c in (1, 2)]
        assert executors.run_local(operator.attrgetter("cards"), items, 2, None) == [1, 2]
    assert seen["initializer"] is executors._worker_start
