"""Test helpers: a deployment file as `shardplan solve --format yaml` writes one, and a CLI run read as JSON."""
from __future__ import annotations

import json
from pathlib import Path

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
