"""How each engine allocates a hybrid model's constant state beside its KV (FrameworkProfile.hybrid_state), for
Qwen3.5-35B-A3B on H100 at attention TP 2: 10 full-attention layers of 1024 B a token per rank (2 KV heads x 256
x 2 B x K,V / 2 ranks) and 30 Gated DeltaNet layers of 1 073 152 B state per rank."""
from __future__ import annotations

from solver.estimate.request_state import CacheLayout, request_state
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

MODEL = load_model("Qwen/Qwen3.5-35B-A3B")
PREC = resolve_precision(MODEL, load_hardware("h100_sxm"))
PC = make_parallel_config(2, attn_tp_size=2)
VLLM = CacheLayout(block_alignment=16, state_pages=3)
SGLANG = CacheLayout(state_pool_share=0.9 / 1.9, state_pages=3)


def test_vllm_raises_the_block_so_a_page_holds_one_state():
    """block = 16 x ceil(1 073 152 / (16 x 1024)) = 16 x 66 = 1056 tokens, page 1056 x 1024 = 1 081 344 B:
    4224 tokens hold 4 pages a layer (10 x 4 x 1 081 344 = 43 253 760 B), 4225 a fifth (54 067 200 B)."""
    assert request_state(MODEL, PC, PREC, 4224, layout=VLLM).kv == 43_253_760
    assert request_state(MODEL, PC, PREC, 4225, layout=VLLM).kv == 54_067_200
    assert request_state(MODEL, PC, PREC, 4096, layout=VLLM).kv == 43_253_760  # 4096 and 4097: 4 pages too
    assert request_state(MODEL, PC, PREC, 4097, layout=VLLM).kv == 43_253_760


def test_vllm_pads_each_state_to_a_page_and_holds_three():
    """30 state layers x 3 pages (align mode: 2 + 1 prefill checkpoint) x 1 081 344 B = 97 320 960 B."""
    assert request_state(MODEL, PC, PREC, 4096, layout=VLLM).constant == 97_320_960


def test_sglang_request_costs_the_pool_it_fills_first():
    """KV 10 x 1024 x 4096 = 41 943 040 B, state 30 x 1 073 152 = 32 194 560 B, 3 slots: the state pool (9/19 of
    the cache) binds: 3 x 32 194 560 x 19 / 9 = 203 898 880 B of cache, 10/19 of it KV pool (107 315 200 B) and
    9/19 state pool (96 583 680 B)."""
    st = request_state(MODEL, PC, PREC, 4096, layout=SGLANG)
    assert round(st.kv) == 107_315_200 and round(st.constant) == 96_583_680


def test_seed_form_keeps_exact_kv_and_one_state():
    """No engine: 41 943 040 B of KV and 32 194 560 B of state, as before."""
    st = request_state(MODEL, PC, PREC, 4096)
    assert (st.kv, st.constant) == (41_943_040, 32_194_560)


def test_profiles_carry_the_layouts():
    assert load_framework("vllm").hybrid_state.block_alignment == 16
    assert load_framework("sglang").hybrid_state.state_pool_share is not None


def test_each_draft_token_holds_one_more_state_page():
    """vLLM's num_speculative_blocks: MTP 2 gives 3 + 2 = 5 pages a state layer: 30 x 5 x 1 081 344 B
    = 162 201 600 B."""
    from solver.estimate.memory_options import MemoryOptions
    opts = MemoryOptions(hybrid_state=load_framework("vllm").hybrid_state, decode_drafts=2)
    assert request_state(MODEL, PC, PREC, 4096, layout=opts.cache_layout).constant == 162_201_600


def test_memory_reads_the_engine_layout_from_its_profile():
    """memory_per_rank under vLLM's profile: 8 sequences on one attention replica (TP 2) hold
    8 x 43 253 760 B of KV and 8 x 97 320 960 B of state; the planner's rows (memory_rows._caches) the same."""
    from solver.estimate.memory import memory_per_rank
    from solver.estimate.memory_options import framework_options
    from solver.plan.memory_rows import _caches
    opts = framework_options(load_framework("vllm"))
    r = memory_per_rank(MODEL, load_hardware("h100_sxm"), PC, PREC, 8, 4096, opts)
    assert (r.kv_cache_bytes, r.state_bytes) == (8 * 43_253_760, 8 * 97_320_960)
    assert _caches(MODEL, PC, PREC, opts, 8, 4096, 0)[:2] == (8 * 43_253_760, 8 * 97_320_960)


def test_a_layout_names_exactly_one_form():
    import pytest
    from pydantic import ValidationError
    from solver.specs.profile_facts import HybridStateLayout
    with pytest.raises(ValidationError, match="one of block_alignment"):
        HybridStateLayout(block_alignment=16, state_pool_share=0.5, source="x")
    with pytest.raises(ValidationError, match="one of block_alignment"):
        HybridStateLayout(source="x")


def test_the_step_factors_carry_the_layout_to_the_planner():
    """The planner builds its memory rows from engine_options(the engine's Factors): the same layout as the
    profile's memory answer (framework_options)."""
    from solver.estimate.factors import factors_for
    from solver.estimate.memory_options import engine_options, framework_options
    fw, hw = load_framework("sglang"), load_hardware("h100_sxm")
    f = factors_for(hw, fw.efficiency_for(hw))
    assert engine_options(None, f).cache_layout == framework_options(fw).cache_layout
    assert framework_options(fw).cache_layout.state_pool_share == fw.hybrid_state.state_pool_share


def test_vllm_aligns_an_mla_hybrids_block_to_128():
    """Kimi-K3 (MLA + KDA) under vLLM with TP 2 x DCP 4: a KDA layer's state is 3 366 912 / 8 = 420 864 B a rank,
    a token's latent (512 + 64) x 2 = 1152 B; the block is 128 x ceil(420 864 / (128 x 1152)) = 384 tokens (not
    16 x 23 = 368), the page 384 x 1152 = 442 368 B; 24 MLA layers set the group size, so the 69 KDA layers fill
    3 groups of 24 (72 with padding): 72 x 3 pages x 442 368 = 95 551 488 B."""
    from solver.estimate.memory_options import framework_options
    from solver.specs.parallel import ParallelConfig
    m = load_model("moonshotai/Kimi-K3")
    pc = ParallelConfig(world_size=64, attn_tp_size=2, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8,
                        o_proj_tp_size=8, kvp_size=4)
    prec = resolve_precision(m, load_hardware("h200_sxm"), weight_dtype="bf16")
    opts = framework_options(load_framework("vllm"))
    st = request_state(m, pc, prec, 4096, kvp_splits_weights=True, layout=opts.cache_layout)
    assert st.constant == 95_551_488
