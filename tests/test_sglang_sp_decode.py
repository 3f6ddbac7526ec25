"""SGLang's attention CP (attn_sp_size) in decode, as the engine runs it: one test per rule.

Source: the sglang 0.5.23 wheel (PyPI; read, not installed): the CP strategies shard extend batches only
(layers/cp/interleave.py and zigzag.py can_apply; DSA: layers/attention/dsa/utils.py dsa_use_prefill_cp), and
layers/dp_attention.py dp_reduce_scatter_tensor hands every CP rank its DP group's whole slot back ("decode (and
warmup) holds the full DP slot on every CP rank"); the MoE gather takes CP rank 0's rows
(_dp_gather_via_all_reduce). The profile says so as data (sglang.yaml: sp_decode_repeats_batch), read by the
step layout (estimate.step_parts.decode_layout). Figures hand-computed from DeepSeek-V3.2's config.json
(61 layers, indexer 64 heads x 128, kv_lora_rank 512 + rope 64) for Attn DP + SP2 on 8 H200: 4 attention
replicas, 64 sequences at 8K context, 16 per replica.
"""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from solver.estimate.compute import Work, factors_for
from solver.estimate.memory import memory_per_rank
from solver.estimate.memory_options import MemoryOptions, engine_options
from solver.estimate.step import step_cost
from solver.specs.framework import FrameworkProfile, load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

H200 = load_hardware("h200_sxm")
V32 = load_model("deepseek-v3.2")
SGLANG = load_framework("sglang")
SPLIT = SGLANG.model_copy(update={"sp_decode_repeats_batch": False})  # the RFC's SP: the batch split over SP
PC = make_parallel_config(8, attn_tp_size=1, attn_sp_size=2, dense_tp_size=1, moe_tp_size=1, embed_tp_size=1,
                          lmhead_tp_size=8)
PREC = resolve_precision(V32, H200)
CTX, BATCH = 8192, 64
SEQS = BATCH / PC.attn_replicas  # 16 sequences per attention replica (DP group)
DECODE = Work("decode", new_tokens=SEQS, context=CTX, sequences=SEQS, logits_tokens=SEQS)
PREFILL = Work("prefill", new_tokens=CTX, context=(CTX + 1) / 2, sequences=1, logits_tokens=1)


def _step(profile, w: Work):
    return step_cost(V32, H200, PC, PREC, factors_for(H200, profile.efficiency_for(H200)), w)


def _flops(step, name: str) -> float:
    return sum(o.flops for o in step.ops if o.name == name)


def test_sglang_sp_ranks_each_decode_their_replicas_whole_batch() -> None:
    """The indexer scores every cached key for each decoded token: 2 x 64 heads x 128 x 16 tokens x 8192 keys
    x 61 layers on each SP rank (1.31e11 FLOPs), not half of it as the batch split over the SP pair would."""
    assert PC.attn_replicas == 4
    whole = 2 * 64 * 128 * SEQS * CTX * 61
    assert _flops(_step(SGLANG, DECODE), "indexer_score") == pytest.approx(whole)
    assert _flops(_step(SPLIT, DECODE), "indexer_score") == pytest.approx(whole / 2)


def test_sglang_sp_decode_gathers_no_kv() -> None:
    """Each CP rank writes its own copy of the new token's K/V (it runs the whole batch): no per-layer gather."""
    assert not [c for c in _step(SGLANG, DECODE).comms if c.name == "kv_allgather"]
    assert [c for c in _step(SPLIT, DECODE).comms if c.name == "kv_allgather"]


def test_sglang_sp_decode_moe_counts_each_token_once() -> None:
    """The MoE takes one CP rank's rows: the experts' FLOPs are the 64 sequences' whichever SP decode form."""
    assert _flops(_step(SGLANG, DECODE), "routed_experts") == pytest.approx(
        _flops(_step(SPLIT, DECODE), "routed_experts"))


def test_sglang_sp_decode_costs_more_than_the_split_batch() -> None:
    """The attention half repeats on both SP ranks: the step is slower (33.91 -> 34.33 ms here; the MoE's
    expert weights dominate an 8K DSA step, whose attention reads 2,048 selected entries per sequence)."""
    assert _step(SGLANG, DECODE).time_s > _step(SPLIT, DECODE).time_s


def test_sglang_sp_prefill_still_splits_the_prompt() -> None:
    assert _step(SGLANG, PREFILL).time_s == pytest.approx(_step(SPLIT, PREFILL).time_s)
    assert _flops(_step(SGLANG, PREFILL), "indexer_proj") == pytest.approx(
        _flops(_step(SPLIT, PREFILL), "indexer_proj"))


def test_sglang_sp_ranks_each_keep_their_replicas_whole_kv() -> None:
    """16 sequences x 8192 tokens x 61 layers x (576 x 2 B latent, 132 B indexer key) on each SP rank: 9.21 GB
    KV and 1.06 GB indexer cache, unchanged by the decode form."""
    opts = engine_options(MemoryOptions(), factors_for(H200, SGLANG.efficiency_for(H200)))
    mem = memory_per_rank(V32, H200, PC, PREC, BATCH, CTX, opts)
    assert mem.kv_cache_bytes == pytest.approx(SEQS * CTX * 61 * 576 * 2)  # 9,210,691,584 B
    assert mem.indexer_cache_bytes == pytest.approx(SEQS * CTX * 61 * 132)


def test_a_profile_repeating_the_decode_batch_over_sp_must_have_the_sp_knob() -> None:
    """vLLM has no attn_sp_size knob (SP fixed at 1): the flag would describe ranks it does not have."""
    with pytest.raises(ValidationError, match="sp_decode_repeats_batch"):
        FrameworkProfile.model_validate({**load_framework("vllm").model_dump(), "sp_decode_repeats_batch": True})
