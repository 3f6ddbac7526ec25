"""Stop 50: a user-level hunt of multimodal and the newest models (benchmarks/README.md, "Stop 50").

Rules: a vision tower's weights on a rank follow the engine's tower layout (vLLM's default --mm-encoder-tp-mode
weights and SGLang's towers split over the attention TP group; the seed's generic profile keeps the tower whole:
tests/test_seed_conformance.py), in the memory answer and in the planner's tables alike.
"""
from __future__ import annotations

from solver.estimate.memory import memory_per_rank
from solver.estimate.memory_options import framework_options
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision

# Qwen3-VL-30B-A3B's tower and merger, by hand from its vision_config (27 blocks of width 1152, MLP 4304, patch
# 16 x 16 x 2 frames, 2304 positions, a 2 x 2 merger into 2048 and 3 deepstack mergers), in bf16
QWEN3_VL_TOWER = 538_631_408


def _vision_gb(framework: str, **knobs: int) -> float:
    model, hw = load_model("qwen3-vl-30b-a3b"), load_hardware("h100_sxm")
    pc = ParallelConfig(world_size=2, **knobs)
    opts = framework_options(load_framework(framework), hw=hw)
    return memory_per_rank(model, hw, pc, resolve_precision(model, hw), 2, 4096, opts).weights_bytes["vision"]


def test_vllm_splits_a_vision_tower_over_its_tensor_parallel_group():
    # vLLM 0.34.0 models/qwen3_vl.py:421-438: the tower's linears split over TP unless --mm-encoder-tp-mode data
    assert _vision_gb("vllm", attn_tp_size=2, moe_tp_size=2) == QWEN3_VL_TOWER * 2 / 2
    # one engine a rank (DP, EP): TP 1, the tower whole
    assert _vision_gb("vllm", moe_tp_size=2) == QWEN3_VL_TOWER * 2


def test_sglang_splits_a_vision_tower_over_its_attention_tp_group():
    # sglang 0.5.23 models/qwen3_vl.py:118-127: "attn_tp"; under attention DP (attn_tp 1) each rank holds it whole
    assert _vision_gb("sglang", attn_tp_size=2, moe_tp_size=2) == QWEN3_VL_TOWER * 2 / 2
    assert _vision_gb("sglang", moe_tp_size=2) == QWEN3_VL_TOWER * 2


def test_a_tower_the_engine_builds_of_plain_linears_stays_whole_on_every_rank():
    """vLLM builds gemma4's tower as transformers' own (gemma4_mm.py:1119-1120), SGLang Kimi-K3's of nn.Linear
    (kimi_k3_vl.py:372-415): whole on every TP rank, whatever the engine does with other towers."""
    model, hw = load_model("gemma-4-31b"), load_hardware("h200_sxm")
    pc = ParallelConfig(world_size=2, attn_tp_size=2, dense_tp_size=2)
    prec = resolve_precision(model, hw)

    def vision(framework: str) -> float:
        opts = framework_options(load_framework(framework), hw=hw)
        return memory_per_rank(model, hw, pc, prec, 2, 4096, opts).weights_bytes["vision"]

    whole = model.encoders[0].params * 2
    assert vision("vllm") == whole and vision("sglang") == whole / 2  # SGLang's gemma4 tower: over attn_tp


def test_a_tower_whose_heads_the_tp_group_does_not_divide_stays_whole():
    """vLLM replicates a tower whose heads TP does not divide (models/vision.py:144-155): Kimi-K3's 12-head tower
    splits at TP4 and is whole at TP8."""
    model, hw = load_model("kimi-k3"), load_hardware("b200_sxm")
    prec = resolve_precision(model, hw)
    opts = framework_options(load_framework("vllm"), hw=hw)

    def vision(tp: int) -> float:
        pc = ParallelConfig(world_size=32, attn_tp_size=tp, dense_tp_size=tp, embed_tp_size=tp, lmhead_tp_size=tp)
        return memory_per_rank(model, hw, pc, prec, 32, 4096, opts).weights_bytes["vision"]

    assert model.encoders[0].heads == 12
    assert vision(4) == model.encoders[0].params * 2 / 4 and vision(8) == model.encoders[0].params * 2


def test_the_planner_prices_a_tower_with_the_attention_group_it_splits_with():
    """The planner's attention choices carry the tower (plan/memory_rows._weights at each attention layout), so
    its tables split it as the memory answer does; a profile keeping it whole gives the same bytes at any choice."""
    from solver.estimate.params import count_params
    from solver.plan.groups import module_groups

    assert module_groups(count_params(load_model("qwen3-vl-30b-a3b")))["vision"] == "attn"


def test_a_towers_answer_says_its_figures_price_text_prompts():
    """The workload is text tokens: the tower's pass over an image is in no figure, and the answer says so (in
    memory, without the timing clause: it prices no time)."""
    from solver.specs.notes import input_notes

    model, hw = load_model("qwen3-vl-30b-a3b"), load_hardware("h100_sxm")
    prec = resolve_precision(model, hw)
    timed = [n for n in input_notes(model, hw, prec) if "vision tower" in n]
    assert len(timed) == 1 and "TTFT, TPOT and throughput price text prompts" in timed[0]
    untimed = [n for n in input_notes(model, hw, prec, timed=False) if "vision tower" in n]
    assert len(untimed) == 1 and "TTFT" not in untimed[0] and "encoder cache of its inputs are not" in untimed[0]
    assert not [n for n in input_notes(load_model("qwen3-30b-a3b"), hw, prec) if "tower" in n]


def test_a_llama4_wrapper_without_a_vision_config_says_its_tower_is_not_counted():
    """Llama4Config builds Llama4VisionConfig()'s tower where none is written: the catalog's Scout file (the text
    config alone) is the language model, and the answer says so rather than size it as the whole checkpoint."""
    said = [n for n in load_model("llama-4-scout").warnings if n.startswith("vision_config: not written")]
    assert said and "llama4's default tower" in said[0]
