"""Twenty-sixth round of families outside the catalog (tests/data/configs_unseen/round26/, SOURCES.md's "Twenty-sixth
round (stop 36)"): 2026 model_types in transformers 5.25.0 that no earlier round nor the catalog holds (granite_swa,
granitemoe_swa, kolibri1, axk1, apertus1p5_text, hrm_text, ergo), chosen where a reader by convention is likeliest
wrong: a learned sink logit per head on every layer and a full layer first in each group of four (Granite SWA dense
and MoE), a sliding / full MoE with q / k norms, a router correction bias and four norms a layer (Kolibri-1), an MLA
MoE whose MoE block ends in its own RMSNorm (A.X K1), a text model whose head may be pruned below the embedding's
vocabulary (Apertus 1.5), two weight stacks run in cycles whose config writes the unrolled layer count (HRM-Text) and a
MoE with a norm per expert and per-channel residual gates (Ergo). Hand counts tensor by tensor from transformers
5.25.0's modeling_*.py with their configuration_*.py (read from the wheel, not installed); written before the reader
was run on them."""
from __future__ import annotations

import pytest

from hand_counts import REFUSED, UNSEEN, Round, count, gated, gqa, lin
from solver.errors import InputError
from solver.specs.config.read import parse_model_config

DATA = UNSEEN / "round26"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


def router(h: int, experts: int, correction_bias: bool) -> int:
    """A router experts x h and, where the class builds one, its e_score_correction_bias (in the checkpoint)."""
    return lin(h, experts) + (experts if correction_bias else 0)


def qk_norm(d: int) -> int:  # q_norm / k_norm RMSNorms over one head's channels
    return 2 * d


# ------------------------------------------------------------------ granite-swash-2b (GraniteSWAForCausalLM, the
# class defaults): 24 layers, full attention at i % 4 == 0 (6), sliding (128) elsewhere; GQA 20 / 4 heads x 128
# (hidden / heads: the class has no head_dim field) without bias and a learned sink logit a head (self_attn.sinks, an
# nn.Parameter of num_attention_heads) on every layer; gated MLP of 8192 without bias; two RMSNorms a layer; tied
GRANITE_SWA_LAYER = gqa(2560, 20, 4, 128) + 20 + gated(2560, 8192) + 2 * 2560
GRANITE_SWASH_2B = 100352 * 2560 + 24 * GRANITE_SWA_LAYER + 2560


# ------------------------------------------------------------------ granite-swash-3b-a600m (GraniteMoeSWAForCausalLM,
# the class defaults, which are GraniteMoE's generic ones, not the named checkpoint's sizes): 32 layers, full at
# i % 4 == 0; MHA 32 heads x 128 (num_key_value_heads None -> 32) and 32 sinks a layer; 8 experts of intermediate_size
# 11008 top-2 (GraniteMoeSWAExperts takes intermediate_size), router weight only, no shared MLP
# (shared_intermediate_size 0); two RMSNorms a layer; untied 32000
GRANITEMOE_SWA_LAYER = gqa(4096, 32, 32, 128) + 32 + router(4096, 8, False) + 8 * gated(4096, 11008) + 2 * 4096
GRANITE_SWASH_3B = 2 * 32000 * 4096 + 32 * GRANITEMOE_SWA_LAYER + 4096
GRANITE_SWASH_3B_ACTIVE = GRANITE_SWASH_3B - 32 * (8 - 2) * gated(4096, 11008)


# ------------------------------------------------------------------ Kolibri-1 (Kolibri1ForCausalLM, the class
# defaults): 50 layers, full attention at (i + 1) % 5 == 0 (10), sliding (513) elsewhere; GQA 48 / 4 heads x 128
# without bias, q_norm / k_norm of 128; every layer a MoE of 384 experts of 512 top-6 whose router carries an
# e_score_correction_bias (a buffer) and one shared expert of shared_expert_intermediate_size 512; four RMSNorms a
# layer (input, post_attention, post_self_attn, post_mlp); untied
KOLIBRI_LAYER = (gqa(2560, 48, 4, 128) + qk_norm(128) + router(2560, 384, True) + 385 * gated(2560, 512)
                 + 4 * 2560)
KOLIBRI_1 = 2 * 128000 * 2560 + 50 * KOLIBRI_LAYER + 2560
KOLIBRI_1_ACTIVE = KOLIBRI_1 - 50 * (384 - 6) * gated(2560, 512)


# ------------------------------------------------------------------ A.X-K1 (AXK1ForCausalLM, the class defaults):
# DeepSeek-V3's MLA (q_a 7168 -> 1536, its norm, q_b 1536 -> 64 x 192; kv_a 7168 -> 512 + 64, its norm, kv_b 512 ->
# 64 x (128 + 128); o 64 x 128 -> 7168; no bias); layer 0 the dense 18432 MLP, 60 MoE layers of 192 experts of 2048
# top-8, router weight (fp32) with its e_score_correction_bias (a buffer), one shared expert of 2048, and the MoE
# block's own post_mlp_layernorm (7168) on its output; two RMSNorms a layer besides; untied
def mla(h: int, heads: int, q_rank: int, kv_rank: int, nope: int, rope: int, v: int) -> int:
    return (lin(h, q_rank) + q_rank + lin(q_rank, heads * (nope + rope)) + lin(h, kv_rank + rope) + kv_rank
            + lin(kv_rank, heads * (nope + v)) + lin(heads * v, h))


AXK1_MLA = mla(7168, 64, 1536, 512, 128, 64, 128)
AXK1_MOE = router(7168, 192, True) + 193 * gated(7168, 2048) + 7168
AXK1 = 2 * 163840 * 7168 + 61 * (AXK1_MLA + 2 * 7168) + gated(7168, 18432) + 60 * AXK1_MOE + 7168
AXK1_ACTIVE = AXK1 - 60 * (192 - 8) * gated(7168, 2048)


# ------------------------------------------------------------------ Apertus-v1.5-8B's text model
# (Apertus1p5TextForCausalLM, the class defaults): 32 layers of MHA 32 heads x 128 without bias, q_norm / k_norm of
# 128; the MLP up 4096 -> 14336 -> xIELU (alpha_p, alpha_n: two parameters) -> down; two RMSNorms a layer; embedding
# 266752 rows, lm_head output_vocab_size rows (None: vocab_size), untied
def apertus1p5_text(head_rows: int) -> int:
    layer = gqa(4096, 32, 32, 128) + qk_norm(128) + 2 * lin(4096, 14336) + 2 + 2 * 4096
    return 266752 * 4096 + head_rows * 4096 + 32 * layer + 4096


APERTUS_1P5_TEXT = apertus1p5_text(266752)


# ------------------------------------------------------------------ HRM-Text-1B (HrmTextForCausalLM, the class
# defaults as __post_init__ leaves them: num_layers_per_stack 16, num_hidden_layers written as 16 x H_cycles 2 x
# (L_cycles 3 + 1) = 128 cache slots): two stacks (L_module, H_module) of 16 layers each, run in cycles; a layer is
# MHA 12 heads x 128 (q / k / v / o 1536 square) with a sigmoid gate_proj 1536 -> 1536, a gated MLP of 4096, and two
# weightless RMSNorms (HrmTextRMSNorm has no weight; each stack's final_norm neither); z_L_init (1536, an
# nn.Parameter); untied 151808
HRM_LAYER = 5 * lin(1536, 12 * 128) + gated(1536, 4096)
HRM_TEXT_1B = 2 * 151808 * 1536 + 2 * 16 * HRM_LAYER + 1536


# ------------------------------------------------------------------ Ergo (ErgoForCausalLM, the class defaults): 64
# layers, full attention at (i + 1) % 4 == 0; a fused qkv_proj 8192 -> (64 + 2 x 8) x 128, o_proj, q_norm / k_norm of
# 128; layer 0 a non-gated relu2 MLP up / down of 32768; 63 MoE layers of 256 non-gated relu2 experts of 4096 (up,
# down) top-8, each expert followed by its own RMSNorm (post_expert_norm: 256 x 8192), a router (fp32) with its
# correction bias, a shared relu2 expert of 8192 ending in an RMSNorm; four RMSNorms and two residual gates (8192 each)
# a layer; lm_head untied (ErgoForCausalLM names no tied weights)
ERGO_ATTENTION = lin(8192, (64 + 2 * 8) * 128) + lin(64 * 128, 8192) + qk_norm(128)
ERGO_MOE = (router(8192, 256, True) + 256 * (2 * 8192 * 4096 + 8192) + 2 * 8192 * 8192 + 8192)
ERGO = (2 * 262144 * 8192 + 64 * (ERGO_ATTENTION + 6 * 8192) + 2 * 8192 * 32768 + 63 * ERGO_MOE + 8192)
# a token's share: 8 of 256 experts with their norms, the router, the shared expert (stop 37, layerfeat6)
ERGO_ACTIVE = (2 * 262144 * 8192 + 64 * (ERGO_ATTENTION + 6 * 8192) + 2 * 8192 * 32768 + 8192
               + 63 * (router(8192, 256, True) + 8 * (2 * 8192 * 4096 + 8192) + 2 * 8192 * 8192 + 8192))


HAND: dict[str, int] = {
    "ibm-granite--granite-swash-2b": GRANITE_SWASH_2B,
    "ibm-granite--granite-swash-3b-a600m": GRANITE_SWASH_3B,
    "Aleph-Alpha--Kolibri-1": KOLIBRI_1,
    "skt--A.X-K1": AXK1,
    "swiss-ai--Apertus-v1.5-8B-text": APERTUS_1P5_TEXT,
    # from refused/ (stop 36, second: SOURCES.md "Left open, taken up (stop 36, second)"): the 32 stored layers
    "sapientinc--HRM-Text-1B": HRM_TEXT_1B,
    # from refused/ (stop 37, layerfeat6: SOURCES.md "Left open, taken up (stop 37, layerfeat6)")
    "Amazon-FMR--Ergo": ERGO,
}
# Published totals precise enough for a 1% check: A.X K1's 519B (as recalled from SK Telecom's announcement; hand
# 518.98B). The others' names are rounder than 1% (granite-swash-2b: hand 2.14B) or not recalled (Kolibri-1) or the
# file is not the checkpoint's sizes (granite-swash-3b-a600m: GraniteMoE's generic defaults, 37.04B)
PUBLISHED: dict[str, float] = {
    "skt--A.X-K1": 519e9,
}

ACTIVE: dict[str, tuple[int, float | None]] = {
    # 2 of 8 experts: 11.07B with the embedding and head (the class defaults, not the 600M-active checkpoint)
    "ibm-granite--granite-swash-3b-a600m": (GRANITE_SWASH_3B_ACTIVE, None),
    # 6 of 384 and the shared one: 3.79B with the embedding and head
    "Aleph-Alpha--Kolibri-1": (KOLIBRI_1_ACTIVE, None),
    # 8 of 192 and the shared one: 32.78B with the embedding and head; 33B active as recalled
    "skt--A.X-K1": (AXK1_ACTIVE, 33e9),
    # 8 of 256 experts, each with its norm, and the shared one: 39.6B with the embedding and head (class defaults)
    "Amazon-FMR--Ergo": (ERGO_ACTIVE, None),
}

# Bytes of K/V per token of context at bf16 over the full-attention layers (a sliding layer's cache stops at its
# window): granite-swash-2b's 6 full layers of 4 K/V heads x 128 (18 sliding of 128 tokens); the MoE's 8 full layers
# of 32 x 128 (24 sliding); Kolibri-1's 10 full layers of 4 x 128 (40 sliding of 513); A.X K1's MLA latent 512 + rope
# 64 on 61 layers; Apertus 1.5's 32 layers of 32 x 128
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "ibm-granite--granite-swash-2b": 6 * 2 * 4 * 128 * 2,
    "ibm-granite--granite-swash-3b-a600m": 8 * 2 * 32 * 128 * 2,
    "Aleph-Alpha--Kolibri-1": 10 * 2 * 4 * 128 * 2,
    "skt--A.X-K1": 61 * (512 + 64) * 2,
    "swiss-ai--Apertus-v1.5-8B-text": 32 * 2 * 32 * 128 * 2,
    # HRM-Text: every one of the 128 passes keeps its own K/V (cycle_offset: a cache slot a pass), MHA 12 x 128
    "sapientinc--HRM-Text-1B": 128 * 2 * 12 * 128 * 2,
    # Ergo: 16 full layers (every fourth) of 8 K/V heads x 128; 48 sliding of 512
    "Amazon-FMR--Ergo": 16 * 2 * 8 * 128 * 2,
}


# Ergo (refused here until stop 37, layerfeat6: before this round, misleadingly, on "intermediate_size: missing";
# then naming model_type) counts to ERGO: test_ergo_* below
REFUSALS: dict[str, str] = {}


# ------------------------------------------------------------------ reading rules added this round


def _mixers(name: str, cfg: dict | None = None) -> list[str]:
    spec = _spec(name) if cfg is None else parse_model_config(cfg, name)
    return [b.label() for layer in spec.layers for b in layer.blocks if b.role == "mixer"]


def test_granite_swa_attention_carries_a_learned_sink_logit_a_head_on_every_layer() -> None:
    # Before this round 2,144,463,360 and 37,039,116,288: the sinks (24 x 20, 32 x 32) missed, with only the
    # unknown-family note
    assert _total("ibm-granite--granite-swash-2b") == GRANITE_SWASH_2B
    assert _total("ibm-granite--granite-swash-3b-a600m") == GRANITE_SWASH_3B


def test_granite_swa_without_layer_types_puts_full_attention_first_in_each_four() -> None:
    # GraniteSWAConfig's default: full at i % 4 == 0. Before this round a config without layer_types read every
    # layer as sliding (sliding_window alone), 6 full layers' K/V dropped from the cache
    for name, total in (("ibm-granite--granite-swash-2b", GRANITE_SWASH_2B),
                        ("ibm-granite--granite-swash-3b-a600m", GRANITE_SWASH_3B)):
        cfg = _load(name)
        del cfg["layer_types"]
        assert count(cfg) == total, name
        assert _mixers(name, cfg) == _mixers(name), name
    assert _mixers("ibm-granite--granite-swash-2b")[:5] == ["GQA 20/4 x 128", "SWA 20/4 x 128 w128",
                                                            "SWA 20/4 x 128 w128", "SWA 20/4 x 128 w128",
                                                            "GQA 20/4 x 128"]


def test_kolibri_counts_qk_norms_the_correction_bias_and_four_norms_a_layer() -> None:
    # Before this round 78,102,786,560: q / k norms (50 x 256), the correction bias (50 x 384) and the
    # post_self_attn / post_mlp norms (50 x 2 x 2560) missed
    assert _total("Aleph-Alpha--Kolibri-1") == KOLIBRI_1
    cfg = _load("Aleph-Alpha--Kolibri-1")
    # Kolibri1Config's default: full at (i + 1) % 5 == 0. Before this round a config without layer_types read all 50
    # layers as sliding (sliding_window alone): 10 full layers' K/V dropped from the cache
    del cfg["layer_types"]
    assert count(cfg) == KOLIBRI_1
    assert _mixers("Aleph-Alpha--Kolibri-1", cfg) == _mixers("Aleph-Alpha--Kolibri-1")
    assert _mixers("Aleph-Alpha--Kolibri-1")[3:6] == ["SWA 48/4 x 128 w513", "GQA 48/4 x 128", "SWA 48/4 x 128 w513"]


def test_a_moe_output_norm_sits_on_moe_layers_only() -> None:
    # AXK1MoE's post_mlp_layernorm. Before this round 518,982,622,208: that norm (60 x 7168) and the correction bias
    # (60 x 192) missed
    assert _total("skt--A.X-K1") == AXK1
    cfg = _load("skt--A.X-K1")
    cfg["mlp_layer_types"] = ["dense"] * 3 + ["sparse"] * 58
    assert count(cfg) == AXK1 - 2 * AXK1_MOE + 2 * gated(7168, 18432)
    del cfg["mlp_layer_types"]  # the class default: dense, then sparse
    assert count(cfg) == AXK1


def test_a_pruned_head_takes_output_vocab_size_rows_and_the_embedding_keeps_vocab_size() -> None:
    # Before this round output_vocab_size was named unread and the head counted at vocab_size rows (for 131,272:
    # 135,479 x 4096 too many)
    cfg = _load("swiss-ai--Apertus-v1.5-8B-text")
    cfg["output_vocab_size"] = 131272
    assert count(cfg) == apertus1p5_text(131272)
    cfg["output_vocab_size"] = 266752  # the full width: the unpruned head
    assert count(cfg) == APERTUS_1P5_TEXT


def test_a_pruned_head_tied_to_the_embedding_is_refused() -> None:
    cfg = _load("swiss-ai--Apertus-v1.5-8B-text")
    cfg.update(output_vocab_size=131272, tie_word_embeddings=True)
    with pytest.raises(InputError, match=r"output_vocab_size: 131,272 head rows under a head tied to the 266,752-row"):
        count(cfg)


def test_apertus1p5_text_runs_a_two_matrix_xielu_mlp_with_qk_norms() -> None:
    # Before this round 9,970,126,912: a gated MLP's third matrix (32 x 4096 x 14336) counted, q / k norms missed
    assert _total("swiss-ai--Apertus-v1.5-8B-text") == APERTUS_1P5_TEXT


def test_a_refused_family_is_refused_whatever_its_layer_count_fields_say() -> None:
    # (Ergo held this rule until it counted, stop 37: JetMoE's family line refuses it the same way)
    cfg = ROUND.load("jetmoe--jetmoe-8b", REFUSED)
    cfg["num_hidden_layers"] = 16
    with pytest.raises(InputError, match="model_type: 'jetmoe'"):
        count(cfg)


def test_ergo_routed_experts_each_end_in_their_own_norm_held_whole_on_each_moe_tp_rank() -> None:
    # ErgoExpertNorm: a weight of experts x hidden after the experts' down projections, and the shared expert's
    # RMSNorm; before stop 37 the family was refused naming model_type
    moe = next(b for layer in _spec("Amazon-FMR--Ergo").layers for b in layer.blocks if b.kind == "MoE")
    routed = next(s for s in moe.shares() if s.module == "routed_experts")
    assert {p.name: (p.params, p.split) for p in routed.parts} == {
        "experts": (256 * 2 * 8192 * 4096, "tp"), "expert_norms": (256 * 8192, "none")}
    assert moe.shared_params == 2 * 8192 * 8192 + 8192


def test_ergo_without_its_pattern_lists_reads_the_class_defaults() -> None:
    # ErgoConfig.__post_init__: full attention where (i + 1) % global_attention_every_n_layers == 0, dense MLPs on the
    # first num_dense_blocks layers
    cfg = _load("Amazon-FMR--Ergo")
    del cfg["layer_types"], cfg["mlp_layer_types"]
    assert count(cfg) == ERGO
    cfg.update(global_attention_every_n_layers=2, num_dense_blocks=3)
    spec = parse_model_config(cfg, "x")
    assert [i for i, layer in enumerate(spec.layers)
            if any(getattr(b, "window", 0) is None for b in layer.blocks if b.role == "mixer")] == list(range(1, 64, 2))
    assert count(cfg) == ERGO + 2 * (2 * 8192 * 32768 - ERGO_MOE)


def test_hrm_runs_its_two_stored_stacks_in_h_cycles_x_l_cycles_plus_one_passes() -> None:
    # HrmTextModel.forward: per H cycle the L stack (stored layers 0-15) L_cycles = 3 times, then the H stack (16-31)
    spec = _spec("sapientinc--HRM-Text-1B")
    order = [layer.shared.index for layer in spec.layers]
    cycle = list(range(16)) * 3 + list(range(16, 32))
    assert order == cycle * 2
    # before (stop 36, first): 4,090,627,584, the 128 cache slots counted as stored layers
    assert _total("sapientinc--HRM-Text-1B") == HRM_TEXT_1B


def test_hrm_layer_count_must_be_the_passes_it_writes() -> None:
    # num_hidden_layers is written as the passes (num_layers_per_stack x H_cycles x (L_cycles + 1)); another count
    # is refused, naming it, rather than read as stored layers
    cfg = _load("sapientinc--HRM-Text-1B")
    cfg["num_hidden_layers"] = 16
    with pytest.raises(InputError, match=r"num_hidden_layers: 16: the passes a token runs of the family's pass "
                                         r"order are 128 \(32 stored layers, 128 passes\)"):
        count(cfg)
    cfg.update(num_hidden_layers=4 * 3 * 5, H_cycles=3, L_cycles=4, num_layers_per_stack=4)
    assert count(cfg) == 2 * 151808 * 1536 + 2 * 4 * HRM_LAYER + 1536


def test_hrm_prefill_costs_every_pass_on_the_stored_weights() -> None:
    # one 1,000-token prefill on one rank: q / gate / k / v 4 x 1536^2, the core over 1,000 keys, o_proj 1536^2 a
    # pass; the step stands the attention block 128 times (the passes), the weights 32 times (count above)
    from solver.estimate.compute import Kit, Work, factors_for
    from solver.estimate.step_parts import selected_blocks
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.parallel import make_parallel_config
    from solver.specs.precision import resolve_precision

    spec = _spec("sapientinc--HRM-Text-1B")
    hw = load_hardware("h100_sxm")
    kit = Kit(hw, make_parallel_config(1), resolve_precision(spec, hw), factors_for(hw),
              Work("prefill", new_tokens=1000, context=1000, sequences=1, logits_tokens=1))
    attn, ffn = spec.layers[0].blocks
    ops = {o.name: o.flops for o in attn.ops(kit)}
    assert ops["qkv_proj"] == 2 * 1000 * 4 * 1536 * 1536
    assert ops["attention_core"] == 2 * 12 * 1000 * 1000 * (128 + 128)
    assert ops["o_proj"] == 2 * 1000 * 1536 * 1536
    assert {o.name: o.flops for o in ffn.ops(kit)} == {"dense_ffn": 2 * 1000 * 3 * 1536 * 4096}
    chosen, _, _, _ = selected_blocks(spec, 0, False, None, "prefill")
    assert sum(n for b, n in chosen if b.role == "mixer") == 128


# 518.98B at bf16 is 1.04 TB of weights: 8 H100s (640 GB) cannot hold it, 16 can
# Ergo's 1.1T parameters (2.2 TB at bf16): the planner's fit needs 32 H100s
SOLVE_CARDS: dict[str, int] = {"skt--A.X-K1": 16, "Amazon-FMR--Ergo": 32}
