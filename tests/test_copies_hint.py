"""`solve` answers one deployment of W cards, and says when k copies of a deployment of W / k cards would carry
clearly more output tokens/s per rank (solver.plan.copies): only where the answer is bound by what a smaller
world lifts."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from solver.cli.main import main
from solver.entry import run_solve
from solver.plan import copies
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.scenario import Scenario

DS = ("deepseek-v3.2", "atlas_a3")
THROUGHPUT = Scenario(kind="throughput")


def _solve(cards: int):
    return run_solve(*DS, cards, THROUGHPUT, "vllm-ascend", "int8", copies_hint=True)


def test_copies_sizes_are_whole_nodes_or_whole_shares_of_one():
    """768 ranks on 16-die nodes: k copies of 768 / k for every k that leaves whole nodes (384 = 24 nodes ... 16)
    or a share dividing one node (8, 4, 2, 1); 768 / 5 is no whole count, 768 / 32 = 24 is 1.5 nodes."""
    sizes = copies.copy_sizes(768, load_hardware("atlas_a3"))
    assert sizes == [384, 256, 192, 128, 96, 64, 48, 32, 16, 8, 4, 2, 1]


def test_world_bound_rules_are_those_reading_the_world_size():
    """vllm-ascend's EPLB placement rule reads moe_ep_size (world // moe_tp_size) and its MoE TP rule reads world:
    a smaller world may lift them; the fine-grained TP rule reads only TP sizes."""
    fw = load_framework("vllm-ascend")
    bound = copies.world_bound(["C.eplb_placement_within_experts", "C.finegrained_tp_under_attention_dp",
                                "C.moe_tp_world_or_ep", "B.memory_per_rank"], fw)
    assert bound == ["C.eplb_placement_within_experts", "C.moe_tp_world_or_ep"]


@pytest.mark.slow  # a plan of hundreds of dies (CI's slow suite runs it)
def test_copies_hint_when_the_experts_rule_binds_the_world():
    """768 A3 dies, 256 experts: EP768 needs 512 redundant copies the EPLB placement cannot place, so the 768
    dies run in pipeline stages (DP engines under PP, as vLLM 0.23.0 starts them: PP2 of EP384, about 40 tok/s per
    rank). Two copies of 384 (EP384, 128 redundant experts, which the placement holds) run about 80: past MARGIN
    (1.2x), and the note names the copies, the rule and the command."""
    result, cands = _solve(768)
    here = cands[0].planned.estimate.output_tokens_per_s_per_rank
    assert cands[0].planned.config.pp_size > 1
    note = result.copies_note
    assert note is not None and note.startswith("2 copies of 384 x atlas_a3 (")
    assert "C.eplb_placement_within_experts" in note
    assert ("`shardplan recommend deepseek-v3.2 --hardware atlas_a3 --cards 384,768 --target-output-tokens-per-s "
            in note and "--framework vllm-ascend --weight-dtype int8` weighs copies" in note)
    per_rank = float(note.split(" would run ")[1].split(" ")[0])
    assert per_rank >= copies.MARGIN * here


def test_no_copies_hint_where_one_deployment_is_the_better():
    """64 A3 dies: EP64 divides the 256 experts and nothing world-bound binds, so nothing more is planned and
    no note is made (the one deployment of 64 runs about 80 tok/s per rank, as its copies of 32 would)."""
    result, cands = _solve(64)
    assert copies.triggers(64, load_hardware("atlas_a3"), load_framework("vllm-ascend"), result.binding) == []
    assert result.copies_note is None


@pytest.mark.slow  # a plan of hundreds of dies (CI's slow suite runs it)
def test_copies_hint_in_the_json_and_on_stderr():
    """The CLI says the note on stderr and carries it in the JSON (copies_note); the answer stays the one
    deployment of 768."""
    res = CliRunner().invoke(main, ["solve", DS[0], "--hardware", DS[1], "--cards", "768", "--weight-dtype", "int8",
                                    "--framework", "vllm-ascend", "--scenario", "throughput", "--format", "json"])
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["copies_note"].startswith("2 copies of 384 x atlas_a3")
    assert f"note: {data['copies_note']}" in res.stderr
    assert data["candidates"][0]["parallel_config"]
