"""Test helpers: a deployment file as `shardplan solve --format yaml` writes one, a CLI run read as JSON, and the
values a JSON document files under a key."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import yaml
from click.testing import CliRunner

from solver.cli.main import main


def deployment_file(tmp_path: Path, **fields) -> str:
    """dep.yaml in tmp_path holding these fields (model, hardware, world_size, framework, phase, batch, seq_len,
    parallel_config); its path."""
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump(fields))
    return str(path)


def run_json(*args: str):
    """(the click result, its stdout as JSON or None) of `shardplan ARGS --format json`."""
    r = CliRunner().invoke(main, [*args, "--format", "json"])
    return r, json.loads(r.stdout) if r.stdout.strip().startswith("{") else None


def values_under(node: Any, key: str) -> Iterator[Any]:
    """Every value filed under `key` anywhere in a JSON (or YAML) document."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key:
                yield v
            yield from values_under(v, key)
    elif isinstance(node, list):
        for v in node:
            yield from values_under(v, key)
