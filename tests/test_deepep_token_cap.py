"""SGLang's low-latency DeepEP kernels dispatch at most 1024 tokens per rank in a step: the launch raises
SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK to one attention replica's decode batch x (mtp + 1) and the
dispatcher asserts the value <= 1024 at start (sglang 0.5.23 layers/moe/token_dispatcher/deepep.py:403-408), so a
plan past it has no command that starts: rule C.deepep_dispatch_tokens_cap, where serving.ep_kernels holds.

DeepSeek-V3 on H100 (8 ranks a node). On 32 ranks the default layout is attention DP 32 with EP 32 over 4 nodes,
inside the EP-kernel condition; a replica's batch is ceil(batch / 32)."""
from __future__ import annotations

import pytest

from solver import api
from solver.errors import InputError
from solver.specs.expr import compile_expr
from solver.launch.emit import LaunchInputs, emit_launch
from solver.plan.points import SolverParams
from solver.plan.solve import plan
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision
from solver.specs.profile_serving import ep_kernels_hold
from solver.specs.scenario import Scenario

RULE = "C.deepep_dispatch_tokens_cap"
H100 = load_hardware("h100_sxm")
V3 = load_model("deepseek-v3")
SGL = load_framework("sglang")


def _tokens_per_rank(pc, batch: int, mtp: int) -> int:
    """One attention replica's decode batch (launch_spec.REPLICA_BATCH) x (mtp + 1)."""
    return max(1, -(-batch * pc.attn_group_size // pc.stage_world)) * (mtp + 1)


def _violations(batch: int, mtp: int = 0) -> list[str]:
    r = api.check("deepseek-v3", "h100_sxm", 32, phase="decode", batch=batch, seq_len=256, mtp=mtp,
                  framework="sglang")
    return [v for vs in r.review.violations.values() for v in vs]


def test_the_rule_reads_the_condition_the_launch_selects_deepep_at() -> None:
    """The cap is the DeepEP dispatcher's: the rule applies exactly where the command runs it. It reads the
    profile's named condition `ep_kernels` (serving.ep_kernels.when, compiled in place: the names it reads are the
    EP condition's) and `replica_batch`, not copies of their texts."""
    rule = next(r for r in SGL.rules if r.id == RULE)
    assert SGL.serving.ep_kernels is not None
    assert rule.when == "ep_kernels" and "replica_batch" in rule.require
    assert rule.when_names == compile_expr(SGL.serving.ep_kernels.when).names
    assert {"batch", "mtp", "world"} <= rule.names


def test_a_profile_without_ep_kernels_reads_the_condition_false() -> None:
    """A profile without serving.ep_kernels never runs them: a rule on `ep_kernels` never applies there."""
    assert dict(load_framework("trtllm").rule_aliases)["ep_kernels"] == "false"


def test_a_named_expression_naming_itself_is_refused() -> None:
    with pytest.raises(InputError, match="through itself"):
        compile_expr("a > 1", (("a", "a + 1"),))


def test_a_decode_batch_at_the_cap_passes_check() -> None:
    """32,768 requests over 32 attention-DP ranks: 1,024 a rank, the cap itself; with MTP 1, 16,384 requests are
    512 a rank x 2 = 1,024. The command raises the env to 1,024 and starts."""
    assert _violations(32 * 1024) == []
    assert _violations(32 * 512, mtp=1) == []
    out = emit_launch(SGL, V3, H100, make_parallel_config(32), LaunchInputs(batch=32 * 1024, max_model_len=256))
    assert {n["env"].get("SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK") for n in out["nodes"]} == {"1024"}


@pytest.mark.parametrize("batch, mtp", [(32 * 1024 + 32, 0), (32 * 512 + 32, 1)])
def test_a_decode_batch_past_the_cap_is_refused_naming_the_rule(batch: int, mtp: int) -> None:
    """32,800 requests: 1,025 a rank; 16,416 with MTP 1: 513 x 2 = 1,026. Both past 1,024."""
    (v,) = _violations(batch, mtp)
    assert v.startswith(f"[{RULE}]") and "1024" in v and "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK" in v


def test_outside_the_deepep_condition_the_cap_does_not_apply() -> None:
    """MoE TP 2 keeps the default all-gather command (no DeepEP): 32,800 requests meet no token cap."""
    r = api.check("deepseek-v3", "h100_sxm", 32, phase="decode", batch=32 * 1025, seq_len=256, moe_tp_size=2,
                  framework="sglang")
    assert not any(RULE in v for vs in r.review.violations.values() for v in vs)


# MTP 5 is the case the rule decides (the profile less it goes past the cap); MTP 0 (~2 s) runs in the slow suite
@pytest.mark.parametrize("mtp", [pytest.param(0, marks=pytest.mark.slow), 5])
def test_solve_never_returns_a_deepep_plan_past_the_cap(mtp: int) -> None:
    """deepseek-v3 on 72 H100, sglang, throughput decode (ISL 4096, OSL 256). With MTP 5 the profile less the rule
    returns PP3 x attention TP 2 at 2,048 requests with DeepEP (a stage's 12 attention replicas: 171 a replica x 6
    = 1,026 tokens a rank); with the rule no candidate dispatches past 1,024."""
    prec = resolve_precision(V3, H100)
    scenario = Scenario(kind="throughput", phase="decode", mtp=mtp)

    def past_cap(fw) -> list:
        res = plan(V3, H100, prec, fw, 72, scenario, SolverParams(time_limit_s=10.0), top=10, explain_binding=False)
        assert res.candidates
        return [(c.batch, c.config) for c in res.candidates
                if ep_kernels_hold(SGL.serving.ep_kernels.when, c.config, H100)
                and _tokens_per_rank(c.config, c.batch, mtp) > 1024]

    assert past_cap(SGL) == []
    if mtp == 5:  # the rule is what keeps it out
        # the PP3 plan past the cap is one SGLang also refuses for PP with MTP (C.pp_mtp_prefill_pool_only): both
        # rules left out, so that the token cap's own effect shows
        without = SGL.model_copy(update={"rules": [r for r in SGL.rules
                                                   if r.id not in (RULE, "C.pp_mtp_prefill_pool_only")]})
        assert past_cap(without)
