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
