"""The RFC's question (seed 000) answered with the analytic model: attention TP vs DP vs SP vs CP for
DeepSeek-V3.2, MoE on EP in every case.

    .venv/bin/python benchmarks/rfc_attention_sp.py            # markdown tables on stdout

Deployments: 8 x h200_sxm (FP8 block-scaled weights as published, FP8 activations in the GEMMs, FP8 MLA KV cache
in the FlashMLA layout: 656 B per token per layer) and 16 x atlas_a3 dies (W8A8: INT8 weights and activations,
INT8 KV cache "C8": 656 B per token per layer). The indexer key cache is 132 B per token per layer in both.

Configurations (W = 8 or 16 ranks, moe_tp 1 so EP = W everywhere):
  TP  attention TP W, dense/shared-expert/embedding/lm_head TP W (how vLLM/SGLang run -tp W with EP)
  DP  attention DP W (attn_tp 1)
  SP  the RFC: attn_sp_size W, attn_tp 1: tokens of the step split over W ranks, full weights and heads
  CP  cp_size W, attn_tp 1: prefill like SP; decode runs as attention DP (each request on one rank)
For DP/SP/CP the other modules are replicated on H200; on A3 they take the cann-recipes V3.2 shape
(embed/lm_head TP16, o_proj TP8, dense/shared-expert TP4) so that W8A8 weights fit in a 64 GB die.

Factors are the hardware catalog's published achieved-vs-peak fractions (no framework fit), so the numbers
move only when the model or the catalog changes. Prefill of P prompts is one step (TTFT = step time); under
DP only min(P, W) replicas have work. Decode is one step of batch 64 across the deployment (TPOT, no MTP).
"""
from __future__ import annotations

from dataclasses import dataclass

from solver.estimate.compute import Work, factors_for
from solver.estimate.memory import memory_per_rank
from solver.estimate.params import count_params
from solver.estimate.step import StepCost, step_cost
from solver.estimate.serving import decode_step
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig, make_parallel_config
from solver.specs.precision import Precision, resolve_precision

MODEL = load_model("deepseek-ai/DeepSeek-V3.2")
PARAMS = count_params(MODEL)
PREFILL_LENS = (8192, 32768, 65536)
PREFILL_PROMPTS = (1, 8)
DECODE_BATCH = 64
DECODE_CTX = (8192, 65536)

GROUPS = {
    "proj": ("qkv_proj",),
    "core": ("attention_core",),
    "indexer": ("indexer_proj", "indexer_score", "indexer_topk"),
    "o_proj": ("o_proj",),
    "moe": ("routed_experts", "moe_permute", "router", "shared_experts"),
    "other": ("dense_ffn", "embedding", "lm_head", "mtp_lm_head"),
}


@dataclass(frozen=True)
class Deployment:
    name: str
    hw_name: str
    world: int
    prec: Precision
    prec_label: str


def deployments() -> list[Deployment]:
    h200 = load_hardware("h200_sxm")
    a3 = load_hardware("atlas_a3")
    return [
        Deployment("8 x h200_sxm", "h200_sxm", 8, resolve_precision(MODEL, h200, kv_dtype="fp8"),
                   "FP8 weights (checkpoint fp8_block), FP8 GEMM activations, FP8 KV"),
        Deployment("16 x atlas_a3", "atlas_a3", 16,
                   resolve_precision(MODEL, a3, weight_dtype="int8", kv_dtype="int8"),
                   "W8A8 INT8 weights and activations, INT8 KV (C8)"),
    ]


def configs(dep: Deployment) -> list[tuple[str, ParallelConfig]]:
    w = dep.world
    # non-attention modules: replicated on H200 (vLLM/SGLang DP-attention shape); on 64 GB A3 dies the
    # cann-recipes V3.2 shape (v32-d16 / v32-p64: embed/lm_head TP16, o_proj TP8, dense TP4), else W8A8
    # weights do not fit beside the cache
    rest: dict[str, int] = {} if dep.hw_name == "h200_sxm" else dict(embed_tp_size=w, lmhead_tp_size=w,
                                                                      dense_tp_size=4, o_proj_tp_size=8)
    return [
        (f"TP{w}", make_parallel_config(w, attn_tp_size=w, dense_tp_size=w, embed_tp_size=w, lmhead_tp_size=w)),
        (f"DP{w}", make_parallel_config(w, **rest)),
        (f"SP{w}", make_parallel_config(w, attn_sp_size=w, **rest)),
        (f"CP{w}", make_parallel_config(w, cp_size=w, **rest)),
    ]


def groups_ms(step: StepCost) -> dict[str, float]:
    out = {g: 0.0 for g in GROUPS}
    for o in step.ops:
        for g, names in GROUPS.items():
            if o.name in names:
                out[g] += o.time_s * 1e3
    out["comm"] = step.exposed_comm_s * 1e3
    out["comm_raw"] = step.comm_s * 1e3
    return out


def prefill_case(dep: Deployment, pc: ParallelConfig, S: int, prompts: int) -> dict:
    hw = load_hardware(dep.hw_name)
    f = factors_for(hw)
    per_replica = max(1.0, prompts / pc.attn_replicas)
    busy = min(pc.attn_replicas, prompts)
    w = Work("prefill", new_tokens=S * per_replica, context=(S + 1) / 2, sequences=per_replica,
             logits_tokens=per_replica, busy_replicas=busy)
    step = step_cost(MODEL, hw, pc, dep.prec, f, w, PARAMS)
    mem = memory_per_rank(MODEL, hw, pc, dep.prec, prompts, S)
    return _row(step, mem)


def decode_case(dep: Deployment, pc: ParallelConfig, ctx: int, batch: int) -> dict:
    hw = load_hardware(dep.hw_name)
    f = factors_for(hw)
    step = decode_step(MODEL, hw, pc, dep.prec, f, max(1.0, batch / pc.attn_replicas), ctx)
    mem = memory_per_rank(MODEL, hw, pc, dep.prec, batch, ctx)
    row = _row(step, mem)
    row["tok_s_rank"] = batch / step.time_s / pc.world_size
    return row


def _row(step: StepCost, mem) -> dict:
    g = groups_ms(step)
    g["step"] = step.time_s * 1e3
    g["idx_share"] = g["indexer"] / g["step"]
    g["mem_gb"] = mem.total / 1e9
    g["fits"] = mem.feasible
    comms = {c.name: c for c in step.comms}
    layers = MODEL.num_layers  # per-layer figures are means over the 61 layers (58 of them MoE)
    g["kv_gather_mb"] = comms["kv_allgather"].bytes / layers / 1e6 if "kv_allgather" in comms else 0.0
    hidden = [c for c in step.comms if c.module in ("o_proj", "dense_ffn", "shared_experts")]
    g["hidden_mb"] = sum(c.bytes for c in hidden) / layers / 1e6
    g["a2a_mb"] = sum(c.bytes for c in step.comms if c.name in ("ep_dispatch", "ep_combine")) / layers / 1e6
    return g


def _f(v: float) -> str:
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


PREFILL_COLS = ("TTFT", "proj", "core", "indexer", "o_proj", "MoE", "other", "comm", "idx %", "mem GB", "fits")
DECODE_COLS = ("TPOT", "proj", "core", "indexer", "o_proj", "MoE", "other", "comm", "idx %", "tok/s/rank",
               "mem GB", "fits")


def _cells(r: dict, decode: bool) -> list[str]:
    cells = [_f(r["step"]), _f(r["proj"]), _f(r["core"]), _f(r["indexer"]), _f(r["o_proj"]), _f(r["moe"]),
             _f(r["other"]), _f(r["comm"]), f"{r['idx_share']:.0%}"]
    if decode:
        cells.append(_f(r["tok_s_rank"]))
    cells += [_f(r["mem_gb"]), "yes" if r["fits"] else "NO"]
    return cells


def main() -> None:
    print("# DeepSeek-V3.2: attention TP vs DP vs SP vs CP, MoE EP = W (analytic model, times in ms per step)\n")
    print("proj = q/kv (MLA) projections; core = sparse MLA; indexer = indexer projections + scoring + top-k; "
          "o_proj = o_proj GEMM; MoE = routed experts (with their token permute) + shared experts + router; other = dense FFN layers + embedding + "
          "lm_head; comm = exposed communication (all modules); idx % = indexer share of the step; "
          "mem GB = memory per rank including the 3.76 GB (3.5 GiB) runtime reserve; fits = mem GB less the reserve "
          "within min(0.95 x capacity, capacity - reserve).\n")
    for dep in deployments():
        print(f"## {dep.name}: {dep.prec_label}\n")
        for prompts in PREFILL_PROMPTS:
            print(f"### prefill, {prompts} prompt{'s' if prompts > 1 else ''} of S tokens in one step (TTFT)\n")
            print("| config | S | " + " | ".join(PREFILL_COLS) + " |")
            print("|" + "---|" * (len(PREFILL_COLS) + 2))
            for S in PREFILL_LENS:
                for name, pc in configs(dep):
                    print(f"| {name} | {S // 1024}K | " + " | ".join(_cells(prefill_case(dep, pc, S, prompts), False))
                          + " |")
            print()
        print(f"### decode, batch {DECODE_BATCH} across the deployment (TPOT)\n")
        print("| config | context | " + " | ".join(DECODE_COLS) + " |")
        print("|" + "---|" * (len(DECODE_COLS) + 2))
        for ctx in DECODE_CTX:
            for name, pc in configs(dep):
                row = decode_case(dep, pc, ctx, DECODE_BATCH)
                print(f"| {name} | {ctx // 1024}K | " + " | ".join(_cells(row, True)) + " |")
        print()
        print("### communication, prefill of one 32K prompt (MB per layer, mean over the 61 layers; collective "
              "buffer sizes)\n")
        print("| config | hidden-state collectives (o_proj / dense / shared-expert all-reduce, gather, scatter) "
              "| KV + indexer-key all-gather | EP dispatch + combine sent by the busiest rank "
              "| exposed comm, whole step (ms) |")
        print("|---|---|---|---|---|")
        for name, pc in configs(dep):
            r = prefill_case(dep, pc, 32768, 1)
            print(f"| {name} | {_f(r['hidden_mb'])} | {_f(r['kv_gather_mb'])} | {_f(r['a2a_mb'])} | {_f(r['comm'])} |")
        print()


if __name__ == "__main__":
    main()
