"""Speculative decoding with the model's MTP (next-n) layers: what a decode step at depth N runs, and the TPOT
the serving figures make of it.

An engine's decode step at depth N (SGLang eagle_worker_v2, topk 1; vLLM's MTP proposer alike) verifies N + 1
tokens per sequence through the stack, then runs N draft passes through the MTP module: the first over the
verified tokens (the draft model's extend, padded to all N + 1 per sequence), the other N - 1 over the one
token each sequence drafted last."""
from __future__ import annotations

import pytest

from solver.estimate.compute import Work, factors_for
from solver.estimate.serving import estimate
from solver.estimate.step import step_cost, step_items
from solver.estimate.step_sums import module_sums, step_sums
from solver.estimate.workload import Workload, mtp_tokens_per_step
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

# MiMo-7B: 36 decoder layers and one MTP layer of the same shape (GQA 32/8 x 128, gated FFN 4096 -> 11008)
FFN_FLOPS_PER_TOKEN = 3 * 2 * 4096 * 11008  # gate, up, down: 270,532,608


def _mimo_step(sequences: int, depth: int):
    m, hw = load_model("mimo-7b-base"), load_hardware("h200_sxm")
    f = factors_for(hw, load_framework("sglang").efficiency_for(hw))
    w = Work("decode", new_tokens=sequences * (1 + depth), context=2048, sequences=sequences,
             logits_tokens=sequences * (1 + depth))
    return step_cost(m, hw, make_parallel_config(1), resolve_precision(m, hw), f, w, mtp_layers=depth)


def _ffn_flops(step, draft: bool) -> float:
    return sum(o.flops for o in step.ops if o.module == "dense_ffn" and o.name.startswith("mtp_") == draft)


def test_mtp_draft_passes_after_the_first_run_one_token_per_sequence() -> None:
    """4 sequences at depth 3: the stack verifies 4 x 4 = 16 tokens in each of its 36 layers; the MTP layer runs
    once over those 16 (its first draft pass) and twice over 4 (one drafted token per sequence).
    FFN token-layers: 36 x 16 + 16 = 592 at the verified tokens, 2 x 4 = 8 in the later draft passes
    (600 in all, where costing every draft pass at the verified tokens made 36 x 16 + 3 x 16 = 624)."""
    step = _mimo_step(4, 3)
    assert _ffn_flops(step, draft=False) == 592 * FFN_FLOPS_PER_TOKEN == 160_155_303_936
    assert _ffn_flops(step, draft=True) == 8 * FFN_FLOPS_PER_TOKEN == 2_164_260_864


def test_mtp1_runs_its_one_draft_pass_over_the_verified_tokens() -> None:
    """Depth 1: 4 sequences verify 4 x 2 = 8 tokens; the one draft pass is the extend over those 8, so the FFN
    runs (36 + 1) x 8 = 296 token-layers and no later pass."""
    step = _mimo_step(4, 1)
    assert _ffn_flops(step, draft=False) == 296 * FFN_FLOPS_PER_TOKEN
    assert _ffn_flops(step, draft=True) == 0


def test_the_draft_heads_read_one_token_per_sequence_per_pass() -> None:
    """Each of the 3 draft passes samples one token per sequence through the shared LM head:
    3 x 4 tokens x 2 x 4096 x 151,680 (vocabulary) FLOPs."""
    step = _mimo_step(4, 3)
    head = sum(o.flops for o in step.ops if o.name.startswith("mtp_") and o.module == "lm_head")
    assert head == 3 * 4 * 2 * 4096 * 151_680 == 14_910_750_720


@pytest.mark.parametrize("attention_only,modules", [(False, None), (True, None),
                                                    (False, frozenset({"routed_experts"})),
                                                    (False, frozenset({"attention", "lm_head"}))])
def test_the_planner_sums_hold_the_one_token_draft_passes(attention_only: bool, modules) -> None:
    """The planner's cached sums (step_sums) equal the records' sums chunk by chunk at depth 3, the one-token
    draft passes included (DeepSeek-V3 on H200, attention TP2, MoE TP4, a decode step of 8 sequences)."""
    m, hw = load_model("deepseek-v3"), load_hardware("h200_sxm")
    prec, f = resolve_precision(m, hw), factors_for(hw)
    pc = make_parallel_config(8, attn_tp_size=2, moe_tp_size=4)
    w = Work("decode", 8 * 4, 4096, 8, 8 * 4)
    items = step_items(m, hw, pc, prec, f, w, 3, attention_only, modules)
    expect = [(module_sums(ops, comms), n, draft) for ops, comms, n, draft in items]
    assert any(draft and n == 2 for _, n, draft in expect), "the two one-token passes are a chunk of their own"
    assert step_sums(m, hw, pc, prec, f, w, 3, attention_only, modules) == expect


def test_tpot_at_mtp1_is_the_decode_step_over_one_plus_the_acceptance() -> None:
    """Decode of 16 sequences at 4K context, depth 1 accepted at 0.6: 1 + 0.6 = 1.6 tokens per step, so
    TPOT = the step as the engine runs it / 1.6, and tokens/s = 16 x 1.6 / step."""
    m, hw = load_model("deepseek-v3"), load_hardware("h200_sxm")
    fw = load_framework("sglang")
    f = factors_for(hw, fw.efficiency_for(hw))
    pc = make_parallel_config(8, attn_tp_size=8, dense_tp_size=8, moe_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)
    prec = resolve_precision(m, hw)
    one = estimate(m, hw, pc, prec, f, Workload("decode", batch=16, seq_len=4096, mtp=1, mtp_accept=0.6))
    assert mtp_tokens_per_step(1, 0.6) == pytest.approx(1.6)
    step_s = one.tpot_s * 1.6
    assert one.output_tokens_per_s == pytest.approx(16 * 1.6 / step_s)
    # the same step at acceptance 0.9 emits 1.9 tokens: TPOT scales by 1.6 / 1.9
    nine = estimate(m, hw, pc, prec, f, Workload("decode", batch=16, seq_len=4096, mtp=1, mtp_accept=0.9))
    assert nine.tpot_s == pytest.approx(one.tpot_s * 1.6 / 1.9)
    # and the step holds the draft pass: slower than the step without MTP, which emits one token
    off = estimate(m, hw, pc, prec, f, Workload("decode", batch=16, seq_len=4096))
    assert off.tpot_s < step_s


def test_a_model_without_mtp_layers_is_refused_naming_the_config_keys() -> None:
    """--mtp 1 on Llama-3.1-8B (none of the next-n keys in its config): one line, exit 2, naming the flag and
    the keys that would give the model MTP layers."""
    from click.testing import CliRunner

    from solver.cli.main import main

    r = CliRunner().invoke(main, ["solve", "llama-3.1-8b", "--hardware", "h200_sxm", "--cards", "1", "--mtp", "1"])
    assert r.exit_code == 2
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert lines == ["error: --mtp: Meta-Llama-3.1-8B has no MTP (next-n) layers in its published config "
                     "(models/meta-llama--Meta-Llama-3.1-8B.json sets none of num_nextn_predict_layers"
                     " / mtp_num_hidden_layers / num_mtp_modules); pass a config.json that sets one to plan MTP; "
                     "use --mtp 0"]


def test_tpot_at_mtp1_from_the_decode_step_parts_estimate_prints() -> None:
    """DeepSeek-R1 on 8 x H200 under SGLang, all TP8, one request of 1K / 1K at MTP1 (acceptance 0.7):
    `estimate --format json` prints the decode step's GPU time (breakdown.decode.step_ms); the engine adds
    seq_layer_s per sequence per layer pass, 61 layers + 1 draft pass = 62, so
    TPOT = (step_ms + 62 x seq_layer_s x 1 sequence) / (1 + 0.7)."""
    import json

    from click.testing import CliRunner

    from solver.cli.main import main

    r = CliRunner().invoke(main, ["estimate", "deepseek-r1", "--hardware", "h200_sxm", "--cards", "8",
                                  *[a for k in ("attn", "moe", "dense", "embed", "lmhead") for a in (f"--{k}-tp", "8")],
                                  "--isl", "1024", "--osl", "1024", "--concurrency", "1", "--mtp", "1",
                                  "--framework", "sglang", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    hw = load_hardware("h200_sxm")
    f = factors_for(hw, load_framework("sglang").efficiency_for(hw))
    step_ms = d["breakdown"]["decode"]["step_ms"]
    assert d["tpot_ms"] == pytest.approx((step_ms + 62 * f.seq_layer_s * 1e3) / 1.7, rel=1e-9)


def test_a_draft_pass_samples_where_the_step_samples() -> None:
    """A one-token draft pass keeps the step's layout: 8 sequences at depth 3 on one rank sample 8 draft tokens;
    under CP 4 whose ranks keep whole copies (decode_layout's `copies`) the busiest rank decodes 8 / 4 = 2
    sequences, 2 x 4 = 8 new tokens, and samples the replica's whole 32 verified tokens: 4 per new token, so its
    draft pass samples 2 x 4 = 8 tokens and all-gathers over the 4 copies."""
    from solver.estimate.step_parts import decode_layout, draft_work

    w = Work("decode", new_tokens=32, context=4096, sequences=8, logits_tokens=32)
    one = draft_work(w)
    assert (one.new_tokens, one.sequences, one.logits_tokens) == (8, 8, 8)
    pc, cw = decode_layout(make_parallel_config(4, cp_size=4), w, copies=True)
    assert (cw.new_tokens, cw.sequences, cw.logits_tokens, cw.cp_copies) == (8, 2, 32, 4)
    d = draft_work(cw)
    assert (d.new_tokens, d.sequences, d.logits_tokens, d.cp_copies) == (2, 2, 8, 4)


# --- estimate --from-csv: a measured row that ran MTP is priced with its draft tokens -------------------------------
_ROW = {"backend": "sglang", "model": "deepseek-v3", "system": "h200_sxm", "precision": "fp8", "isl": 1024,
        "osl": 1024, "concurrency": 8, "tp": 8, "attention_dp": 1, "moe_tp": 8, "moe_ep": 1}


def test_a_csv_rows_mtp_columns_reach_the_workload() -> None:
    """mtp 2 at mtp_accept 0.8: the row's workload holds depth 2 and rate 0.8, and its TPOT is the estimate of that
    workload (not of the same row without MTP)."""
    from solver.measured import case_from_row, factors, predict_row

    case = case_from_row({**_ROW, "mtp": 2, "mtp_accept": 0.8})
    assert (case.workload.mtp, case.workload.mtp_accept) == (2, 0.8)
    est = estimate(case.model, case.hw, case.pc, case.prec, factors(case), case.workload)
    assert predict_row({**_ROW, "mtp": 2, "mtp_accept": 0.8}).tpot_s == est.tpot_s
    assert predict_row({**_ROW, "mtp": 2, "mtp_accept": 0.8}).tpot_s != predict_row(_ROW).tpot_s
    # blank cells: MTP off, as a row without the columns
    assert case_from_row({**_ROW, "mtp": "", "mtp_accept": ""}).workload.mtp == 0


@pytest.mark.parametrize("cells,field,text", [
    ({"model": "llama-3.1-8b", "tp": 1, "moe_tp": "", "mtp": 1}, "mtp", "has no MTP (next-n) layers"),
    ({"mtp": 1, "mtp_accept": 1.5}, "mtp_accept", "must be a fraction in (0, 1]"),
    ({"mtp_accept": 0.8}, "mtp_accept", "needs the mtp column N > 0"),
    ({"backend": "cann-recipes", "system": "atlas_a3", "precision": "int8", "mtp": 4}, "mtp",
     "exceeds cann-recipes's maximum MTP depth 3"),
])
def test_a_csv_rows_mtp_cells_are_refused_naming_the_column(cells: dict, field: str, text: str) -> None:
    from solver.errors import InputError
    from solver.measured import case_from_row

    with pytest.raises(InputError) as exc:
        case_from_row({**_ROW, **cells})
    assert exc.value.field == field and text in exc.value.problem


def test_a_disaggregated_csv_rows_mtp_reaches_the_decode_pool() -> None:
    """The disaggregated row's workload carries the depth and rate the decode pool drafts at."""
    from solver.measured_disagg import case_from_disagg_row

    row = {k: v for k, v in _ROW.items() if k not in ("tp", "attention_dp", "moe_tp", "moe_ep")}
    row.update(prefill_tp=8, prefill_moe_tp=8, decode_tp=8, decode_moe_tp=8, mtp=1, mtp_accept=0.6)
    wl = case_from_disagg_row(row).workload
    assert (wl.mtp, wl.mtp_accept) == (1, 0.6)
