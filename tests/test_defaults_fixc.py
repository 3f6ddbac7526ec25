"""Rules the reader learnt from transformers 5.25.0's class-default configs of hybrid / recurrent stacks and of the
classes it refuses (stop 38, fixc; benchmarks/README.md). Each total is transformers' meta-device count of the
class default (tests/data/configs_defaults/oracle.tsv); the part the reader had missing is computed by hand."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from solver.errors import InputError
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config
from solver.specs.layers.conv import ShortConv
from solver.specs.layers.linear import KDA
from solver.specs.layers.mamba import Mamba1, Mamba2

DATA = Path(__file__).parent / "data" / "configs_defaults"


def _raw(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def _mixers(spec) -> list[str]:
    return [type(layer.blocks[0]).__name__ for layer in spec.layers]


def test_linear_attention_in_layers_block_type_is_the_mamba2_layer_nemotron_h_builds() -> None:
    # NemotronHConfig() writes ["linear_attention", "moe", "full_attention", "mlp"]; NemotronHBlock builds
    # NemotronHMamba2Mixer for linear_attention: 128 heads of mamba_head_dim 64, 8 groups of state 128
    spec = parse_model_config(_raw("nemotron_h"), "nemotron_h")
    assert _mixers(spec) == ["Mamba2", "MoE", "Attention", "DenseFFN"]
    m = spec.layers[0].blocks[0]
    assert isinstance(m, Mamba2) and (m.heads, m.head_dim, m.groups, m.state_size) == (128, 64, 8, 128)
    assert count_params(spec).total == 1_968_355_720


def test_linear_attention_in_zambas_layers_block_type_is_its_mamba1_layer() -> None:
    # ZambaConfig(): 76 layers, "hybrid" at i % 6 == 4 after the first two (13 of them), the rest Mamba-1 mixers of
    # d_inner = mamba_expand x hidden = 2 x 3712 = 7424
    spec = parse_model_config(_raw("zamba"), "zamba")
    mambas = [[b for b in layer.blocks if isinstance(b, Mamba1)] for layer in spec.layers]
    assert len(mambas) == 76 and all(len(m) == 1 and m[0].d_inner == 7424 for m in mambas)
    assert sum(1 for t in _raw("zamba")["layers_block_type"] if t == "hybrid") == 13
    assert count_params(spec).total == 7_232_490_496


def test_linear_attention_in_granitemoehybrid_layer_types_is_its_mamba2_layer() -> None:
    # GraniteMoeHybridConfig(): 32 linear_attention layers, each GraniteMoeHybridMambaLayer: 128 heads of 64
    spec = parse_model_config(_raw("granitemoehybrid"), "granitemoehybrid")
    assert set(_mixers(spec)) == {"Mamba2"}
    m = spec.layers[0].blocks[0]
    assert (m.heads, m.head_dim, m.state_size) == (128, 64, 256)
    assert count_params(spec).total == 38_601_064_448


def test_zamba2_builds_the_mlp_adapter_for_every_hybrid_use() -> None:
    # Zamba2MLP builds gate_up_proj_adapter for every use whatever the config says (Zamba2Config 5.25.0 has no
    # use_shared_mlp_adapter): 9 hybrid layers x (hidden x rank + rank x 2 x intermediate)
    # = 9 x (2560 x 128 + 128 x 20480) = 9 x 2,949,120 = 26,542,080
    raw = _raw("zamba2")
    with_adapter = count_params(parse_model_config(raw, "zamba2")).total
    without = count_params(parse_model_config({**raw, "use_shared_mlp_adapter": False}, "zamba2")).total
    assert with_adapter - without == 9 * (2560 * 128 + 128 * 2 * 10240) == 26_542_080
    assert with_adapter == 2_481_848_336


def test_kimi_linear_class_sizes_kda_by_linear_num_heads_and_linear_head_dim() -> None:
    # KimiLinearConfig() writes no linear_attn_config: KimiLinearDeltaAttention is linear_num_heads 32 x
    # linear_head_dim 128 with a conv of linear_conv_kernel_dim 4 and low-rank (rank head_dim) f / g gates
    spec = parse_model_config(_raw("kimi_linear"), "kimi_linear")
    kda = spec.layers[0].blocks[0]
    assert isinstance(kda, KDA) and (kda.heads, kda.head_dim, kda.conv_kernel, kda.full_rank_gate) == (32, 128, 4, False)
    assert count_params(spec).total == 49_133_081_120


def test_bamba_null_attn_layer_indices_is_every_layer_mamba() -> None:
    # BambaConfig.layers_block_type: full_attention only at attn_layer_indices, none when null: 32 Mamba-2 layers
    spec = parse_model_config(_raw("bamba"), "bamba")
    assert set(_mixers(spec)) == {"Mamba2"} and len(spec.layers) == 32
    assert count_params(spec).total == 9_992_765_440
    placed = parse_model_config({**_raw("bamba"), "attn_layer_indices": [9, 18, 27]}, "bamba")
    assert [i for i, k in enumerate(_mixers(placed)) if k == "Attention"] == [9, 18, 27]


def test_lfm2_full_attn_idxs_places_attention_and_conv_elsewhere() -> None:
    # Lfm2Config without layer_types: full attention at full_attn_idxs (every layer where null), conv elsewhere
    raw = _raw("lfm2_vl")
    del raw["text_config"]["layer_types"]
    spec = parse_model_config(raw, "lfm2_vl")
    assert set(_mixers(spec)) == {"Attention"}
    assert count_params(spec).total == 2_812_857_088
    raw["text_config"]["full_attn_idxs"] = None
    assert set(_mixers(parse_model_config(raw, "lfm2_vl"))) == {"Attention"}
    hybrid = copy.deepcopy(raw)
    hybrid["text_config"]["full_attn_idxs"] = [2, 5]
    kinds = [type(layer.blocks[0]) for layer in parse_model_config(hybrid, "lfm2_vl").layers]
    assert [i for i, k in enumerate(kinds) if k is not ShortConv] == [2, 5] and len(kinds) == 32


def test_conv_fields_that_size_no_layer_do_not_refuse_lfm2() -> None:
    # Lfm2Config() writes layer_types all full_attention beside conv_L_cache 3: no conv layer, so it sizes nothing
    spec = parse_model_config(_raw("lfm2"), "lfm2")
    assert set(_mixers(spec)) == {"Attention"} and count_params(spec).total == 2_705_497_600


def test_a_nested_blocks_own_bookkeeping_is_not_a_contradiction() -> None:
    # MptConfig() serialises attn_config with PretrainedConfig's architectures null beside the top level's
    assert count_params(parse_model_config(_raw("mpt"), "mpt")).total == 1_311_213_568
    raw = _raw("mpt")
    raw["attn_config"] = {**raw["attn_config"], "vocab_size": 1000}  # a model field differing is still refused
    with pytest.raises(InputError, match="attn_config: vocab_size is 1000 here"):
        parse_model_config(raw, "mpt")


BERT_LIKE = {
    # written as transformers 5.25.0 writes the class defaults; no type_vocab_size in any
    "bert-generation": {"architectures": ["BertGenerationDecoder"], "model_type": "bert-generation",
                        "hidden_size": 1024, "intermediate_size": 4096, "num_attention_heads": 16,
                        "num_hidden_layers": 24, "vocab_size": 50358},
    "git": {"architectures": ["GitForCausalLM"], "model_type": "git", "hidden_size": 768,
            "intermediate_size": 3072, "num_attention_heads": 12, "num_hidden_layers": 6, "vocab_size": 30522,
            "vision_config": {"model_type": "git_vision_model"}},
    "blip": {"architectures": ["BlipForConditionalGeneration"], "model_type": "blip",
             "text_config": {"is_decoder": True, "model_type": "blip_text_model"},
             "vision_config": {"model_type": "blip_vision_model"}},
    "blip without text_config": {"architectures": ["BlipForConditionalGeneration"], "model_type": "blip"},
    "xlm": {"architectures": ["XLMWithLMHeadModel"], "model_type": "xlm", "emb_dim": 2048, "n_heads": 16,
            "n_layers": 12, "causal": False, "is_encoder": True, "vocab_size": 30145},
}


@pytest.mark.parametrize("name", sorted(BERT_LIKE))
def test_bert_style_layers_are_refused_by_model_type_in_one_line(name: str) -> None:
    # post-LN layers with biased linears and LayerNorms and learned positions: the class, not one field, is the sign
    with pytest.raises(InputError) as e:
        parse_model_config(BERT_LIKE[name], name)
    assert "model_type" in str(e.value) and "BERT-lineage" in str(e.value) and "\n" not in str(e.value)


def test_cpmant_is_refused_for_its_segment_and_prompt_embeddings() -> None:
    # CpmAntForCausalLM = 9,517,453,312: the layers the stack counts, 48 x (4 x 4096^2 + 3 x 4096 x 10240 + 2 x 4096)
    # = 9,261,416,448, plus what no convention sizes: (30720 + 32 x 32) x 4096 token + prompt rows, 32 x 4096
    # segment rows, (32^2 + 512) x 32 position bias, an untied 30720 x 4096 head and the final norm
    assert 48 * (4 * 4096 ** 2 + 3 * 4096 * 10240 + 2 * 4096) + (30720 + 32 * 32) * 4096 + 32 * 4096 \
        + (32 ** 2 + 512) * 32 + 30720 * 4096 + 4096 == 9_517_453_312
    with pytest.raises(InputError, match="model_type: 'cpmant': segment embeddings"):
        parse_model_config(_raw("cpmant"), "cpmant")


def test_an_unread_list_placing_the_mixers_is_refused_beside_mamba_layers() -> None:
    # BambaConfig() with its attention written under a name the class does not read is 32 Mamba layers to
    # transformers; the config meant attention at 9, 18, 27, so the list is refused rather than dropped
    raw = {**_raw("bamba"), "attention_layer_ids": [9, 18, 27]}
    with pytest.raises(InputError, match="attention_layer_ids: .* placed without it"):
        parse_model_config(raw, "bamba")
