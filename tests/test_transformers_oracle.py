"""The reader against transformers itself (stop 37): tests/data/transformers_oracle.tsv holds transformers 5.25.0's
meta-device count of every config it could build (benchmarks/transformers_oracle.py; no torch needed here). Where the
reader counts the same file the two agree exactly, on the reader's basis: transformers' parameters plus the router
score-correction biases it keeps as persistent buffers (a checkpoint stores them). The exceptions are named below,
each with its class from benchmarks/README.md's stop 37 and its exact difference."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.errors import InputError
from solver.estimate.params import ParamReport, count_params
from solver.specs.config.read import parse_model_config

ROOT = Path(__file__).resolve().parent.parent
ORACLE = Path(__file__).parent / "data" / "transformers_oracle.tsv"
# transformers registers these as buffers (no gradient flows into them); the checkpoint stores them as tensors
ROUTER_BIAS_BUFFERS = ("e_score_correction_bias", "expert_bias", "balancing_biases")


def _oracle() -> dict[str, int]:
    """file -> transformers' count on the reader's basis (parameters + router-bias buffers)."""
    lines = [ln.split("\t") for ln in ORACLE.read_text().splitlines() if ln and not ln.startswith("#")]
    out: dict[str, int] = {}
    for file, _cls, params, _buffers, names in lines[1:]:
        biases = json.loads(names) if names else {}
        out[file] = int(params) + sum(n for k, n in biases.items() if k in ROUTER_BIAS_BUFFERS)
    return out


ORACLE_COUNTS = _oracle()

# (a) transformers 5.x ties lm_head to the embedding by the wrapper's top-level tie_word_embeddings (its class default
# True, or forwarded from a flat layout's default text config); these files were saved by 4.x (Mistral-Small-3.1
# 4.50, InternVL3-1B-hf 4.52, PaddleOCR-VL 4.55) or name no version, and 4.x tied by text_config's untied flag, which
# the reader follows (config/head_tie.py). from_pretrained keeps both tensors where the checkpoint stores both, so the
# checkpoint decides; a meta-device build cannot. The difference is the reader's whole lm_head. (Kimi-K2.6's file,
# stamped 5.25.0, is read by the wrapper's flag since stop 38 and agrees.)
TIED_BY_THE_WRAPPER = (
    "tests/data/configs_unseen/mistralai--Mistral-Small-3.1-24B-Instruct-2503.json",
    "tests/data/configs_unseen/round21/PaddlePaddle--PaddleOCR-VL.json",
    "tests/data/configs_unseen/round36/naver-hyperclovax--HyperCLOVAX-SEED-Think-32B.json",
    "tests/data/configs_unseen/round39/openbmb--MiniCPM-OCR-1.0.json",
    "tests/data/configs_unseen/round4/OpenGVLab--InternVL3-1B-hf.json",
    "tests/data/configs_unseen/round42/zai-org--GLM-ASR-Nano-2512.json",
    "tests/data/configs_unseen/round42/ibm-granite--granite-speech-4.1-2b-plus.json",
)
# (a) transformers builds class defaults for what the file does not describe: the Llama-4 files hold text_config
# only (transformers adds its default vision tower and projector, 455,178,240); Yi-VL's file is written for LLaVA's
# original code (top-level text fields, mm_vision_tower), which LlavaConfig ignores for its default Llama-7B + CLIP-L.
# Open: Aya-Vision's file leaves alignment_intermediate_size out; the reader takes 28672 (the 4.x class default,
# family_defaults.yaml), transformers 5.25.0's projector falls back to the text hidden_size 4096.
READER_MINUS_ORACLE = {
    "models/meta-llama--Llama-4-Scout-17B-16E-Instruct.json": -455_178_240,
    "tests/data/configs_unseen/meta-llama--Llama-4-Maverick-17B-128E-Instruct.json": -455_178_240,
    "tests/data/configs_unseen/round18/01-ai--Yi-VL-6B.json": -348_073_472,
    "tests/data/configs_unseen/round4/CohereForAI--aya-vision-8b.json": +163_602_432,
}


def _report(file: str) -> ParamReport | None:
    path = ROOT / file
    try:
        return count_params(parse_model_config(json.loads(path.read_text()), path.stem))
    except InputError:
        return None


def test_oracle_file_covers_the_configs_transformers_built() -> None:
    assert len(ORACLE_COUNTS) == 318
    assert all((ROOT / f).is_file() for f in ORACLE_COUNTS)


@pytest.mark.parametrize("file", sorted(set(ORACLE_COUNTS) - set(TIED_BY_THE_WRAPPER) - set(READER_MINUS_ORACLE)))
def test_reader_count_equals_transformers_meta_device_count(file: str) -> None:
    rep = _report(file)
    if rep is None:
        pytest.skip("refused by the reader (a family it has no convention for)")
    assert rep.total == ORACLE_COUNTS[file]


@pytest.mark.parametrize("file", TIED_BY_THE_WRAPPER)
def test_wrapper_tie_flag_against_text_config_differs_by_exactly_the_untied_head(file: str) -> None:
    rep = _report(file)
    assert rep is not None
    assert rep.total - ORACLE_COUNTS[file] == rep.by_name()["lm_head"] > 0


@pytest.mark.parametrize("file, diff", sorted(READER_MINUS_ORACLE.items()))
def test_files_transformers_completes_with_class_defaults_differ_by_the_recorded_amount(file: str, diff: int) -> None:
    rep = _report(file)
    assert rep is not None
    assert rep.total - ORACLE_COUNTS[file] == diff


@pytest.mark.parametrize("file, total", [
    ("models/meituan-longcat--LongCat-Flash-Chat.json", 560_664_980_480),  # 28 x (512 + 256 zero) biases
    ("tests/data/configs_unseen/round14/XiaomiMiMo--MiMo-V2-Flash.json", 308_778_780_864),  # 47 x 256
    ("tests/data/configs_unseen/round23/inclusionAI--Ling-3.0-Flash.json", 124_414_211_552),  # 40 x 512
])
def test_router_score_correction_bias_kept_as_a_persistent_buffer_is_counted(file: str, total: int) -> None:
    # Before stop 37 these three families left it out (it "is a buffer") while DeepSeek-V3's, a buffer too, counted
    rep = _report(file)
    assert rep is not None and rep.total == total == ORACLE_COUNTS[file]


def test_hash_routed_moe_layers_hold_no_score_correction_bias() -> None:
    # DeepSeek-V4-Pro: num_hash_layers 3 route by a token-id table (tid2eid); only the other 58 layers carry the
    # 384 biases. Before: 1,572,997,202,915 (1,152 over)
    file = "models/deepseek-ai--DeepSeek-V4-Pro.json"
    rep = _report(file)
    assert rep is not None and rep.total == 1_572_997_201_763 == ORACLE_COUNTS[file]
