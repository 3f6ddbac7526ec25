"""Pipeline parallel: one test per rule. Llama-3.1-405B: 126 layers, hidden 16384, vocab 128,256, BF16."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from solver.errors import InputError
from solver.estimate.compute import Work, factors_for
from solver.estimate.memory import memory_per_rank, stage_memory
from solver.estimate.params import count_params
from solver.estimate.pipeline import microbatches, prefill_traversal, send_s, send_tier, slots, stages
from solver.specs.model_rules import stage_sizes
from solver.estimate.serving import ServingPolicy, ServingShape, Workload, estimate, serving_times
from solver.estimate.step import step_cost
from solver.launch import LaunchInputs, emit_launch
from solver.space.domains import build_space
from solver.specs.framework import load_framework
from solver.specs.rule_env import model_env
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig, make_parallel_config
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario

GB = 1e9


@pytest.fixture(scope="module")
def llama():
    return load_model("llama-3.1-405b")


@pytest.fixture(scope="module")
def h100():
    return load_hardware("h100_sxm")


def tp8_pp2(**kw) -> ParallelConfig:
    return ParallelConfig(world_size=16, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8,
                          pp_size=2, **kw)


def test_stages_are_balanced_the_first_ones_one_layer_longer():
    assert stage_sizes(126, 2) == (63, 63)
    assert stage_sizes(126, 4) == (32, 32, 31, 31)
    assert sum(stage_sizes(61, 8)) == 61


def test_embedding_on_the_first_stage_lm_head_on_the_last(llama):
    st = stages(llama, 2)
    assert st[0].first and not st[0].last and "lm_head" in st[0].absent_modules
    assert st[1].last and "embedding" in st[1].absent_modules
    assert len(st[0].model.layers) == len(st[1].model.layers) == 63


def test_memory_per_stage_is_half_the_layers_plus_its_own_table(llama, h100):
    prec = resolve_precision(llama, h100)
    pc = tp8_pp2()
    params = count_params(llama)
    by = params.by_name()
    layer_params = params.total - by["embedding"] - by["lm_head"]
    table = llama.vocab_size * llama.hidden_size  # 128,256 x 16,384
    first, last = stage_memory(llama, h100, pc, prec, 16, 4096)
    # stage 0: 63 of 126 layers and the embedding, over TP8, 2 bytes a parameter (bf16)
    want = (layer_params / 2 + table) * 2 / 8
    assert first.weights_total == pytest.approx(want, rel=2e-3)  # the final norm sits with the layers' count
    assert "embedding" in first.weights_bytes and "lm_head" not in first.weights_bytes
    assert "lm_head" in last.weights_bytes and "embedding" not in last.weights_bytes
    assert memory_per_rank(llama, h100, pc, prec, 16, 4096).total == max(first.total, last.total)
    # KV: each stage holds its 63 layers' KV of all 16 sequences: 8 KV heads / TP8 = 1 head x 128 x 2 (K, V) x 2 B
    assert first.kv_cache_bytes == pytest.approx(16 * 4096 * 63 * 1 * 128 * 2 * 2)


def test_bubble_fill_and_drain_for_prefill_circulation_for_decode():
    assert microbatches(4, 16) == 4 and microbatches(4, 1) == 1
    assert slots("prefill", 4, 4) == 7  # M + pp - 1
    assert slots("decode", 4, 4) == 4  # max(M, pp)
    assert slots("decode", 4, 1) == 4  # one sequence: the other stages idle


def test_pipeline_prefill_is_the_stages_fill_and_drain_of_their_microbatch_costs(llama, h100):
    prec = resolve_precision(llama, h100)
    f = factors_for(h100, load_framework("vllm").efficiency_for(h100))
    pc = tp8_pp2()
    w = Work("prefill", 8 * 2048, 1024.5, 8, 8)
    step = step_cost(llama, h100, pc, prec, f, w)
    # M = 2 microbatches of 4 prompts; the first crosses both stages, the second follows at the slower one's pace
    # (the first holds the embedding, the last the LM head: they differ), and 2 hand-offs between them (the last
    # stage forwards nothing), each of 1/8 of the microbatch's rows per TP8 rank, all-gathered on the next stage;
    # a row is vLLM's hidden state and residual, 2 x 16,384 (FrameworkProfile.pp_handoff_residual)
    micro = Work("prefill", 4 * 2048, 1024.5, 4, 4)
    stage_s = []
    for st in stages(llama, 2):
        sc = step_cost(st.model, h100, pc.stage(), prec, f, micro)
        stage_s.append(sum(o.time_s for o in sc.ops if o.module not in st.absent_modules)
                       + sum(c.exposed_s for c in sc.comms if c.module not in st.absent_modules))
    hand_off = send_s(h100, 8, 2, 4 * 2048, 2 * 16384, f.comm, split=8)
    assert step.time_s == pytest.approx(sum(stage_s) + max(stage_s) + 2 * hand_off + f.step_overhead_s, rel=1e-9)


def test_a_tp_group_sends_its_slices_over_the_stage_boundary_and_all_gathers_them(h100):
    """TP8 stages of 8 H100s at PP2: each rank sends 1/8 of the 2048 x 16,384 x 2 B = 64 MiB hand-off over the
    scale-out link (8 MiB), and the receiving stage's TP group all-gathers the 64 MiB over NVLink; the whole
    tensor over the scale-out link would take 8x its bytes there."""
    from solver.estimate.comm import all_gather_s
    t = h100.tiers[send_tier(h100, 8, 2)]
    nbytes = 2048 * 16384 * 2
    assert send_s(h100, 8, 2, 2048, 16384, 1.0, split=8) == pytest.approx(
        t.latency_s + nbytes / 8 / (t.bandwidth_Bps * t.efficiency) + all_gather_s(h100, 8, nbytes))
    assert send_s(h100, 8, 2, 2048, 16384, 1.0, split=8) < send_s(h100, 8, 2, 2048, 16384, 1.0)


def test_a_prefill_hands_off_between_its_slots_and_a_decode_after_each():
    """One prompt at PP2: 2 slots, 1 hand-off (stage 0 to stage 1); 3 microbatches at PP4 prefill: 6 slots, 5
    hand-offs; decode circulates max(m, pp) slots, a hand-off after each."""
    from solver.estimate.pipeline import sends
    assert (slots("prefill", 2, 1), sends("prefill", 2, 1)) == (2, 1)
    assert (slots("prefill", 4, 3), sends("prefill", 4, 3)) == (6, 5)
    assert (slots("decode", 4, 2), sends("decode", 4, 2)) == (4, 4)


def test_stage_hand_off_crosses_nodes_when_stages_are_whole_nodes(h100):
    assert send_tier(h100, 8, 2) != "intra_node"  # two 8-GPU stages span 16 ranks: across nodes
    assert send_tier(h100, 4, 2) == "intra_node"  # two 4-GPU stages share a node
    # 2048 tokens x 16,384 x 2 B = 64 MiB over the scale-out link
    t = h100.tiers[send_tier(h100, 8, 2)]
    assert send_s(h100, 8, 2, 2048, 16384, 1.0) == pytest.approx(
        t.latency_s + 2048 * 16384 * 2 / (t.bandwidth_Bps * t.efficiency))


def test_the_hand_off_is_priced_at_the_slowest_boundary_it_crosses(h100):
    """Four stages of 4 H100s on 16 ranks: each rank hands off to its peer 4 on; 0 -> 4 and 8 -> 12 stay in a
    node, 4 -> 8 crosses to the next, so the pipeline's hand-off is the scale-out tier's (two stages of 4 alone
    share one node). 144 GB200 at PP4: stages of 36, and 36 -> 72 crosses from one NVL72 rack to the other (72
    ranks a rack)."""
    assert send_tier(h100, 4, 4) == send_tier(h100, 8, 2) != "intra_node"
    gb200 = load_hardware("gb200")
    assert send_tier(gb200, 36, 2) == "scale_up"  # one rack
    assert send_tier(gb200, 36, 4) == send_tier(gb200, 72, 2) != "scale_up"  # 71|72: two racks


def test_pp_domain_is_stages_of_whole_nodes_or_part_of_one(llama, h100):
    sc = Scenario(kind="latency", isl=2048, osl=256)
    # a stage-major engine numbers a stage's ranks consecutively; under a dp-major one (vLLM) the space keeps every
    # value and each attention layout judges its engine's share (tests/test_plan48.py)
    d = build_space(llama, h100, load_framework("sglang"), 24, sc).domains["pp_size"]
    assert set(d) == {1, 3, 6, 12, 24}  # stages of 24, 8, 4, 2, 1 ranks; 2 (12 ranks) and 4 (6) are cut
    assert build_space(llama, h100, load_framework("cann-recipes"), 16, sc).domains["pp_size"] == (1,)


def test_rules_read_world_as_one_stage(llama):
    env = model_env({"attn_tp_size": 8, "pp_size": 2}, llama, 8, world=16)
    assert env["world"] == 8 and env["attn_dp_size"] == 1


def test_pp_not_dividing_the_world_is_one_line():
    with pytest.raises(InputError, match="--pp: 3 does not divide the world size 16"):
        make_parallel_config(16, pp_size=3)
    with pytest.raises(InputError, match="stage size 8"):
        make_parallel_config(16, pp_size=2, attn_tp_size=16)


def test_launch_spells_pp_and_engines_without_it_refuse(llama, h100):
    inputs = LaunchInputs(batch=16, max_model_len=4352)
    launch = emit_launch(load_framework("vllm"), llama, h100, tp8_pp2(), inputs)
    argv = launch["nodes"][0]["argv"]
    assert argv[argv.index("--pipeline-parallel-size") + 1] == "2"
    assert argv[argv.index("--tensor-parallel-size") + 1] == "8"
    assert len(launch["nodes"]) == 2
    with pytest.raises(InputError, match="pp_size = 2 but cann-recipes has no such knob"):
        emit_launch(load_framework("cann-recipes"), llama, load_hardware("atlas_a3"), tp8_pp2(), inputs)


def test_llama_405b_on_16_h100_under_vllm_gets_tp8_pp2():
    from solver.cli.main import main as cli

    res = CliRunner().invoke(cli, ["solve", "llama-3.1-405b", "--hardware", "h100_sxm", "--cards", "16",
                                   "--framework", "vllm", "--format", "json"])
    assert res.exit_code == 0, res.output
    import json

    first = json.loads(res.output)["candidates"][0]
    assert first["parallel_config"]["pp_size"] == 2 and first["parallel_config"]["attn_tp_size"] == 8
    assert "--pipeline-parallel-size" in first["launch"]["nodes"][0]["argv"]


def test_solve_with_pp_not_dividing_the_world_exits_2():
    from solver.cli.main import main as cli

    res = CliRunner().invoke(cli, ["estimate", "llama-3.1-405b", "--hardware", "h100_sxm", "--cards", "16",
                                   "--attn-tp", "8", "--pp", "3", "--isl", "2048", "--osl", "256",
                                   "--concurrency", "16"])
    assert res.exit_code == 2 and "--pp: 3 does not divide the world size 16" in res.output


def test_a_prompt_crosses_every_stage_before_its_first_token():
    # one prompt is one microbatch: pp slots of the step's m + pp - 1, spread over its n prompts
    assert prefill_traversal(1, 8) == 1.0
    assert prefill_traversal(32, 2) == pytest.approx(32 * 2 / 33)
    assert prefill_traversal(4, 16) == pytest.approx(4 * 4 / 7)
    # decode-first steady state: the queue serves a prompt in its share p = P_n / n, its token waits r p
    wl = Workload("serving", isl=4096, osl=256, concurrency=2, request_overhead_s=0.0)
    policy = ServingPolicy(decode_first=True)
    flat = serving_times(ServingShape(2, 2, 2, 1), 1.4, 0.05, wl, policy)
    piped = serving_times(ServingShape(2, 2, 2, 1, traversal=prefill_traversal(32, 2)), 1.4, 0.05, wl, policy)
    crossing = prefill_traversal(32, 2) * 1.4 / 2  # r p: about one prompt's 32 slots of the step's 33
    assert piped.ttft_steady_s >= crossing
    assert flat.ttft_steady_s < crossing  # the same step read as unpipelined: its share p alone


def test_serving_ttft_under_pp_is_no_less_than_one_prompt_crossing_the_pipeline(llama, h100):
    # a request's first token cannot come before its own prompt has crossed every stage: the serving TTFT at any
    # concurrency is at least the prefill of that one prompt alone through the pipeline (vLLM: decode-first)
    prec = resolve_precision(llama, h100)
    f = factors_for(h100, load_framework("vllm").efficiency_for(h100))
    pc = tp8_pp2()
    alone = estimate(llama, h100, pc, prec, f, Workload("prefill", batch=1, seq_len=4096))
    for c in (1, 2, 4, 8):
        served = estimate(llama, h100, pc, prec, f, Workload("serving", isl=4096, osl=256, concurrency=c))
        assert served.ttft_s >= alone.ttft_s, c
