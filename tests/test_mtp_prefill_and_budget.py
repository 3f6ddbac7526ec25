"""MTP beyond the decode step: the prefill step's draft pass over the prompts, the token budget that holds the drafts
of every running sequence, and what the answer says of MTP.

An engine with MTP on runs the draft model's extend over each prompt's hidden states in the prefill step (SGLang
eagle_worker_v2 _draft_extend_for_prefill: it fills the MTP layer's cache and drafts the first token), once
whatever the depth; a decode step at depth N schedules 1 + N tokens per running sequence, which vLLM's scheduler
draws from max_num_batched_tokens (v1/core/sched/scheduler.py)."""
from __future__ import annotations

import itertools

import pytest
from click.testing import CliRunner

from solver.cli.main import main
from solver.estimate.compute import Work, factors_for
from solver.estimate.serving import estimate, prefill_step, serving_steps
from solver.estimate.closed_loop import serving_shape
from solver.estimate.step import step_cost
from solver.estimate.workload import Workload
from solver.rank.explain import mtp_clause
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

from test_planner_exact import _configs, _instance, configs_match_the_estimate  # noqa: E402

# MiMo-7B: 36 decoder layers and one MTP layer of the same shape (gated FFN 4096 -> 11008)
FFN_FLOPS_PER_TOKEN = 3 * 2 * 4096 * 11008  # gate, up, down: 270,532,608


def _mimo():
    m, hw = load_model("mimo-7b-base"), load_hardware("h200_sxm")
    f = factors_for(hw, load_framework("sglang").efficiency_for(hw))
    return m, hw, make_parallel_config(1), resolve_precision(m, hw), f


def _ffn_flops(step) -> float:
    return sum(o.flops for o in step.ops if o.module == "dense_ffn")


@pytest.mark.parametrize("depth", [1, 3])
def test_a_prefill_step_runs_the_mtp_layer_once_over_the_prompt_at_any_depth(depth: int) -> None:
    """One 1,024-token prompt: the FFN runs in the 36 layers and the MTP layer, (36 + 1) x 1,024 = 37,888
    token-layers at depth 1 or 3 (36,864 with MTP off); no draft LM head runs in a prefill step."""
    m, hw, pc, prec, f = _mimo()
    on = estimate(m, hw, pc, prec, f, Workload("prefill", batch=1, seq_len=1024, mtp=depth))
    off = estimate(m, hw, pc, prec, f, Workload("prefill", batch=1, seq_len=1024))
    assert _ffn_flops(on.prefill) == 37 * 1024 * FFN_FLOPS_PER_TOKEN == 10_249_939_451_904
    assert _ffn_flops(off.prefill) == 36 * 1024 * FFN_FLOPS_PER_TOKEN
    assert not [o for o in on.prefill.ops if o.name.startswith("mtp_") and o.module == "lm_head"]
    assert on.ttft_s > off.ttft_s


def test_the_serving_prefill_step_holds_the_mtp_pass_as_the_estimate_prices_it() -> None:
    """Serving at concurrency 1, ISL 1,024, depth 2: the prefill step of one prompt runs (36 + 1) x 1,024 FFN
    token-layers, and the step the serving formulas take (serving_steps, prefill_step) is the estimate's."""
    m, hw, pc, prec, f = _mimo()
    wl = Workload("serving", isl=1024, osl=128, concurrency=1, mtp=2, token_budget=8192)
    e = estimate(m, hw, pc, prec, f, wl)
    assert _ffn_flops(e.prefill) == 37 * 1024 * FFN_FLOPS_PER_TOKEN
    pre, _ = serving_steps(m, hw, pc, prec, f, wl, serving_shape(wl, 1, 1.0))
    assert pre.time_s == e.prefill.time_s
    assert prefill_step(m, hw, pc, prec, f, 1024, 1, mtp=2).time_s == e.prefill.time_s
    w = Work("prefill", new_tokens=1024, context=1025 / 2, sequences=1, logits_tokens=1)
    assert step_cost(m, hw, pc, prec, f, w, mtp_layers=1).time_s == e.prefill.time_s


@pytest.mark.parametrize("case,fw,world,phase", [(("mimo-7b-base", "h200_sxm"), "vllm", 2, "prefill"),
                                                 (("mimo-7b-base", "h200_sxm"), "sglang", 2, "serving"),
                                                 (("deepseek-v3", "h200_sxm"), "sglang", 8, "serving")])
def test_the_planner_tables_sum_to_the_estimate_with_the_prompts_mtp_pass(case, fw, world, phase) -> None:
    """MTP 1, ISL 4,096: every configuration's figures from the summed tables equal the full estimate's (its
    prefill step holding the MTP pass over the prompts), on the first 40 configurations the memory cap admits
    at the tables' smallest and largest concurrency."""
    m, h, f, prec, fac, sc, t = _instance(case[0], case[1], fw, world, phase, 4096, mtp=1)
    assert sc.mtp == 1
    configs = ((b, p) for b in (t.batches[0], t.batches[-1]) for p in itertools.islice(_configs(t, b), 40))
    assert configs_match_the_estimate(m, h, prec, fac, sc, t, configs)


def _launch_budget(mtp: int) -> int:
    r = CliRunner().invoke(main, ["solve", "mimo-7b-base", "--hardware", "h200_sxm", "--cards", "1", "--isl", "128",
                                  "--osl", "128", "--concurrency", "3000", "--mtp", str(mtp), "--framework", "vllm",
                                  "--format", "launch"])
    assert r.exit_code == 0, r.output
    words = r.output.split()
    assert words[words.index("--max-num-seqs") + 1] == "3000"
    return int(words[words.index("--max-num-batched-tokens") + 1])


def test_vllms_token_budget_holds_each_running_sequences_drafts() -> None:
    """3,000 running sequences at MTP 3 schedule 3,000 x (1 + 3) = 12,000 tokens a decode step, which the launch's
    --max-num-batched-tokens holds (vLLM's default on an H200, 8,192, would leave 3,000 - 8,192 // 4 = 952 of
    them waiting each step); at MTP 0 the 3,000 tokens fit the default, which stays."""
    assert _launch_budget(3) == 12_000
    assert _launch_budget(0) == 8192


def test_the_explain_lines_say_the_mtp_depth_acceptance_and_tokens_per_step() -> None:
    """Depth 2 at acceptance 0.6: 1 + 0.6 + 0.6^2 = 1.96 tokens per decode step; MTP off (or a model without
    MTP layers): no line."""
    m = load_model("mimo-7b-base")
    line, = mtp_clause(m, Workload("serving", isl=1024, osl=128, concurrency=8, mtp=2, mtp_accept=0.6))
    assert line.startswith("MTP depth 2 at acceptance 0.6: 1 + 0.6 + 0.6^2 = 1.96 tokens per decode step")
    assert "verifies 3 tokens per sequence" in line and "2 draft passes" in line
    assert mtp_clause(m, Workload("serving", isl=1024, osl=128, concurrency=8)) == []
    assert mtp_clause(load_model("llama-3.1-8b"), Workload("serving", isl=1024, osl=128, concurrency=8, mtp=2)) == []


def test_solve_explain_prints_the_mtp_clause_as_a_line_of_its_own() -> None:
    """solve --mtp 1 --mtp-accept 0.6 --explain: one line says 1 + 0.6 = 1.60 tokens per decode step (not a
    'why not' line)."""
    r = CliRunner().invoke(main, ["solve", "mimo-7b-base", "--hardware", "h200_sxm", "--cards", "1", "--mtp", "1",
                                  "--mtp-accept", "0.6", "--framework", "sglang", "--explain"])
    assert r.exit_code == 0, r.output
    lines = [ln for ln in r.output.splitlines() if "MTP depth" in ln]
    assert len(lines) == 1 and lines[0].startswith("MTP depth 1 at acceptance 0.6: 1 + 0.6 = 1.60 tokens per decode")


def test_an_acceptance_rate_on_a_prefill_is_refused_by_estimate_and_check_with_one_reason(tmp_path) -> None:
    """A prefill step runs the MTP layer once but accepts no draft token: estimate's --mtp-accept and a deployment
    file's mtp_accept are refused, naming each its own field, with the same reason."""
    from solver import api
    from solver.errors import InputError

    with pytest.raises(InputError) as by_estimate:
        api.estimate("mimo-7b-base", "h200_sxm", 1, phase="prefill", batch=1, seq_len=1024, mtp=1, mtp_accept=0.7)
    path = tmp_path / "dep.yaml"
    path.write_text("model: mimo-7b-base\nhardware: h200_sxm\nworld_size: 1\nmtp: 1\nmtp_accept: 0.7\n"
                    "parallel_config: {attn_tp_size: 1}\nworkload: {phase: prefill, batch: 1, seq_len: 1024}\n")
    with pytest.raises(InputError) as by_check:
        api.check(config=path)
    assert by_estimate.value.field == "mtp_accept" and by_check.value.field == f"{path}: mtp_accept"
    assert by_estimate.value.problem == by_check.value.problem
    assert "runs the MTP layer once" in by_check.value.problem


def test_the_mtp_line_speaks_of_the_phases_the_workload_runs() -> None:
    """A decode-only workload has no prefill step to mention; a prefill-only one no decode step, so no acceptance
    (it drafts nothing to accept): its line says only the prompts' draft pass."""
    m = load_model("mimo-7b-base")
    dec, = mtp_clause(m, Workload("decode", batch=8, seq_len=2048, mtp=1, mtp_accept=0.6))
    assert dec.startswith("MTP depth 1 at acceptance 0.6: 1 + 0.6 = 1.60 tokens per decode step")
    assert "prefill" not in dec
    pre, = mtp_clause(m, Workload("prefill", batch=2, seq_len=2048, mtp=1))
    assert pre == "MTP depth 1: each prefill step runs one draft pass through the MTP layer over the prompts"
    both, = mtp_clause(m, Workload("serving", isl=1024, osl=128, concurrency=8, mtp=1))
    assert both.endswith("each prefill step runs one draft pass through the MTP layer over the prompts")
