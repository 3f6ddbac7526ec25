"""Prefix caching an engine turns off for hybrid models, and SGLang's spare state slot (Qwen3.5-35B-A3B on Atlas A3 /
H100).

Qwen3.5-35B-A3B (facts/model_configs/Qwen--Qwen3.5-35B-A3B.json): 40 layers, every 4th full attention (10 layers,
2 KV heads x head_dim 256), 30 Gated DeltaNet layers (32 value heads x 128 x 128 fp32 SSM state, conv kernel 4 over
2 x 16 x 128 + 32 x 128 = 8192 channels in bf16), one MTP layer (full attention).
"""
from __future__ import annotations

from dataclasses import replace

import pytest
from click.testing import CliRunner

from solver.cli.main import main
from solver.estimate.memory import max_batch, memory_per_rank
from solver.estimate.request_state import hybrid_fields, request_state, spare_pool
from solver.one_config import memory_config
from solver.specs.framework import load_framework
from solver.specs.profile_facts import NoPrefixCache
from solver.specs.model_catalog import load_model

MODEL = "qwen3.5-35b-a3b"
HIT = ["--prefix-hit", "0.5"]
REFUSAL = ("vllm-ascend serves Qwen3.5-35B-A3B without a prefix cache (vLLM 0.23.0, vllm-ascend's base, turns "
           "prefix caching off by default for hybrid models")

# one request's GDN state at TP 1: 30 layers x (32 x 128 x 128 x 4 B SSM + 3 x 8192 x 2 B conv)
#   = 30 x (2,097,152 + 49,152) = 30 x 2,146,304 = 64,389,120 B
STATE = 30 * (32 * 128 * 128 * 4 + 3 * 8192 * 2)
SHARE = 0.9 / 1.9  # SGLang's mamba_full_memory_ratio 0.9: the state pool 0.9 / 1.9 of the cache memory


def _run(*args: str):
    return CliRunner().invoke(main, list(args))


# ------------------------------------------------------------------------------------------------ prefix hit


def test_vllm_ascend_refuses_a_prefix_hit_on_a_hybrid_in_solve():
    """solve prices TTFT with half of each prompt cached: vllm-ascend (vLLM 0.23.0) launches a hybrid without a
    prefix cache, so the hit is refused in one line naming --prefix-hit, exit 2."""
    r = _run("solve", MODEL, "--hardware", "atlas_a3", "--cards", "8", "--framework", "vllm-ascend", *HIT)
    assert r.exit_code == 2
    assert len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith("error: --prefix-hit: " + REFUSAL)


def test_vllm_ascend_refuses_a_prefix_hit_on_a_hybrid_in_disaggregated_pools():
    """The prefill pool's plan is where the hit enters a disaggregated solve: refused the same."""
    r = _run("solve", MODEL, "--hardware", "atlas_a3", "--cards", "16", "--framework", "vllm-ascend",
             "--serving", "disagg", *HIT)
    assert r.exit_code == 2 and REFUSAL in r.stderr


def test_vllm_ascend_refuses_a_prefix_hit_on_a_hybrid_in_estimate():
    r = _run("estimate", MODEL, "--hardware", "atlas_a3", "--cards", "8", "--framework", "vllm-ascend",
             "--attn-tp", "8", "--moe-tp", "8", "--isl", "4096", "--osl", "512", "--concurrency", "8", *HIT)
    assert r.exit_code == 2
    assert r.stderr.startswith("error: --prefix-hit: " + REFUSAL)


def test_check_refuses_a_deployments_prefix_hit_naming_its_key(tmp_path):
    path = tmp_path / "dep.yaml"
    path.write_text(f"model: {MODEL}\nhardware: atlas_a3\nworld_size: 8\nframework: vllm-ascend\n"
                    "parallel_config: {attn_tp_size: 8, moe_tp_size: 8}\n"
                    "workload: {isl: 4096, osl: 512, concurrency: 8, prefix_hit: 0.5}\n")
    r = _run("check", str(path))
    assert r.exit_code == 2
    assert r.stderr.startswith("error: " + str(path) + ": workload.prefix_hit: " + REFUSAL)


def test_no_hit_and_models_without_a_recurrent_mixer_keep_their_prefix_cache():
    """The condition reads the model's facts: a hit of 0 asks nothing of the cache, and a model without a recurrent
    mixer (DeepSeek-V3, MLA) is not a hybrid, whose prefix caching vLLM 0.23.0 keeps on."""
    fw = load_framework("vllm-ascend")
    assert fw.prefix_hit_refusal(load_model(MODEL), 0.0) is None
    assert fw.prefix_hit_refusal(load_model("deepseek-v3"), 0.5) is None


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_vllm_034_and_sglang_cache_a_hybrids_prefixes(engine):
    """vLLM 0.34.0 caches a hybrid's prefixes by default (config/model.py is_prefix_caching_supported: "Generative
    hybrid models support prefix caching", mamba_cache_mode align), SGLang through its mamba radix cache (on unless
    disabled): neither profile states a no_prefix_cache condition, and the hit is priced."""
    assert load_framework(engine).no_prefix_cache is None
    assert load_framework(engine).prefix_hit_refusal(load_model(MODEL), 0.5) is None


def test_a_no_prefix_cache_condition_reads_only_the_models_yes_no_facts():
    with pytest.raises(ValueError, match="reads attn_tp_size; no_prefix_cache reads only has_csa, has_dsa"):
        NoPrefixCache(when="attn_tp_size > 1", why="x")


# ---------------------------------------------------------------------------------------- spare state slot


def _sglang(mtp: int, batch: int = 13, seq_len: int = 4096):
    return memory_config(MODEL, "h100_sxm", 1, {}, batch, seq_len, framework="sglang", mtp=mtp)


def test_sglang_keeps_one_spare_slot_with_its_draft_states():
    """SGLang sizes the state pool (budget - per_slot) // per_slot (one padding slot); drafting, its intermediate
    pool holds capped_reqs + 1 entries of D = depth + 1 states: the spare is 1 slot without drafts, 1 + 1 + 1 = 3
    with one draft token (pages_per_draft 1, pages_when_drafting 1)."""
    hybrid = load_framework("sglang").hybrid_state
    assert hybrid.spare_slots == 1
    assert hybrid_fields(hybrid, 0)["spare_slots"] == 1
    assert hybrid_fields(hybrid, 1)["spare_slots"] == 3


def test_the_spare_costs_its_slots_over_the_state_share_where_the_state_pool_binds():
    """At 4,096 tokens with MTP 1 a request's KV is 4,096 x (10 + 1 MTP) x 2 x 2 x 256 x 2 B = 92,274,688 B, its
    state pool need 5 slots x 64,389,120 x 19 / 9 = 679,662,933 B > KV need 92,274,688 x 19 / 10: the state pool
    binds, so the 3 spare slots cost 3 x 64,389,120 x 19 / 9 = 407,797,760 B, 3 x 64,389,120 = 193,167,360 of them
    in the state pool and the rest (x 10 / 9) = 214,630,400 in the KV pool sized beside it."""
    r = _sglang(1)
    layout, model, pc, prec = r.options.cache_layout, r.model, r.parallel_config, r.precision
    bare = request_state(model, pc, prec, 4096, 1, layout=replace(layout, state_pool_share=None))
    assert bare.constant == STATE == 64_389_120
    assert bare.kv == 4096 * 11 * 2048 == 92_274_688
    assert spare_pool(model, pc, prec, 13, 4096, 1, layout=layout) == pytest.approx(3 * STATE / SHARE)
    assert 3 * STATE / SHARE == pytest.approx(407_797_760)
    without = replace(r.options, hybrid_state=r.options.hybrid_state.model_copy(update={"spare_slots": 0}))
    a = memory_per_rank(model, r.hardware, pc, prec, 13, 4096, r.options, mtp_layers=1)
    b = memory_per_rank(model, r.hardware, pc, prec, 13, 4096, without, mtp_layers=1)
    assert a.state_bytes - b.state_bytes == pytest.approx(193_167_360)
    assert a.kv_cache_bytes - b.kv_cache_bytes == pytest.approx(214_630_400)


def test_the_spare_costs_nothing_where_the_kv_pool_binds_with_room_for_it():
    """At 262,144 tokens without MTP a request's KV need 262,144 x 20,480 B x 19 / 10 = 10,200,547,328 B passes
    its state need plus the spare, (3 + 1) x 64,389,120 x 19 / 9 = 543,729,013 B: the spare takes the state pool's
    slack, no more memory."""
    r = _sglang(0, batch=1, seq_len=262_144)
    assert spare_pool(r.model, r.parallel_config, r.precision, 1, 262_144, 0, layout=r.options.cache_layout) == 0


def test_the_spare_slot_moves_max_batch_by_one_and_the_planner_rows_alike():
    """Qwen3.5-35B-A3B, one H100, SGLang, MTP 1, 4,096 tokens: 13 requests without the spare leave
    81,604,378,624 - 81,242,580,021 = 361,798,603 B of the limit, less than the spare's 407,797,760 B: max batch
    13 -> 12. The planner's memory rows (memory_rows.group_memory) charge the same bytes."""
    from solver.estimate.params import count_params
    from solver.plan.memory_rows import group_memory
    from solver.plan.groups import module_groups

    r = _sglang(1)
    model, hw, pc, prec = r.model, r.hardware, r.parallel_config, r.precision
    without = replace(r.options, hybrid_state=r.options.hybrid_state.model_copy(update={"spare_slots": 0}))
    assert max_batch(model, hw, pc, prec, 4096, without, 1) == 13
    assert max_batch(model, hw, pc, prec, 4096, r.options, 1) == 12
    slack = memory_per_rank(model, hw, pc, prec, 13, 4096, without, mtp_layers=1)
    assert slack.limit_bytes - slack.model_bytes == pytest.approx(361_798_603, abs=1)
    params = count_params(model)
    rows = [group_memory("attn", model, pc, prec, o, params, module_groups(params), 13, 4096, 1, "batch")
            for o in (without, r.options)]
    assert rows[1] - rows[0] == pytest.approx(407_797_760)
