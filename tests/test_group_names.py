"""The group names a profile's rules and launch lines read (profile_rules.GROUP_NAMES): each one product of knobs,
defined once per engine (tp_group_size: FrameworkProfile.tp_group_knobs) or once for all (attn_group_size)."""
from __future__ import annotations

import pytest
import yaml

from conftest import REPO
from solver.specs.expr import compile_expr
from solver.specs.framework import FrameworkProfile, load_framework


def test_a_named_product_reads_as_its_factors() -> None:
    """`world // g` with g = a x b: 16 // (2 x 4) = 2, and the expression depends on a and b, not on g."""
    expr = compile_expr("world // g", (("g", ("a", "b")),))
    assert expr.evaluate({"world": 16, "a": 2, "b": 4}) == 2
    assert expr.names == frozenset({"world", "a", "b"})


@pytest.mark.parametrize("engine, knobs", [
    ("vllm", ("attn_tp_size", "kvp_size")),  # -dcp reuses the TP ranks: -tp = attn_tp x kvp
    ("sglang", ("attn_tp_size", "kvp_size")),  # --dcp-size likewise
    ("atom", ("attn_tp_size", "kvp_size")),
    ("vllm-ascend", ("attn_tp_size", "kvp_size", "attn_sp_size")),  # enable_dsa_cp runs over the TP ranks
    ("cann-recipes", ("attn_tp_size",)),  # the seed's KVP: ranks beside the TP group
    ("trtllm", ("attn_tp_size",)),
])
def test_the_engines_tp_group_is_attention_tp_times_the_knobs_it_carves_out_of_its_tp_ranks(engine, knobs) -> None:
    assert load_framework(engine).tp_group_knobs == knobs


def test_the_attention_group_spans_tp_kvp_sp_and_cp_ranks_the_engine_exposes() -> None:
    """vLLM has no attn_sp_size (fixed at 1): its attention group is attn_tp x kvp x cp (world = TP x PCP x DP)."""
    products = dict(load_framework("vllm").group_products)
    assert products["attn_group_size"] == ("attn_tp_size", "kvp_size", "cp_size")
    assert dict(load_framework("sglang").group_products)["attn_group_size"] == (
        "attn_tp_size", "kvp_size", "attn_sp_size", "cp_size")


def test_a_rule_reading_a_group_name_depends_on_its_knobs() -> None:
    """The planner's rule tables range over the knobs a rule reads: vllm-ascend's A.world_divisible_tp reads
    attn_group_size, so all four of its knobs."""
    rule = load_framework("vllm-ascend").rule("A.world_divisible_tp")
    assert {"attn_tp_size", "kvp_size", "attn_sp_size", "cp_size", "world"} == set(rule.names)


def test_the_launch_spells_the_tp_size_and_dp_size_from_the_group_names() -> None:
    """vllm-ascend: TP 2 x DCP 2 on 8 ranks is --tensor-parallel-size 4 (2 x 2) and --data-parallel-size 2
    (8 // (2 x 2 x 1 x 1))."""
    fw = load_framework("vllm-ascend")
    env = {"attn_tp_size": 2, "kvp_size": 2, "attn_sp_size": 1, "cp_size": 1, "world": 8}
    tp = next(a for a in fw.launch.args if a.flag == "--tensor-parallel-size")
    dp = next(a for a in fw.launch.args if a.flag == "--data-parallel-size")
    assert tp.value_expr.evaluate(env) == 4
    assert dp.value_expr.evaluate(env) == 2 and dp.when_expr.evaluate(env)


def test_sp_in_tp_group_needs_the_sp_knob() -> None:
    data = yaml.safe_load((REPO / "solver" / "frameworks" / "vllm.yaml").read_text())
    data["sp_in_tp_group"] = True
    with pytest.raises(ValueError, match="sp_in_tp_group: set without attn_sp_size"):
        FrameworkProfile.model_validate(data)


def test_a_configs_attention_group_is_the_product_of_the_registrys_attention_group_knobs() -> None:
    import math

    from solver.specs.knobs import ATTN_GROUP_KNOBS
    from solver.specs.parallel import make_parallel_config

    pc = make_parallel_config(480, attn_tp_size=2, kvp_size=3, attn_sp_size=4, cp_size=5)
    assert pc.attn_group_size == math.prod(getattr(pc, k) for k in ATTN_GROUP_KNOBS) == 120
