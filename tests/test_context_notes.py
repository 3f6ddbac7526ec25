"""Long-context answers say what the engines need and why; a replica's batch is the same figure in the estimate and
in the command, with PP and in a disaggregated prefill pool."""
from __future__ import annotations

import json

from click.testing import CliRunner

from solver.cli.main import main
from solver.estimate.request_state import held_per_replica
from solver.launch import LaunchInputs, emit_launch
from solver.rank.reason import RANKED_LOWER, addon_refusals, decision_tree_reason
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.notes import context_notes
from solver.specs.parallel import make_parallel_config
from solver.specs.scenario import Scenario


def _argv(launch: dict, flag: str) -> str:
    argv = launch["nodes"][0]["argv"]
    return argv[argv.index(flag) + 1]


def _launch(engine: str, model: str, max_len: int, batch: int = 1, **knobs: int) -> dict:
    return emit_launch(load_framework(engine), load_model(model), load_hardware("h100_sxm"),
                       make_parallel_config(8, **knobs), LaunchInputs(batch=batch, max_model_len=max_len))


# ---------------------------------------------------------------- a length past the config's context

def test_a_rotary_model_past_its_context_is_told_what_engines_take_and_how_to_extend_it() -> None:
    """DeepSeek-V3.2's max_position_embeddings is 163,840 (its YaRN scaling already counted: 4,096 x 40);
    262,144 + 256 = 262,400 tokens exceed it."""
    (note,) = context_notes(load_model("deepseek-v3.2"), 262_400)
    assert note.startswith("the longest sequence, 262,400 tokens, exceeds DeepSeek-V3.2's max_position_embeddings "
                           "163,840: engines take max_position_embeddings (times a RoPE scaling's factor where the "
                           "engine's loader multiplies it: the profile's max_context)")
    assert "raise the scaling factor and max_position_embeddings in the config" in note
    assert context_notes(load_model("deepseek-v3.2"), 163_840) == []


def test_a_launch_past_the_config_context_sets_the_engines_allow_switch_and_names_its_override() -> None:
    """Llama-3.1-70B: max_position_embeddings 131,072 (llama3 scaling); 131,073 tokens is one past it."""
    vllm = _launch("vllm", "llama-3.1-70b", 131_073, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8,
                   lmhead_tp_size=8)
    assert vllm["nodes"][0]["env"] == {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}
    (note,) = [n for n in vllm["notes"] if "exceeds" in n]
    assert note.startswith("max model length 131,073 exceeds Meta-Llama-3.1-70B's max_position_embeddings 131,072: "
                           "the command sets VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, without which vllm refuses it")
    assert "--hf-overrides" in note
    sgl = _launch("sglang", "llama-3.1-70b", 131_073, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8,
                  lmhead_tp_size=8)
    assert sgl["nodes"][0]["env"] == {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}
    assert any("--json-model-override-args" in n for n in sgl["notes"])


def test_a_launch_within_the_config_context_sets_no_switch() -> None:
    """131,072 tokens is the field itself: the engines take it."""
    launch = _launch("vllm", "llama-3.1-70b", 131_072, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8,
                     lmhead_tp_size=8)
    assert launch["nodes"][0]["env"] == {} and not any("exceeds" in n for n in launch.get("notes", ()))


def test_solve_launch_of_deepseek_v32_at_256k_sets_vllms_switch() -> None:
    """The brief's command: ISL 262,144 + the default OSL 256 = 262,400 > 163,840."""
    r = CliRunner().invoke(main, ["solve", "deepseek-v3.2", "--hardware", "h200_sxm", "--cards", "8", "--isl",
                                  "262144", "--framework", "vllm", "--format", "launch"])
    assert r.exit_code == 0, r.output
    commands = [line for line in r.output.splitlines() if "vllm serve" in line]
    assert commands and all(c.startswith("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve") for c in commands)


# ---------------------------------------------------------------- Layer 3 says why there is no add-on

def test_layer_3_without_an_add_on_says_the_space_refuses_one_where_attention_tp_spans_the_stage() -> None:
    """Gemma-3-27B at attn_tp 8 on 8 ranks: any add-on (2, 4 or 8) makes the attention group at least 8 x 2 = 16,
    which does not divide 8; the smallest degree's refusal is said."""
    model, hw = load_model("gemma-3-27b"), load_hardware("h200_sxm")
    scenario = Scenario(isl=1_048_576, osl=1024)
    pc = make_parallel_config(8, attn_tp_size=8, dense_tp_size=4, lmhead_tp_size=8)
    refused = addon_refusals(pc, model, hw, scenario, 1, None)
    why = "attention group attn_tp*cp*kvp*sp = 16 does not divide the world size 8"
    assert refused == {"CP2": why, "KVP2": why, "SP2": why}
    reason = decision_tree_reason(pc, model, scenario, hw, refused=refused)
    assert f"64K+: +CP, ultra-long decode may add KVP): no add-on (CP2/KVP2/SP2: {why})" in reason


def test_layer_3_without_an_add_on_names_the_engine_rules_that_refuse_each() -> None:
    """Llama-3.1-70B (GQA, 8 KV heads, no MLA) at attn_tp 4 x DP 2 on vLLM, 16K tokens: -pcp is MLA-only
    (C.pcp_mla_only) at every degree; -dcp inside TP 4 (attn_tp 2 x dcp 2, attn_tp 1 x dcp 4) breaks
    C.dcp_gqa_within_kv_replicas; vLLM has no attention-SP knob. The smallest degree's refusal is said."""
    model, hw, fw = load_model("llama-3.1-70b"), load_hardware("h100_sxm"), load_framework("vllm")
    pc = make_parallel_config(8, attn_tp_size=4, dense_tp_size=4, embed_tp_size=4, lmhead_tp_size=4)
    refused = addon_refusals(pc, model, hw, Scenario(isl=16_384, osl=512), 8, fw)
    assert refused["CP2"] == "vllm's rules refuse it (C.pcp_mla_only)"
    assert refused["KVP2"] == "vllm's rules refuse it (C.dcp_gqa_within_kv_replicas)"
    assert refused["SP2"].startswith("vllm's rules refuse it (attn_sp_size = 2 but vllm has no such knob")


def test_layer_3_without_an_add_on_that_was_admissible_says_the_estimate_ranked_it_lower() -> None:
    """The generic profile at attn_tp 4 on 8 ranks: CP 2 makes an attention group of 8, which divides 8, and no
    rule refuses it, so the planner's estimate is what left it out."""
    model, hw, fw = load_model("llama-3.1-70b"), load_hardware("h100_sxm"), load_framework("generic")
    pc = make_parallel_config(8, attn_tp_size=4, dense_tp_size=4, embed_tp_size=4, lmhead_tp_size=4)
    assert addon_refusals(pc, model, hw, Scenario(isl=16_384, osl=512), 8, fw)["CP2"] == RANKED_LOWER


def test_layer_3_names_the_first_admissible_degree_where_smaller_ones_are_refused() -> None:
    """cann-recipes runs CP over the whole world only (C.cp_full_world): on DeepSeek-V3 at attn_tp 1 over 16 ranks,
    CP 2, 4 and 8 are refused and CP 16 is admitted, so the reason says CP16 lost on the estimate."""
    model, hw, fw = load_model("deepseek-v3"), load_hardware("atlas_a3"), load_framework("cann-recipes")
    pc = make_parallel_config(16, attn_tp_size=1, moe_tp_size=1, lmhead_tp_size=16)
    refused = addon_refusals(pc, model, hw, Scenario(isl=16_384, osl=512), 16, fw)
    assert refused.get("CP16") == RANKED_LOWER and "CP2" not in refused


def test_layer_3_asks_no_reason_where_the_sequence_asks_no_add_on() -> None:
    """4,096 + 0 is within the seed's <=4K branch: nothing to explain."""
    model, hw = load_model("llama-3.1-70b"), load_hardware("h100_sxm")
    pc = make_parallel_config(8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)
    assert addon_refusals(pc, model, hw, Scenario(isl=3840, osl=256), 1, None) == {}


def test_solve_gemma_at_1m_says_why_its_tp8_candidate_has_no_add_on() -> None:
    """The brief's command: the attention-TP8 candidate's reason carries the clause."""
    r = CliRunner().invoke(main, ["solve", "gemma-3-27b", "--hardware", "h200_sxm", "--cards", "8", "--isl",
                                  "1048576", "--osl", "1024", "--format", "json"])
    assert r.exit_code == 0, r.output
    reasons = [c["reason"] for c in json.loads(r.stdout)["candidates"] if "no add-on" in c["reason"]]
    assert reasons and all("no add-on (CP2/KVP2/SP2: attention group" in x for x in reasons)


# ---------------------------------------------------------------- a PP replica's batch, counted once

def test_a_pp_launch_caps_each_replicas_whole_pipeline_at_the_estimates_replica_batch() -> None:
    """TP4 x PP2 on 8: one replica (stage of 4 ranks, attention group 4), so its batch is all 10 requests, which the
    engines' caps count over the whole pipeline (vLLM's one scheduler; SGLang's microbatches of 10 // 2)."""
    knobs = dict(attn_tp_size=4, dense_tp_size=4, embed_tp_size=4, lmhead_tp_size=4, pp_size=2)
    pc = make_parallel_config(8, **knobs)
    assert held_per_replica(10, pc) == 10
    assert _argv(_launch("vllm", "llama-3.1-70b", 4096, 10, **knobs), "--max-num-seqs") == "10"
    assert _argv(_launch("sglang", "llama-3.1-70b", 4096, 10, **knobs), "--max-running-requests") == "10"


def test_a_pp_launch_with_dp_gives_each_replica_its_share() -> None:
    """TP2 x DP2 x PP2 on 8 (SGLang; vLLM runs one TP group per stage): a stage of 4 ranks holds 2 replicas of 2,
    so ceil(10 / 2) = 5 each."""
    knobs = dict(attn_tp_size=2, dense_tp_size=2, embed_tp_size=2, lmhead_tp_size=2, pp_size=2)
    assert held_per_replica(10, make_parallel_config(8, **knobs)) == 5
    sgl = _launch("sglang", "llama-3.1-70b", 4096, 10, **knobs)
    assert (_argv(sgl, "--dp-size"), _argv(sgl, "--max-running-requests")) == ("2", "5")


def test_a_prefill_pool_command_caps_each_replica_at_the_prompts_its_estimate_plans() -> None:
    """The prefill worker's cap is n, the prompts one attention replica takes per step as estimate_disagg sizes
    them (PoolShape.prompts_per_step): one engine instance, no DP, so its --max-num-seqs is that n."""
    from solver.entry import run_disagg

    rep = run_disagg("llama-3.1-8b", "h100_sxm", 8, Scenario(isl=128, osl=1024, concurrency=4), "vllm",
                     compare_aggregated=False, top=1)
    prefill = rep.pools[0]
    assert prefill.phase == "prefill"
    assert int(_argv(prefill.launch, "--max-num-seqs")) == rep.plan.estimate.shape.prompts_per_step
