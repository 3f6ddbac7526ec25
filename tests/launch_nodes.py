"""The nodes' commands of a launch, compared for their layout, and a launch's first node from a deployment file."""
from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from solver.cli.main import main


def launch_deployment(tmp_path, pc: dict, model: str, world: int, concurrency: int, framework: str,
                      hardware: str = "h100_sxm") -> str:
    """dep.yaml in tmp_path: this parallel_config at ISL 4096 / OSL 256 and this concurrency; its path."""
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump({"model": model, "hardware": hardware, "world_size": world,
                                    "framework": framework, "parallel_config": pc,
                                    "workload": {"isl": 4096, "osl": 256, "concurrency": concurrency}}))
    return str(path)


def first_node_argv(dep: str) -> list[str]:
    """The first node's argv of `shardplan launch DEP`."""
    r = CliRunner().invoke(main, ["launch", dep, "--format", "json"])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)["nodes"][0]["argv"]


def pool_apart(argvs: list[list[str]]) -> list[list[str]]:
    """The commands less vLLM's --kv-cache-memory-bytes, which every node gives alike (the plan's pool per rank:
    tests/test_kvmem47.py checks its value); the callers' cases are about the nodes' layout."""
    flag = "--kv-cache-memory-bytes"
    pools = {a[a.index(flag) + 1] for a in argvs if flag in a}
    assert len(pools) <= 1 and all(int(p) > 0 for p in pools)
    return [a[:a.index(flag)] + a[a.index(flag) + 2:] if flag in a else a for a in argvs]
