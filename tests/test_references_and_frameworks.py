"""Verified references, framework profiles and the rule language.

The verified deployments are ground truth: every cann-recipes rule must hold on every one of them, and each
rule must also reject a nearby configuration (so no rule is vacuous).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from solver.errors import InputError
from solver.report.config_index import index_path, main as index_main, render_config_index
from solver.specs.expr import compile_expr
from solver.specs.framework import FrameworkProfile, list_frameworks, load_framework
from solver.specs.profile_rules import KNOB_NAMES, RULE_NAMES
from solver.specs.rule_env import rule_env
from solver.specs.reference import SEED_KNOBS, list_references, load_reference
from solver.specs.validation import validate_model

# The id column of verified-configs.md, all 30 rows.
TABLE_IDS = {
    "r1-d128", "r1-d128-mtp-bench", "r1-d128-longseq", "r1-d16-ep", "r1-d16-tp", "r1-p32-dp", "k2-p32-tp",
    "k2-d128", "v32-d128", "v32-d128-q", "v32-p64", "v32-p64-q", "v32-d16", "v32-d32", "glm5-d128", "glm5-p64",
    "glm5-d16", "kimi-th-d128", "kimi-th-p64", "lc-ep32", "lc-ep32-mtp", "lc-ep32-kvp8", "lc-ep128", "lc-afd",
    "q3-16tp", "q3-128ep", "q3-16ep", "q3-attn4", "oss-120b-tp8", "oss-20b",
}

# Model facts the rules read, from the published config.json files (shared/facts/model_configs).
# MLA configs may omit num_key_value_heads: their latent KV is one shared head, so N_kv = N_h is what a
# head-split check sees. LongCat-Flash lists 512 routed experts (its 256 zero-computation experts hold no
# weights and are not placed on ranks).
MODELS: dict[str, dict[str, Any]] = {
    "deepseek-r1": dict(heads=128, kv_heads=128, experts=256, v_head_dim=128, mla=True, dsa=False),
    "deepseek-v3.2": dict(heads=128, kv_heads=128, experts=256, v_head_dim=128, mla=True, dsa=True),
    "kimi-k2": dict(heads=64, kv_heads=64, experts=384, v_head_dim=128, mla=True, dsa=False),
    "glm-5": dict(heads=64, kv_heads=64, experts=256, v_head_dim=256, mla=True, dsa=True),
    "longcat-flash": dict(heads=64, kv_heads=64, experts=512, v_head_dim=128, mla=True, dsa=False),
    "qwen3-235b-a22b": dict(heads=64, kv_heads=4, experts=128, v_head_dim=128, mla=False, dsa=False),
    "gpt-oss-120b": dict(heads=64, kv_heads=8, experts=128, v_head_dim=64, mla=False, dsa=False),
    "gpt-oss-20b": dict(heads=64, kv_heads=8, experts=32, v_head_dim=64, mla=False, dsa=False),
}
RANKS_PER_NODE = {"atlas_a3": 16, "atlas_a2": 8}  # as in hardware/atlas_a*.yaml

REFS = list_references()
REF_BY_ID = {r.id: r for r in REFS}
CANN = load_framework("cann-recipes")


def env_for(ref_id: str, **overrides: Any) -> dict[str, Any]:
    """Rule env of a reference; overrides replace knobs, deployment or model facts (derived sizes follow)."""
    ref = REF_BY_ID[ref_id]
    m = MODELS[ref.model]
    config = (*KNOB_NAMES, "redundant_experts")  # what rule_env reads from the parallel_config
    knobs = {**ref.knobs, **{k: v for k, v in overrides.items() if k in config}}
    args = dict(
        world=ref.world_size, batch=ref.batch, mtp=ref.mtp, num_attention_heads=m["heads"],
        num_key_value_heads=m["kv_heads"], n_routed_experts=m["experts"], has_mla=m["mla"], has_dsa=m["dsa"],
        o_proj_dim=m["heads"] * m["v_head_dim"], ranks_per_node=RANKS_PER_NODE[ref.hardware], afd=ref.afd,
    )
    args.update({k: v for k, v in overrides.items() if k not in config})
    return rule_env(knobs, **args)


# ---------------------------------------------------------------- references

def test_every_table_row_has_a_reference():
    assert {r.id for r in REFS} == TABLE_IDS
    assert [r.id for r in REFS] == sorted(TABLE_IDS)


@pytest.mark.parametrize("ref_id", sorted(TABLE_IDS))
def test_reference_validates_and_knobs_divide_world(ref_id: str):
    ref = load_reference(ref_id)
    assert ref.model in MODELS
    assert set(ref.knobs) == set(SEED_KNOBS)
    for key, value in ref.knobs.items():
        assert ref.world_size % value == 0, f"{ref_id}: {key}={value} vs world {ref.world_size}"
    assert ref.attn_dp_size * ref.parallel_config.attn_tp_size == ref.world_size
    assert ref.moe_ep_size * ref.parallel_config.moe_tp_size == ref.world_size
    assert all(ref.knobs[k] == 1 for k in ref.absent_keys)
    assert ref.provenance.facts_file == "verified-configs.md" and "62de0fa" in ref.provenance.source


def test_reference_spot_values():
    # a few cells read straight off the facts table, so a generator slip shows up
    v = REF_BY_ID["v32-d128-q"]
    assert (v.knobs["o_proj_tp_size"], v.knobs["cp_size"], v.mtp, v.quant.kv_cache) == (4, 128, 3, "int8")
    lc = REF_BY_ID["lc-ep32-kvp8"]
    assert (lc.batch, lc.input_len, lc.knobs["kvp_size"], lc.knobs["o_proj_tp_size"]) == (4, 131072, 8, 8)
    assert REF_BY_ID["lc-afd"].afd and REF_BY_ID["lc-afd"].world_size == 128
    assert REF_BY_ID["kimi-th-d128"].quant.moe_weights == "int4"
    assert REF_BY_ID["oss-120b-tp8"].hardware == "atlas_a2"
    assert REF_BY_ID["q3-16tp"].absent_keys == ["dense_tp_size", "o_proj_tp_size", "cp_size", "kvp_size"]
    assert [r.value for r in REF_BY_ID["lc-ep128"].results] == [10.37, 771]


def test_reference_rejects_knob_not_dividing_world(tmp_path: Path):
    data = yaml.safe_load((index_path().parent / "r1-d16-ep.yaml").read_text())
    data["parallel_config"]["embed_tp_size"] = 3
    with pytest.raises(InputError, match="embed_tp_size"):
        validate_model(type(REF_BY_ID["r1-d16-ep"]), data, "r1-d16-ep.yaml")


def test_unknown_reference():
    with pytest.raises(InputError, match="unknown reference 'nope'"):
        load_reference("nope")


def test_config_index_is_current():
    assert index_path().read_text() == render_config_index(REFS), "run python -m solver.report.config_index"
    assert index_main(["--check"]) == 0


def test_config_index_lists_every_reference_and_section():
    text = render_config_index(REFS)
    for ref_id in TABLE_IDS:
        assert f"| {ref_id} |" in text
    for title in ("high throughput", "low latency", "long context", "Prefill", "Ultra-long", "closest reference"):
        assert title in text


# ---------------------------------------------------------------- cann-recipes rules on the verified configs

# For each rule: a reference and a change that must break exactly that rule's requirement.
COUNTEREXAMPLES: dict[str, tuple[str, dict[str, Any]]] = {
    "A.world_divisible_attn_tp": ("r1-d16-tp", {"attn_tp_size": 3}),
    "A.world_divisible_dense_tp": ("r1-d16-tp", {"dense_tp_size": 3}),
    "A.world_divisible_moe_tp": ("r1-d16-tp", {"moe_tp_size": 3}),
    "A.world_divisible_embed_tp": ("r1-d16-ep", {"embed_tp_size": 3}),
    "A.world_divisible_lmhead_tp": ("r1-d16-ep", {"lmhead_tp_size": 3}),
    "A.world_divisible_o_proj_tp": ("lc-ep32-mtp", {"o_proj_tp_size": 3}),
    "A.world_divisible_cp": ("v32-d16", {"cp_size": 3}),
    "A.world_divisible_kvp": ("lc-ep32-kvp8", {"kvp_size": 3}),
    "A.heads_divisible_attn_tp": ("q3-128ep", {"attn_tp_size": 128}),
    "A.experts_divisible_moe_ep": ("r1-d128", {"n_routed_experts": 100}),
    "A.o_proj_dim_divisible": ("lc-ep32-mtp", {"o_proj_dim": 1001}),
    "C.batch_divisible_attn_dp": ("r1-d128", {"batch": 100}),
    "C.cp_full_world": ("v32-d128", {"cp_size": 64}),
    "C.o_proj_tp_with_attn_tp": ("q3-attn4", {"o_proj_tp_size": 2}),
    "C.embed_tp_multiple_of_attn_tp": ("r1-d16-tp", {"embed_tp_size": 8}),
    "C.kvp_attn_tp_1": ("lc-ep32-kvp8", {"attn_tp_size": 2}),
    "C.kvp_o_proj_equals_kvp": ("lc-ep32-kvp8", {"o_proj_tp_size": 4}),
    "C.kvp_no_cp": ("lc-ep32-kvp8", {"cp_size": 2}),
    "C.kvp_no_mtp": ("lc-ep32-kvp8", {"mtp": 1}),
    "C.kvp_batch_divisible": ("lc-ep32-kvp8", {"batch": 6}),
    "C.mtp_depth_longcat": ("lc-ep128", {"mtp": 3}),
    "C.afd_tp_divides_half_world": ("lc-afd", {"lmhead_tp_size": 128}),
    # MoE TP16 over 16 ranks (EP1) has no EP rank to put a copy on
    "C.redundant_experts_need_ep": ("q3-16tp", {"redundant_experts": 16}),
}


@pytest.mark.parametrize("rule_id", [r.id for r in CANN.rules])
def test_cann_rule(rule_id: str):
    """Holds on every verified deployment, and rejects its counterexample."""
    rule = CANN.rule(rule_id)
    broken = [r.id for r in REFS if not rule.holds(env_for(r.id))]
    assert not broken, f"{rule_id} ({rule.message}) fails on verified {broken}"
    ref_id, change = COUNTEREXAMPLES[rule_id]
    assert not rule.holds(env_for(ref_id, **change)), f"{rule_id} accepts {ref_id} with {change}"


def test_every_cann_rule_has_a_counterexample():
    assert set(COUNTEREXAMPLES) == {r.id for r in CANN.rules}


def test_cann_profile_accepts_every_reference():
    for ref in REFS:
        assert CANN.check(env_for(ref.id)) == [], ref.id


def test_cann_profile_shape():
    assert CANN.knobs == list(SEED_KNOBS) and CANN.fixed_knobs == ("attn_sp_size", "pp_size")  # no PP (verified-configs.md)
    assert not CANN.splits_kv_heads  # q3-16tp: attn_tp 16 over 4 KV heads (replicated)
    assert CANN.max_mtp == 3
    assert all(r.source for r in CANN.rules)
    problems = CANN.check(env_for("r1-d128", attn_sp_size=2))
    assert any("attn_sp_size" in p for p in problems)


# ---------------------------------------------------------------- all profiles

@pytest.mark.parametrize("name", ["cann-recipes", "generic", "sglang", "trtllm", "vllm"])
def test_profile_loads_and_rules_evaluate(name: str):
    profile = load_framework(name)
    assert profile.name == name and name in list_frameworks()
    assert all(rule.names <= RULE_NAMES for rule in profile.rules)
    assert profile.efficiency.gemm == profile.efficiency.comm == 1.0
    env = env_for("v32-d128")
    for rule in profile.rules:
        rule.holds(env)  # every name a rule reads is provided by rule_env


def test_generic_exposes_every_knob_and_accepts_every_reference():
    generic = load_framework("generic")
    assert tuple(generic.knobs) == KNOB_NAMES
    for ref in REFS:
        assert generic.check(env_for(ref.id)) == [], ref.id


def test_knob_names_match_parallel_config():
    parallel = pytest.importorskip("solver.specs.parallel")
    assert tuple(parallel.KNOBS) == KNOB_NAMES


# Public deployments in each framework's own terms (facts/measurements.md and the aiconfigurator rows).
PUBLIC = [
    # vLLM DP8 + EP on 8 GPUs (DeepSeek-V3.2): one TP size (1), MoE EP over all ranks
    ("vllm", "v32-d128", dict(world=8, batch=8, attn_tp_size=1, dense_tp_size=1, moe_tp_size=1, embed_tp_size=1,
                              lmhead_tp_size=1, o_proj_tp_size=1, cp_size=1)),
    # vLLM TP8 (DeepSeek-V3.2): MoE TP over all ranks
    ("vllm", "v32-d128", dict(world=8, batch=8, attn_tp_size=8, dense_tp_size=8, moe_tp_size=8, embed_tp_size=8,
                              lmhead_tp_size=8, o_proj_tp_size=8, cp_size=1)),
    # SGLang TP8 + DP8 attention (DeepSeek-V3.2): dense and LM head over all ranks, embedding replicated
    ("sglang", "v32-d128", dict(world=8, batch=8, attn_tp_size=1, dense_tp_size=8, moe_tp_size=8, embed_tp_size=1,
                                lmhead_tp_size=8, o_proj_tp_size=1, cp_size=1)),
    # TensorRT-LLM attention DP64 + MoE TP8 x EP8 (DeepSeek-R1)
    ("trtllm", "r1-d128", dict(world=64, batch=64, attn_tp_size=1, dense_tp_size=1, moe_tp_size=8, embed_tp_size=1,
                               lmhead_tp_size=1, o_proj_tp_size=1)),
]


@pytest.mark.parametrize("name,ref_id,change", PUBLIC)
def test_public_framework_configs_are_accepted(name: str, ref_id: str, change: dict[str, Any]):
    assert load_framework(name).check(env_for(ref_id, **change)) == []


def test_framework_rules_reject_untied_knobs():
    tied = dict(dense_tp_size=4, lmhead_tp_size=4, embed_tp_size=4, o_proj_tp_size=4)
    env = env_for("q3-attn4", **tied)
    assert load_framework("vllm").check(env) == []
    untied = env_for("q3-attn4", **{**tied, "dense_tp_size": 2})
    assert [r.id for r in load_framework("vllm").violated(untied)] == ["C.dense_tp_is_tp"]
    assert "C.attention_dp_all_or_none" in [r.id for r in load_framework("trtllm").violated(env)]
    sp = env_for("r1-d128", attn_sp_size=8)
    assert [r.id for r in load_framework("sglang").violated(sp)] == ["C.attn_sp_dsa_only"]


def test_framework_names_and_errors(tmp_path: Path):
    assert load_framework("CANN_recipes").name == "cann-recipes"
    with pytest.raises(InputError, match=r"unknown framework 'tgi'; known: atom, cann-recipes, generic, sglang"):
        load_framework("tgi")
    data = yaml.safe_load((Path(__file__).parents[1] / "solver/frameworks/generic.yaml").read_text())
    data["rules"].append(dict(id="C.bogus", require="tp_size == 1", message="x", source="test"))
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(InputError, match=r"rule C\.bogus: require uses unknown name\(s\) tp_size"):
        load_framework(str(path))
    data["rules"][-1]["require"] = "attn_tp_size.bit_length() == 1"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(InputError, match=r"rule C\.bogus: require: expression .* not allowed"):
        load_framework(path)


def test_profile_rejects_duplicate_rule_ids():
    data = yaml.safe_load((Path(__file__).parents[1] / "solver/frameworks/generic.yaml").read_text())
    data["rules"].append(data["rules"][0])
    with pytest.raises(InputError, match="used twice"):
        validate_model(FrameworkProfile, data, "dup.yaml")


@pytest.mark.parametrize("dotted, value, needle", [
    ("efficiency.gemm", True, "efficiency.gemm: Input should be a valid number, got True"),
    ("max_mtp", True, "max_mtp: Input should be a valid integer, got True"),
    ("max_mtp", "3", "max_mtp: Input should be a valid integer, got '3'"),
    ("splits_kv_heads", 0, "splits_kv_heads: Input should be a valid boolean, got 0"),
    ("serving.eager_launch_s", True, "serving.eager_launch_s: Input should be a valid number, got True"),
    ("launch.per_node", 1, "launch.per_node: Input should be a valid boolean, got 1"),
])
def test_a_profile_value_of_another_type_is_refused_not_coerced(dotted: str, value: Any, needle: str):
    """An engine profile is held to the device file's strictness: true was read as an efficiency of 1.0 or an MTP
    bound of 1, 0 as false and "3" as 3, where the writer's slip cannot be told from a meaning."""
    data = yaml.safe_load((Path(__file__).parents[1] / "solver/frameworks/vllm.yaml").read_text())
    *head, last = dotted.split(".")
    node = data
    for part in head:
        node = node[part]
    node[last] = value
    with pytest.raises(InputError, match=re.escape(needle)):
        validate_model(FrameworkProfile, data, "fw.yaml")


# ---------------------------------------------------------------- expression language

def test_expr_arithmetic_comparisons_and_functions():
    env = {"a": 4, "b": 16, "c": 6, "flag": True}
    assert compile_expr("divides(a, b)").evaluate(env) is True
    assert compile_expr("divides(c, b)").evaluate(env) is False
    assert compile_expr("divides(0, b)").evaluate(env) is False  # no ZeroDivisionError
    assert compile_expr("1 <= a < b != c").evaluate(env) is True
    assert compile_expr("1 <= a > b").evaluate(env) is False
    assert compile_expr("min(a, b, c) + max(a, 2) * 2 - b // a % 3").evaluate(env) == 4 + 8 - 1
    assert compile_expr("-a + +b").evaluate(env) == 12
    assert compile_expr("flag and not (a == 3) or false").evaluate(env) is True
    assert compile_expr("true").evaluate({}) is True and compile_expr("True").evaluate({}) is True
    assert compile_expr("0.5 * b").evaluate(env) == 8.0
    assert compile_expr("divides(a, b) and c % 2 == 0 or x").names == {"a", "b", "c", "x"}
    assert compile_expr("min(a, 1)").names == {"a"}  # function names are not free names


@pytest.mark.parametrize("text", [
    "a.b", "a.__class__", "open('f')", "__import__('os')", "lambda: 1", "(lambda x: x)(1)", "x[0]", "a ** 2",
    "a / b", "'text'", "a if b else c", "a in b", "a is b", "[a]", "{a: 1}", "f(a)", "min(a=1, b=2)",
    "min(*a)", "(a := 1)", "a & b", "~a", "divides(a)", "min(a)", "a; b", "import os", "", "a +",
])
def test_expr_rejects_unsafe_or_unknown_syntax(text: str):
    with pytest.raises(InputError, match="expression"):
        compile_expr(text)


def test_expr_missing_name_and_zero_division():
    with pytest.raises(InputError, match=r"expression 'a \+ b': name 'b' has no value"):
        compile_expr("a + b").evaluate({"a": 1})
    with pytest.raises(InputError, match="by zero"):
        compile_expr("a % b").evaluate({"a": 1, "b": 0})


def test_a_rule_gives_one_verdict_per_reading():
    """Rule.reading names all that Rule.holds reads (the planner judges each rule once per reading): on every
    profile's rules, environments with equal readings get equal verdicts, a free knob's included."""
    import itertools

    from solver.specs.model_catalog import load_model
    from solver.specs.rule_env import model_env

    models = [load_model(m) for m in ("deepseek-v3.2", "qwen3-8b", "qwen3-30b-a3b")]  # MLA + MoE, dense, GQA MoE
    for name in list_frameworks():
        rules = load_framework(name).rules
        for m in models:
            seen: dict[tuple, bool] = {}
            for tp, dense, moe, op, cp in itertools.product((1, 2, 4, 8), (1, 8), (1, 2), (1, 8), (1, 2)):
                cfg = {"attn_tp_size": tp, "dense_tp_size": dense, "moe_tp_size": moe, "o_proj_tp_size": op,
                       "cp_size": cp, "embed_tp_size": tp, "lmhead_tp_size": tp}
                for world in (8, 16):
                    env = model_env(cfg, m, 8, world=world)
                    for i, r in enumerate(rules):
                        key = (i, r.reading(env))
                        assert seen.setdefault(key, r.holds(env)) == r.holds(env), (name, r.id, cfg, world)
