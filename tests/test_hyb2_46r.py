"""Hybrid state allocation: a layer's state in its SSM and conv parts, vllm-ascend's key-aligned pages and SGLang's
verify-width state slots, for Qwen3.5-35B-A3B on H100 at attention TP 2 (per rank: 10 full-attention layers of
1 KV head x 256 x 2 B = 512 B of K a token, 1024 B with V; 30 Gated DeltaNet layers of 16 value heads x 128 x 128
x 4 B = 1 048 576 B SSM state and a conv tail of 3 x (2 x 16 x 128 + 32 x 128) x 2 B / 2 = 24 576 B)."""
from __future__ import annotations

import pytest

from solver.specs.dtypes import KV16
from solver.estimate.memory_options import MemoryOptions, framework_options
from solver.estimate.request_state import request_state
from solver.specs.framework import load_framework
from solver.specs.profile_facts import HybridStateLayout
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

MODEL = load_model("Qwen/Qwen3.5-35B-A3B")
PREC = resolve_precision(MODEL, load_hardware("h100_sxm"))
PC = make_parallel_config(2, attn_tp_size=2)


def _gdn():
    return next(b for layer, _ in MODEL.layer_groups for b in layer.blocks if b.state(KV16, 1).constant_bytes > 0)


def _layout(engine: str, drafts: int = 0):
    return MemoryOptions(hybrid_state=load_framework(engine).hybrid_state, decode_drafts=drafts).cache_layout


def test_a_recurrent_layer_states_its_ssm_and_conv_parts():
    """A GDN layer at split 2: SSM 1 048 576 B, conv 24 576 B; the seed's constant state is their sum,
    1 073 152 B."""
    st = _gdn().state(KV16, 2)
    assert (st.ssm_bytes, st.conv_bytes, st.constant_bytes) == (1_048_576, 24_576, 1_073_152)


def test_vllm_ascend_sizes_the_block_so_its_key_half_holds_the_ssm_state():
    """block = 128 x ceil(1 048 576 / (128 x 512)) = 2048 tokens (K half 2048 x 512 = 1 048 576 B, exactly the SSM
    state), page 2048 x 1024 + 24 576 conv = 2 121 728 B: 4096 tokens hold 2 pages a layer, 10 x 2 x 2 121 728
    = 42 434 560 B; 4097 a third, 63 651 840 B."""
    lay = _layout("vllm-ascend")
    assert request_state(MODEL, PC, PREC, 4096, layout=lay).kv == 42_434_560
    assert request_state(MODEL, PC, PREC, 4097, layout=lay).kv == 63_651_840


def test_vllm_ascend_holds_one_state_page_and_one_per_draft():
    """Prefix caching off for hybrids (mamba_cache_mode none): 1 page a state layer, 30 x 2 121 728
    = 63 651 840 B; MTP 2 adds num_speculative_blocks = 2: 30 x 3 x 2 121 728 = 190 955 520 B."""
    assert request_state(MODEL, PC, PREC, 4096, layout=_layout("vllm-ascend")).constant == 63_651_840
    assert request_state(MODEL, PC, PREC, 4096, layout=_layout("vllm-ascend", 2)).constant == 190_955_520


def test_sglang_holds_a_state_per_verified_token():
    """MTP depth 1: speculative_num_draft_tokens = 1 + 1 = 2 intermediate states beside the 3 slots, 5 x
    32 194 560 = 160 972 800 B in the state pool (9/19 of the cache), which binds: the request costs
    160 972 800 x 19 / 9 of cache, 10/19 of it KV pool: 178 858 666.7 B."""
    st = request_state(MODEL, PC, PREC, 4096, layout=_layout("sglang", 1))
    assert round(st.constant) == 160_972_800 and round(st.kv) == 178_858_667


def test_sglang_holds_no_verify_states_without_drafts():
    """No speculation: 3 slots, no intermediate states."""
    assert _layout("sglang").state_pages == 3


def test_key_aligned_pages_need_shared_pages():
    with pytest.raises(Exception, match="key_page_holds_ssm needs block_alignment"):
        HybridStateLayout(state_pool_share=0.5, key_page_holds_ssm=True, source="x")


def test_memory_reads_vllm_ascends_layout_from_its_profile():
    """memory_per_rank under vllm-ascend's profile: 8 sequences of 4096 tokens hold 8 x 42 434 560 B of KV and
    8 x 63 651 840 B of state."""
    from solver.estimate.memory import memory_per_rank
    opts = framework_options(load_framework("vllm-ascend"))
    r = memory_per_rank(MODEL, load_hardware("h100_sxm"), PC, PREC, 8, 4096, opts)
    assert (r.kv_cache_bytes, r.state_bytes) == (8 * 42_434_560, 8 * 63_651_840)


def test_vllm_groups_the_whole_models_layers_under_pipeline_parallel():
    """PP 3 (stages of 14, 13, 13 layers): vLLM groups all 10 attention and 30 GDN layers (groups of 10: one
    attention group, GDN groups GDN[i::3]), then projects them on each stage. Stage 0 (layers 0-13) holds 3
    attention layers and GDN 0-10: 4, 4 and 3 of the GDN groups, so 4 tensors of pages. Block 1056 tokens, page
    1 081 344 B (as without PP): 4096 tokens hold 4 blocks of the attention group, 4 x 4 x 1 081 344
    = 17 301 504 B (grouped per stage, 3 layers: 12 976 128 B); 3 GDN groups x 3 pages x 4 x 1 081 344
    = 38 928 384 B."""
    from solver.estimate.pipeline import stages
    st = request_state(stages(MODEL, 3)[0].model, PC, PREC, 4096, layout=_layout("vllm"))
    assert (st.kv, st.constant) == (17_301_504, 38_928_384)


def test_drafting_puts_the_mtp_layers_in_every_stages_grouping():
    """PP 2 with MTP 1: 11 attention layers (the MTP layer's too) set the group size, 30 GDN layers fill 3 groups
    of 10; stage 0 (layers 0-19) holds 5 of each group: 4 blocks x 5 x 1 081 344 = 21 626 880 B of KV and
    3 groups x (3 + 1 draft) pages x 5 x 1 081 344 = 64 880 640 B of state; the last stage's attention group holds
    5 + the MTP layer = 6 tensors: 25 952 256 B and 77 856 768 B."""
    from solver.estimate.pipeline import stages
    first, last = stages(MODEL, 2)
    lay = _layout("vllm", 1)
    st = request_state(first.model, PC, PREC, 4096, layout=lay)
    assert (st.kv, st.constant) == (21_626_880, 64_880_640)
    st = request_state(last.model, PC, PREC, 4096, mtp_layers=1, layout=lay)
    assert (st.kv, st.constant) == (25_952_256, 77_856_768)
