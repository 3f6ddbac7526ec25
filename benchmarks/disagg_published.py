"""DeepSeek-R1 disaggregated on 96 H100 (12 nodes), 2K-token prompts, against published figures.

    python benchmarks/disagg_published.py [--osl N] [--tpot-ms MS ...] [--framework NAME]

Published (facts/measurements.md; never fitted on). The "Mechanism of #3" section sets the model's prefill step
against the step #3 implies (prefill_mechanism).

Published:
  #3  SGLang large-scale EP, H100 prefill, 4 nodes EP32, 16384 tokens per GPU: 57,674 / 54,543 / 50,302 input
      tokens/s per node at 1K / 2K / 4K prompts;
  #4  same, H100 decode, 9 nodes EP72, 256 sequences per GPU, 2K input: 22,282 output tokens/s per node;
  #1  DeepSeek's own: H800 decode EP144 (18 nodes), average KV 4,989 tokens: 14.8k output tokens/s per node at
      20-22 tokens/s per user.

Part 1 estimates the published configurations as published (like for like: the estimator, not the planner).
Part 3 puts SGLang's 96-H100 split (3 prefill nodes, 9 decode nodes) through the same serving model.
Part 2 runs the planner (`solve --serving disagg`) for 96 H100 at 2K prompts under each TPOT SLA and reports its
pools, per-node prefill throughput (the prefill pool's capacity, input tokens/s per node, comparable with #3,
which ran prefill flat out, and at the operating point) and per-node decode throughput (output tokens/s per decode
node), against #3/#4 and #1, and the comparison with the best aggregated plan on the same 96 cards.
The output length is not part of the published prefill/decode figures; it sets the ratio (--osl, default 1024).
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from solver.estimate.compute import factors_for  # noqa: E402
from solver.estimate.serving import Workload, estimate  # noqa: E402
from solver.plan.points import SolverParams  # noqa: E402
from solver.api import run_disagg  # noqa: E402
from solver.specs.framework import load_framework  # noqa: E402
from solver.specs.hardware_catalog import load_hardware  # noqa: E402
from solver.specs.model_catalog import load_model  # noqa: E402
from solver.specs.parallel import make_parallel_config  # noqa: E402
from solver.specs.precision import resolve_precision  # noqa: E402

MODEL = "deepseek-ai/DeepSeek-R1"
ISL = 2048
CARDS = 96
SGLANG_PREFILL_2K = 54543  # input tokens/s per node, #3 (2K prompts)
SGLANG_DECODE = 22282  # output tokens/s per node, #4
DEEPSEEK_DECODE = 14800  # output tokens/s per node, #1 (H800, 20-22 tokens/s per user)


def _split(step) -> str:
    """Where a step's time goes: the routed experts, the rest of compute, exposed communication."""
    experts = sum(o.time_s for o in step.ops if o.name == "routed_experts")
    return (f"routed experts {experts:.2f} s, other compute {step.compute_s - experts:.2f} s, exposed comm "
            f"{step.exposed_comm_s:.2f} s")


def _err(pred: float, pub: float) -> str:
    return f"{(pred / pub - 1) * 100:+.0f}%"


def like_for_like(framework: str) -> list[str]:
    m = load_model(MODEL)
    lines = ["Part 1: the published configurations, estimated as published (framework profile "
             f"{framework!r}, fitted factors applied)",
             f"{'#':>3}  {'setup':<62}{'published':>10}{'predicted':>11}{'error':>7}  detail"]
    fw = load_framework(framework)
    # 3: prefill EP32 on 4 nodes, attention DP32 (SGLang's DP attention), 16384 tokens per GPU = 8 prompts of 2K
    hw = load_hardware("h100_sxm")
    prec = resolve_precision(m, hw, None, None, None)
    f = factors_for(hw, fw.efficiency_for(hw))
    pc = make_parallel_config(32, attn_tp_size=1, moe_tp_size=1)
    per_gpu = 16384 // ISL
    e = estimate(m, hw, pc, prec, f, Workload("prefill", batch=32 * per_gpu, seq_len=ISL))
    v = e.output_tokens_per_s * ISL / (32 / hw.ranks_per_node)
    lines.append(f"{3:>3}  {'H100 prefill 4 nodes, attn DP32 + EP32, 8 x 2K prompts per GPU':<62}"
                 f"{SGLANG_PREFILL_2K:>10,}{v:>11,.0f}{_err(v, SGLANG_PREFILL_2K):>7}  step {e.ttft_s:.2f} s: "
                 f"{_split(e.prefill)}")
    # 4: decode EP72 on 9 nodes, 256 sequences per GPU at 2K input (context 2K + half of an unpublished output)
    pc = make_parallel_config(72, attn_tp_size=1, moe_tp_size=1)
    e = estimate(m, hw, pc, prec, f, Workload("decode", batch=72 * 256, seq_len=ISL))
    v = e.output_tokens_per_s / (72 / hw.ranks_per_node)
    lines.append(f"{4:>3}  {'H100 decode 9 nodes, attn DP72 + EP72, 256 seqs/GPU, ctx 2K':<62}"
                 f"{SGLANG_DECODE:>10,}{v:>11,.0f}{_err(v, SGLANG_DECODE):>7}  TPOT {e.tpot_s * 1e3:.1f} ms, "
                 f"mem {e.memory.total / 1e9:.1f} GB/rank{'' if e.memory.feasible else ' (does not fit)'}; step "
                 f"{_split(e.decode)}")
    # 1: DeepSeek decode EP144 on H800, average context 4989; batch per GPU from the published figures:
    # 14.8k tok/s per node / 8 GPUs at ~21 tok/s per user -> ~88 sequences per GPU
    hw = load_hardware("h800")
    prec = resolve_precision(m, hw, None, None, None)
    f = factors_for(hw, fw.efficiency_for(hw))
    pc = make_parallel_config(144, attn_tp_size=1, moe_tp_size=1)
    per = round(DEEPSEEK_DECODE / hw.ranks_per_node / 21)
    e = estimate(m, hw, pc, prec, f, Workload("decode", batch=144 * per, seq_len=4989))
    v = e.output_tokens_per_s / (144 / hw.ranks_per_node)
    lines.append(f"{1:>3}  {f'H800 decode 18 nodes, attn DP144 + EP144, {per} seqs/GPU, ctx 4989':<62}"
                 f"{DEEPSEEK_DECODE:>10,}{v:>11,.0f}{_err(v, DEEPSEEK_DECODE):>7}  TPOT {e.tpot_s * 1e3:.1f} ms "
                 f"({1 / e.tpot_s:.1f} tok/s/user; published 20-22)")
    return lines


def prefill_mechanism(framework: str) -> list[str]:
    """Where #3's prefill step goes in the model, against the step the published figure implies:

    - dispatch/combine bytes (modelled: specs/layers/moe.rdma_copies_share): the throughput (normal-mode) EP
      kernels cross RDMA once per remote node a token's experts sit on, not once per token-expert pair;
    - grouped GEMM rate (not modelled: a what-if from the model's own op costs, no fit): the routed experts run
      at `grouped_gemm` x the dense GEMM's FLOP/s, a fraction fitted on the aggregated rows, applied at every
      size; at 16,384 prompt tokens per GPU an expert on EP32 sees ~16K rows, a GEMM as large as the dense ones.
    """
    from solver.specs.layers.moe import rdma_copies_share

    m, hw, fw = load_model(MODEL), load_hardware("h100_sxm"), load_framework(framework)
    prec = resolve_precision(m, hw, None, None, None)
    f = factors_for(hw, fw.efficiency_for(hw))
    ranks = 32
    pc = make_parallel_config(ranks, attn_tp_size=1, moe_tp_size=1)
    tokens = 16384
    wl = Workload("prefill", batch=ranks * (tokens // ISL), seq_len=ISL)
    e = estimate(m, hw, pc, prec, f, wl)
    published_step = tokens / (SGLANG_PREFILL_2K / hw.ranks_per_node)
    experts = next(o for o in e.prefill.ops if o.name == "routed_experts")
    k = m.real_experts_per_token
    rows = tokens * k / (m.num_experts / pc.moe_ep_size)
    nodes = ranks // hw.ranks_per_node
    share = rdma_copies_share(hw, ranks, 1, k)
    e1 = estimate(m, hw, pc, prec, replace(f, grouped_gemm=1.0), wl)
    experts1 = next(o for o in e1.prefill.ops if o.name == "routed_experts")
    step1 = e1.prefill.time_s
    per_node = tokens * hw.ranks_per_node / step1
    return [f"Mechanism of #3 (prefill, EP{ranks} on {nodes} nodes, {tokens:,} tokens per GPU of {ISL}-token prompts)",
            f"  published {SGLANG_PREFILL_2K:,} input tok/s per node = a {published_step:.2f} s step; the model's "
            f"{e.prefill.time_s:.2f} s: {_split(e.prefill)}",
            f"  all-to-all (modelled): a token crosses RDMA once per remote node hit, {share * k * (nodes - 1) / nodes:.2f}"
            f" of its {k:g} copies (uniform routing over {nodes} nodes) instead of {k * (nodes - 1) / nodes:.2f}: "
            f"x{share:.2f} of the per-pair bytes",
            f"  routed experts (not modelled): {rows:,.0f} rows per local expert, charged "
            f"{experts.flops / experts.compute_s / 1e12:,.0f} TFLOP/s (grouped_gemm {f.grouped_gemm:g} x the dense GEMM,"
            f" fitted where an expert sees tens to hundreds of rows); at the dense GEMM's rate {experts1.compute_s:.2f}"
            f" s -> step {step1:.2f} s, {per_node:,.0f} tok/s per node ({_err(per_node, SGLANG_PREFILL_2K)})"]


def planned(framework: str, osl: int, tpot_ms: float, max_concurrency: int) -> list[str]:
    from solver.specs.scenario import Scenario

    sc = Scenario(kind="throughput", isl=ISL, osl=osl, tpot_ms=tpot_ms, max_concurrency=max_concurrency)
    t0 = time.perf_counter()
    r = run_disagg(MODEL, "h100_sxm", CARDS, sc, framework, params=SolverParams(workers=1, seed=0, time_limit_s=10))
    wall = time.perf_counter() - t0
    d, e = r.plan, r.plan.estimate
    rpn = 8
    nodes_p, nodes_d = d.prefill.ranks / rpn, d.decode.ranks / rpn
    pre_cap = e.times.prefill_capacity * ISL / nodes_p
    pre_op = e.input_tokens_per_s / nodes_p
    dec = e.output_tokens_per_s / nodes_d
    pp, dp = d.prefill.planned.config, d.decode.planned.config
    lines = [f"Part 2: planned, TPOT <= {tpot_ms:g} ms, ISL {ISL} / OSL {osl}, {framework} profile "
             f"({wall:.1f} s to plan)",
             f"  plan {d.ratio}: prefill {d.prefill.workers} x {pp.world_size} ranks ({r.pools[0].candidate.pattern}:"
             f" attn TP{pp.attn_tp_size} x DP{pp.attn_dp_size}, EP{pp.moe_ep_size}), decode {d.decode.workers} x "
             f"{dp.world_size} ranks ({r.pools[1].candidate.pattern}: attn TP{dp.attn_tp_size} x DP{dp.attn_dp_size},"
             f" EP{dp.moe_ep_size}); {d.cards} of {CARDS} cards, {nodes_p:g} prefill + {nodes_d:g} decode nodes",
             f"  concurrency {e.shape.decode_workers * e.shape.decode_replicas * e.shape.running}, decode "
             f"{e.shape.running} seqs per replica ({e.shape.running * dp.attn_replicas / dp.world_size:g} per GPU), "
             f"TTFT {e.ttft_s * 1e3:,.0f} ms (steady state {e.times.ttft_steady_s * 1e3:,.0f}), TPOT "
             f"{e.tpot_s * 1e3:.1f} ms, KV transfer {e.transfer.time_s * 1e3:.2f} ms/request over "
             f"{e.transfer.tier}",
             f"  {'per node':<46}{'planned':>10}{'SGLang':>9}{'error':>7}{'DeepSeek':>10}{'error':>7}",
             f"  {'prefill input tok/s, pool capacity':<46}{pre_cap:>10,.0f}{SGLANG_PREFILL_2K:>9,}"
             f"{_err(pre_cap, SGLANG_PREFILL_2K):>7}{'-':>10}{'':>7}",
             f"  {'prefill input tok/s, at the operating point':<46}{pre_op:>10,.0f}{'':>9}{'':>7}{'-':>10}",
             f"  {'decode output tok/s':<46}{dec:>10,.0f}{SGLANG_DECODE:>9,}{_err(dec, SGLANG_DECODE):>7}"
             f"{DEEPSEEK_DECODE:>10,}{_err(dec, DEEPSEEK_DECODE):>7}",
             f"  {'output tok/s per GPU (both pools)':<46}{e.output_tokens_per_s_per_rank:>10,.0f}"]
    c = r.comparison
    if r.aggregated is not None:
        a = r.aggregated.planned
        lines.append(f"  aggregated on {CARDS}: {r.aggregated.pattern}, concurrency {a.batch}, "
                     f"{a.estimate.output_tokens_per_s_per_rank:,.0f} tok/s per GPU, TPOT {a.estimate.tpot_s * 1e3:.1f}"
                     f" ms -> {c.winner} wins on the scenario score (disagg / agg output tok/s per GPU {c.throughput_ratio:.2f}x)")
    else:
        lines.append(f"  aggregated on {CARDS}: {r.aggregated_error}")
    lines += [f"    - {w}" for w in c.why]
    return lines


def published_split(framework: str, osl: int) -> list[str]:
    """SGLang's 96-H100 deployment (3 prefill nodes, 9 decode nodes: attention DP + EP in both, 256 sequences per
    decode GPU) through the same disaggregated serving model."""
    from solver.estimate.disagg import DisaggWorkload, estimate_disagg
    from solver.specs.disagg_fitted import burst_share

    m, hw, fw = load_model(MODEL), load_hardware("h100_sxm"), load_framework(framework)
    prec = resolve_precision(m, hw, None, None, None)
    f = factors_for(hw, fw.efficiency_for(hw))
    pre = make_parallel_config(24, attn_tp_size=1, moe_tp_size=1)
    dec = make_parallel_config(72, attn_tp_size=1, moe_tp_size=1)
    wl = DisaggWorkload(isl=ISL, osl=osl, concurrency=72 * 256, prefill_batch=16384 // ISL, decode_batch=256,
                        burst_share=burst_share(fw.name, hw.name))  # as the planner does
    e = estimate_disagg(m, hw, pre, dec, prec, f, f, wl)
    t = e.times
    return [f"Part 3: SGLang's split (1 prefill worker of 24 ranks = 3 nodes, 1 decode worker of 72 = 9 nodes, "
            f"attention DP + EP, {16384 // ISL} prompts per prefill rank, 256 sequences per decode GPU) through the "
            f"same model, OSL {osl}",
            f"  prefill capacity {t.prefill_capacity * ISL / 3:,.0f} input tok/s per node (SGLang {SGLANG_PREFILL_2K:,}"
            f" at 4 nodes EP32), decode {e.output_tokens_per_s / 9:,.0f} output tok/s per node (SGLang "
            f"{SGLANG_DECODE:,}), TPOT {e.tpot_s * 1e3:.1f} ms, TTFT {e.ttft_s * 1e3:,.0f} ms (prefill "
            f"utilisation {t.prefill_utilization:.0%}, steady-state wait {t.prefill_wait_s * 1e3:,.0f} ms), "
            f"{e.output_tokens_per_s_per_rank:,.0f} output tok/s per GPU; memory per rank prefill "
            f"{e.prefill_memory.total / 1e9:.1f} GB, decode {e.decode_memory.total / 1e9:.1f} GB with "
            f"{e.shape.running} sequences running per GPU (KV capacity; slot wait {t.slot_wait_s * 1e3:,.0f} ms)"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--osl", type=int, default=1024)
    ap.add_argument("--tpot-ms", type=float, nargs="+", default=[50.0, 100.0])
    ap.add_argument("--framework", default="sglang")
    ap.add_argument("--max-concurrency", type=int, default=65536)
    args = ap.parse_args(argv)
    t0 = time.time()
    print("\n".join(like_for_like(args.framework)))
    print()
    print("\n".join(prefill_mechanism(args.framework)))
    for tpot in args.tpot_ms:
        print()
        print("\n".join(planned(args.framework, args.osl, tpot, args.max_concurrency)))
    print()
    print("\n".join(published_split(args.framework, args.osl)))
    print(f"\nruntime {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
