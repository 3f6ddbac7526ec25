"""One layer type per section: hand-computed parameters, per-request state and FLOPs on small configs.

Sizes are chosen small and round so every figure can be checked on paper; `_kit` is a toy device (1 PFLOP/s,
1 TB/s, no overheads) on one rank unless a test says otherwise.
"""
from __future__ import annotations

import pytest

from conftest import toy_hardware  # noqa: E402
from solver.specs.dtypes import KV16
from solver.estimate.compute import Work, factors_for, Kit
from solver.estimate.request_state import state_of_layers
from solver.specs.layers import (
    KDA,
    MLA,
    Attention,
    CompressedAttention,
    DenseFFN,
    GatedDeltaNet,
    Indexer,
    Layer,
    Lightning,
    Mamba2,
    MoE,
)
from solver.specs.config.read import parse_model_config
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

HW = toy_hardware()
H = 64


def _kit(block_model_cfg: dict | None = None, world: int = 1, w: Work | None = None, **knobs) -> Kit:
    spec = parse_model_config(block_model_cfg or _dense_cfg(), "toy")
    pc = make_parallel_config(world, **knobs)
    return Kit(HW, pc, resolve_precision(spec, HW), factors_for(HW), w or _decode(4, 1000))


def _dense_cfg(**over) -> dict:
    cfg = dict(model_type="llama", hidden_size=H, num_hidden_layers=4, num_attention_heads=4,
               num_key_value_heads=2, head_dim=16, intermediate_size=128, vocab_size=1000)
    cfg.update(over)
    return cfg


def _decode(batch: float, ctx: float) -> Work:
    return Work("decode", new_tokens=batch, context=ctx, sequences=batch, logits_tokens=batch)


def _prefill(S: int) -> Work:
    return Work("prefill", new_tokens=S, context=(S + 1) / 2, sequences=1, logits_tokens=1)


def _op(ops: list, name: str):
    return next(o for o in ops if o.name == name)


# ----------------------------------------------------------------------------------- softmax attention


def test_gqa_params_q_kv_o_and_per_head_qk_norm() -> None:
    a = Attention(hidden=H, heads=4, kv_heads=2, head_dim=16, v_head_dim=16, qk_norm="head", qkv_bias=True)
    q, kv, o = H * 64 + 64, H * 2 * 32 + 2 * 32, 64 * H
    assert a.params == q + kv + 2 * 16 + o


def test_gqa_output_gate_doubles_q_and_k_eq_v_halves_kv() -> None:
    gated = Attention(hidden=H, heads=4, kv_heads=2, head_dim=16, v_head_dim=16, output_gate=True)
    shared = Attention(hidden=H, heads=4, kv_heads=2, head_dim=16, v_head_dim=16, k_eq_v=True)
    assert gated.params == H * 128 + H * 64 + 64 * H
    assert shared.params == H * 64 + H * 32 + 64 * H


def test_gqa_kv_bytes_per_token_replicate_kv_heads_beyond_tp() -> None:
    a = Attention(hidden=H, heads=4, kv_heads=2, head_dim=16, v_head_dim=16)
    assert a.state(KV16, 1).per_token_bytes == 2 * 32 * 2
    assert a.state(KV16, 2).per_token_bytes == 1 * 32 * 2
    assert a.state(KV16, 4).per_token_bytes == 1 * 32 * 2  # one head per rank, replicated


def test_sliding_window_caps_held_tokens_and_decode_keys() -> None:
    a = Attention(hidden=H, heads=4, kv_heads=2, head_dim=16, v_head_dim=16, window=128)
    st = a.state(KV16, 1)
    assert st.tokens_held(100_000) == 128 and st.tokens_held(50) == 50
    core = _op(a.ops(_kit(w=_decode(4, 1000))), "attention_core")
    assert core.flops == pytest.approx(2 * 4 * 4 * 128 * 32)  # 4 heads x 4 tokens x 128 keys x (16 + 16)
    full = _op(Attention(hidden=H, heads=4, kv_heads=2, head_dim=16, v_head_dim=16).ops(_kit(w=_decode(4, 1000))),
               "attention_core")
    assert full.flops == pytest.approx(2 * 4 * 4 * 1000 * 32)


def test_sliding_window_prefill_attention_flops_are_window_capped() -> None:
    a = Attention(hidden=H, heads=4, kv_heads=2, head_dim=16, v_head_dim=16, window=128)
    S = 1024
    core = _op(a.ops(_kit(w=_prefill(S))), "attention_core")
    # sum over positions 1..S of min(p, 128), per query
    keys = (128 * 129 / 2 + (S - 128) * 128) / S
    assert core.flops == pytest.approx(2 * 4 * S * keys * 32)


# ------------------------------------------------------------------------------------------ MLA and DSA


def test_mla_params_and_latent_cache_not_sharded_by_tp() -> None:
    m = MLA(hidden=H, heads=4, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
            q_lora_rank=24)
    q = H * 24 + 24 + 24 * 4 * 24
    kv = H * (32 + 8) + 32 + 32 * 4 * (16 + 16)
    assert m.params == q + kv + 4 * 16 * H
    assert m.state(KV16, 1).per_token_bytes == m.state(KV16, 4).per_token_bytes == (32 + 8) * 2


def test_dsa_indexer_params_and_key_cache() -> None:
    ix = Indexer(heads=4, head_dim=16, topk=64)
    m = MLA(hidden=H, heads=4, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
            q_lora_rank=24, indexer=ix)
    share = next(s for s in m.shares() if s.module == "indexer")
    assert share.params == 24 * 64 + H * 16 + 2 * 16 + H * 4
    assert m.state(KV16, 1).index_per_token_bytes == 16 + 4


def test_dsa_decode_attends_top_k_keys_only() -> None:
    m = MLA(hidden=H, heads=4, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
            indexer=Indexer(4, 16, 64))
    hw = toy_hardware(sparse_attention_head_pad=1)
    kit = Kit(hw, make_parallel_config(1), _kit().prec, factors_for(hw), _decode(2, 1000))
    core = _op(m.ops(kit), "attention_core")
    assert core.flops == pytest.approx(2 * 4 * 2 * 64 * (40 + 32))  # absorbed: d_k 40, d_v 32


# ------------------------------------------------------------------------------------- linear attention


def test_gated_deltanet_params() -> None:
    g = GatedDeltaNet(hidden=H, key_heads=2, value_heads=4, key_dim=8, value_dim=16, conv_kernel=4)
    conv_ch = 2 * 2 * 8 + 4 * 16
    assert g.params == H * (2 * 16 + 2 * 64) + H * 8 + conv_ch * 4 + 8 + 16 + 64 * H


def test_gated_deltanet_state_is_constant_and_split_by_tp_only() -> None:
    g = GatedDeltaNet(hidden=H, key_heads=2, value_heads=4, key_dim=8, value_dim=16, conv_kernel=4,
                      state_dtype_bytes=4)
    st = g.state(KV16, 1)
    assert not st.grows and st.per_token_bytes == 0
    assert st.constant_bytes == 4 * 8 * 16 * 4 + 3 * (2 * 2 * 8 + 4 * 16) * 2
    assert g.state(KV16, 2).constant_bytes == st.constant_bytes / 2
    held = state_of_layers([(Layer((g,), H, 1), 3)], KV16, 1, 100_000)
    assert held.kv == 0 and held.constant == 3 * st.constant_bytes


def test_gated_deltanet_decode_costs_recurrence_and_state_read() -> None:
    g = GatedDeltaNet(hidden=H, key_heads=2, value_heads=4, key_dim=8, value_dim=16, conv_kernel=4)
    scan = _op(g.ops(_kit(w=_decode(4, 100_000))), "linear_attention_scan")
    assert scan.flops == pytest.approx(4 * 4 * 6 * 8 * 16)  # tokens x value heads x 6 d_k d_v: no context term
    assert scan.bytes >= 2 * 4 * g.state(KV16, 1).constant_bytes  # read + write per sequence


def test_lightning_params_and_state() -> None:
    li = Lightning(hidden=H, heads=4, head_dim=16)
    assert li.params == H * 3 * 64 + H * 64 + 64 + 64 * H
    assert li.state(KV16, 1).constant_bytes == 4 * 16 * 16 * 2


def test_kda_params_low_rank_gates() -> None:
    k = KDA(hidden=H, heads=4, head_dim=16, conv_kernel=4)
    proj = 64
    assert k.params == (3 * H * proj + 3 * proj * 4 + (H * 16 + 16 * proj) + H * 4 + (4 + proj)
                        + (H * 16 + 16 * proj) + 16 + proj * H)


# ---------------------------------------------------------------------------------------- state space


def test_mamba2_params() -> None:
    m = Mamba2(hidden=H, heads=4, head_dim=16, state_size=8, groups=2, conv_kernel=4)
    d_inner, conv_dim = 64, 64 + 2 * 2 * 8
    assert m.params == (H * (2 * d_inner + 2 * 2 * 8 + 4) + conv_dim * 4 + conv_dim + 3 * 4 + d_inner
                        + d_inner * H)


def test_mamba2_state_conv_tail_plus_ssm_state() -> None:
    m = Mamba2(hidden=H, heads=4, head_dim=16, state_size=8, groups=2, conv_kernel=4, state_dtype_bytes=4)
    assert m.state(KV16, 1).constant_bytes == 4 * 16 * 8 * 4 + 3 * (64 + 32) * 2


def test_the_ssd_scan_costs_its_intra_chunk_flops_at_the_configs_chunk() -> None:
    # 1024 prefill tokens, 4 heads of head_dim 16, d_state 8: the recurrence 1024 x 4 x 6 x 8 x 16 = 3,145,728
    # FLOPs, the intra-chunk term 1024 x 4 x 2 x chunk x (8 + 16) = 196,608 x chunk
    for chunk in (64, 128, 256):
        m = Mamba2(hidden=H, heads=4, head_dim=16, state_size=8, groups=2, chunk_size=chunk)
        scan = _op(m.ops(_kit(w=_prefill(1024))), "ssm_scan")
        assert scan.flops == 3_145_728 + 196_608 * chunk
    # a decode step runs the recurrence alone: no chunk
    assert _op(Mamba2(hidden=H, heads=4, head_dim=16, state_size=8, chunk_size=128).ops(_kit(w=_decode(4, 1000))),
               "ssm_scan").flops == 4 * 4 * 6 * 8 * 16


def test_the_ssd_chunk_is_the_configs_chunk_size_else_the_mamba2_default() -> None:
    base = dict(model_type="nemotron_h", hidden_size=H, vocab_size=1000, hybrid_override_pattern="M-",
                num_attention_heads=4, num_key_value_heads=2, head_dim=16, intermediate_size=128,
                mamba_num_heads=4, mamba_head_dim=16, ssm_state_size=8, n_groups=2, mlp_hidden_act="relu2")
    assert parse_model_config({**base, "chunk_size": 128}, "x").layers[0].mixer.chunk_size == 128
    assert parse_model_config(base, "x").layers[0].mixer.chunk_size == 128  # NemotronHConfig's class default
    falcon = _dense_cfg(model_type="falcon_h1", mamba_n_heads=4, mamba_d_head=16, mamba_d_ssm=64, mamba_d_state=8,
                        mamba_n_groups=1, mamba_chunk_size=64)
    assert next(b for b in parse_model_config(falcon, "x").layers[0].blocks if b.kind == "Mamba2").chunk_size == 64
    del falcon["mamba_chunk_size"]  # no class default of its own: the Mamba2 kernels' 256 (mamba.SSD_CHUNK)
    assert next(b for b in parse_model_config(falcon, "x").layers[0].blocks if b.kind == "Mamba2").chunk_size == 256


def test_ssm_layer_under_sp_gathers_tokens_and_keeps_full_state() -> None:
    m = Mamba2(hidden=H, heads=4, head_dim=16, state_size=8, groups=2)
    kit = _kit(world=2, w=_prefill(1024), attn_sp_size=2)
    names = {c.name for c in m.comms(kit, 0.0)}
    assert names == {"ssm_token_gather"}
    assert m.state(KV16, kit.pc.attn_tp_size).constant_bytes == m.state(KV16, 1).constant_bytes


# ------------------------------------------------------------------------------------------------ FFNs


def test_dense_ffn_gated_and_non_gated() -> None:
    assert DenseFFN(hidden=H, inter=128).params == 3 * H * 128
    assert DenseFFN(hidden=H, inter=128, gated=False).params == 2 * H * 128
    assert DenseFFN(hidden=H, inter=128, bias=True).params == 3 * H * 128 + 2 * 128 + H


def test_dense_ffn_flops_two_per_param_per_token() -> None:
    op = DenseFFN(hidden=H, inter=128).ops(_kit(w=_decode(4, 10)))[0]
    assert op.flops == pytest.approx(2 * 4 * 3 * H * 128)


def test_moe_params_shared_router_and_active_top_k() -> None:
    moe = MoE(hidden=H, experts=8, topk=2, inter=32, shared_inter=32, router_bias=True)
    expert = 3 * H * 32
    by = {s.module: s for s in moe.shares()}
    assert by["routed_experts"].params == 8 * expert and by["routed_experts"].active_params == 2 * expert
    assert by["shared_experts"].params == expert
    assert by["router"].params == H * 8 + 8


def test_moe_zero_experts_take_slots_not_weights() -> None:
    moe = MoE(hidden=H, experts=8, topk=4, inter=32, zero_experts=8)
    assert moe.real_topk == 2.0
    assert next(s for s in moe.shares() if s.module == "router").params == H * 16


def test_latent_moe_experts_run_at_latent_width() -> None:
    moe = MoE(hidden=H, experts=8, topk=2, inter=32, latent=16, gated=False)
    by = {s.module: s for s in moe.shares()}
    assert by["routed_experts"].params == 8 * 2 * 16 * 32
    assert by["moe_latent"].params == 2 * H * 16


def test_shared_and_routed_outputs_reduce_in_one_all_reduce_when_they_share_the_tp_group() -> None:
    moe = MoE(hidden=H, experts=8, topk=2, inter=32, shared_inter=32)
    kit = _kit(world=4, attn_tp_size=4, dense_tp_size=4, moe_tp_size=4)
    names = [c.name for c in moe.comms(kit, 0.0)]
    assert names == ["moe_tp_allreduce"]
    split = _kit(world=4, attn_tp_size=4, dense_tp_size=2, moe_tp_size=1)  # shared experts on TP2 of 4
    assert [c.name for c in moe.comms(split, 0.0)] == ["moe_ep_allreduce", "shared_tp_gather", "shared_tp_scatter"]


# ------------------------------------------------------------------------------- compressed attention


def test_compressed_attention_cache_grows_at_one_over_ratio_plus_window() -> None:
    c = CompressedAttention(hidden=H, heads=4, head_dim=32, q_lora_rank=16, o_lora_rank=8, o_groups=2,
                            ratio=4, window=16)
    st = c.state(KV16, 1)
    # constant: the window, and the compressor's 3 pending tokens' kv + gate (2 x 32 each, coff 2) and the last
    # window's overlap (4 x 32, kv + gate), in bf16
    assert st.per_token_bytes == 32 * 2 / 4
    assert st.constant_bytes == 16 * 32 * 2 + (3 * 2 * 32 * 2 + 4 * 32 * 2) * 2
    o = next(s for s in c.shares() if s.module == "o_proj")
    assert o.params == 4 * 32 * 8 + 2 * 8 * H


def test_compressed_sparse_prefill_gathers_top_k_entries_per_query_and_the_window_once() -> None:
    ix = Indexer(heads=4, head_dim=16, topk=64)
    c = CompressedAttention(hidden=H, heads=4, head_dim=32, q_lora_rank=16, o_lora_rank=8, o_groups=2,
                            ratio=4, window=16, indexer=ix)
    # a query at p keeps min(p / 4, 64) = min(p, 256) / 4 entries: over p = 1..1024, (256 x 257 / 2 + 768 x 256)
    # / 1024 / 4 = 224.125 / 4 = 56.03125 on average (the mean of the cap, not the cap of the mean position's 128.1)
    S = 1024
    core = _op(c.ops(_kit(w=_prefill(S))), "attention_core")
    kv_bytes = resolve_precision(parse_model_config(_dense_cfg(), "toy"), HW).kv_bytes
    assert core.bytes == pytest.approx((S * 56.03125 + S) * 32 * kv_bytes + S * H * 2)
    dense = CompressedAttention(hidden=H, heads=4, head_dim=32, q_lora_rank=16, o_lora_rank=8, o_groups=2,
                                ratio=4, window=16)  # no indexer: every entry attended, each read once
    assert _op(dense.ops(_kit(w=_prefill(S))), "attention_core").bytes == pytest.approx(S * 32 * kv_bytes + S * H * 2)


# ----------------------------------------------------------------------------------------- readers


def test_one_block_per_layer_pattern_reads_mamba_moe_attention_mlp() -> None:
    cfg = dict(model_type="nemotron_h", hidden_size=H, vocab_size=1000, hybrid_override_pattern="M-E*",
               num_attention_heads=4, num_key_value_heads=2, head_dim=16, intermediate_size=128,
               mamba_num_heads=4, mamba_head_dim=16, ssm_state_size=8, n_groups=2, n_routed_experts=4,
               num_experts_per_tok=2, moe_intermediate_size=32, mlp_hidden_act="relu2")
    spec = parse_model_config(cfg, "x")
    kinds = [tuple(type(b).__name__ for b in layer.blocks) for layer in spec.layers]
    assert kinds == [("Mamba2",), ("DenseFFN",), ("MoE",), ("Attention",)]
    assert spec.architecture == "moe+hybrid-ssm"


def test_full_attention_interval_makes_every_nth_layer_attention() -> None:
    cfg = _dense_cfg(num_hidden_layers=8, full_attention_interval=4, linear_num_key_heads=2,
                     linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=16)
    kinds = [type(layer.mixer).__name__ for layer in parse_model_config(cfg, "x").layers]
    assert kinds == ["GatedDeltaNet"] * 3 + ["Attention"] + ["GatedDeltaNet"] * 3 + ["Attention"]


def test_one_based_index_lists_are_read_as_layer_numbers() -> None:
    cfg = _dense_cfg(num_hidden_layers=4, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
                     linear_attn_config={"kda_layers": [1, 2, 3], "full_attn_layers": [4], "num_heads": 4,
                                         "head_dim": 16})
    kinds = [type(layer.mixer).__name__ for layer in parse_model_config(cfg, "x").layers]
    assert kinds == ["KDA", "KDA", "KDA", "MLA"]


def test_moe_layer_freq_as_a_list_and_shared_expert_size_zero() -> None:
    cfg = _dense_cfg(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, moe_layer_freq=[0, 1, 0, 1],
                     shared_expert_intermediate_size=0)
    spec = parse_model_config(cfg, "x")
    assert [type(layer.ffn).__name__ for layer in spec.layers] == ["DenseFFN", "MoE", "DenseFFN", "MoE"]
    assert spec._moe.shared_inter == 0


def test_per_layer_moe_lists_size_each_layer() -> None:
    cfg = _dense_cfg(num_hidden_layers=2, num_experts=4, moe_topk=[1, 2], moe_intermediate_size=[32, 64])
    moes = [layer.ffn for layer in parse_model_config(cfg, "x").layers]
    assert [(m.topk, m.inter) for m in moes] == [(1, 32), (2, 64)]


def test_nested_text_config_and_vision_tower_are_both_counted() -> None:
    raw = dict(model_type="wrapper", text_config=_dense_cfg(),
               vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, patch_size=4,
                                  image_size=16, num_attention_heads=2))
    spec = parse_model_config(raw, "x")
    (enc,) = spec.encoders
    # 2 layers x (attn 4h^2+4h, mlp 2 h i + i + h, 2 LayerNorms) + patch embed + positions + post norm + projector
    per_layer = 4 * 32 * 32 + 4 * 32 + 2 * 32 * 64 + 64 + 32 + 4 * 32
    expected = 2 * per_layer + (3 * 16 * 32 + 32) + 16 * 32 + 2 * 32 + (32 * H + 32)
    assert enc.params == expected


def test_unknown_model_type_with_understood_fields_is_read_with_a_note() -> None:
    spec = parse_model_config(_dense_cfg(model_type="brand_new"), "x")
    assert any("brand_new" in w for w in spec.warnings)


def test_mamba1_params_and_state() -> None:
    from solver.specs.layers import Mamba1

    m = Mamba1(hidden=H, d_inner=128, state_size=8, dt_rank=4, conv_kernel=4, inner_norms=True, state_dtype_bytes=4)
    assert m.params == (H * 256 + 128 * 4 + 128 + 128 * (4 + 16) + 4 * 128 + 128 + 128 * 8 + 128 + (4 + 16)
                        + 128 * H)
    assert m.state(KV16, 1).constant_bytes == 128 * 8 * 4 + 3 * 128 * 2


def test_jamba_periods_place_attention_and_experts() -> None:
    cfg = _dense_cfg(model_type="jamba", num_hidden_layers=8, attn_layer_period=4, attn_layer_offset=2,
                     expert_layer_period=2, expert_layer_offset=1, num_experts=4, num_experts_per_tok=2,
                     mamba_d_state=8, mamba_d_conv=4, mamba_expand=2)
    spec = parse_model_config(cfg, "x")
    assert [type(x.mixer).__name__[0] for x in spec.layers] == list("MMAMMMAM")
    assert [type(x.ffn).__name__ for x in spec.layers][:2] == ["DenseFFN", "MoE"]
    assert spec.layers[0].mixer.dt_rank == 4  # "auto": ceil(64 / 16)


def test_parallel_hybrid_layer_holds_attention_and_mamba_side_by_side() -> None:
    cfg = _dense_cfg(model_type="falcon_h1", mamba_n_heads=4, mamba_d_head=16, mamba_d_ssm=64, mamba_d_state=8,
                     mamba_n_groups=1)
    layer = parse_model_config(cfg, "x").layers[0]
    assert [type(b).__name__ for b in layer.blocks] == ["Attention", "Mamba2", "DenseFFN"]


def test_gemma_4_moe_key_spellings_are_read() -> None:
    # hidden_size_per_layer_input 0 as the released MoE checkpoints write it (the class default 256 builds
    # per-layer input embeddings, which are refused)
    cfg = _dense_cfg(model_type="gemma4_text", enable_moe_block=True, num_experts=8, top_k_experts=2,
                     expert_intermediate_size=32, hidden_size_per_layer_input=0)
    # the MoE block keeps the dense MLP beside the experts (Gemma4TextDecoderLayer under enable_moe_block)
    dense, moe = parse_model_config(cfg, "x").layers[0].ffns
    assert type(dense).__name__ == "DenseFFN"
    assert (type(moe).__name__, moe.experts, moe.topk, moe.inter) == ("MoE", 8, 2, 32)
