"""A config field that sizes weights in the family's modeling code (transformers 5.25.0) moves the count or is refused
naming it (benchmarks/unread_fields.py finds the ones that do neither). Hand figures from the modeling code's
shapes and the configs' sizes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.errors import InputError
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config

from conftest import one_catalog_config_per_class  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
UNSEEN = ROOT / "tests" / "data" / "configs_unseen"
WHEEL = Path("/tmp/tfw39/transformers")  # the unzipped transformers 5.25.0 wheel, where present


def _total(path: Path, **given) -> int:
    cfg = json.loads(path.read_text())
    cfg.update(given)
    return count_params(parse_model_config(cfg, path.stem)).total


def test_mla_attention_bias_biases_q_a_proj_kv_a_proj_and_o_proj() -> None:
    # DeepseekV3Attention (and every MLA class): bias=config.attention_bias on q_a_proj (q_lora_rank), kv_a_proj_with_mqa
    # (kv_lora_rank + qk_rope_head_dim) and o_proj (hidden); before: the switch moved nothing.
    # DeepSeek-R1: 61 x (1536 + 576 + 7168) = 566,080
    r1 = ROOT / "models" / "deepseek-ai--DeepSeek-R1.json"
    assert _total(r1, attention_bias=True) - _total(r1) == 61 * (1536 + 512 + 64 + 7168) == 566_080
    # MiniCPM3-4B: 62 x (768 + 288 + 2560) = 224,192
    minicpm3 = UNSEEN / "round8" / "openbmb--MiniCPM3-4B.json"
    assert _total(minicpm3, attention_bias=True) - _total(minicpm3) == 62 * (768 + 256 + 32 + 2560) == 224_192


def test_qwen2_moe_qkv_bias_false_drops_the_q_k_v_biases() -> None:
    # Qwen2MoeAttention: q / k / v biased by qkv_bias (class default True), not attention_bias; before: the family
    # line's attention_bias: true kept them whatever qkv_bias said. Qwen2-57B-A14B: 28 x (3584 + 2 x 4 x 128) = 129,024
    path = UNSEEN / "round8" / "Qwen--Qwen2-57B-A14B.json"
    assert _total(path) == 57_408_658_944
    assert _total(path) - _total(path, qkv_bias=False) == 28 * (3584 + 2 * 4 * 128) == 129_024


def test_modernbert_decoder_norm_bias_biases_every_layernorm() -> None:
    # ModernBertDecoder: every nn.LayerNorm takes bias=config.norm_bias (default false): the embedding norm, attn_norm
    # in layers 1..21, mlp_norm in all 22, the final norm and the head's norm. Ettin-150M: 46 x 768 = 35,328
    path = UNSEEN / "round14" / "jhu-clsp--ettin-decoder-150m.json"
    assert _total(path, norm_bias=True) - _total(path) == (1 + 21 + 22 + 1 + 1) * 768 == 35_328


@pytest.mark.parametrize("name", ["openai-community--gpt2.json", "bigcode--starcoderbase.json",
                                  "round12/facebook--xglm-564M.json"])
def test_add_cross_attention_is_refused_naming_the_field(name: str) -> None:
    # GPT2Block / GPTBigCodeBlock / XGLMDecoderLayer build a cross-attention and its norm per layer under the switch;
    # before: counted as the decoder alone (GPT-2: 124,439,808 either way)
    with pytest.raises(InputError, match="add_cross_attention: True: a cross-attention"):
        _total(UNSEEN / name, add_cross_attention=True)


# the scanner's silent ones that are not miscounts (benchmarks/README.md, stop 37): the flat linear_* fields that
# KimiLinearConfig overrides from the linear_attn_config the configs write; an original-LLaVA config (Yi-VL) names
# its tower by path and has no projector counted; the MoE widths of a Nemotron-H with no MoE layer; GPT-2's
# summary_use_proj, a head of GPT2DoubleHeadsModel only
_NOT_MISCOUNTS = {("kimi_linear", "linear_conv_kernel_dim"), ("kimi_linear", "linear_head_dim"),
                  ("kimi_linear", "linear_num_heads"), ("llava", "multimodal_projector_bias"),
                  ("llava", "vision_feature_layer"), ("nemotron_h", "moe_intermediate_size"),
                  ("nemotron_h", "moe_shared_expert_intermediate_size"), ("gpt2", "summary_use_proj")}


def _silent(paths: list[Path]) -> set[tuple[str, str]]:
    from benchmarks.class_defaults import class_table
    from benchmarks.unread_fields import modeling_files, scan

    table, files = class_table(WHEEL), modeling_files(WHEEL)
    silent = set()
    for path in paths:
        cfg = json.loads(path.read_text())
        mt, rows = scan(cfg, table, files)
        silent |= {(mt, attr) for attr, kind, *_ in rows if kind == "SILENT"}
    return silent


@pytest.mark.skipif(not (WHEEL / "models").is_dir(), reason="needs the unzipped transformers 5.25.0 wheel")
@pytest.mark.slow  # every catalog class (~4 s)
def test_every_shape_field_of_each_catalog_class_s_modeling_code_is_read_or_known() -> None:
    assert _silent(one_catalog_config_per_class()) - _NOT_MISCOUNTS == set()


@pytest.mark.slow
@pytest.mark.skipif(not (WHEEL / "models").is_dir(), reason="needs the unzipped transformers 5.25.0 wheel")
def test_every_shape_field_of_every_other_config_s_modeling_code_is_read_or_known() -> None:
    # the rest of benchmarks/unread_fields.py's configs: with the default test above, every config it lists
    from benchmarks.unread_fields import configs

    checked = set(one_catalog_config_per_class())
    assert _silent([p for p in configs() if p not in checked]) - _NOT_MISCOUNTS == set()
