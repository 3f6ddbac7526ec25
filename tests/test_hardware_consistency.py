"""Hardware files whose fields contradict each other are refused: one line naming the field, exit code 2, before
any planning (a reserve larger than the memory read as "nothing fits"; a node of 6 ranks with an 8-rank link
was planned as two different machines)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from conftest import REPO
from solver.cli.main import main
from solver.specs.hardware import load_hardware_file

SHIPPED = sorted((REPO / "hardware").glob("*.yaml")) + [REPO / "docs" / "examples" / "h200_sxm-calibrated.yaml"]


def _hw_file(tmp_path: Path, base: str, **changes: Any) -> str:
    """A copy of a shipped hardware file with dotted fields (`tiers__intra_node__span_ranks`) replaced; None
    deletes the field."""
    data = yaml.safe_load((REPO / "hardware" / f"{base}.yaml").read_text())
    for dotted, value in changes.items():
        node = data
        *head, last = dotted.split("__")
        for part in head:
            node = node[part]
        if value is None:
            del node[last]
        else:
            node[last] = value
    path = tmp_path / f"my_{base}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _refused(path: str, line: str) -> None:
    r = CliRunner().invoke(main, ["solve", "qwen3-8b", "--hardware", path, "--cards", "1"])
    assert r.exit_code == 2, (r.exit_code, r.stdout, r.stderr)
    assert r.stderr.strip().splitlines() == [f"error: {path}: {line}"]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_hardware_file_is_consistent(path: Path) -> None:
    assert load_hardware_file(path).name


def test_reserved_memory_must_be_below_the_memory(tmp_path: Path) -> None:
    _refused(_hw_file(tmp_path, "h200_sxm", reserved_bytes=200_000_000_000),
             "reserved_bytes: must be below memory_bytes (151397597184), got 200000000000")


def test_the_scale_up_domain_must_cover_the_node(tmp_path: Path) -> None:
    _refused(_hw_file(tmp_path, "h200_sxm", scale_up_domain=4), "scale_up_domain: must be >= ranks_per_node (8), got 4")


def test_the_intra_node_span_is_the_node(tmp_path: Path) -> None:
    _refused(_hw_file(tmp_path, "h200_sxm", ranks_per_node=6),
             "tiers.intra_node.span_ranks: must equal ranks_per_node (6), got 8")


def test_the_scale_up_domain_is_whole_nodes(tmp_path: Path) -> None:
    _refused(_hw_file(tmp_path, "gb200", scale_up_domain=70, tiers__scale_up__span_ranks=70),
             "scale_up_domain: must be whole nodes, a multiple of ranks_per_node (4), got 70")


def test_the_scale_up_span_is_the_scale_up_domain(tmp_path: Path) -> None:
    _refused(_hw_file(tmp_path, "gb200", tiers__scale_up__span_ranks=64),
             "tiers.scale_up.span_ranks: must equal scale_up_domain (72), got 64")


def test_a_scale_up_domain_beyond_the_node_needs_its_tier(tmp_path: Path) -> None:
    _refused(_hw_file(tmp_path, "gb200", tiers__scale_up=None),
             "tiers.scale_up: required: scale_up_domain (72) exceeds ranks_per_node (4), and its link is not given")


def test_a_scale_up_tier_needs_a_domain_beyond_the_node(tmp_path: Path) -> None:
    _refused(_hw_file(tmp_path, "gb200", scale_up_domain=4, tiers__scale_up__span_ranks=4),
             "tiers.scale_up: reaches no rank beyond the node: scale_up_domain (4) equals ranks_per_node; "
             "raise scale_up_domain or drop the tier")


def test_an_outer_tier_spans_more_than_the_tiers_inside_it(tmp_path: Path) -> None:
    _refused(_hw_file(tmp_path, "h200_sxm", tiers__inter_node__span_ranks=8),
             "tiers.inter_node.span_ranks: must exceed the 8 ranks of the tiers inside it, got 8")
    _refused(_hw_file(tmp_path, "gb200", tiers__inter_rack__span_ranks=64),
             "tiers.inter_rack.span_ranks: must exceed the 72 ranks of the tiers inside it, got 64")


def test_a_weight_only_format_has_no_native_peak(tmp_path: Path) -> None:
    _refused(_hw_file(tmp_path, "h200_sxm", weight_only_formats=["fp8", "int4"]),
             "weight_only_formats: fp8 also in peak_flops (native compute); list each dtype in one of them")


def test_a_hardware_file_names_its_vendor(tmp_path: Path) -> None:
    """Without a vendor every engine passed the device (vllm-ascend's command for a GPU) and the figures took
    the pooled calibration without a word on which."""
    _refused(_hw_file(tmp_path, "h200_sxm", vendor=None), "vendor: Field required")


def test_a_vendor_is_written_in_lower_case(tmp_path: Path) -> None:
    """'NVIDIA' matched no engine's vendor list (TensorRT-LLM refused it as 'runs on nvidia devices; ... is
    NVIDIA') and no calibration block."""
    _refused(_hw_file(tmp_path, "h200_sxm", vendor="NVIDIA"),
             "vendor: a lower-case name such as nvidia, amd, huawei or intel (engine profiles list the vendors they "
             "run on so, and an engine runs only on its vendors' devices), got 'NVIDIA'")


def test_a_profile_names_its_vendors_in_lower_case(tmp_path: Path) -> None:
    fw = yaml.safe_load((REPO / "solver" / "frameworks" / "vllm.yaml").read_text())
    fw["vendors"] = ["NVIDIA"]
    path = tmp_path / "my_vllm.yaml"
    path.write_text(yaml.safe_dump(fw))
    r = CliRunner().invoke(main, ["solve", "qwen3-8b", "--hardware", "h200_sxm", "--cards", "1",
                                  "--framework", str(path)])
    assert r.exit_code == 2, (r.exit_code, r.stdout, r.stderr)
    assert r.stderr.strip().splitlines() == [
        f"error: {path}: vendors: 'NVIDIA' is not a lower-case vendor name such as nvidia, amd or huawei"]
