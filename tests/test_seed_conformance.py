"""The seed's rules (seeds/003) that the conformance audit found untested, missing or with two homes, one test
per rule, named after it (docs/seed-conformance.md lists every rule, its home and its test)."""
from __future__ import annotations

import json
from dataclasses import replace

import yaml
from click.testing import CliRunner

from solver.api import _ref_models
from solver.cli.main import main
from solver.estimate.compute import factors_for
from solver.estimate.serving import Workload, estimate
from solver.plan.solve import Planned
from solver.rank.select import rank_candidates
from solver.report.candidates import candidate_dict
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.model_rules import model_problems
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision
from solver.specs.reference import list_references
from solver.specs.scenario import Scenario


def _check(tmp_path, data: dict) -> dict:
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(data))
    r = CliRunner().invoke(main, ["check", str(path), "--format", "json"])
    assert r.exit_code in (0, 1), r.stdout + r.stderr
    return json.loads(r.stdout)


# --- Step 3.2 / 3.4 memory feasibility, as `check` reports it

LLAMA_TP8 = {"model": "llama-3.1-70b", "hardware": "h200_sxm", "world_size": 8,
             "parallel_config": {k: 8 for k in ("attn_tp_size", "dense_tp_size", "embed_tp_size", "lmhead_tp_size")}}


def _decode(batch: int) -> dict:
    return {**LLAMA_TP8, "workload": {"phase": "decode", "batch": batch, "seq_len": 32768}}


def test_weights_plus_kv_cache_above_080_of_capacity_is_a_class_b_warning(tmp_path):
    # seed 3.2: "parameter memory + KV Cache already close to card capacity x 0.8". 93 sequences of 32K on
    # TP8: 17.64 GB of weights + 124.82 GB of KV = 142.5 GB > 0.8 x 151.4; 16 sequences hold 21.5 GB of KV
    tight = _check(tmp_path, _decode(93))
    assert tight["valid"]
    assert "weights + KV above 0.8 of capacity (seed 3.2): little room for batch growth" in tight["warnings"]["B"]
    roomy = _check(tmp_path, _decode(16))
    assert not any("0.8 of capacity" in w for w in roomy["warnings"]["B"])


def test_kv_cache_above_half_the_available_memory_is_a_class_b_warning(tmp_path):
    # seed 3.4: "KV Cache proportion > 50% of available memory -> consider KVP / CP". Available: the limit
    # 143.83 GB less 17.64 GB of weights; 93 sequences hold 124.82 GB of it, 16 hold 21.5 GB (17%)
    assert any(w.startswith("KV cache above 50% of available memory (seed 3.4): consider KVP / CP;")
               for w in _check(tmp_path, _decode(93))["warnings"]["B"])
    assert not any("50% of available" in w for w in _check(tmp_path, _decode(16))["warnings"]["B"])


# --- Step 3.4 communication feasibility

QWEN_TP16 = {"model": "qwen3-32b", "hardware": "h200_sxm", "world_size": 16,
             "parallel_config": {"attn_tp_size": 16, "dense_tp_size": 16},
             "workload": {"phase": "decode", "batch": 64, "seq_len": 4096}}


def test_tp_communication_above_compute_is_a_class_b_warning_where_a_smaller_tp_does_better(tmp_path):
    # seed 3.4: "estimated communication time > computation time -> TP degree too large, reduce TP or switch
    # to EP". TP16 over two 8-GPU nodes: 8.32 ms of all-reduce per decode step over 5.44 ms of compute
    out = _check(tmp_path, QWEN_TP16)
    lines = [w for w in out["warnings"]["B"] if "TP communication" in w]
    assert len(lines) == 1
    assert lines[0].startswith("decode step: TP communication 8.32 ms > compute 5.44 ms, attn_tp_size 16 carrying")
    assert "attn_tp=8 fits and does better by the estimate (request latency -" in lines[0]
    # inside one node the all-reduce stays under the compute: no warning, no note
    inside = _check(tmp_path, {**QWEN_TP16, "world_size": 8,
                               "parallel_config": {"attn_tp_size": 8, "dense_tp_size": 8}})
    assert not any("TP communication" in line for line in inside["warnings"]["B"] + inside["notes"])


def test_tp_communication_above_compute_is_only_a_note_where_no_smaller_tp_does_better(tmp_path):
    # one 4K prompt on Qwen3-8B over TP8: the prefill's all-reduce exceeds its compute, but every smaller TP
    # degree is slower by the estimate, so the seed's adjustment is weighed, not flagged
    out = _check(tmp_path, {"model": "qwen3-8b", "hardware": "h100_sxm", "world_size": 8,
                            "parallel_config": {"attn_tp_size": 8, "dense_tp_size": 8, "lmhead_tp_size": 8},
                            "workload": {"isl": 4096, "osl": 256, "concurrency": 1}})
    assert out["valid"] and not any("TP communication" in w for w in out["warnings"]["B"])
    notes = [n for n in out["notes"] if "TP communication" in n]
    assert len(notes) == 1 and notes[0].startswith("prefill step: TP communication")
    assert "none that fits is more than 3% better by the estimate" in notes[0]


# --- Layer 1 (MoE): EP needs experts_per_rank <= 24 (dispatch_v2)

def test_experts_per_rank_above_the_dispatch_cap_is_one_class_b_violation(tmp_path):
    # the cap is the device's (hardware.md: Atlas A2 MC2 dispatch, at most 24); it was also a cann-recipes
    # rule, so `check` said it twice, once as a violation and once as a warning
    out = _check(tmp_path, {"model": "qwen3-235b-a22b", "hardware": "atlas_a2", "framework": "cann-recipes",
                            "world_size": 8, "quant": {"weights": "int8"},
                            "parallel_config": {"attn_tp_size": 8, "moe_tp_size": 2, "embed_tp_size": 8,
                                                "lmhead_tp_size": 8},
                            "workload": {"phase": "decode", "batch": 8, "seq_len": 2048}})
    said = [line for cls in "ABC" for line in out["violations"][cls] + out["warnings"][cls]
            if "experts per rank" in line]
    assert said == ["32 experts per rank > 24 (atlas_a2 dispatch path: past it MoE dispatch falls back to a slower "
                    "path the estimate does not price)"]
    assert said[0] in out["violations"]["B"]


# --- Step 4 [A]: num_key_value_heads % attn_tp_size == 0 (an implementation that splits by KV head)

def test_kv_heads_not_divisible_by_attn_tp_is_class_a_where_the_framework_splits_kv_heads():
    model = load_model("llama-3.1-70b")  # 8 KV heads
    generic = load_framework("generic")  # replicates KV heads past N_kv, as the engines do
    pc = ParallelConfig(world_size=16, attn_tp_size=16, dense_tp_size=16)
    assert not any("num_key_value_heads" in p for p in model_problems(model, pc, generic))
    splitting = generic.model_copy(update={"splits_kv_heads": True})
    assert [p for p in model_problems(model, pc, splitting) if "num_key_value_heads" in p] == [
        "num_key_value_heads 8 % attn_tp_size 16 != 0 (generic splits KV heads)"]
    assert not model_problems(model, ParallelConfig(world_size=16, attn_tp_size=8, dense_tp_size=8), splitting)


# --- Step 4 ranking dimensions: memory feasibility, cross-node risk, performance, distance to a verified config

def _planned(model, hw, knobs: dict, wl: Workload, world: int) -> Planned:
    prec = resolve_precision(model, hw)
    e = estimate(model, hw, ParallelConfig(world_size=world, **knobs), prec, factors_for(hw), wl)
    return Planned(ParallelConfig(world_size=world, **knobs), wl.sequences, e, 0.0, True)


def _faster(p: Planned, k: float) -> Planned:
    e = p.estimate
    return replace(p, estimate=replace(e, ttft_s=e.ttft_s / k, tpot_s=e.tpot_s / k,
                                       output_tokens_per_s=e.output_tokens_per_s * k))


def test_ranking_puts_fitting_then_in_node_candidates_first_whatever_their_score():
    model, hw = load_model("qwen3-32b"), load_hardware("h200_sxm")
    wl = Workload("serving", isl=4096, osl=256, concurrency=64)
    in_node = _planned(model, hw, {"attn_tp_size": 8, "dense_tp_size": 8}, wl, 16)
    # twice as fast by construction, but its TP group leaves the node: "downgrade if present"
    cross = _faster(_planned(model, hw, {"attn_tp_size": 16, "dense_tp_size": 16}, wl, 16), 2.0)
    # three times as fast, but it does not fit: "directly exclude if infeasible" (shown last, marked)
    dp = _faster(_planned(model, hw, {}, wl, 16), 3.0)
    dp = replace(dp, estimate=replace(dp.estimate, memory=replace(dp.estimate.memory, capacity_bytes=1e9)))
    assert not dp.estimate.memory.feasible
    cands = rank_candidates([dp, cross, in_node], model, hw, Scenario(), [], {})
    assert [c.planned for c in cands] == [in_node, cross, dp]
    assert [c.cross_node for c in cands] == [False, True, False]


def test_within_the_tie_band_another_models_deployment_orders_by_knobs_not_by_the_size_it_ran_at():
    """Llama-3.1-8B on 8 H200: all-TP8 matches k2-p32-tp's knobs (all W) and all-DP q3-16ep's (all 1), each another
    model on other hardware: distance 0 + 2 + 1 = 3 for both. The size those deployments ran at (32 and 16 ranks:
    0.25 x |log2 8 - log2 32| = 0.5 against 0.25) says nothing of this model, so the better score decides within
    the tie band: TP8, made 2% faster, comes first (before, DP's 3.25 < 3.5 put it first)."""
    model, hw = load_model("llama-3.1-8b"), load_hardware("h200_sxm")
    wl = Workload("serving", isl=1024, osl=1024, concurrency=8)
    tp8 = {k: 8 for k in ("attn_tp_size", "dense_tp_size", "embed_tp_size", "lmhead_tp_size")}
    dp = _planned(model, hw, {}, wl, 8)
    # the two tied within the 3% band by construction, TP8 2% better in both figures
    tp = _faster(replace(_planned(model, hw, tp8, wl, 8), estimate=dp.estimate), 1.02)
    tp = replace(tp, config=ParallelConfig(world_size=8, **tp8))
    refs = [r for r in list_references() if r.id in ("k2-p32-tp", "q3-16ep")]
    cands = rank_candidates([dp, tp], model, hw, Scenario(), refs, _ref_models())
    assert [c.pattern for c in cands] == ["Pure TP8", "Attn DP"]
    assert [c.reference for c in cands] == ["k2-p32-tp", "q3-16ep"]


def test_a_first_candidate_far_from_every_verified_config_is_recommended_for_comparative_testing():
    # "even if the solution is not validated, it should be marked as 'recommended for comparative testing'"
    model, hw = load_model("deepseek-r1"), load_hardware("atlas_a3")
    ref = next(r for r in list_references() if r.id == "r1-d16-tp")
    wl = Workload("decode", batch=16, seq_len=4096)
    p = _planned(model, hw, ref.config().knobs(), wl, 16)
    far = rank_candidates([p], model, hw, Scenario(phase="decode"), [], {})[0]
    assert far.comparative_testing and candidate_dict(far)["reference"].endswith("recommended for comparative testing")
    near = rank_candidates([p], model, hw, Scenario(phase="decode"), [ref], _ref_models())[0]
    assert near.reference == "r1-d16-tp" and not near.comparative_testing


# --- Layer 3: the sequence-length add-on by band (<=4K none, 4K-64K check the prefill split, 64K+ CP / KVP)

def test_layer_3_names_the_seeds_sequence_length_band():
    from solver.rank.reason import decision_tree_reason

    model, hw = load_model("deepseek-v3"), load_hardware("h200_sxm")
    pc = ParallelConfig(world_size=8)

    def band(isl: int, osl: int) -> str:
        reason = decision_tree_reason(pc, model, Scenario(isl=isl, osl=osl), hw)
        return reason.split("Layer 3 (")[1].split(")")[0]

    assert band(3840, 256) == "max sequence 4,096, <=4K: no add-on"
    assert band(3840, 257) == "max sequence 4,097, 4K-64K: check prefill split"
    assert band(65280, 256) == "max sequence 65,536, 4K-64K: check prefill split"
    assert band(131072, 1024) == "max sequence 132,096, 64K+: +CP, ultra-long decode may add KVP"


# --- Step 4 weight handling: enable_online_split_weight

def test_weight_handling_note_follows_enable_online_split_weight(tmp_path):
    base = {"model": "deepseek-r1", "hardware": "atlas_a3", "framework": "cann-recipes", "world_size": 16,
            "quant": {"weights": "int8"}, "workload": {"phase": "decode", "batch": 64, "seq_len": 356},
            "parallel_config": {"embed_tp_size": 16, "lmhead_tp_size": 16}}
    prev = {"previous_parallel_config": {"embed_tp_size": 8, "lmhead_tp_size": 16}}

    def weight_notes(extra: dict) -> list[str]:
        # the split-weight rule's notes (they name the parallel_config), not the format's conversion note
        return [n for n in _check(tmp_path, {**base, **extra})["notes"] if "weight" in n and "parallel_config" in n]

    # False: "must re-convert; weights are bound to parallel_config"
    assert weight_notes({"enable_online_split_weight": False}) == [
        "enable_online_split_weight is False: weights must be converted for this parallel_config"]
    assert weight_notes({**prev, "enable_online_split_weight": False}) == [
        "embed_tp_size changed: offline-split weights are bound to the old parallel_config; re-run weight "
        "conversion or set enable_online_split_weight: True"]
    # True: "no re-conversion needed; runtime automatically splits"
    assert weight_notes({**prev, "enable_online_split_weight": True}) == []


# --- Layer 1 (MoE): "when expert_ffn is small, TP fragments the matrices and EP computes more efficiently"

def _routed_compute_s(name: str, moe_tp: int) -> float:
    model, hw = load_model(name), load_hardware("h100_sxm")
    wl = Workload("prefill", batch=8, seq_len=4096)
    e = estimate(model, hw, ParallelConfig(world_size=8, moe_tp_size=moe_tp), resolve_precision(model, hw),
                 factors_for(hw), wl)
    return e.prefill.by_module()["routed_experts"]["compute_s"]


def test_tp_over_narrow_experts_fragments_the_gemm_so_ep_computes_faster():
    # Qwen3-30B-A3B's experts are 768 wide: TP8 leaves 96 columns per rank (compute.shape_efficiency 0.43 vs
    # 0.86 whole), so EP8 computes the experts faster although its busiest rank does more FLOPs
    assert _routed_compute_s("qwen3-30b-a3b", 1) < _routed_compute_s("qwen3-30b-a3b", 8)
    # Mixtral's 14,336-wide experts keep 1,792 columns per rank under TP8: no fragmentation, TP computes faster
    assert _routed_compute_s("mixtral-8x7b", 8) < _routed_compute_s("mixtral-8x7b", 1)


# --- 1.2 non-standard modules: partitioned (or not) on their own terms, so memory does not hide an OOM

def test_a_vision_encoder_is_held_whole_on_every_rank_whatever_the_tp():
    from solver.estimate.memory import memory_per_rank
    from solver.estimate.memory_options import MemoryOptions

    model, hw = load_model("gemma-3-27b"), load_hardware("h100_sxm")
    prec = resolve_precision(model, hw)

    def weights(tp: int) -> dict[str, float]:
        pc = ParallelConfig(world_size=8, attn_tp_size=tp, dense_tp_size=tp)
        return memory_per_rank(model, hw, pc, prec, 8, 4096, MemoryOptions()).weights_bytes

    one, eight = weights(1), weights(8)
    assert one["vision"] == eight["vision"] > 0.8e9  # 0.423B parameters in bf16, replicated
    assert eight["attention"] < one["attention"] / 7  # the text stack splits (its norms replicated)


# --- Step 4 output format: candidate_a/b/c blocks with parallel_config, estimation and tradeoff

def test_the_yaml_output_is_the_seeds_candidate_blocks():
    r = CliRunner().invoke(main, ["solve", "deepseek-v3", "--hardware", "h200_sxm", "--cards", "16",
                                  "--format", "yaml"])
    assert r.exit_code == 0, r.stderr
    doc = yaml.safe_load(r.stdout)
    blocks = {k: v for k, v in doc.items() if k.startswith("candidate_")}
    assert list(blocks) == ["candidate_a", "candidate_b", "candidate_c"]  # "output 2~3 candidate solutions"
    # above them, the deployment they are for (check / launch FILE --candidate read it), nothing else
    assert set(doc) - set(blocks) <= {"model", "hardware", "framework", "world_size", "weight_dtype",
                                      "quant", "mtp"}
    for block in blocks.values():
        # the seed's eight parallel_config keys (attn_sp_size is newer; pp_size only where above 1)
        assert {"attn_tp_size", "dense_tp_size", "moe_tp_size", "embed_tp_size", "lmhead_tp_size", "o_proj_tp_size",
                "cp_size", "kvp_size"} <= set(block["parallel_config"])
        assert {"params_per_card_gb", "kv_cache_per_card_gb", "memory_feasible", "cross_node_comm"} <= set(
            block["estimation"])
        assert set(block["tradeoff"]) == {"throughput", "latency", "long_context"}
        assert set(block["tradeoff"].values()) <= {"advantage", "neutral", "risk"}
    lines = r.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("# candidate A"))
    assert lines[first].startswith("# candidate A (recommended): ") and lines[first + 1].startswith("# reason: Layer 1")
    assert lines[first + 2].startswith("# reference: ")
    assert sum(line.startswith("# candidate ") and "(alternative)" in line for line in lines) == 2
    # "dp_size/ep_size are not configured in YAML, derived by the framework": comments, not keys
    assert "    # attn_dp_size = " in r.stdout and "    # moe_ep_size = " in r.stdout
    assert not {"attn_dp_size", "moe_ep_size"} & set(blocks["candidate_a"]["parallel_config"])
    assert any(line.startswith("# dp_size / ep_size are derived by the framework") for line in lines)


def test_layer_1_of_a_dense_model_is_dp_where_one_card_holds_it_else_tp_within_the_node() -> None:
    """Seed Step 2, Layer 1, dense branch: 'fits one card -> DP; else pure TP, starting within the node'. The
    reason names what the configuration does: DP (every rank the whole model), TP within or across nodes, PP."""
    from solver.rank.reason import decision_tree_reason

    model, hw = load_model("llama-3.1-70b"), load_hardware("h100_sxm")
    sc = Scenario(kind="balanced", isl=1024, osl=256)

    def layer1(**knobs: int) -> str:
        return decision_tree_reason(ParallelConfig(**knobs), model, sc, hw).split(";")[0]

    assert layer1(world_size=8) == "Layer 1 (dense backbone): DP, every rank holds the whole model"
    assert layer1(world_size=8, attn_tp_size=8, dense_tp_size=8) == "Layer 1 (dense backbone): TP8 within the node"
    assert layer1(world_size=16, attn_tp_size=16, dense_tp_size=16) == \
        "Layer 1 (dense backbone): TP16 across nodes (8 per node)"
    assert layer1(world_size=16, attn_tp_size=8, dense_tp_size=8, pp_size=2) == \
        "Layer 1 (dense backbone): TP8 within the node x PP2 (the layers in 2 stages)"


def test_solve_states_online_weight_splitting_where_the_engine_launch_sets_it() -> None:
    """Seed Step 4 weight handling: a framework whose launch sets enable_online_split_weight: true (cann-recipes)
    gets it in solve's deployment file, with one comment line, and `check` of a candidate then owes no conversion
    note; an engine that sets no such key (vLLM) gets neither."""
    args = ["solve", "qwen3-30b-a3b", "--hardware", "atlas_a3", "--cards", "16", "--format", "yaml"]
    split = CliRunner().invoke(main, [*args, "--framework", "cann-recipes"])
    assert split.exit_code == 0, split.output
    assert yaml.safe_load(split.stdout)["enable_online_split_weight"] is True
    assert sum("# weights: the runtime splits the checkpoint" in line for line in split.stdout.splitlines()) == 1
    plain = CliRunner().invoke(main, [*args, "--framework", "vllm-ascend"])
    assert plain.exit_code == 0, plain.output
    assert "enable_online_split_weight" not in plain.stdout
    assert load_framework("cann-recipes").launch.splits_weights_online()
    assert not load_framework("vllm-ascend").launch.splits_weights_online()
