"""The communication a step pays, checked against hand arithmetic (estimate/comm.py's formulas)."""
from __future__ import annotations

import pytest

from solver.estimate import comm
from solver.estimate.compute import Work, factors_for
from solver.estimate.step_parts import head_comms
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig

MI355X = load_hardware("mi355x")
H100 = load_hardware("h100_sxm")


def test_a_pair_on_a_full_mesh_moves_over_one_link():
    """MI355X: Infinity Fabric full mesh, 7 links summing to 448 GB/s, efficiency 0.7. A TP 2 ring all-reduce
    of 1 MB reaches one peer, over one 64 GB/s link: 2 x (10 us + 1/2 x 1e6 / (64e9 x 0.7)) = 2 x (10 + 11.16)
    us = 42.32 us; the aggregate rate would have given 2 x (10 + 1.59) = 23.2 us."""
    assert comm.all_reduce_s(MI355X, 2, 1e6) == pytest.approx(2 * (10e-6 + 0.5 * 1e6 / (64e9 * 0.7)))


def test_eight_ranks_on_a_full_mesh_drive_all_seven_links():
    """TP 8 on the same node reaches 7 peers over all 7 links: 2 x (10 us + 7/8 x 1e6 / (448e9 x 0.7))."""
    assert comm.all_reduce_s(MI355X, 8, 1e6) == pytest.approx(2 * (10e-6 + 7 / 8 * 1e6 / (448e9 * 0.7)))


def test_a_switched_fabric_gives_one_peer_the_whole_rate():
    """H100's NVSwitch: a TP 2 ring all-reduce of 1 MB runs at the full 450 GB/s x 0.82:
    2 x (10 us + 1/2 x 1e6 / 369e9)."""
    assert comm.all_reduce_s(H100, 2, 1e6) == pytest.approx(2 * (10e-6 + 0.5 * 1e6 / (450e9 * 0.82)))


def test_a_point_to_point_send_on_a_mesh_uses_one_link():
    """A PP boundary inside an MI355X node: 10 us + 8 MB / (64e9 x 0.7) = 10 + 187.5 us."""
    assert comm.send_recv_s(MI355X, 8.4e6) == pytest.approx(10e-6 + 8.4e6 / (64e9 * 0.7))


def test_an_all_to_all_on_a_mesh_spreads_over_the_links_it_reaches():
    """EP 4 inside an MI355X node: each rank sends 3/4 of 4 MB to 3 peers over 3 links (192 GB/s x 0.7):
    10 us + 4e6 x 3/4 / (192e9 x 0.7) = 10 + 22.32 us."""
    assert comm.all_to_all_s(MI355X, 4, 4e6) == pytest.approx(10e-6 + 4e6 * 3 / 4 / (192e9 * 0.7))


def _head(model: str, pc: ParallelConfig, tokens: int) -> dict:
    hw = load_hardware("h100_sxm")
    return {c.name: c for c in head_comms(load_model(model), hw, pc, factors_for(hw), Work(
        "decode", tokens, 2048.0, tokens, tokens))}


def test_a_tensor_parallel_lm_head_all_gathers_the_logits_of_every_row():
    """Llama-3.3-70B TP 8, a decode step of 256 sequences: each rank computes 256 rows x 128256 / 8 vocab
    columns and all-gathers them in bf16: 256 x 128256 x 2 = 65,667,072 bytes gathered to every rank; the
    ring moves 7/8 of it over NVLink: 10 us + 7/8 x 65.67e6 / (450e9 x 0.82) = 10 + 155.7 us."""
    got = _head("llama-3.3-70b", ParallelConfig(world_size=8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8,
                                                lmhead_tp_size=8), 256)
    lg = got["logits_gather"]
    assert (lg.primitive, lg.group, lg.bytes) == ("all_gather", 8, 256 * 128256 * 2)
    assert lg.time_s == pytest.approx(10e-6 + 7 / 8 * 256 * 128256 * 2 / (450e9 * 0.82))


def test_the_hidden_gather_beside_attention_tp_is_charged_as_the_planners_tables_cost_it():
    """Under attention TP 8 the o_proj all-reduce leaves every rank of the LM head's group the same 256 rows, so the
    engines run no hidden-state gather there; the estimate charges it all the same (the planner's tables cost the
    head beside the layout's group size, where KVP and SP read alike): 8 x 32 rows x 8192 x 2 = 4,194,304 bytes,
    h / V = 8192 / 128256 = 6.4% of the logits' gather beside it."""
    got = _head("llama-3.3-70b", ParallelConfig(world_size=8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8,
                                                lmhead_tp_size=8), 256)
    assert got["lmhead_gather"].bytes == 8 * 32 * 8192 * 2
    assert got["lmhead_gather"].bytes / got["logits_gather"].bytes == pytest.approx(8192 / 128256)


def test_attention_dp_ranks_gather_their_hidden_rows_before_a_shared_lm_head():
    """DeepSeek-V3 with attention DP 8 and the LM head TP 8, 32 sequences per replica: the group holds
    8 x 32 = 256 distinct rows; the hidden states are all-gathered first (256 x 7168 x 2 = 3,670,016 bytes
    out), then the logits (256 x 129280 x 2 = 66,191,360 bytes out)."""
    got = _head("deepseek-v3", ParallelConfig(world_size=8, lmhead_tp_size=8), 32)
    assert got["lmhead_gather"].bytes == 256 * 7168 * 2
    assert got["logits_gather"].bytes == 256 * 129280 * 2


def test_an_lmhead_tp_engine_sends_each_rank_its_own_rows_logits():
    """vllm-ascend's lmhead TP (ops/vocab_parallel_embedding.py _get_logits_lmheadtp; its profile's
    serving.logits_exchange all_to_all): DeepSeek-V3 at attention DP 16 with the LM head TP16, 32 sequences a
    replica: the hidden rows are all-gathered (16 x 32 x 7168 x 2 = 7,340,032 B out), each rank computes its
    1/16 of the vocabulary for all 512 rows, and an all-to-all gives each rank its own 32 rows over the whole
    vocabulary: 32 x 129,280 x 2 = 8,273,920 B a rank, where vLLM's all-gather hands every rank all 512 rows
    (16x that)."""
    from solver.estimate.compute import Work
    from solver.estimate.step_parts import head_comms
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.estimate.factors import factors_for
    model, hw = load_model("deepseek-v3"), load_hardware("atlas_a3")
    pc = ParallelConfig(world_size=16, lmhead_tp_size=16)
    w = Work("decode", 32, 4096, 32, 32)
    ascend = {c.name: c for c in head_comms(model, hw, pc, factors_for(hw, load_framework("vllm-ascend")
                                                                          .efficiency_for(hw)), w)}
    vllm = {c.name: c for c in head_comms(model, hw, pc, factors_for(hw), w)}
    assert ascend["lmhead_gather"].bytes == 16 * 32 * 7168 * 2
    assert (ascend["logits_exchange"].primitive, ascend["logits_exchange"].bytes) == ("all_to_all", 32 * 129280 * 2)
    assert vllm["logits_gather"].bytes == 16 * ascend["logits_exchange"].bytes
