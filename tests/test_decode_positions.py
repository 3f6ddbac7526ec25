"""A decode step's queries sit at the running sequences' positions, not at one point: in steady serving the
sequences spread evenly over ISL + 1 .. ISL + OSL (compute.Work.span), and a key count that is not linear in the
position (a sliding window near its cap: concave; a chunked mask: a sawtooth) is averaged over them with the
same sums prefill uses (compute.query_positions)."""
from __future__ import annotations

import pytest

from solver.estimate.compute import Work, factors_for, mean_keys_capped, mean_keys_chunked
from solver.estimate.figures import step_plan
from solver.estimate.serving import estimate
from solver.estimate.workload import Workload
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision


def _decode(isl: int, osl: int, batch: float = 8.0) -> Work:
    return Work("decode", new_tokens=batch, context=isl + osl / 2, sequences=batch, logits_tokens=batch, span=osl)


def test_a_window_near_its_cap_averages_its_keys_over_the_decode_positions():
    # positions 1025 .. 9216 under a 4096 window: 1025..4096 see p keys (3072 of them, sum 4096*4097/2 -
    # 1024*1025/2 = 7,865,856), 4097..9216 see 4096 (5120 x 4096 = 20,971,520): 28,837,376 / 8192 = 3520.1875
    assert mean_keys_capped(_decode(1024, 8192), 4096) == pytest.approx(3520.1875, abs=1e-9)
    # the point (context 5120) would read the cap
    assert mean_keys_capped(Work("decode", 8, 5120.0, 8, 8), 4096) == 4096


def test_a_chunked_mask_averages_its_keys_over_the_decode_positions_across_a_chunk_boundary():
    # Llama-4 chunk 8192, positions 1025 .. 9216: 1025..8192 see p keys (sum 8192*8193/2 - 1024*1025/2 =
    # 33,033,728), 8193..9216 see 1..1024 (524,800): 33,558,528 / 8192 = 4096.5; the point 5120 sees 5120
    assert mean_keys_chunked(_decode(1024, 8192), 8192) == pytest.approx(4096.5, abs=1e-9)
    # ISL 7168 / OSL 2048, positions 7169 .. 9216: (7169..8192: 7,864,832) + (1..1024: 524,800) over 2048 =
    # 4096.5; the point 8192 sees the whole chunk
    assert mean_keys_chunked(_decode(7168, 2048), 8192) == pytest.approx(4096.5, abs=1e-9)
    assert mean_keys_chunked(Work("decode", 8, 8192.0, 8, 8), 8192) == 8192


def test_a_window_the_positions_stay_under_reads_their_mean_position():
    # positions 513 .. 768 under a 1024 window: every one sees p keys, mean (513 + 768) / 2 = 640.5
    assert mean_keys_capped(_decode(512, 256), 1024) == pytest.approx(640.5, abs=1e-9)


def test_a_decode_step_without_a_span_sits_at_its_context():
    w = Work("decode", 8, 5120.0, 8, 8)
    assert mean_keys_capped(w, 4096) == 4096 and mean_keys_chunked(w, 8192) == 5120


def test_the_decode_work_spreads_over_the_output_where_the_workload_knows_it():
    m = load_model("llama-3.1-8b")
    hw = load_hardware("h100_sxm")
    pc = make_parallel_config(1)
    f = factors_for(hw)
    serving = step_plan(m, pc, f, Workload("serving", isl=1024, osl=8192, concurrency=4))
    assert serving.dec_work.context == 1024 + 4096 and serving.dec_work.span == 8192
    assert step_plan(m, pc, f, Workload.decode_of(4, 1024, 8192)).dec_work.span == 8192
    # `--phase decode --seq-len`: only the context is known
    assert step_plan(m, pc, f, Workload("decode", batch=4, seq_len=5120)).dec_work.span == 0


def test_full_attention_decode_is_costed_at_its_context_whatever_the_span():
    m, hw = load_model("llama-3.1-8b"), load_hardware("h100_sxm")
    pc, prec = make_parallel_config(1), resolve_precision(load_model("llama-3.1-8b"), hw)
    f = factors_for(hw)
    spread = estimate(m, hw, pc, prec, f, Workload.decode_of(4, 1024, 8192))
    point = estimate(m, hw, pc, prec, f, Workload("decode", batch=4, seq_len=1024 + 4096))
    assert spread.decode.time_s == point.decode.time_s


def test_a_chunked_model_decodes_faster_where_its_sequences_straddle_a_chunk_boundary():
    """Llama-4-Scout at ISL 7168 / OSL 2048: its chunked layers read 4096.5 keys on average, not the point's 8192
    (its full-attention layers still read 8192)."""
    m, hw = load_model("llama-4-scout"), load_hardware("h200_sxm")
    pc = make_parallel_config(8, attn_tp_size=8, moe_tp_size=8, dense_tp_size=8)
    prec, f = resolve_precision(m, hw), factors_for(hw)
    spread = estimate(m, hw, pc, prec, f, Workload.decode_of(64, 7168, 2048))
    point = estimate(m, hw, pc, prec, f, Workload("decode", batch=64, seq_len=7168 + 1024))
    assert spread.decode.time_s < point.decode.time_s
