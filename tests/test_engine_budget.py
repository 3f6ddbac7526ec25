"""The estimate prices the engine the command launches: the token budget its command sets (one expression, the
profile's step_budget launch argument, read by the launch and the estimate alike), what a decode-first step
leaves of it to prompts, and the prompt's MTP pass in the prefill step's per-sequence layer count (the full
estimate, the planner's tables and its floors alike)."""
from __future__ import annotations

import math

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from solver.cli.main import main
from solver.estimate.closed_loop import prompt_room, serving_shape
from solver.estimate.compute import factors_for
from solver.estimate.disagg import DisaggWorkload, prompts_per_step
from solver.estimate.engine_step import step_layers
from solver.estimate.figures import step_plan
from solver.estimate.workload import Workload, token_budget
from solver.plan import cpsat
from solver.plan.table_build import build_tables
from solver.space.domains import build_space
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.launch_spec import LaunchArg
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario

RULE = "max(token_budget, replica_batch * (1 + mtp))"  # vllm.yaml's --max-num-batched-tokens


def _factors(fw: str = "vllm", hw: str = "h200_sxm"):
    h = load_hardware(hw)
    return factors_for(h, load_framework(fw).efficiency_for(h))


def _serving(concurrency: int, mtp: int, isl: int = 128) -> Workload:
    return Workload("serving", isl=isl, osl=128, concurrency=concurrency, mtp=mtp)


def _launch_words(concurrency: int, mtp: int) -> list[str]:
    r = CliRunner().invoke(main, ["solve", "mimo-7b-base", "--hardware", "h200_sxm", "--cards", "1", "--isl", "128",
                                  "--osl", "128", "--concurrency", str(concurrency), "--mtp", str(mtp),
                                  "--framework", "vllm", "--format", "launch"])
    assert r.exit_code == 0, r.output
    return r.output.split()


def test_the_budget_rule_has_one_home_the_launch_argument_the_estimate_reads() -> None:
    """vLLM and vllm-ascend mark their --max-num-batched-tokens as the step budget; the factors carry its text."""
    for fw in ("vllm", "vllm-ascend"):
        assert load_framework(fw).launch.step_budget_rule() == RULE
    assert _factors().token_budget_rule == RULE
    assert _factors("sglang").token_budget_rule is None  # its command leaves the chunk size at the default


def test_the_estimate_prices_the_budget_the_launched_engine_gets() -> None:
    """MiMo-7B on one H200 at concurrency 3,000, MTP 3: the command gives the engine max(8,192, 3,000 x (1 + 3))
    = 12,000 tokens a step, and the estimate's serving step plan prices 12,000 (was the default 8,192)."""
    words = _launch_words(3000, 3)
    launched = int(words[words.index("--max-num-batched-tokens") + 1])
    sp = step_plan(load_model("mimo-7b-base"), make_parallel_config(1), _factors(), _serving(3000, 3))
    assert launched == sp.wl.token_budget == 12_000


def test_without_mtp_a_concurrency_past_the_default_raises_the_budget_to_one_token_a_sequence() -> None:
    """No MTP, 10,000 requests on one replica: max(8,192, 10,000 x 1) = 10,000; on 2 replicas (TP1 x DP2 of a
    dense model: engines of their own) each holds ceil(10,000 / 2) = 5,000 < 8,192: the default stays."""
    f, m = _factors(), load_model("mimo-7b-base")
    assert step_plan(m, make_parallel_config(1), f, _serving(10_000, 0)).wl.token_budget == 10_000
    assert token_budget(_serving(10_000, 0), f, 1, math.ceil(10_000 / 2)) == 8192


def test_below_the_default_the_budget_is_the_profiles_and_a_workloads_own_budget_wins() -> None:
    """100 x (1 + 3) = 400 < 8,192 keeps the default; a workload's own budget (4,096) is taken as given."""
    f = _factors()
    assert token_budget(_serving(100, 3), f, 1, 100) == 8192
    assert token_budget(Workload("serving", isl=128, osl=128, concurrency=3000, mtp=3, token_budget=4096), f, 1,
                        3000) == 4096


def test_a_step_budget_argument_reads_only_what_the_estimate_knows_and_is_unconditional() -> None:
    with pytest.raises(ValidationError, match="may read mtp, replica_batch, token_budget only"):
        LaunchArg(flag="--max-num-batched-tokens", value="max(token_budget, world)", step_budget=True)
    with pytest.raises(ValidationError, match="needs a value and no when"):
        LaunchArg(flag="--max-num-batched-tokens", value=RULE, when="mtp > 0", step_budget=True)


def test_decode_first_prompts_take_what_the_other_running_decodes_leave_of_the_budget() -> None:
    """Budget 12,000, 3,000 running at MTP 3: the other 2,999 decode 2,999 x 4 = 11,996 tokens, leaving 4 for a
    prompt: one prompt a step, its 128 tokens in ceil(128 / 4) = 32 chunks. Prefill-first steps hold prompts only:
    12,000 // 128 = 93 prompts, one chunk each."""
    assert prompt_room(12_000, 3000, 3) == 4
    wl = Workload("serving", isl=128, osl=128, concurrency=3000, mtp=3, token_budget=12_000)
    first = serving_shape(wl, 1, 1e6, decode_first=True)
    assert (first.prompts_per_step, first.chunks) == (1, 32)
    apart = serving_shape(wl, 1, 1e6, decode_first=False)
    assert (apart.prompts_per_step, apart.chunks) == (93, 1)


def test_at_the_default_budget_the_running_decodes_take_their_tokens_first() -> None:
    """8,192 tokens, 64 running, no MTP, 1,024-token prompts: 8,192 - 63 = 8,129 left, 8,129 // 1,024 = 7 prompts
    a step (8 if the decodes took none); the room never falls below one token (a budget 100 under 200 running)."""
    wl = Workload("serving", isl=1024, osl=128, concurrency=64, token_budget=8192)
    assert serving_shape(wl, 1, 1e6, decode_first=True).prompts_per_step == 7
    assert prompt_room(100, 200, 0) == 1


def test_a_prefill_worker_prices_the_budget_its_command_sets_over_its_share_of_the_requests() -> None:
    """Disaggregated, 3,000 requests over 1 prefill worker of 1 replica at MTP 3: max(8,192, 12,000) = 12,000
    tokens, all for prompts (it decodes nothing): 12,000 // 128 = 93 prompts a step."""
    wl = DisaggWorkload(isl=128, osl=128, concurrency=3000, mtp=3)
    assert prompts_per_step(wl, _factors(), 1, 3000) == 93


def test_the_prefill_steps_layers_count_the_prompts_mtp_pass() -> None:
    """MiMo-7B: 36 layers and an MTP module of one layer. A prefill step with MTP on runs the module once over its
    prompts whatever the depth (workload.prompt_draft_passes): 36 + 1 = 37 layers a sequence, at MTP 3 in the
    prefill and the serving step plans alike; MTP off: 36; a decode step at depth 3: 36 + 3 = 39."""
    m, pc, f = load_model("mimo-7b-base"), make_parallel_config(1), _factors()
    assert step_layers(m, pc, "prefill", 4, 1) == 37
    assert step_plan(m, pc, f, Workload("prefill", batch=4, seq_len=128, mtp=3)).pre_layers == 37
    served = step_plan(m, pc, f, _serving(64, 3))
    assert (served.pre_layers, served.dec_layers) == (37, 39)
    assert step_plan(m, pc, f, _serving(64, 0)).pre_layers == 36


@pytest.mark.slow  # a whole plan per question (CI's slow suite runs it)
def test_the_planner_floors_at_the_prompts_mtp_pass_stay_floors() -> None:
    """DeepSeek-V3.2 (one MTP layer) at MTP 1 on 32 Atlas A3 dies, generic engine: the floors key each step's
    tables at the MTP passes they were costed at (the prompt's one pass, the decode's drafts), so a floor is a table
    costed at the same passes and a smaller work: at most the layout's own. The planner's answers with the floors
    are its answers without them."""
    m, h, fw = load_model("deepseek-v3.2"), load_hardware("atlas_a3"), load_framework("generic")
    prec = resolve_precision(m, h, weight_dtype="int8")
    sc = Scenario(kind="balanced", isl=2048, osl=128, max_concurrency=256, mtp=1)
    fac = factors_for(h, fw.efficiency_for(h))
    t = build_tables(m, h, prec, fac, fw, build_space(m, h, fw, 32, sc), sc)
    answers = []
    for floors in (True, False):
        p = cpsat.Planner(t, m, h, fw, sc)
        p.use_floors = floors
        answers.append(p.class_optima())
    assert answers[0] == answers[1] and answers[0]
