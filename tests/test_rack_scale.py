"""The planner on rack-scale systems (GB200 / GB300 NVL72, Atlas A3 CloudMatrix384).

GB200 NVL72 (facts/hardware.md): 4 GPUs a compute tray, 72 in one NVLink rack at 900 GB/s a GPU, 100 GB/s a GPU
between racks. Ranks fill trays, then racks, in order: ranks 0-71 are rack 0, 72-143 rack 1."""
import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from solver.cli.main import main
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.scenario import Scenario
from solver.space.domains import knob_rule, pp_fits_domains
from solver.specs.topology import group_levels

GB200 = load_hardware("gb200")


def _pp_rule(world: int, pp: int) -> str | None:
    return knob_rule(load_model("deepseek-r1"), GB200, load_framework("trtllm"), world, Scenario(), False,
                     "pp_size", pp)


def test_a_pipeline_stage_that_straddles_two_nvl72_racks_is_pruned() -> None:
    """144 ranks = 2 racks of 72. PP9: stages of 16 are whole trays (16 = 4 x 4), but the fifth stage, ranks
    64-79, is 8 in rack 0 and 8 in rack 1: pruned (B.pp_stage_whole_domains). PP3: stages of 48, the second
    48-95 straddles: pruned. PP2 (72 = one rack), PP4 (36: 2 stages a rack), PP6 (24: 3 a rack) tile
    the racks: kept. (PP8's 18 is not whole trays, 18 / 4 = 4.5: the node rule's, B.pp_stage_whole_nodes.)"""
    assert _pp_rule(144, 9) == "B.pp_stage_whole_domains"
    assert _pp_rule(144, 3) == "B.pp_stage_whole_domains"
    assert {pp: _pp_rule(144, pp) for pp in (2, 4, 6)} == {2: None, 4: None, 6: None}
    assert _pp_rule(144, 8) == "B.pp_stage_whole_nodes"


def test_inside_one_nvl72_rack_any_stage_of_whole_trays_stays_on_nvlink() -> None:
    """72 ranks are one rack: PP9 stages of 8 (two trays) and PP3 stages of 24 never leave it, so the domain
    rule does not apply (pp_fits_domains: world 72 <= domain 72)."""
    assert pp_fits_domains(72, 9, GB200) and pp_fits_domains(72, 3, GB200)
    assert _pp_rule(72, 9) is None and _pp_rule(72, 3) is None


def test_a_collective_over_the_whole_nvl72_rack_rides_nvlink_and_two_racks_add_the_scale_out_tier() -> None:
    """A 72-rank group: 4 in a tray x 18 trays, one NVLink fabric (the tray and rack tiers have the same link
    figures, so one level): [(72, scale_up)]. 144 ranks: that, twice, across the RDMA tier: [(72, scale_up),
    (2, inter_rack)]. A group of 2 ranks 72 apart (one per rack): inter_rack alone."""
    levels = lambda n, s=1: [(lv.members, lv.tier_name) for lv in group_levels(GB200, n, s)]  # noqa: E731
    assert levels(72) == [(72, "scale_up")]
    assert levels(144) == [(72, "scale_up"), (2, "inter_rack")]
    assert levels(2, 72) == [(2, "inter_rack")]


def _deployment(folder: Path, pc: dict, world: int, model: str = "deepseek-r1") -> str:
    path = folder / "dep.yaml"
    path.write_text(yaml.safe_dump({"model": model, "hardware": "gb200", "world_size": world, "parallel_config": pc,
                                    "workload": {"isl": 4096, "osl": 256, "concurrency": 512}}))
    return str(path)


def test_a_whole_nvl72_rack_launches_as_18_trays_of_4(tmp_path: Path) -> None:
    """SGLang's --nnodes launcher: 72 ranks = 18 compute trays x 4 GPUs, so --nnodes 18, node ranks 0-17, tray k
    holding ranks 4k to 4k+3; attention DP 72 with EP 72 (256 experts + 32 copies = 288 = 4 a rank)."""
    pc = {"moe_tp_size": 1, "redundant_experts": 32}
    r = CliRunner().invoke(main, ["launch", _deployment(tmp_path, pc, 72), "--engine", "sglang", "--format",
                                  "json"])
    assert r.exit_code == 0, r.stderr
    launch = json.loads(r.stdout)
    assert len(launch["placement"]) == 18 and launch["placement"][17] == {"node_rank": 17, "ranks": [68, 71],
                                                                           "devices": 4}
    argv = launch["nodes"][17]["argv"]
    assert argv[argv.index("--nnodes") + 1] == "18" and argv[argv.index("--node-rank") + 1] == "17"
    assert argv[argv.index("--ep-size") + 1] == "72"


def _tp_rule(model: str, knob: str, value: int, world: int = 72) -> str | None:
    return knob_rule(load_model(model), GB200, load_framework("sglang"), world, Scenario(), False, knob, value)


def test_a_tp_size_must_divide_the_ffn_width_it_splits() -> None:
    """DeepSeek-R1: routed experts 2048 wide, dense FFN 18432 (= 2048 x 9), one shared expert 2048 wide. moe_tp 72:
    2048 / 72 = 28.4, refused (SGLang's FusedMoE asserts intermediate_size % moe_tp_size == 0); moe_tp 4: 512 a
    rank, kept. Qwen3-235B-A22B (no dense FFN, experts 1536
    = 512 x 3): moe_tp 24 = 64 a rank, kept; moe_tp 72: 21.3, refused."""
    assert _tp_rule("deepseek-r1", "moe_tp_size", 72) == "A.ffn_width_divisible_tp"
    assert _tp_rule("deepseek-r1", "moe_tp_size", 4) is None
    # dense_tp_size splits the shared expert too (2048 wide): 2048 / 72 = 28.4 and 2048 / 24 = 85.3, refused
    # though the dense FFN divides (18432 / 72 = 256); dense_tp 8: 2304 and 256 a rank, kept
    assert _tp_rule("deepseek-r1", "dense_tp_size", 72) == "A.ffn_width_divisible_tp"
    assert _tp_rule("deepseek-r1", "dense_tp_size", 24) == "A.ffn_width_divisible_tp"
    assert _tp_rule("deepseek-r1", "dense_tp_size", 8) is None
    assert _tp_rule("qwen3-235b-a22b", "moe_tp_size", 24) is None
    assert _tp_rule("qwen3-235b-a22b", "moe_tp_size", 72) == "A.ffn_width_divisible_tp"


def test_estimate_refuses_a_moe_tp_that_does_not_divide_the_expert_width() -> None:
    """The single-config commands name the field and the arithmetic: 2048 % 72 = 32 != 0."""
    r = CliRunner().invoke(main, ["estimate", "deepseek-r1", "--hardware", "gb200", "--cards", "72", "--moe-tp",
                                  "72", "--phase", "decode", "--batch", "64", "--seq-len", "4096"])
    assert r.exit_code == 2
    assert "moe_intermediate_size 2048 % moe_tp_size 72 != 0" in r.stderr


def test_check_warns_where_a_pipeline_stage_straddles_two_nvl72_racks(tmp_path: Path) -> None:
    """144 GB200 at PP9: stages of 144 / 9 = 16 ranks; the fifth holds ranks 64-79, 8 in each 72-GPU rack, so
    check says what the planner prunes (B.pp_stage_whole_domains), as a class-B warning."""
    path = tmp_path / "pp9.yaml"
    path.write_text(yaml.safe_dump({"model": "deepseek-r1", "hardware": "gb200", "framework": "sglang",
                                    "world_size": 144, "parallel_config": {"pp_size": 9},
                                    "workload": {"isl": 4096, "osl": 256, "concurrency": 256}}))
    out = json.loads(CliRunner().invoke(main, ["check", str(path), "--format", "json"]).stdout)
    assert any("a stage of 16 ranks is neither whole scale-up domains nor a part of one (72 ranks each)" in w
               for w in out["warnings"]["B"])
