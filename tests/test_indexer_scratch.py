"""The sparse-attention indexer's fp32 logits scratch: this rank's query rows against every key they score (the
prompt up to the chunk at prefill, each sequence's context at decode), split by rows to the engine's bound
(FrameworkProfile.indexer_logits_max_bytes), never below one row."""
from __future__ import annotations

from solver.estimate.activations import activation_peak_terms
from solver.estimate.compute import factors_for
from solver.estimate.memory_options import MemoryOptions, engine_options, framework_options
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.layers.dsa import Indexer
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig

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
    m, pc = load_model("deepseek-v3.2"), _tp8()
    whole = activation_peak_terms(m, pc, MemoryOptions(prefill_chunk=8192), CTX, 1.0)["attn_tp_size"]
    row = activation_peak_terms(m, pc, MemoryOptions(prefill_chunk=8192, indexer_logits_max_bytes=0), CTX,
                                1.0)["attn_tp_size"]
    assert whole - row == (8192 - 1) * CTX * 4


def test_decode_scores_each_sequence_context():
    """64 decoding sequences at 128K with a 16-token prefill chunk (the decode step is the larger): one row per
    sequence against its own 131072 keys, (64 - 1) x 131072 x 4 = 33,030,144 bytes above the one-row floor."""
    m, pc = load_model("deepseek-v3.2"), _tp8()
    whole = activation_peak_terms(m, pc, MemoryOptions(prefill_chunk=16), CTX, 64.0)["attn_tp_size"]
    row = activation_peak_terms(m, pc, MemoryOptions(prefill_chunk=16, indexer_logits_max_bytes=0), CTX,
                                64.0)["attn_tp_size"]
    assert whole - row == (64 - 1) * CTX * 4


def test_the_bound_reaches_memory_through_the_engine_factors():
    """The step costs' factors carry the profile's bound, so engine_options gives the memory side the same."""
    fw, hw = load_framework("vllm"), load_hardware("h200_sxm")
    f = factors_for(hw, fw.efficiency_for(hw))
    assert f.indexer_logits_max_bytes == 512 * MIB
    assert engine_options(None, f) == framework_options(fw)


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
