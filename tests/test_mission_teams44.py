"""The mission's three teams asking their questions: rules found reading their answers end to end.

DeepSeek-V3.2 (MLA + DSA: kv_lora_rank 512, qk_rope_head_dim 64, 61 layers, indexer keys of 128 values) on 64
Atlas A3 dies under vllm-ascend and cann-recipes; Llama-3.3-70B (GQA: 8 KV heads of 128) on 8 H100.
"""
from __future__ import annotations

from solver.specs.scenario import Scenario


def _v32_memory(framework: str, **knobs):
    from solver.one_config import memory_config
    return memory_config("deepseek-v3.2", "atlas_a3", 64, knobs, batch=16, seq_len=65792, framework=framework)


def test_ultra_long_decode_lists_the_seed_kvp_baseline() -> None:
    """The seed's quick reference: "Ultra-long Sequence: Add KVP, +kvp_size, oproj_tp=kvp_size" (64K+, Layer 3
    "ultra-long decode may stack KVP"). On 64 A3 dies the widest TP on the fast fabric is 64 (the UB domain runs
    at the node's bandwidth), so the baseline is KVP64 with o_proj TP64 and the dense FFN at the same TP, as the
    verified KVP deployment runs it (lc-ep32-kvp8: d = o = kvp = 8). A prompt of 65,536 + 256 outputs is past 64K;
    65,280 + 256 = 65,536 is not; a prefill-only plan has no decode for KVP to split."""
    from solver.rank.explain import alternatives
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model

    v32, hw = load_model("deepseek-v3.2"), load_hardware("atlas_a3")
    alts = alternatives(v32, hw, 64, Scenario(isl=65536, osl=256))
    kvp = alts["Attn DP + KVP64 + MoE EP"]
    assert (kvp["attn_tp_size"], kvp["kvp_size"], kvp["o_proj_tp_size"], kvp["dense_tp_size"], kvp["moe_tp_size"]) \
        == (1, 64, 64, 64, 1)
    assert not any("KVP" in n for n in alternatives(v32, hw, 64, Scenario(isl=65280, osl=256)))
    assert not any("KVP" in n for n in alternatives(v32, hw, 64, Scenario(isl=131072, osl=256, phase="prefill")))


def test_explain_prices_the_kvp_baseline_where_the_engine_runs_it() -> None:
    """vllm-ascend's -dcp reuses the TP ranks (TP = attn_tp x kvp = 64), so its fine-grained rule wants embed and
    LM head at 64 too: the explanation prices that form (a score against #1), it does not stop at the rule."""
    from click.testing import CliRunner

    from solver.cli.main import main

    out = CliRunner().invoke(main, ["solve", "deepseek-v3.2", "--hardware", "atlas_a3", "--cards", "64",
                                    "--framework", "vllm-ascend", "--isl", "65536", "--explain"]).output
    line = " ".join(out.split())  # the table wraps sentences at the console's width
    line = line[line.index("why not Attn DP + KVP64 + MoE EP"):][:160]
    assert "score +" in line and "violates" not in line


def test_memory_says_vllm_ascend_keeps_the_indexer_keys_whole_on_each_dcp_rank() -> None:
    """vllm-ascend's DSA cache under -dcp 4 (attn_tp 2 x kvp 4 = TP8): the latent row 512 + 64 values x 2 B =
    1,152 B per token per layer, split 4 ways by KVP; the indexer keys unquantised, 128 x 2 B = 256 B, kept whole
    on every DCP rank. Per request of 65,792 tokens over 61 layers: 1,152 x 65,792 x 61 / 4 = 1.156 GB of KV and
    256 x 65,792 x 61 = 1.027 GB of indexer keys on a rank."""
    from solver.report.model_view import cache_line

    res = _v32_memory("vllm-ascend", attn_tp_size=2, kvp_size=4, dense_tp_size=8, embed_tp_size=8,
                      lmhead_tp_size=8)
    data = res.as_dict()
    assert data["cache"] == {"kv_bytes_per_token_layer": 1152, "kv_split": 4, "kv_holds": {"latent": 512, "rope": 64},
                             "index_bytes_per_token_layer": 256, "index_values": 128, "index_split": 1}
    seqs = data["sequences_per_rank"]
    # in vllm-ascend's 128-token blocks (a rank's 16,448 tokens in 129 blocks), beside the pool's null block
    assert abs(data["breakdown"]["kv_cache"] - (seqs * 129 * 128 + 128) * 1152 * 61 / 1e9) < 1e-6
    assert abs(data["breakdown"]["indexer_cache"] - (seqs * 65792 + 128) * 256 * 61 / 1e9) < 1e-6
    line = cache_line(data["cache"], res.parallel_config)
    assert "KV 1,152 B (latent 512 + rope 64 values), split 4 ways over CP x KVP 4" in line
    assert "indexer keys 256 B (128 values), whole on each of the 4 CP x KVP ranks" in line


def test_memory_says_the_seed_kvp_splits_the_fp8_indexer_keys() -> None:
    """cann-recipes keeps the seed's layout: KVP 4 splits the latent and the indexer keys alike, and the keys stay
    in the layer's format, 128 fp8 values + one fp32 scale = 132 B per token per layer."""
    res = _v32_memory("cann-recipes", kvp_size=4, o_proj_tp_size=4, dense_tp_size=4)
    cache = res.as_dict()["cache"]
    assert (cache["kv_bytes_per_token_layer"], cache["kv_split"]) == (1152, 4)
    assert (cache["index_bytes_per_token_layer"], cache["index_split"]) == (132, 4)


def test_memory_of_a_gqa_model_names_its_heads_share_and_no_sequence_split() -> None:
    """Llama-3.3-70B at TP8: K and V of 8 KV heads x 128 values x 2 B = 4,096 B per token per layer, 512 B on
    each of the 8 TP ranks; nothing splits it by tokens, and there are no indexer keys to name."""
    from solver.one_config import memory_config
    from solver.report.model_view import cache_line

    knobs = {k: 8 for k in ("attn_tp_size", "dense_tp_size", "embed_tp_size", "lmhead_tp_size")}
    res = memory_config("llama-3.3-70b", "h100_sxm", 8, knobs, batch=16, seq_len=4352)
    cache = res.as_dict()["cache"]
    assert cache == {"kv_bytes_per_token_layer": 512, "kv_split": 1}
    assert cache_line(cache, res.parallel_config).endswith("KV 512 B, no CP / KVP split")


def test_solve_files_say_the_prefix_hit_their_figures_assumed() -> None:
    """A chat team plans at --prefix-hit 0.5: each candidate's workload in the written file carries the hit its
    figures assumed (so `check` of the file re-reads it: tests/test_session44_hunt.py), as the JSON's candidates'
    workloads do; at no hit neither says anything."""
    import json

    from click.testing import CliRunner

    from solver.cli.main import main

    args = ["solve", "llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "8", "--framework", "vllm"]
    run = CliRunner()
    yml = run.invoke(main, [*args, "--prefix-hit", "0.5", "--format", "yaml"]).stdout
    assert yml.count("    prefix_hit: 0.5\n") == yml.count("  estimation:\n") > 0
    assert "prefix" not in run.invoke(main, [*args, "--format", "yaml"]).stdout
    cands = json.loads(run.invoke(main, [*args, "--prefix-hit", "0.5", "--format", "json"]).stdout)["candidates"]
    assert {c["workload"]["prefix_hit"] for c in cands} == {0.5}
