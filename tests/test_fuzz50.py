"""Stop 50's fuzz findings, one test per rule: what benchmarks/fuzz.py (seeds 923-926, the group "new" of
tests/fuzz_cases.py) found on the stop's merged inputs, fixed at their home."""
from __future__ import annotations

import pytest
import yaml
from click.testing import CliRunner

from solver.cli.main import main

QUICK = ["llama-3.1-8b", "--hardware", "h100_sxm", "--cards", "1"]


@pytest.mark.parametrize("cmd,extra", [("estimate", ["--isl", "1024", "--osl", "128", "--concurrency", "8"]),
                                       ("memory", ["--batch", "1", "--seq-len", "1024"])])
@pytest.mark.parametrize("kv", ["bf16", "fp8", "int8"])
def test_a_chosen_kv_dtype_is_written_as_yaml(cmd: str, extra: list[str], kv: str) -> None:
    """A KV element's bytes carry its scales (dtypes.KVBytes, an int subclass): yaml's safe dumper took none, so
    `--kv-dtype X --format yaml` was an internal error (exit 3); the report writes the plain int, as json does."""
    r = CliRunner().invoke(main, [cmd, *QUICK, *extra, "--kv-dtype", kv, "--format", "yaml"])
    assert r.exit_code == 0, r.output
    doc = yaml.safe_load(r.output[r.output.index("\n", r.output.rindex("note:")) if "note:" in r.output else 0:])
    found = [v for v in _walk(doc, "kv_bytes")]
    assert found and all(type(v) is int for v in found) and found[0] == (2 if kv == "bf16" else 1)


def _walk(node: object, key: str):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key:
                yield v
            yield from _walk(v, key)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v, key)
