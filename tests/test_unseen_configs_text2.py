"""Text-model families outside the catalog, third round (tests/data/configs_unseen/text/, SOURCES.md's "Third
round: text families (stop 33)"): each counts to the total worked out by hand from the architecture's modeling
code, tensor by tensor, and to within 1% of the published total where one is published with that precision. One
test per reading rule follows the table; the refused family (JetMoE) is in configs_unseen/refused/."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from hand_counts import Round, gated, lin, ln  # noqa: F401
from solver.errors import InputError
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config
from solver.specs.layers import MoE, DenseFFN

DATA = Path(__file__).parent / "data" / "configs_unseen" / "text"
REFUSED = Path(__file__).parent / "data" / "configs_unseen" / "refused"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# Hand counts: the sum of every tensor in the checkpoint, as the modeling code builds it (comments name them).
# Embedding tables are V x h; "tied" means the head reuses the embedding.
HAND: dict[str, int] = {
    # DBRX (DbrxModel): wte; per block norm_attn_norm.norm_1 and norm_2 (LayerNorm, bias=False: weight only),
    # attn.Wqkv h -> h + 2 x 8 x 128 (kv_n_heads 8, head_dim 6144 / 48) and out_proj, no biases; ffn.router.layer
    # h -> 16 without bias; ffn.experts.mlp w1 / v1 / w2, each 16 x 10752 x h; norm_f (weight only); untied lm_head
    "databricks--dbrx-instruct": 2 * 100352 * 6144
    + 40 * (6144 + lin(6144, 6144 + 2 * 8 * 128) + lin(6144, 6144) + 6144 + lin(6144, 16) + 16 * gated(6144, 10752))
    + 6144,
    # Snowflake Arctic (ArcticDecoderLayer, parallel_attn_mlp_res on every MoE layer, moe_layer_frequency 1: every
    # layer): q / k / v / o (56 / 8 heads x 128) without bias; input_layernorm, post_attention_layernorm and
    # residual_layernorm (RMSNorm); residual_mlp, an ArcticMLP built with is_residual_mlp (ffn_dim = hidden_size):
    # w1 / w3 / w2 7168 x 7168; block_sparse_moe: gate h -> 128 without bias, 128 experts w1 / w3 / w2 x 4864;
    # final norm; untied
    "Snowflake--snowflake-arctic-instruct": 2 * 32000 * 7168
    + 35 * (2 * lin(7168, 7168) + 2 * lin(7168, 1024) + 3 * 7168 + gated(7168, 7168)
            + lin(7168, 128) + 128 * gated(7168, 4864)) + 7168,
    # OLMoE-1B-7B (OlmoeAttention): q / k / v / o 2048 x 2048 without bias; q_norm RMSNorm(hidden_size) and k_norm
    # RMSNorm(kv_heads x head_dim = 2048): over all heads; input_layernorm and post_attention_layernorm; the MoE's
    # gate h -> 64 without bias, 64 experts gate / up / down x 1024; norm; untied
    "allenai--OLMoE-1B-7B-0924": 2 * 50304 * 2048
    + 16 * (4 * lin(2048, 2048) + 2048 + 2048 + 2 * 2048 + lin(2048, 64) + 64 * gated(2048, 1024)) + 2048,
    # Granite-3.1-3B-A800M (GraniteMoeDecoderLayer): q / k / v / o (24 / 8 heads x 64) without bias; two RMSNorms;
    # block_sparse_moe: router.layer h -> 40 without bias, input_linear 40 x (2 x 512) x h, output_linear
    # 40 x h x 512; norm; tied (the multipliers are scalars of the config, no weights)
    "ibm-granite--granite-3.1-3b-a800m-instruct": 49155 * 1536
    + 32 * (2 * lin(1536, 1536) + 2 * lin(1536, 512) + 2 * 1536 + lin(1536, 40) + 40 * gated(1536, 512)) + 1536,
    # MPT-7B (MptModel): wte; per block norm_1 / norm_2 (LayerNorm with its bias removed: weight only), attn.Wqkv
    # h -> 3h and out_proj without bias (no_bias), ffn up_proj h -> 4h (expansion_ratio 4) and down_proj without
    # bias; norm_f (weight only); ALiBi has no weights and no wpe is built under it; tied (MptForCausalLM)
    "mosaicml--mpt-7b": 50432 * 4096
    + 32 * (4096 + lin(4096, 3 * 4096) + lin(4096, 4096) + 4096 + 2 * 4096 * 16384) + 4096,
    # StableLM-2-1.6B (StableLmDecoderLayer): input_layernorm and post_attention_layernorm (nn.LayerNorm: weight and
    # bias); q / k / v with bias (use_qkv_bias), o_proj without; gate / up / down without bias; the final LayerNorm
    # with bias; untied; partial rotary has no weights
    "stabilityai--stablelm-2-1_6b": 2 * 100352 * 2048
    + 24 * (ln(2048) + 3 * lin(2048, 2048, True) + lin(2048, 2048) + ln(2048) + gated(2048, 5632)) + ln(2048),
    # Minitron-8B (NemotronDecoderLayer): input_layernorm and post_attention_layernorm (NemotronLayerNorm1P: an
    # nn.LayerNorm with weight and bias); q_proj h -> 48 x 128 = 6144, k / v h -> 8 x 128, o_proj 6144 -> h, no
    # biases; MLP up_proj / down_proj x 16384 (relu2, not gated, mlp_bias false); the final LayerNorm1P; untied
    "nvidia--Minitron-8B-Base": 2 * 256000 * 4096
    + 32 * (ln(4096) + lin(4096, 6144) + 2 * lin(4096, 1024) + lin(6144, 4096) + ln(4096) + 2 * 4096 * 16384)
    + ln(4096),
    # EXAONE-3.5-7.8B (ExaoneModel, remote code): wte; per block ln_1, attn.attention q / k / v (32 / 8 x 128) and
    # out_proj without bias, ln_2, mlp c_fc_0 / c_fc_1 / c_proj (SwiGLU, no bias); ln_f (RMSNorms); untied lm_head
    "LGAI-EXAONE--EXAONE-3.5-7.8B-Instruct": 2 * 102400 * 4096
    + 32 * (4096 + lin(4096, 4096) + 2 * lin(4096, 1024) + lin(4096, 4096) + 4096 + gated(4096, 14336)) + 4096,
    # Qwen1.5-MoE-A2.7B (Qwen2MoeDecoderLayer): q / k / v with bias (hard-wired in Qwen2MoeAttention), o_proj
    # without; mlp.gate h -> 60 without bias, 60 experts x 1408; shared_expert x 5632 and shared_expert_gate
    # h -> 1 without bias; two RMSNorms; norm; untied
    "Qwen--Qwen1.5-MoE-A2.7B": 2 * 151936 * 2048
    + 24 * (3 * lin(2048, 2048, True) + lin(2048, 2048) + lin(2048, 60) + 60 * gated(2048, 1408)
            + gated(2048, 5632) + lin(2048, 1) + 2 * 2048) + 2048,
    # OLMo-3-7B (Olmo3DecoderLayer, as OLMo-2's): q / k / v / o without bias; q_norm over 32 x 128 and k_norm over
    # 32 x 128; post_attention_layernorm and post_feedforward_layernorm; the sliding window (3 of every 4 layers)
    # has no weights; norm; untied
    "allenai--Olmo-3-1025-7B": 2 * 100278 * 4096
    + 32 * (4 * lin(4096, 4096) + 2 * 4096 + gated(4096, 11008) + 2 * 4096) + 4096,
    # ERNIE-4.5-0.3B (Ernie4_5DecoderLayer): q_proj h -> 16 x 128 = 2048, k / v h -> 2 x 128, o_proj 2048 -> h,
    # gate / up / down x 3072, no biases (use_bias false); two RMSNorms; norm; tied
    "baidu--ERNIE-4.5-0.3B-PT": 103424 * 1024
    + 18 * (lin(1024, 2048) + 2 * lin(1024, 256) + lin(2048, 1024) + gated(1024, 3072) + 2 * 1024) + 1024,
    # Hunyuan-7B (HunYuanDenseV1Attention): q / k / v / o (32 / 8 x 128) without bias, query_layernorm and
    # key_layernorm RMSNorm(head_dim) (use_qk_norm); gate / up / down x 14336; two RMSNorms; norm; untied (use_cla
    # false: every layer has its own k / v)
    "tencent--Hunyuan-7B-Instruct": 2 * 128167 * 4096
    + 32 * (lin(4096, 4096) + 2 * lin(4096, 1024) + lin(4096, 4096) + 2 * 128 + gated(4096, 14336) + 2 * 4096)
    + 4096,
    # Mistral-Nemo-12B: head_dim 128 x 32 heads = 4096 on a 5120-wide model: q_proj 5120 -> 4096, k / v 5120 ->
    # 1024, o_proj 4096 -> 5120; gate / up / down x 14336; two RMSNorms; norm; untied
    "mistralai--Mistral-Nemo-Instruct-2407": 2 * 131072 * 5120
    + 40 * (lin(5120, 4096) + 2 * lin(5120, 1024) + lin(4096, 5120) + gated(5120, 14336) + 2 * 5120) + 5120,
    # Baichuan2-7B (remote code): W_pack h -> 3h and o_proj without bias; gate / up / down x 11008; two RMSNorms;
    # norm; lm_head a NormHead (one vocab x h weight, normalised at run time: no extra tensor); untied
    "baichuan-inc--Baichuan2-7B-Chat": 2 * 125696 * 4096
    + 32 * (lin(4096, 3 * 4096) + lin(4096, 4096) + gated(4096, 11008) + 2 * 4096) + 4096,
}

# Published totals precise enough to hold the count to 1% (SOURCES.md says where each is published), as
# (figure, counting basis of ParamReport.counted)
PUBLISHED: dict[str, tuple[float, str]] = {
    "databricks--dbrx-instruct": (132e9, "text"),
    "Snowflake--snowflake-arctic-instruct": (480e9, "text"),
    "allenai--OLMoE-1B-7B-0924": (6.9e9, "text"),
    "stabilityai--stablelm-2-1_6b": (1_644_417_024, "text"),
    "LGAI-EXAONE--EXAONE-3.5-7.8B-Instruct": (6.98e9, "non_embedding"),
    "Qwen--Qwen1.5-MoE-A2.7B": (14.3e9, "text"),
}
# Active parameters per token where the card publishes them that precisely, as (figure, active basis)
PUBLISHED_ACTIVE: dict[str, tuple[float, str]] = {
    "databricks--dbrx-instruct": (36e9, "all"),
    "allenai--OLMoE-1B-7B-0924": (1.3e9, "all"),
}


def test_every_text_config_has_a_hand_count() -> None:
    assert sorted(p.stem for p in DATA.glob("*.json")) == sorted(HAND)


@pytest.mark.parametrize("name", sorted(HAND))
def test_every_text_config_counts_to_its_hand_computed_total(name: str) -> None:
    assert _total(name) == HAND[name]


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_every_text_config_is_within_one_percent_of_its_published_total(name: str) -> None:
    figure, basis = PUBLISHED[name]
    assert abs(count_params(_spec(name)).counted(basis) / figure - 1) < 0.01


@pytest.mark.parametrize("name", sorted(PUBLISHED_ACTIVE))
def test_every_text_moe_is_within_two_percent_of_its_published_active_count(name: str) -> None:
    figure, basis = PUBLISHED_ACTIVE[name]
    assert abs(count_params(_spec(name)).active_counted(basis) / figure - 1) < 0.02


@pytest.mark.parametrize("name", sorted(HAND))
def test_every_text_config_reads_without_an_unknown_family_note(name: str) -> None:
    """Every family here has its line in family_defaults.yaml: nothing is read by guesswork."""
    assert not any("not in the family defaults" in w or w.startswith("fields not read") for w in _spec(name).warnings)


# ------------------------------------------------------------------------------------------ one rule each


def test_sizes_written_in_nested_blocks_are_read_as_the_configs_own() -> None:
    """DBRX writes its K/V heads in attn_config and its experts in ffn_config (family fact _nested_configs); its
    depth, heads and context as n_layers, n_heads and max_seq_len."""
    spec = _spec("databricks--dbrx-instruct")
    assert (spec.num_layers, spec.num_attention_heads, spec.num_key_value_heads, spec.head_dim) == (40, 48, 8, 128)
    moe = spec.layers[0].ffn
    assert isinstance(moe, MoE) and (moe.experts, moe.topk, moe.inter) == (16, 4, 10752)
    assert (spec.max_position_embeddings, spec.context_field) == (32768, "max_seq_len")


def test_an_error_in_a_nested_block_names_the_field_under_its_block() -> None:
    cfg = _load("databricks--dbrx-instruct")
    cfg["attn_config"]["kv_n_heads"] = 7
    with pytest.raises(InputError, match=r"attn_config\.kv_n_heads: 7 must divide num_attention_heads \(48\)"):
        parse_model_config(cfg, "x")


def test_a_nested_key_the_top_level_contradicts_is_refused() -> None:
    cfg = _load("databricks--dbrx-instruct")
    cfg["moe_top_k"] = 2  # also ffn_config.moe_top_k = 4: one of the two would be dropped
    with pytest.raises(InputError, match=r"ffn_config: moe_top_k is 4 here and 2 at the top level"):
        parse_model_config(cfg, "x")
    cfg["moe_top_k"] = 4  # the same value twice is one value
    assert parse_model_config(cfg, "x").layers[0].ffn.topk == 4


def test_a_family_default_yields_to_a_nested_blocks_value() -> None:
    cfg = _load("mosaicml--mpt-7b")  # mpt's family default ties the head; the config does not write it
    cfg["attn_config"]["tie_word_embeddings"] = False  # synthetic: given in the block, it is given
    assert count_params(parse_model_config(cfg, "x")).by_name()["lm_head"] == 50432 * 4096


def test_an_unread_expert_count_in_a_nested_block_is_refused_under_its_name() -> None:
    cfg = _load("databricks--dbrx-instruct")
    cfg["ffn_config"]["moe_shared_experts"] = 2  # not a field shardplan reads
    with pytest.raises(InputError, match=r"ffn_config\.moe_shared_experts: 2 experts in a field"):
        parse_model_config(cfg, "x")


def test_a_residual_mlp_beside_the_moe_is_hidden_size_wide_with_its_own_norm() -> None:
    spec = _spec("Snowflake--snowflake-arctic-instruct")
    layer = spec.layers[0]
    dense, moe = layer.ffns
    assert isinstance(dense, DenseFFN) and dense.inter == 7168 and dense.gated  # ArcticMLP(is_residual_mlp)
    assert isinstance(moe, MoE) and (moe.experts, moe.topk, moe.inter) == (128, 2, 4864)
    assert layer.norms == 3  # input, post-attention and residual layernorms
    cfg = _load("Snowflake--snowflake-arctic-instruct")
    cfg["parallel_attn_mlp_res"] = False
    assert HAND["Snowflake--snowflake-arctic-instruct"] - count_params(parse_model_config(cfg, "x")).total == \
        35 * (gated(7168, 7168) + 7168)


def test_moe_layer_frequency_places_the_moe_layers_and_their_residual_mlps() -> None:
    cfg = _load("Snowflake--snowflake-arctic-instruct")
    cfg["moe_layer_frequency"] = 2  # ArcticDecoderLayer: MoE where (layer_id + 1) % 2 == 0
    spec = parse_model_config(cfg, "x")
    assert [len(layer.ffns) for layer in spec.layers[:4]] == [1, 2, 1, 2]
    assert [layer.norms for layer in spec.layers[:2]] == [2, 3]  # the residual MLP and its norm on MoE layers only


def test_olmoe_q_and_k_norms_span_all_heads() -> None:
    parts = {p.name: p.params for p in _spec("allenai--OLMoE-1B-7B-0924").layers[0].mixer.proj_parts()}
    assert parts["qk_norm"] == 2048 + 16 * 128  # q_norm(hidden_size), k_norm(kv_heads x head_dim)


def test_mpt_attn_type_decides_the_kv_heads() -> None:
    cfg = _load("mosaicml--mpt-7b")
    assert parse_model_config(cfg, "x").num_key_value_heads == 32  # multihead_attention
    cfg["attn_config"].update(attn_type="multiquery_attention", kv_n_heads=8)  # MQA ignores kv_n_heads
    assert parse_model_config(cfg, "x").num_key_value_heads == 1
    cfg["attn_config"]["attn_type"] = "grouped_query_attention"
    assert parse_model_config(cfg, "x").num_key_value_heads == 8
    cfg["attn_config"]["attn_type"] = "linear_attention"
    with pytest.raises(InputError, match=r"attn_config\.attn_type: unknown attention type 'linear_attention'"):
        parse_model_config(cfg, "x")


def test_expansion_ratio_sizes_the_ffn() -> None:
    cfg = _load("mosaicml--mpt-7b")
    assert parse_model_config(cfg, "x").intermediate_size == 4 * 4096
    cfg["expansion_ratio"] = 2.5
    assert parse_model_config(cfg, "x").intermediate_size == 10240
    cfg["expansion_ratio"] = 1.0001
    with pytest.raises(InputError, match="expansion_ratio: 1.0001 x hidden_size .* not a whole width"):
        parse_model_config(cfg, "x")


def test_no_bias_false_puts_a_bias_on_every_linear_and_norm() -> None:
    cfg = _load("mosaicml--mpt-7b")
    cfg["no_bias"] = False  # MPTModel removes every bias only under no_bias
    got = count_params(parse_model_config(cfg, "x")).total - HAND["mosaicml--mpt-7b"]
    assert got == 32 * (3 * 4096 + 4096 + 16384 + 4096 + 2 * 4096) + 4096  # Wqkv, out_proj, up, down, 2 norms; norm_f


def test_mpt_qk_layernorms_are_refused() -> None:
    cfg = _load("mosaicml--mpt-7b")
    cfg["attn_config"]["qk_ln"] = True
    with pytest.raises(InputError, match=r"attn_config\.qk_ln: True: MPT's q / k LayerNorms .* not modelled"):
        parse_model_config(cfg, "x")


def test_a_shared_norm_switch_leaves_one_norm_per_layer() -> None:
    cfg = _load("stabilityai--stablelm-2-1_6b")
    assert {layer.norms for layer in parse_model_config(cfg, "x").layers} == {2}
    cfg["use_parallel_residual"] = True  # StableLmDecoderLayer builds no post_attention_layernorm
    spec = parse_model_config(cfg, "x")
    assert {layer.norms for layer in spec.layers} == {1}
    assert HAND["stabilityai--stablelm-2-1_6b"] - count_params(spec).total == 24 * ln(2048)


def test_layernorm1p_counts_a_weight_and_a_bias_and_relu2_is_not_gated() -> None:
    spec = _spec("nvidia--Minitron-8B-Base")
    parts = {p.name: p.params for p in count_params(spec).module("norms").parts}
    assert parts == {"layernorms": 32 * 2 * 4096, "layernorm_biases": 32 * 2 * 4096, "final_norm": 2 * 4096}
    assert not spec.layers[0].ffn.gated


def test_a_q_width_other_than_hidden_follows_head_dim() -> None:
    for name, hidden, q in (("nvidia--Minitron-8B-Base", 4096, 6144), ("baidu--ERNIE-4.5-0.3B-PT", 1024, 2048),
                            ("mistralai--Mistral-Nemo-Instruct-2407", 5120, 4096)):
        parts = {p.name: p.params for p in _spec(name).layers[0].mixer.proj_parts()}
        assert parts["q_proj"] == hidden * q, name


def test_qwen2_moe_has_qkv_biases_and_a_gated_shared_expert() -> None:
    layer = _spec("Qwen--Qwen1.5-MoE-A2.7B").layers[0]
    assert layer.mixer.qkv_bias and not layer.mixer.out_bias
    moe = layer.ffn
    assert isinstance(moe, MoE) and moe.shared_inter == 5632 and moe.shared_gate
    assert moe.shared_params == gated(2048, 5632) + 2048


def test_layer_types_place_olmo3s_sliding_window() -> None:
    windows = [layer.mixer.window for layer in _spec("allenai--Olmo-3-1025-7B").layers]
    assert windows[:4] == [4096, 4096, 4096, None] and windows.count(None) == 8


def test_exaone_reads_num_layers_and_its_non_embedding_count() -> None:
    spec = _spec("LGAI-EXAONE--EXAONE-3.5-7.8B-Instruct")
    assert spec.num_layers == 32
    assert count_params(spec).counted("non_embedding") == HAND["LGAI-EXAONE--EXAONE-3.5-7.8B-Instruct"] \
        - 2 * 102400 * 4096


def test_granitemoeshared_counts_one_ungated_shared_mlp() -> None:
    """No GraniteMoeShared release config is recalled exactly: its rule on the GraniteMoE config.
    GraniteMoeSharedMLP is input_linear h -> 2 x shared_intermediate_size and output_linear back, without a gate."""
    cfg = _load("ibm-granite--granite-3.1-3b-a800m-instruct")
    cfg.update(model_type="granitemoeshared", shared_intermediate_size=1024)
    spec = parse_model_config(cfg, "x")
    assert not any("not in the family defaults" in w for w in spec.warnings)
    moe = spec.layers[0].ffn
    assert moe.shared_inter == 1024 and not moe.shared_gate
    assert count_params(spec).total - HAND["ibm-granite--granite-3.1-3b-a800m-instruct"] == 32 * gated(1536, 1024)


def test_a_family_whose_layers_the_stack_cannot_express_is_refused_by_model_type() -> None:
    cfg = json.loads((REFUSED / "jetmoe--jetmoe-8b.json").read_text())
    with pytest.raises(InputError, match="model_type: 'jetmoe': attention experts .* not modelled"):
        parse_model_config(cfg, "x")


@pytest.mark.parametrize("name", sorted(HAND))
def test_inspect_prints_every_text_config(name: str) -> None:
    from click.testing import CliRunner

    from solver.cli.main import main as cli

    result = CliRunner().invoke(cli, ["inspect", str(DATA / f"{name}.json")])
    assert result.exit_code == 0, result.output
    assert f"{HAND[name]:,}" in result.output or f"{HAND[name] / 1e9:.2f}" in result.output


def test_mpt_without_alibi_is_refused() -> None:
    """MptModel always runs ALiBi and builds no position table; a checkpoint trained without it (learned_pos_emb, or
    RoPE) holds weights the stack does not count: refused by the family's _refused_when, naming the field."""
    cfg = _load("mosaicml--mpt-7b")
    cfg["attn_config"]["alibi"] = False
    with pytest.raises(InputError, match=r"attn_config\.alibi: False: MPT without ALiBi takes a learned position"):
        parse_model_config(cfg, "x")


@pytest.mark.parametrize("name, cards", [("databricks--dbrx-instruct", 8), ("Snowflake--snowflake-arctic-instruct", 16),
                                         ("mosaicml--mpt-7b", 8), ("stabilityai--stablelm-2-1_6b", 8)])
def test_the_planner_solves_the_new_layer_kinds(name: str, cards: int) -> None:
    """End to end: nested blocks (DBRX), a residual MLP beside the MoE (Arctic), ALiBi without a position table past
    max_seq_len (MPT-7B, 2,048 positions, asked 4,352), a shared-norm family (StableLM)."""
    from solver.api import run_solve
    from solver.specs.scenario import Scenario

    result, cands = run_solve(str(DATA / f"{name}.json"), "h100_sxm", cards, Scenario(kind="balanced", isl=4096, osl=256))
    assert cands
