"""Per-rank memory: KV bytes per token, how each parallel knob splits weights and cache, the walls."""
from __future__ import annotations

import math

import pytest

from solver.specs.dtypes import KV16, KVFormat
from solver.errors import InputError
from solver.estimate.memory import MemoryReport, max_batch, memory_per_rank
from solver.estimate.memory_options import MemoryOptions
from solver.estimate.request_state import (
    cache_per_rank,
    indexer_bytes_per_token_layer,
    kv_bytes_per_token_layer,
    state_per_rank,
)
from solver.estimate.weights import weights_per_rank
from solver.estimate.params import count_params
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig, make_parallel_config
from solver.specs.precision import resolve_precision

H200 = load_hardware("h200_sxm")


def _prec(alias: str, hw: str = "h200_sxm"):
    return resolve_precision(load_model(alias), load_hardware(hw))


def _weights(alias: str, world: int, **knobs: int) -> dict[str, float]:
    model = load_model(alias)
    return weights_per_rank(model, make_parallel_config(world, **knobs), _prec(alias), MemoryOptions())


def _kv(alias: str, world: int, batch: float = 1, seq_len: int = 4096, **knobs: int) -> float:
    model = load_model(alias)
    kv, _, _ = cache_per_rank(model, make_parallel_config(world, **knobs), _prec(alias), batch, seq_len)
    return kv


def _report(weights: float, kv: float, capacity: float = 100.0, reserve: float = 3.0, other: float = 0.0) -> MemoryReport:
    return MemoryReport(weights_bytes={"w": weights}, kv_cache_bytes=kv, indexer_cache_bytes=0.0,
                        activation_bytes=other, comm_buffer_bytes=0.0, reserved_bytes=reserve,
                        capacity_bytes=capacity, total_fraction=0.95, weights_kv_fraction=0.8,
                        sequences_per_rank=1.0)


# ------------------------------------------------------------------------------- KV bytes per token per layer


def test_llama_70b_bf16_kv_is_4096_bytes_per_token_layer() -> None:
    # 8 KV heads x (128 K + 128 V) x 2 bytes
    assert kv_bytes_per_token_layer(load_model("llama-3.1-70b"), KV16) == 4096


def test_deepseek_v3_mla_kv_is_1152_bytes_bf16_and_576_fp8() -> None:
    model = load_model("deepseek-v3")
    assert kv_bytes_per_token_layer(model, KV16) == 1152  # (512 latent + 64 rope) x 2
    assert kv_bytes_per_token_layer(model, KVFormat(1)) == 576  # dense MLA: (512 + 64) fp8 values, no scales (the 656 B row is DSA's)


def test_deepseek_v32_indexer_cache_is_132_bytes_per_token_layer() -> None:
    assert indexer_bytes_per_token_layer(load_model("deepseek-v3.2")) == 132  # 128 fp8 + one fp32 scale
    assert indexer_bytes_per_token_layer(load_model("deepseek-v3")) == 0


@pytest.mark.parametrize("attn_tp, heads_per_rank", [(1, 4), (2, 2), (4, 1), (8, 1)])
def test_gqa_kv_bytes_follow_kv_heads_per_rank(attn_tp: int, heads_per_rank: int) -> None:
    model = load_model("qwen3-235b-a22b")
    assert model.num_key_value_heads == 4 and model.head_dim == model.v_head_dim == 128
    expected = heads_per_rank * (model.head_dim + model.v_head_dim) * 2
    assert kv_bytes_per_token_layer(model, KV16, attn_tp) == expected
    assert expected == {1: 2048, 2: 1024, 4: 512, 8: 512}[attn_tp]


# ------------------------------------------------------------------------------------------ memory rules


@pytest.mark.parametrize("module, knob", [
    ("dense_ffn", "dense_tp_size"), ("embedding", "embed_tp_size"), ("lm_head", "lmhead_tp_size"),
    ("o_proj", "o_proj_tp_size"), ("attention", "attn_tp_size"),
])
def test_module_weights_divide_by_its_tp_degree(module: str, knob: str) -> None:
    # Llama-3.1-70B has 8 KV heads, so even the K/V projections split 8 ways
    full = _weights("llama-3.1-70b", 8)[module]
    split = _weights("llama-3.1-70b", 8, **{knob: 8})[module]
    assert split == pytest.approx(full / 8)


@pytest.mark.parametrize("moe_tp", [1, 2, 8])
def test_routed_experts_divide_by_world_size(moe_tp: int) -> None:
    single = _weights("deepseek-v3", 1)["routed_experts"]
    # EP = 64 / moe_tp experts groups, each expert split moe_tp ways: always 1/64 of the experts per rank
    assert _weights("deepseek-v3", 64, moe_tp_size=moe_tp)["routed_experts"] == pytest.approx(single / 64)


def test_mla_kv_cache_is_not_sharded_by_attention_tp() -> None:
    # one sequence per rank in both: a single attention replica of 8 TP ranks vs one rank alone
    assert _kv("deepseek-v3", 8, attn_tp_size=8) == pytest.approx(_kv("deepseek-v3", 1))
    # while a GQA cache with 8 KV heads does split 8 ways
    assert _kv("llama-3.1-70b", 8, attn_tp_size=8) == pytest.approx(_kv("llama-3.1-70b", 1) / 8)


def test_gqa_kv_heads_replicate_when_attn_tp_exceeds_kv_heads() -> None:
    model = load_model("qwen3-235b-a22b")  # 4 KV heads
    assert _kv("qwen3-235b-a22b", 8, attn_tp_size=8) == pytest.approx(_kv("qwen3-235b-a22b", 4, attn_tp_size=4))
    # the K/V projection weights stop splitting at 4 ranks while q_proj keeps splitting
    parts = {p.name: p.params for p in count_params(model).module("attention").parts}
    bpp = _prec("qwen3-235b-a22b").fmt("attention").bytes_per_param
    expected = (parts["q_proj"] / 8 + parts["kv_proj"] / 4) * bpp + parts["qk_norm"] * bpp
    assert _weights("qwen3-235b-a22b", 8, attn_tp_size=8)["attention"] == pytest.approx(expected)


@pytest.mark.parametrize("knob", ["cp_size", "kvp_size"])
def test_cp_and_kvp_shard_the_cache_by_tokens(knob: str) -> None:
    for alias in ("llama-3.1-70b", "deepseek-v3"):
        assert _kv(alias, 8, **{knob: 8}) == pytest.approx(_kv(alias, 1) / 8)


def test_a_batch_below_the_replicas_holds_one_whole_sequence_on_the_busiest_rank() -> None:
    # 8 attention replicas (TP 1), 4 requests: four ranks each hold one whole request, the busiest rank's cache
    # is one sequence's (not half of one); 12 requests: the busiest holds two
    one = _kv("deepseek-v3", 1)
    assert _kv("deepseek-v3", 8, batch=4) == pytest.approx(one)
    assert _kv("deepseek-v3", 8, batch=12) == pytest.approx(2 * one)
    model, pc = load_model("qwen3-next"), make_parallel_config(8)
    assert state_per_rank(model, pc, _prec("qwen3-next"), 4, 4096) == state_per_rank(model, pc, _prec("qwen3-next"),
                                                                                       8, 4096)


def test_sp_keeps_full_attention_weights_and_full_cache_per_rank() -> None:
    for alias in ("llama-3.1-70b", "deepseek-v3.2"):
        alone, sp = _weights(alias, 1), _weights(alias, 4, attn_sp_size=4)
        assert sp["attention"] == pytest.approx(alone["attention"])
        assert sp["o_proj"] == pytest.approx(alone["o_proj"])
        assert _kv(alias, 4, attn_sp_size=4) == pytest.approx(_kv(alias, 1))


def test_dsa_indexer_weights_are_replicated_under_attention_tp() -> None:
    alone, tp8 = _weights("deepseek-v3.2", 8), _weights("deepseek-v3.2", 8, attn_tp_size=8)
    assert tp8["indexer"] == pytest.approx(alone["indexer"]) and alone["indexer"] > 0
    assert tp8["attention"] < alone["attention"]  # the MLA up-projections do split


def test_feasibility_wall_is_min_of_095_capacity_and_capacity_minus_reserve() -> None:
    assert _report(0, 0, capacity=100, reserve=3).limit_bytes == pytest.approx(95)  # 0.95 x capacity binds
    assert _report(0, 0, capacity=100, reserve=10).limit_bytes == pytest.approx(90)  # the reserve binds
    # the model's own bytes (everything but the reserve) are held against the wall
    assert _report(60, 30, capacity=100, reserve=10).feasible
    assert not _report(60, 30, capacity=100, reserve=10, other=0.5).feasible
    # on real hardware: Atlas A3 (64 GB, 3.5 GiB reserve) is bound by the reserve, H200 by 0.95
    llama, pc = load_model("llama-3.1-8b"), make_parallel_config(1)
    a3 = load_hardware("atlas_a3")
    rep = memory_per_rank(llama, a3, pc, resolve_precision(llama, a3), 1, 1024)
    assert rep.limit_bytes == a3.memory_bytes - a3.reserved_bytes
    rep = memory_per_rank(llama, H200, pc, resolve_precision(llama, H200), 1, 1024)
    assert rep.limit_bytes == pytest.approx(0.95 * H200.memory_bytes)


def test_weights_plus_kv_above_080_capacity_is_tight() -> None:
    assert _report(50, 31, capacity=100).tight
    assert not _report(50, 29, capacity=100).tight
    assert _report(50, 31, capacity=100).feasible  # tight is a warning, not the wall


def test_max_batch_is_a_multiple_of_attention_replicas_and_the_next_multiple_does_not_fit() -> None:
    model = load_model("llama-3.1-70b")
    pc = make_parallel_config(8, attn_tp_size=2, dense_tp_size=2)
    prec, seq_len = resolve_precision(model, H200), 32768
    best = max_batch(model, H200, pc, prec, seq_len)
    step = pc.attn_replicas
    assert step == 4 and best > 0 and best % step == 0
    assert memory_per_rank(model, H200, pc, prec, best, seq_len).feasible
    assert not memory_per_rank(model, H200, pc, prec, best + step, seq_len).feasible


def test_max_batch_bisects_a_configuration_once_per_length(monkeypatch) -> None:
    """A disaggregated plan's full estimates ask one decode configuration's KV capacity once per pair: the
    bisection (some 17 memory_per_rank calls) runs once per configuration, length and options."""
    from solver.estimate import memory

    model = load_model("llama-3.1-70b")
    pc = make_parallel_config(8, attn_tp_size=4, dense_tp_size=4)
    prec = resolve_precision(model, H200)
    calls = []
    real = memory.memory_per_rank
    monkeypatch.setattr(memory, "memory_per_rank", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = max_batch(model, H200, pc, prec, 12_345)
    asked = len(calls)
    assert asked > 1 and max_batch(model, H200, pc, prec, 12_345) == first and len(calls) == asked
    max_batch(model, H200, pc, prec, 12_346)
    assert len(calls) > asked


@pytest.mark.parametrize("answer,guess", [(1, 2), (1, 1000), (7, 2), (7, 7), (7, 8), (1000, 3), (1000, 999),
                                          (1000, 1001), (1000, 5000), (1 << 24, 2)])
def test_the_largest_fitting_count_is_found_from_any_guess(answer: int, guess: int) -> None:
    """fits(u) is u <= answer: the galloped bracket and its bisection land on the answer wherever they start."""
    from solver.estimate.memory import _largest_fitting

    assert _largest_fitting(lambda u: u <= answer, guess) == answer


@pytest.mark.parametrize("name,knobs,seq_len", [
    ("llama-3.1-70b", dict(attn_tp_size=2, dense_tp_size=2), 32768),
    ("llama-3.1-70b", dict(attn_tp_size=8, dense_tp_size=8), 1024),
    ("deepseek-v3", dict(attn_tp_size=1), 5120),
    ("deepseek-v3", dict(attn_tp_size=8, moe_tp_size=8), 131072),
    ("qwen3.5-35b-a3b", dict(attn_tp_size=4, dense_tp_size=4), 4096),
    ("gpt-oss-120b", dict(attn_tp_size=2), 65536),
])
def test_max_batch_is_the_largest_multiple_of_the_replicas_that_fits(name: str, knobs: dict, seq_len: int) -> None:
    """The largest batch found is the scan's answer: it fits and the next multiple of the attention replicas
    does not (dense, MLA with attention DP, a hybrid, sliding windows; short and long contexts)."""
    model = load_model(name)
    pc = make_parallel_config(8, **knobs)  # MoE at TP 1: EP 8
    prec = resolve_precision(model, H200)
    best, step = max_batch(model, H200, pc, prec, seq_len), pc.attn_replicas
    if best == 0:
        assert not memory_per_rank(model, H200, pc, prec, step, seq_len).feasible
        return
    assert best % step == 0
    assert memory_per_rank(model, H200, pc, prec, best, seq_len).feasible
    assert not memory_per_rank(model, H200, pc, prec, best + step, seq_len).feasible


def test_mtp_weights_count_only_when_mtp_layers_positive() -> None:
    model = load_model("deepseek-v3")
    pc = make_parallel_config(16)
    prec = resolve_precision(model, H200)
    off = memory_per_rank(model, H200, pc, prec, 16, 4096, mtp_layers=0)
    on = memory_per_rank(model, H200, pc, prec, 16, 4096, mtp_layers=1)
    assert "mtp" not in off.weights_bytes
    assert on.weights_bytes["mtp"] > 0
    assert on.weights_total - off.weights_total == pytest.approx(on.weights_bytes["mtp"])
    # the MTP layer also caches KV: one more layer on top of the 61
    assert on.kv_cache_bytes == pytest.approx(off.kv_cache_bytes * 62 / 61)


def test_fp8_checkpoint_on_atlas_a3_is_served_as_bf16_with_a_note() -> None:
    model = load_model("deepseek-v3")
    assert model.quant.experts == "fp8_block"
    prec = resolve_precision(model, load_hardware("atlas_a3"))
    assert {prec.fmt(g).name for g in ("attention", "dense", "experts")} == {"bf16"}
    assert prec.notes and all("served as bf16" in note for note in prec.notes)
    assert resolve_precision(model, H200).fmt("experts").name == "fp8_block"  # H200 runs FP8


def test_weight_dtype_fp8_on_atlas_a2_raises_input_error() -> None:
    model = load_model("llama-3.1-70b")
    with pytest.raises(InputError, match="--weight-dtype: atlas_a2 has no fp8"):
        resolve_precision(model, load_hardware("atlas_a2"), weight_dtype="fp8")


def test_memory_total_is_the_sum_of_its_parts() -> None:
    model = load_model("deepseek-v3.2")
    a3 = load_hardware("atlas_a3")
    pc = make_parallel_config(64, cp_size=64, o_proj_tp_size=8, embed_tp_size=16, lmhead_tp_size=16)
    rep = memory_per_rank(model, a3, pc, resolve_precision(model, a3), 64, 65536)
    parts = (rep.weights_total + rep.kv_cache_bytes + rep.indexer_cache_bytes + rep.activation_bytes
             + rep.comm_buffer_bytes + rep.reserved_bytes)
    assert math.isclose(rep.total, parts)
    assert rep.indexer_cache_bytes > 0


def test_the_limit_bounds_everything_but_the_runtime_reserve() -> None:
    # min(0.95 x 151.40, 151.40 - 3.76) = 143.83 GB on an H200: at batch 93 the total with the reserve (147.13 GB)
    # is above it and the config still fits, as the model's 143.38 GB is under it
    model, h200 = load_model("llama-3.1-70b"), load_hardware("h200_sxm")
    pc = make_parallel_config(8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)
    fits, over = (memory_per_rank(model, h200, pc, _prec("llama-3.1-70b"), b, 32768) for b in (93, 95))
    assert fits.model_bytes + fits.reserved_bytes == fits.total > fits.limit_bytes >= fits.model_bytes
    assert fits.feasible and not over.feasible and over.model_bytes > over.limit_bytes
    assert fits.limit_formula() == "min(0.95 x 151.40, 151.40 - 3.76 runtime reserve)"


def test_hybrid_model_holds_kv_for_its_attention_layers_only_at_128k() -> None:
    # Nemotron-3-Nano: 6 GQA layers (2 KV heads x 128 x K,V x 2 B) among 52; 23 Mamba-2 layers hold a constant state
    model = load_model("nemotron-3-nano")
    pc = make_parallel_config(1)
    kv, idx, _ = cache_per_rank(model, pc, _prec("nemotron-3-nano"), 1, 131072)
    assert kv == 6 * 131072 * 2 * 128 * 2 * 2 and idx == 0
    state = state_per_rank(model, pc, _prec("nemotron-3-nano"), 1, 131072)
    assert state == 23 * (64 * 64 * 128 * 4 + 3 * (4096 + 2 * 8 * 128) * 2)  # fp32 SSM state + bf16 conv tail


def test_sliding_window_layers_hold_only_their_window_at_128k() -> None:
    # Gemma-3-27B: 10 global layers hold 128K tokens, 52 sliding layers hold 1024; 16 KV heads x 128 x K,V x 2 B
    model = load_model("gemma-3-27b")
    kv, _, _ = cache_per_rank(model, make_parallel_config(1), _prec("gemma-3-27b"), 1, 131072)
    per_token = 16 * 128 * 2 * 2
    assert kv == (10 * 131072 + 52 * 1024) * per_token


def test_cp_splits_only_growing_state() -> None:
    model = load_model("qwen3-next-80b-a3b")
    prec = _prec("qwen3-next-80b-a3b")
    kv1, _, _ = cache_per_rank(model, make_parallel_config(4), prec, 4, 65536)
    kv4, _, _ = cache_per_rank(model, make_parallel_config(4, cp_size=4), prec, 4, 65536)
    assert kv4 == kv1  # 4 sequences on 4 DP replicas vs 4 sequences over one CP4 group: same bytes per rank
    s1 = state_per_rank(model, make_parallel_config(4), prec, 4, 65536)
    s4 = state_per_rank(model, make_parallel_config(4, cp_size=4), prec, 4, 65536)
    assert s4 == 4 * s1  # the CP group holds all 4 requests' linear state on every rank: CP does not split it


def test_request_state_reads_attention_tp_and_token_shards_only() -> None:
    """One request's state depends on the attention TP degree and the CP x KVP token shards (and the cache
    format, length, MTP), not on the other knobs: the memo serves equal configurations the same figures, and
    configurations that differ there their own."""
    from solver.estimate.request_state import _REQUEST_STATE, request_state, state_of_layers

    m, hw = load_model("deepseek-v3.2"), load_hardware("h200_sxm")
    prec = resolve_precision(m, hw)
    base = make_parallel_config(16, attn_tp_size=2, kvp_size=2, dense_tp_size=4)
    other = make_parallel_config(16, attn_tp_size=2, kvp_size=2, dense_tp_size=1, lmhead_tp_size=8)
    _REQUEST_STATE.clear()
    a = request_state(m, base, prec, 8192)
    assert request_state(m, other, prec, 8192) is a
    fresh = state_of_layers(m.layer_groups, prec.kv_format, 2, 8192)
    assert (a.kv, a.index, a.constant) == (fresh.kv / 2, fresh.index / 2, fresh.constant)
    cp = request_state(m, make_parallel_config(16, attn_tp_size=2, cp_size=4), prec, 8192)
    assert cp.kv == fresh.kv / 4
    assert request_state(m, base, prec, 4096).kv < a.kv


Q122 = "qwen3.5-122b-a10b"


def _dp8_ep8() -> ParallelConfig:
    """Attention DP8 + MoE EP8 on 8 ranks: every TP knob 1."""
    return ParallelConfig(world_size=8)


def test_gated_deltanet_state_is_held_once_per_request_beside_the_full_attention_kv() -> None:
    """Qwen3.5-122B-A10B (config): 48 layers, every 4th full attention (12) with 2 KV heads of 256, bf16:
    2 x 2 x 256 x 2 B = 2,048 B a token a layer, 24,576 B a token. The 36 Gated DeltaNet layers keep a conv tail
    of (kernel 4 - 1) x conv_dim (2 x 16 x 128 keys + 64 x 128 values = 12,288) x 2 B = 73,728 B and a recurrent
    state of 64 heads x 128 x 128 in fp32 (mamba_ssm_dtype) = 4,194,304 B: 36 x 4,268,032 = 153,649,152 B a
    request, whatever its length. At attention DP8, 128 requests of 4,352 tokens put 16 on a rank:
    KV 16 x 4,352 x 24,576 = 1,711,276,032 B, state 16 x 153,649,152 = 2,458,386,432 B."""
    model, hw = load_model(Q122), load_hardware("mi355x")
    rep = memory_per_rank(model, hw, _dp8_ep8(), resolve_precision(model, hw), 128, 4352)
    assert rep.kv_cache_bytes == pytest.approx(16 * 4352 * 24_576, rel=1e-9)
    assert rep.state_bytes == pytest.approx(16 * 36 * (3 * 12_288 * 2 + 64 * 128 * 128 * 4), rel=1e-9)
