"""Stop 38, fixb: multimodal wrappers' class-default configs (tests/data/configs_defaults/, written by transformers
5.25.0's save_pretrained) counted to transformers' own meta-device figure. One test per rule the reader learned;
the oracle figures are benchmarks/transformers_defaults.py's (transformers 5.25.0, torch 2.13.0 CPU), the parts'
arithmetic from the modeling files named in each test."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config

DATA = Path(__file__).parent / "data" / "configs_defaults"


def _load(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def _count(cfg: dict) -> int:
    return count_params(parse_model_config(cfg, "x")).total


# model_type -> (transformers' count, the language model's vocab x hidden: the head a 4.x reading unties or ties)
TIED_BY_THE_WRAPPER = {
    "qwen3_vl_moe": (14_052_070_640, -151936 * 2048),  # wrapper false, text_config true: untied by 5.x
    "hyperclovax_vision_v2": (9_705_315_072, 32000 * 4096),  # wrapper true, text_config false: tied by 5.x
    "lighton_ocr": (1_005_647_872, 151936 * 1024),
    "minicpm_ocr": (8_094_084_096, 248320 * 4096),
    "internvl": (11_765_025_792, 151936 * 4096),
    "mistral3": (23_340_272_640, 131072 * 5120),
    "ovis2": (11_778_684_918, 151936 * 4096),
    "deepseek_vl": (6_720_158_976, 32000 * 4096),
}


@pytest.mark.parametrize("name", sorted(TIED_BY_THE_WRAPPER))
def test_a_config_saved_by_transformers_5_ties_the_head_by_the_wrappers_flag(name: str) -> None:
    # PreTrainedModel.get_expanded_tied_weights_keys reads getattr(self.config, "tie_word_embeddings", False) of the
    # ForConditionalGeneration, built from the wrapper's config; each file writes both flags, and they disagree
    oracle, head = TIED_BY_THE_WRAPPER[name]
    cfg = _load(name)
    assert cfg["transformers_version"].startswith("5.")
    assert _count(cfg) == oracle
    # 4.x tied by get_text_config(decoder=True).tie_word_embeddings: the language model's flag, named in a note
    cfg["transformers_version"] = "4.57.1"
    spec = parse_model_config(cfg, "x")
    assert count_params(spec).total == oracle + head
    assert any("tie_word_embeddings: the wrapper's" in w and "disagrees" in w for w in spec.warnings)


def test_a_wrapper_leaving_its_flag_out_ties_by_its_class_default() -> None:
    # save_pretrained leaves out a field equal to the class default: Mistral3Config's true, Qwen3VLMoeConfig's false
    cfg = _load("mistral3")
    del cfg["tie_word_embeddings"]
    assert _count(cfg) == 23_340_272_640
    cfg = _load("qwen3_vl_moe")
    assert cfg.pop("tie_word_embeddings", False) is False
    assert _count(cfg) == 14_052_070_640


def test_pixtral_mlp_is_gated_whatever_hidden_act_names() -> None:
    # PixtralMLP: gate_proj / up_proj / down_proj, no biases, under the class default hidden_act gelu; read as a biased
    # two-matrix GELU MLP with LayerNorms it was 24 x 1024 x 4096 = 100,663,296 short less 273,408 of biases / norms
    cfg = _load("mistral3")
    assert cfg["vision_config"]["hidden_act"] == "gelu"
    gelu = _count(cfg)
    cfg["vision_config"]["hidden_act"] = "silu"
    assert _count(cfg) == gelu == 23_340_272_640


def test_internvl_tower_biases_q_k_v_by_attention_bias_and_the_rest_always() -> None:
    # InternVLVisionAttention: q / k / v biased under attention_bias (false by default), projection_layer and the
    # MLP's fc1 / fc2 always: 24 layers x (1024 + 4096 + 1024) = 147,456 the reader had dropped with q / k / v's
    cfg = _load("internvl")
    assert cfg["vision_config"]["attention_bias"] is False
    assert _count(cfg) == 11_765_025_792
    cfg["vision_config"]["attention_bias"] = True
    assert _count(cfg) == 11_765_025_792 + 24 * 3 * 1024


def test_ovis2_visual_embedding_table_is_as_wide_as_the_wrappers_hidden_size() -> None:
    # Ovis2Model: Ovis2VisualEmbeddingTable(vision_config.vocab_size 16384, config.hidden_size), the wrapper's 1536,
    # not the text model's 4096: 16384 x (4096 - 1536) = 41,943,040 fewer
    cfg = _load("ovis2")
    assert cfg["hidden_size"] == 1536 and cfg["text_config"]["hidden_size"] == 4096
    assert _count(cfg) == 11_778_684_918
    del cfg["hidden_size"]  # Ovis2Config's class default, said in a note
    spec = parse_model_config(cfg, "x")
    assert count_params(spec).total == 11_778_684_918
    assert any("hidden_size: not written; the visual embedding table is read 1536 wide" in w for w in spec.warnings)
    cfg["hidden_size"] = 2048
    assert _count(cfg) == 11_778_684_918 + 16384 * 512


def test_deepseek_vl_aligner_is_two_biased_linears_vision_to_text_to_text() -> None:
    # DeepseekVLAligner: linear1 768 -> 4096 and linear2 4096 -> 4096, both biased:
    # 768 x 4096 + 4096 + 4096 x 4096 + 4096 = 19,931,136 (transformers' model.aligner); the SigLIP-B tower 92,884,224
    spec = parse_model_config(_load("deepseek_vl"), "x")
    assert count_params(spec).total == 6_720_158_976
    assert [e.params for e in spec.encoders] == [92_884_224 + 768 * 4096 + 4096 + 4096 * 4096 + 4096]


def test_paddleocr_vl_tower_keeps_siglips_learned_position_table_beside_its_axial_rope() -> None:
    # PaddleOCRVisionEmbeddings: nn.Embedding((384 // 14)^2 = 729, 1152) = 839,808, though the class writes
    # rope_parameters (axial) for the tower
    cfg = _load("paddleocr_vl")
    assert cfg["vision_config"]["rope_parameters"]["rope_type"] == "axial"
    assert _count(cfg) == 799_695_472 == 798_855_664 + 729 * 1152
