"""The sparse-attention indexer's fp32 logits scratch: this rank's query rows against every key they score (the
prompt up to the chunk at prefill, each sequence's context at decode), split by rows to the engine's bound
(FrameworkProfile.indexer_logits_max_bytes), never below one row."""
from __future__ import annotations

from dataclasses import replace

from solver.estimate.activations import activation_peak, activation_peak_terms, prefill_chunk
from solver.estimate.compute import factors_for
from solver.estimate.memory import memory_per_rank
from solver.estimate.memory_options import MemoryOptions, device_options, engine_options, framework_options
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.layers.dsa import Indexer
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision

MIB = 1024 * 1024
CTX = 131072  # a 128K prompt
V32_INDEXER = Indexer(heads=64, head_dim=128, topk=2048)  # DeepSeek-V3.2's index_n_heads, index_head_dim, topk


def _tp8() -> ParallelConfig:
    return ParallelConfig(world_size=8, attn_tp_size=8, dense_tp_size=8, moe_tp_size=8, embed_tp_size=8,
                          lmhead_tp_size=8)


def test_vllm_splits_prefill_logits_to_512_mib():
    """vLLM's budget (VLLM_SPARSE_INDEXER_MAX_LOGITS_MB = 512): an 8,192-token chunk at 128K would hold
    8192 x 131072 x 4 = 4 GiB; a row is 131072 x 4 = 512 KiB, so pieces of 512 MiB / 512 KiB = 1024 rows hold
    min(8192 x 131072 x 4, 512 MiB) = 536,870,912 bytes."""
    cap = framework_options(load_framework("vllm")).indexer_logits_max_bytes
    assert cap == 512 * MIB
    assert V32_INDEXER.logits_scratch(8192, CTX, cap) == 536_870_912


def test_an_uncapped_engine_holds_the_whole_matrix():
    """No bound (generic, TRT-LLM, ATOM): 8192 rows x 131072 keys x 4 B = 4,294,967,296 bytes."""
    for name in ("generic", "trtllm", "atom"):
        cap = framework_options(load_framework(name)).indexer_logits_max_bytes
        assert cap is None
        assert V32_INDEXER.logits_scratch(8192, CTX, cap) == 4_294_967_296


def test_a_short_prompt_below_every_cap_is_the_whole_matrix():
    """2,048 rows x 2,048 keys x 4 B = 16 MiB, below vLLM's 512 MiB: the same as unbounded."""
    whole = 2048 * 2048 * 4
    assert V32_INDEXER.logits_scratch(2048, 2048, 512 * MIB) == whole == V32_INDEXER.logits_scratch(2048, 2048, None)


def test_pieces_hold_whole_rows_within_the_bound():
    """Rows of 100 keys x 4 = 400 B under a 1,000 B bound: 1000 // 400 = 2 rows a piece = 800 B."""
    assert V32_INDEXER.logits_scratch(10, 100, 1000) == 800


def test_never_below_one_row():
    """A bound of 0 (SGLang's budget carved from free memory, the NPU op fusing the top-k) or one below a row
    still holds one row: 131072 x 4 = 524,288 bytes."""
    assert load_framework("sglang").indexer_logits_max_bytes == 0
    assert load_framework("vllm-ascend").indexer_logits_max_bytes == 0
    assert V32_INDEXER.logits_scratch(8192, CTX, 0) == 524_288
    assert V32_INDEXER.logits_scratch(8192, CTX, 1000) == 524_288


def test_a_layer_reusing_the_selection_scores_nothing():
    """A shared (non-selecting) indexer holds no logits."""
    reused = Indexer(heads=64, head_dim=128, topk=2048, selects=False)
    assert reused.logits_scratch(8192, CTX, None) == 0.0


def test_prefill_scores_the_prompt_not_the_chunk():
    """V3.2 at TP8, an 8,192-token chunk of a 128K prompt: the attention term under no bound less the one under a
    one-row bound is (8192 - 1) rows x 131072 keys x 4 B = 4,294,443,008 bytes (the queries are the chunk's,
    the keys the prompt's; the decode step of one sequence is smaller)."""
    assert _scratch_above_one_row(_tp8(), MemoryOptions(prefill_chunk=8192), CTX, 1.0) == (8192 - 1) * CTX * 4


def test_decode_scores_each_sequence_context():
    """64 decoding sequences at 128K with a 16-token prefill chunk (the decode step is the larger): one row per
    sequence against its own 131072 keys, (64 - 1) x 131072 x 4 = 33,030,144 bytes above the one-row floor."""
    assert _scratch_above_one_row(_tp8(), MemoryOptions(prefill_chunk=16), CTX, 64.0) == (64 - 1) * CTX * 4


def test_the_bound_reaches_memory_through_the_engine_factors():
    """The step costs' factors carry the profile's bound, so engine_options gives the memory side the same (with
    the device's flags, which memory_per_rank gives a profile's options: device_options)."""
    fw, hw = load_framework("vllm"), load_hardware("h200_sxm")
    f = factors_for(hw, fw.efficiency_for(hw))
    assert f.indexer_logits_max_bytes == 512 * MIB
    assert engine_options(None, f) == device_options(framework_options(fw), hw)


def test_a_compressed_indexer_scores_the_compressed_entries():
    """DeepSeek-V4's CSA layers (ratio 4) score one compressed entry per 4 keys: at 128K, 8192 rows x
    131072 / 4 keys x 4 B = 1,073,741,824 bytes unbounded; vLLM's 512 MiB holds 512 MiB / (32768 x 4 B) = 4096
    rows = 536,870,912 bytes."""
    m = load_model("deepseek-v4-pro")
    pc = ParallelConfig(world_size=1)
    csa = next(b for layer, _ in m.layer_groups for b in layer.blocks
               if getattr(b, "ratio", 0) == 4 and getattr(b, "indexer", None) is not None)
    assert csa.scratch(pc, 8192, CTX, None) == 1_073_741_824
    assert csa.scratch(pc, 8192, CTX, 512 * MIB) == 536_870_912


def _kvp2() -> ParallelConfig:
    return ParallelConfig(world_size=8, attn_tp_size=8, dense_tp_size=8, moe_tp_size=8, embed_tp_size=8,
                          lmhead_tp_size=8, kvp_size=2)


def _scratch_above_one_row(pc: ParallelConfig, opts: MemoryOptions, seq_len: int, seqs: float) -> float:
    """The attention term under `opts` less the same under a one-row bound: the logits beyond one row."""
    whole = activation_peak_terms(load_model("deepseek-v3.2"), pc, opts, seq_len, seqs)["attn_tp_size"]
    row = activation_peak_terms(load_model("deepseek-v3.2"), pc, replace(opts, indexer_logits_max_bytes=0), seq_len,
                                seqs)["attn_tp_size"]
    return whole - row


def test_kvp_splits_the_scored_keys_where_the_engine_splits_the_indexer_keys():
    """KVP 2 (vLLM's DCP stripes the indexer keys): 64 sequences at 128K each score their 131072 / 2 = 65536 local
    keys, (64 - 1) x 65536 x 4 = 16,515,072 bytes above one row."""
    opts = MemoryOptions(prefill_chunk=16)
    assert _scratch_above_one_row(_kvp2(), opts, CTX, 64.0) == (64 - 1) * 65536 * 4 == 16_515_072


def test_kvp_ranks_replicating_the_indexer_keys_score_them_all():
    """SGLang / vllm-ascend keep every indexer key on each KVP rank: (64 - 1) x 131072 x 4 = 33,030,144 bytes."""
    opts = MemoryOptions(prefill_chunk=16, kvp_replicates_indexer_keys=True)
    assert framework_options(load_framework("sglang")).kvp_replicates_indexer_keys
    assert _scratch_above_one_row(_kvp2(), opts, CTX, 64.0) == (64 - 1) * CTX * 4 == 33_030_144


def test_prefill_scores_the_prompt_without_the_output_tokens():
    """A request of a 128K prompt and 4,096 output tokens (seq_len 135168), one sequence, 8,192-token chunks:
    its last prefill chunk scores the 131072 prompt keys, (8192 - 1) x 131072 x 4 = 4,294,443,008 bytes above one
    row, not (8192 - 1) x 135168 x 4 (the output tokens are not there yet)."""
    opts = MemoryOptions(prefill_chunk=8192, prompt_tokens=CTX)
    assert _scratch_above_one_row(_tp8(), opts, CTX + 4096, 1.0) == (8192 - 1) * CTX * 4 == 4_294_443_008


def test_a_prefill_packing_short_prompts_holds_their_tokens_not_their_outputs():
    """Prompts of 1,000 tokens with 3,000 output tokens each, 4 sequences, an 8,192-token budget: one prefill
    forward holds 4 x 1000 = 4,000 tokens (not min(8192, 4 x 4000) = 8,192)."""
    assert prefill_chunk(MemoryOptions(prefill_chunk=8192, prompt_tokens=1000), 4000, 4) == 4000
    assert prefill_chunk(MemoryOptions(prefill_chunk=8192), 4000, 4) == 8192  # no prompt named: seq_len


def test_decode_with_mtp_scores_the_draft_rows():
    """64 sequences at 128K with one draft token each (MTP next_n 2): 64 x 2 = 128 rows a step,
    (128 - 1) x 131072 x 4 = 66,584,576 bytes above one row."""
    opts = MemoryOptions(prefill_chunk=16, decode_drafts=1)
    assert _scratch_above_one_row(_tp8(), opts, CTX, 64.0) == (128 - 1) * CTX * 4 == 66_584_576


def test_memory_per_rank_decodes_its_mtp_drafts():
    """memory_per_rank with mtp_layers 1 holds the activations of a decode step of 1 + 1 rows per sequence."""
    m, pc, hw = load_model("deepseek-v3.2"), _tp8(), load_hardware("h200_sxm")
    opts = MemoryOptions(prefill_chunk=16)
    got = memory_per_rank(m, hw, pc, resolve_precision(m, hw), 64, CTX, opts, mtp_layers=1).activation_bytes
    assert got == activation_peak(m, pc, replace(opts, decode_drafts=1), CTX, 64.0)
    assert got > activation_peak(m, pc, opts, CTX, 64.0)


def test_vllm_holds_the_whole_decode_matrix():
    """vLLM bounds the prefill's logits only: 2,048 decoding sequences at 128K hold 2048 x 131072 x 4 = 1 GiB of
    logits, not the 512 MiB a bounded decode would: 1,073,741,824 - 536,870,912 = 536,870,912 bytes more."""
    vllm = framework_options(load_framework("vllm"), MemoryOptions(prefill_chunk=16))
    assert vllm.indexer_decode_logits_unbounded
    held = activation_peak_terms(load_model("deepseek-v3.2"), _tp8(), vllm, CTX, 2048.0)["attn_tp_size"]
    bounded = activation_peak_terms(load_model("deepseek-v3.2"), _tp8(),
                                    replace(vllm, indexer_decode_logits_unbounded=False), CTX, 2048.0)["attn_tp_size"]
    assert held - bounded == 2048 * CTX * 4 - 512 * MIB == 536_870_912


def test_a_disaggregated_decode_pool_scores_the_prompts_keys_as_its_planner_tables_do():
    """estimate_disagg sizes each pool's memory for requests of the workload's prompt (workload_options), as the
    aggregated estimate and the planner's tables do: DeepSeek-V3.2 TP8 on 8 H200 (generic: the whole matrix),
    32K prompts and 8K outputs: the decode pool's activations equal memory_per_rank's with prompt_tokens 32768,
    not the 40K sequence's (by hand the difference would be 8,192 rows x 8,192 keys x 4 B = 268,435,456 B)."""
    from solver.estimate.disagg import DisaggWorkload, estimate_disagg
    from solver.estimate.memory import memory_per_rank
    from solver.estimate.memory_options import engine_options, workload_options
    from solver.specs.precision import resolve_precision

    m, hw, pc = load_model("deepseek-v3.2"), load_hardware("h200_sxm"), _tp8()
    fw = load_framework("generic")
    f = factors_for(hw, fw.efficiency_for(hw))
    prec = resolve_precision(m, hw)
    est = estimate_disagg(m, hw, pc, pc, prec, f, f, DisaggWorkload(isl=32768, osl=8192, concurrency=8))
    sequences = est.decode_memory.sequences_per_rank * pc.attn_replicas
    prompt = memory_per_rank(m, hw, pc, prec, sequences, 32768 + 8192, workload_options(engine_options(None, f), 32768))
    whole = memory_per_rank(m, hw, pc, prec, sequences, 32768 + 8192, engine_options(None, f))
    assert est.decode_memory.activation_bytes == prompt.activation_bytes
    assert whole.activation_bytes - prompt.activation_bytes == 8192 * 8192 * 4
