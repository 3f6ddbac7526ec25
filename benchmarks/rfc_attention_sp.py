"""The RFC (seed 000, ROCm/ATOM: attention sequence parallelism for DeepSeek-V3.2-like models) against the tool:
attention TP vs DP vs SP vs CP for DeepSeek-V3.2, each claim of the RFC with the tool's figure, its verdict and
the command that prints it.

    .venv/bin/python benchmarks/rfc_attention_sp.py            # markdown on stdout (docs/rfc-attention-sp.md)

Every figure is what `shardplan estimate` prints for the same case (the generic profile, as the command runs
without --framework: the hardware file's efficiencies and the fitted factors the profile carries; on mi355x and
A3 that is the grouped-GEMM fraction fitted on NVIDIA rows, which `estimate` says in a note); the command of each
claim is printed beside it. Deployments:
  8 x mi355x (the RFC's hardware): FP8 block-scaled weights as published, FP8 GEMM activations, FP8 KV cache
    (656 B per token per layer for the latent, 132 B for the indexer key)
  8 x h200_sxm: the same formats (one HGX node)
  16 x atlas_a3 dies: W8A8 (INT8 weights and activations), INT8 KV "C8" (656 B), as cann-recipes runs V3.2

Configurations (W = 8 or 16 ranks, moe_tp 1 so EP = W unless a row says MoE TP):
  TP  attention TP W, dense/shared-expert/embedding/lm_head TP W (how vLLM/SGLang/ATOM run -tp W)
  DP  attention DP W (attn_tp 1)
  SP  the RFC: attn_sp_size W, attn_tp 1: tokens of the step split over W ranks, full weights and heads
  CP  cp_size W, attn_tp 1: prefill like SP; decode runs as attention DP (each request on one rank)
For DP/SP/CP the other modules are replicated on mi355x and H200; on A3 they take the cann-recipes V3.2 shape
(embed/lm_head TP16, o_proj TP8, dense/shared-expert TP4) so that W8A8 weights fit in a 64 GB die.
Prefill of P prompts of S tokens is `estimate --phase prefill --batch P --seq-len S` (TTFT); decode is
`--phase decode --batch 64 --seq-len L` (TPOT, no MTP).
"""
from __future__ import annotations

from dataclasses import dataclass

from solver.estimate.compute import factors_for
from solver.estimate.serving import Estimate, estimate
from solver.estimate.workload import Workload
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.knobs import KNOB_FLAGS
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig, make_parallel_config
from solver.specs.precision import Precision, resolve_precision

MODEL_ARG = "deepseek-v3.2"
MODEL = load_model(MODEL_ARG)
FRAMEWORK = load_framework("generic")
PREFILL_LENS = (8192, 32768, 65536)
PREFILL_PROMPTS = (1, 8)
DECODE_BATCH = 64
DECODE_CTX = (8192, 65536)
CLAIM_S = 32768  # the prompt length the claims quote (the RFC: "especially for long prompt")
LONGEST = 131072  # claim 15 only: where the indexer overtakes the core

GROUPS = {
    "proj": ("qkv_proj",),
    "core": ("attention_core",),
    "indexer": ("indexer_proj", "indexer_score", "indexer_topk"),
    "o_proj": ("o_proj",),
    "moe": ("routed_experts", "moe_permute", "router", "shared_experts"),
    "other": ("dense_ffn", "embedding", "lm_head", "mtp_lm_head"),
}
HIDDEN_MODULES = ("o_proj", "dense_ffn", "shared_experts", "routed_experts", "embedding")
HIDDEN_PRIMS = ("all_reduce", "all_gather", "reduce_scatter")


@dataclass(frozen=True)
class Deployment:
    name: str
    hw_name: str
    world: int
    prec: Precision
    prec_label: str
    dtype_flags: str  # what the command line says for these formats


def deployments() -> list[Deployment]:
    mi, h200, a3 = load_hardware("mi355x"), load_hardware("h200_sxm"), load_hardware("atlas_a3")
    return [
        Deployment("8 x mi355x (the RFC's hardware)", "mi355x", 8, resolve_precision(MODEL, mi, kv_dtype="fp8"),
                   "FP8 weights (checkpoint fp8_block), FP8 GEMM activations, FP8 KV", "--kv-dtype fp8"),
        Deployment("8 x h200_sxm", "h200_sxm", 8, resolve_precision(MODEL, h200, kv_dtype="fp8"),
                   "FP8 weights (checkpoint fp8_block), FP8 GEMM activations, FP8 KV", "--kv-dtype fp8"),
        Deployment("16 x atlas_a3", "atlas_a3", 16,
                   resolve_precision(MODEL, a3, weight_dtype="int8", kv_dtype="int8"),
                   "W8A8 INT8 weights and activations, INT8 KV (C8)", "--weight-dtype int8 --kv-dtype int8"),
    ]


def _rest(dep: Deployment) -> dict[str, int]:
    # non-attention modules beside attention DP/SP/CP: replicated where memory allows (vLLM/SGLang/ATOM
    # DP-attention shape); on 64 GB A3 dies the cann-recipes V3.2 shape (v32-d16 / v32-p64), else W8A8 weights do
    # not fit beside the cache
    w = dep.world
    return {} if dep.hw_name != "atlas_a3" else dict(embed_tp_size=w, lmhead_tp_size=w, dense_tp_size=4,
                                                     o_proj_tp_size=8)


def tp(w: int, **kw: int) -> ParallelConfig:
    return make_parallel_config(w, attn_tp_size=w, dense_tp_size=w, embed_tp_size=w, lmhead_tp_size=w, **kw)


def configs(dep: Deployment) -> list[tuple[str, ParallelConfig]]:
    w, rest = dep.world, _rest(dep)
    return [
        (f"TP{w}", tp(w)),
        (f"DP{w}", make_parallel_config(w, **rest)),
        (f"SP{w}", make_parallel_config(w, attn_sp_size=w, **rest)),
        (f"CP{w}", make_parallel_config(w, cp_size=w, **rest)),
    ]


def sp_degree_configs(w: int) -> list[tuple[str, ParallelConfig]]:
    """The RFC's SP "over the tensor-parallel group": the 8-rank attention group split TP x SP, TP8 to SP8; the
    dense FFN, embedding and lm_head follow attention TP (as -tp sets them)."""
    out = []
    sp = 1
    while sp <= w:
        a = w // sp
        name = f"TP{a}" if sp == 1 else f"SP{sp}" if a == 1 else f"TP{a} x SP{sp}"
        knobs = dict(attn_tp_size=a, dense_tp_size=a, embed_tp_size=a, lmhead_tp_size=a)
        out.append((name, make_parallel_config(w, attn_sp_size=sp, **knobs)))
        sp *= 2
    return out


def moe_option_configs(w: int) -> list[tuple[str, ParallelConfig]]:
    """The RFC's two MoE options beside attention SP (MoE TP, MoE EP), with attention TP for reference."""
    return [(f"TP{w} + MoE TP{w}", tp(w, moe_tp_size=w)), (f"SP{w} + MoE TP{w}", make_parallel_config(
        w, attn_sp_size=w, moe_tp_size=w)), (f"TP{w} + MoE EP{w}", tp(w)),
        (f"SP{w} + MoE EP{w}", make_parallel_config(w, attn_sp_size=w))]


# ------------------------------------------------------------------------------------------------ running


_RUNS: dict[tuple, Estimate] = {}


def run(dep: Deployment, pc: ParallelConfig, phase: str, batch: int, seq: int) -> Estimate:
    """`shardplan estimate` of this case (the generic profile's factors), computed once."""
    key = (dep.name, pc.key(), phase, batch, seq)
    if key not in _RUNS:
        hw = load_hardware(dep.hw_name)
        f = factors_for(hw, FRAMEWORK.efficiency_for(hw))
        _RUNS[key] = estimate(MODEL, hw, pc, dep.prec, f, Workload(phase, batch=batch, seq_len=seq))
    return _RUNS[key]


def expressed(dep: Deployment, pc: ParallelConfig) -> str:
    """Which engine profiles run `pc` on the deployment's device (their rules and limits on it; the generic profile
    sets every knob), and the rule or missing knob of each that refuses it."""
    from solver.specs.rule_env import device_facts, model_env

    hw = load_hardware(dep.hw_name)
    runs, refuses = [], []
    for name in ("generic", "sglang", "atom", "vllm", "vllm-ascend"):
        fw = load_framework(name)
        if fw.vendors and hw.vendor not in fw.vendors:
            continue
        env = model_env(pc.settings(), MODEL, **device_facts(hw), world=pc.world_size, batch=1)
        errors = fw.check(env, "error")
        if errors:
            rules = [e[1:e.index("]")] for e in errors if e.startswith("[")]
            refuses.append(f"{name} ({', '.join(rules) if rules else 'no attn_sp knob'})")
        else:
            runs.append(name)
    return (f"on {dep.hw_name} expressible in {' and '.join(runs) or 'no profile'}"
            + (f"; refused by {', '.join(refuses)}" if refuses else ""))


def command(dep: Deployment, pc: ParallelConfig, phase: str, batch: int, seq: int) -> str:
    """The `shardplan estimate` line that prints this case."""
    knobs = [f"{KNOB_FLAGS[k]} {v}" for k, v in pc.knobs().items() if v > 1]
    return " ".join([f"shardplan estimate {MODEL_ARG} --hardware {dep.hw_name} --cards {pc.world_size}", *knobs,
                     f"--phase {phase} --batch {batch} --seq-len {seq} {dep.dtype_flags}"])


def step_of(est: Estimate):
    return est.prefill if est.prefill is not None else est.decode


def groups_ms(est: Estimate) -> dict[str, float]:
    step = step_of(est)
    out = {g: 0.0 for g in GROUPS}
    for o in step.ops:
        for g, names in GROUPS.items():
            if o.name in names:
                out[g] += o.time_s * 1e3
    out["comm"] = step.exposed_comm_s * 1e3
    return out


def op(est: Estimate, name: str):
    """The step's op of that name, summed over its layers (one record per layer kind)."""
    ops = [o for o in step_of(est).ops if o.name == name]
    return (sum(o.flops for o in ops), sum(o.bytes for o in ops), sum(o.time_s for o in ops),
            "memory" if sum(o.memory_s for o in ops) > sum(o.compute_s for o in ops) else "compute")


def comms(est: Estimate, names: tuple[str, ...] | None = None, modules: tuple[str, ...] | None = None):
    return [c for c in step_of(est).comms if (names is None or c.name in names)
            and (modules is None or c.module in modules)]


def hidden_wire_bytes(est: Estimate) -> float:
    """Bytes each rank sends in the step's hidden-state collectives (all-reduce 2(n-1)/n of its buffer,
    all-gather and reduce-scatter (n-1)/n; the EP all-to-all and the KV gather are not hidden states)."""
    total = 0.0
    for c in comms(est, modules=HIDDEN_MODULES):
        if c.primitive not in HIDDEN_PRIMS or c.name.startswith("ep_"):
            continue
        share = (c.group - 1) / c.group
        total += c.bytes * share * (2 if c.primitive == "all_reduce" else 1)
    return total


def mem_gb(est: Estimate) -> float:
    return est.memory.total / 1e9


# ------------------------------------------------------------------------------------------------ tables


def _f(v: float) -> str:
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


PREFILL_COLS = ("TTFT", "proj", "core", "indexer", "o_proj", "MoE", "other", "comm", "idx %", "mem GB", "fits")
DECODE_COLS = ("TPOT", "proj", "core", "indexer", "o_proj", "MoE", "other", "comm", "idx %", "tok/s/rank",
               "mem GB", "fits")


def _cells(est: Estimate, decode: bool) -> list[str]:
    g = groups_ms(est)
    t = (est.tpot_s if decode else est.ttft_s) * 1e3
    step = step_of(est).time_s * 1e3
    cells = [_f(t), _f(g["proj"]), _f(g["core"]), _f(g["indexer"]), _f(g["o_proj"]), _f(g["moe"]),
             _f(g["other"]), _f(g["comm"]), f"{g['indexer'] / step:.0%}"]
    if decode:
        cells.append(_f(est.output_tokens_per_s_per_rank))
    cells += [_f(mem_gb(est)), "yes" if est.memory.feasible else "NO"]
    return cells


def deployment_tables(dep: Deployment) -> None:
    print(f"### {dep.name}: {dep.prec_label}\n")
    for prompts in PREFILL_PROMPTS:
        print(f"#### prefill, {prompts} prompt{'s' if prompts > 1 else ''} of S tokens in one step (TTFT)\n")
        print("| config | S | " + " | ".join(PREFILL_COLS) + " |")
        print("|" + "---|" * (len(PREFILL_COLS) + 2))
        for S in PREFILL_LENS:
            for name, pc in configs(dep):
                print(f"| {name} | {S // 1024}K | " + " | ".join(_cells(run(dep, pc, "prefill", prompts, S), False))
                      + " |")
        print()
    print(f"#### decode, batch {DECODE_BATCH} across the deployment (TPOT)\n")
    print("| config | context | " + " | ".join(DECODE_COLS) + " |")
    print("|" + "---|" * (len(DECODE_COLS) + 2))
    for ctx in DECODE_CTX:
        for name, pc in configs(dep):
            print(f"| {name} | {ctx // 1024}K | " + " | ".join(_cells(run(dep, pc, "decode", DECODE_BATCH, ctx), True))
                  + " |")
    print()
    print(f"#### communication, prefill of one {CLAIM_S // 1024}K prompt (MB per layer, mean over the "
          f"{MODEL.num_layers} layers)\n")
    print("| config | hidden-state collective buffers (o_proj, dense, shared-expert and MoE all-reduces, gathers, "
          "scatters) | hidden-state bytes "
          "sent per rank | KV + indexer-key all-gather | EP dispatch + combine sent by the busiest rank "
          "| exposed comm, whole step (ms) |")
    print("|---|---|---|---|---|---|")
    layers = MODEL.num_layers
    for name, pc in configs(dep):
        est = run(dep, pc, "prefill", 1, CLAIM_S)
        hidden = sum(c.bytes for c in comms(est, modules=HIDDEN_MODULES) if not c.name.startswith("ep_"))
        gather = sum(c.bytes for c in comms(est, names=("kv_allgather",)))
        a2a = sum(c.bytes for c in comms(est, names=("ep_dispatch", "ep_combine")))
        print(f"| {name} | {_f(hidden / layers / 1e6)} | {_f(hidden_wire_bytes(est) / layers / 1e6)} | "
              f"{_f(gather / layers / 1e6)} | {_f(a2a / layers / 1e6)} | {_f(groups_ms(est)['comm'])} |")
    print()


def sp_degree_table(dep: Deployment) -> None:
    print(f"### SP degree inside the {dep.world}-rank attention group (the RFC: SP over the TP group), MoE EP\n")
    heads = [f"TTFT {S // 1024}K" for S in PREFILL_LENS]
    print("| config | " + " | ".join(heads) + f" | core {CLAIM_S // 1024}K | indexer {CLAIM_S // 1024}K "
          f"| TPOT b{DECODE_BATCH} 8K | mem GB b{DECODE_BATCH} 8K | fits | mem GB b{DECODE_BATCH} 64K | fits |")
    print("|---|" + "---|" * (len(heads) + 7))
    for name, pc in sp_degree_configs(dep.world):
        ttfts = [_f(run(dep, pc, "prefill", 1, S).ttft_s * 1e3) for S in PREFILL_LENS]
        g = groups_ms(run(dep, pc, "prefill", 1, CLAIM_S))
        d8, d64 = run(dep, pc, "decode", DECODE_BATCH, 8192), run(dep, pc, "decode", DECODE_BATCH, 65536)
        print(f"| {name} | " + " | ".join(ttfts) + f" | {_f(g['core'])} | {_f(g['indexer'])} | "
              f"{_f(d8.tpot_s * 1e3)} | {_f(mem_gb(d8))} | {'yes' if d8.memory.feasible else 'NO'} | "
              f"{_f(mem_gb(d64))} | {'yes' if d64.memory.feasible else 'NO'} |")
    print()


def memory_table(dep: Deployment) -> None:
    print(f"### memory per rank, decode of batch {DECODE_BATCH} (GB; `shardplan memory ... --batch {DECODE_BATCH} "
          "--seq-len L` prints the same)\n")
    print("| config | context | weights | of which attention + indexer | KV cache | indexer cache | activations + "
          "buffers | runtime reserve | total | fits |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for ctx in DECODE_CTX:
        for name, pc in configs(dep):
            m = run(dep, pc, "decode", DECODE_BATCH, ctx).memory
            attn = sum(m.weights_bytes.get(x, 0.0) for x in ("attention", "indexer"))
            print(f"| {name} | {ctx // 1024}K | {_f(m.weights_total / 1e9)} | {_f(attn / 1e9)} | "
                  f"{_f(m.kv_cache_bytes / 1e9)} | {_f(m.indexer_cache_bytes / 1e9)} | "
                  f"{_f((m.activation_bytes + m.comm_buffer_bytes) / 1e9)} | {_f(m.reserved_bytes / 1e9)} | "
                  f"{_f(m.total / 1e9)} | {'yes' if m.feasible else 'NO'} |")
    print()


def moe_option_table(dep: Deployment) -> None:
    print(f"### the RFC's MoE options beside attention SP, prefill of one {CLAIM_S // 1024}K prompt and decode at "
          f"batch {DECODE_BATCH}, 8K\n")
    print("| config | TTFT | hidden-state MB sent per rank per layer | their time (ms, whole step) | exposed comm (ms) "
          f"| TPOT | mem GB b{DECODE_BATCH} 8K |")
    print("|---|---|---|---|---|---|---|")
    for name, pc in moe_option_configs(dep.world):
        est = run(dep, pc, "prefill", 1, CLAIM_S)
        d = run(dep, pc, "decode", DECODE_BATCH, 8192)
        t = sum(c.time_s for c in comms(est, modules=HIDDEN_MODULES) if not c.name.startswith("ep_")) * 1e3
        print(f"| {name} | {_f(est.ttft_s * 1e3)} | {_f(hidden_wire_bytes(est) / MODEL.num_layers / 1e6)} | {_f(t)} | "
              f"{_f(groups_ms(est)['comm'])} | {_f(d.tpot_s * 1e3)} | {_f(mem_gb(d))} |")
    print()


# ------------------------------------------------------------------------------------------------ claims


@dataclass(frozen=True)
class Claim:
    cid: str
    who: str
    text: str  # the RFC's words, shortened
    figure: str  # what the tool computes
    verdict: str
    commands: tuple[str, ...]


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.1f}x"


def claims(dep: Deployment) -> list[Claim]:  # noqa: PLR0915 (one block per claim, in the RFC's order)
    w, S = dep.world, CLAIM_S
    cfg = dict(configs(dep))
    TP, DP, SP, CP = (cfg[f"{k}{w}"] for k in ("TP", "DP", "SP", "CP"))
    pre = {k: run(dep, pc, "prefill", 1, S) for k, pc in (("TP", TP), ("DP", DP), ("SP", SP), ("CP", CP))}
    by_len = {(k, L): run(dep, pc, "prefill", 1, L) for k, pc in (("TP", TP), ("DP", DP), ("SP", SP))
              for L in PREFILL_LENS}
    dec8 = {k: run(dep, pc, "decode", DECODE_BATCH, 8192) for k, pc in (("TP", TP), ("DP", DP), ("SP", SP), ("CP", CP))}
    dec64 = {k: run(dep, pc, "decode", DECODE_BATCH, 65536) for k, pc in (("TP", TP), ("DP", DP), ("SP", SP),
                                                                         ("CP", CP))}
    ms = {k: groups_ms(e) for k, e in pre.items()}
    out: list[Claim] = []
    lens = ", ".join(f"{L // 1024}K" for L in PREFILL_LENS)

    def ttft(k: str, L: int) -> float:
        return by_len[(k, L)].ttft_s * 1e3

    # -- the problem with TP and DP
    sp_beats_tp = all(ttft("SP", L) < ttft("TP", L) for L in PREFILL_LENS)
    out.append(Claim("1", "ganyi1996ppo", "V3.2 is inefficient with TP alone",
                     f"one prompt of {lens}: TTFT TP{w} " + " / ".join(_f(ttft("TP", L)) for L in PREFILL_LENS)
                     + f" ms vs SP{w} " + " / ".join(_f(ttft("SP", L)) for L in PREFILL_LENS)
                     + f" ms ({' / '.join(_ratio(ttft('TP', L), ttft('SP', L)) for L in PREFILL_LENS)}); "
                     f"decode b{DECODE_BATCH} 8K: TPOT TP{w} {_f(dec8['TP'].tpot_s * 1e3)} vs SP{w} "
                     f"{_f(dec8['SP'].tpot_s * 1e3)} ms",
                     "agrees (prefill)" if sp_beats_tp else "differs",
                     (command(dep, TP, "prefill", 1, S), command(dep, SP, "prefill", 1, S))))
    sp_beats_dp = all(ttft("SP", L) < ttft("DP", L) for L in PREFILL_LENS)
    out.append(Claim("2", "ganyi1996ppo", "... and with DP alone",
                     f"one prompt of {lens}: TTFT DP{w} " + " / ".join(_f(ttft("DP", L)) for L in PREFILL_LENS)
                     + f" ms ({' / '.join(_ratio(ttft('DP', L), ttft('SP', L)) for L in PREFILL_LENS)} SP{w}'s)",
                     "agrees (one prompt)" if sp_beats_dp else "differs", (command(dep, DP, "prefill", 1, S),)))
    idx = {k: ms[k]["indexer"] for k in ms}
    sc = {k: op(pre[k], "indexer_score")[0] for k in pre}
    prj = {k: op(pre[k], "indexer_proj")[0] for k in pre}
    redundant = abs(sc["TP"] / sc["DP"] - 1) < 1e-9 and abs(prj["TP"] / prj["DP"] - 1) < 1e-9
    out.append(Claim("3", "ganyi1996ppo", "TP: redundant calculation in the indexer path (wq_b and wk are data "
                     "parallel)", f"{S // 1024}K prompt: every TP{w} rank runs the whole indexer (projections and "
                     f"scores = DP's one rank); indexer {_f(idx['TP'])} ms per rank under TP{w}, {_f(idx['SP'])} "
                     f"under SP{w} ({_ratio(idx['TP'], idx['SP'])})",
                     "agrees" if redundant and sc["SP"] * w == sc["TP"] else "differs",
                     (command(dep, TP, "prefill", 1, S),)))
    f_tp, b_tp, t_tp, bound_tp = op(pre["TP"], "attention_core")
    f_sp, b_sp, t_sp, bound_sp = op(pre["SP"], "attention_core")
    heads = MODEL.num_attention_heads
    out.append(Claim("4", "ganyi1996ppo", f"TP: MLA runs with {heads // w} heads per rank and each token needs its "
                     "own cache reads: low compute intensity in prefill, especially for long prompts",
                     f"{S // 1024}K prompt: sparse-MLA core {_f(t_tp * 1e3)} ms per rank under TP{w} "
                     f"({bound_tp}-bound, {f_tp / t_tp / 1e12:,.0f} TFLOP/s useful) vs {_f(t_sp * 1e3)} ms under "
                     f"SP{w} ({bound_sp}-bound, {f_sp / t_sp / 1e12:,.0f} TFLOP/s); the same FLOPs per rank, "
                     f"{_ratio(b_tp, b_sp)} the cache bytes (each query gathers its own top-k)",
                     "agrees (fixed in this audit: the core read each key once)" if bound_tp == "memory"
                     and bound_sp == "compute" else "differs", (command(dep, TP, "prefill", 1, S),)))
    out.append(Claim("5", "ganyi1996ppo", "DP: risk of high latency",
                     f"one {S // 1024}K prompt lands on one DP rank: TTFT {_f(ttft('DP', S))} ms vs SP{w} "
                     f"{_f(ttft('SP', S))} ms; at 8 prompts DP{w} and SP{w} tie on 8 ranks (section tables)",
                     "agrees" if ttft("DP", S) > 2 * ttft("SP", S) else "differs",
                     (command(dep, DP, "prefill", 1, S),)))
    out.append(Claim("6", "ganyi1996ppo", "DP: potential load imbalance over requests",
                     "every request of a step has the same length in the estimator: DP replicas are balanced "
                     "(only the MoE carries a 1.2x expert-load factor)", "not modelled", ()))
    # -- the proposal and its pros
    wd = {k: sum(pre[k].memory.weights_bytes.get(x, 0.0) for x in ("attention", "indexer")) for k in pre}
    gather = comms(pre["SP"], names=("kv_allgather",))
    per_tok = sum(c.bytes for c in gather) / MODEL.num_layers / S
    out.append(Claim("7", "ganyi1996ppo", "SP over the token dim in prefill and decode, over the TP group; no "
                     "weight shard; all-gather the cache before the KV-cache update",
                     f"attention + indexer weights per rank: SP{w} {_f(wd['SP'] / 1e9)} GB = DP {_f(wd['DP'] / 1e9)} "
                     f"GB (TP{w} {_f(wd['TP'] / 1e9)} GB); one all-gather per layer of {per_tok:.0f} B per token "
                     "(656 B FP8 latent + 132 B indexer key) over the SP group",
                     "agrees" if abs(wd["SP"] - wd["DP"]) < 1 and gather else "differs",
                     (command(dep, SP, "prefill", 1, S),)))
    out.append(Claim("8", "ganyi1996ppo", "full heads on the MLA part: high TFLOPs",
                     f"SP{w}'s core at {S // 1024}K runs all {heads} heads per rank, {bound_sp}-bound at "
                     f"{f_sp / t_sp / 1e12:,.0f} TFLOP/s useful ({_ratio(f_sp / t_sp, f_tp / t_tp)} TP{w}'s)",
                     "agrees" if bound_sp == "compute" else "differs", (command(dep, SP, "prefill", 1, S),)))
    mla_sp = op(pre["SP"], "qkv_proj")[0] + sc["SP"] + prj["SP"]
    mla_dp = op(pre["DP"], "qkv_proj")[0] + sc["DP"] + prj["DP"]
    mla_tp = op(pre["TP"], "qkv_proj")[0] + sc["TP"] + prj["TP"]
    out.append(Claim("9", "ganyi1996ppo", "no redundant calculation on the indexer or MLA part",
                     f"MLA projections + indexer FLOPs per rank, {S // 1024}K prompt: SP{w} = 1/{w} of one rank doing "
                     f"it all ({mla_sp / mla_dp:.3f}); TP{w} {mla_tp / mla_dp:.2f} of it (the q_a / kv_a "
                     "down-projections and the whole indexer repeated)",
                     "agrees" if abs(mla_sp * w / mla_dp - 1) < 1e-6 else "differs",
                     (command(dep, SP, "prefill", 1, S),)))
    gather_t = sum(c.time_s for c in gather) * 1e3
    gather_x = sum(c.exposed_s for c in gather) * 1e3
    ar = comms(pre["TP"], modules=HIDDEN_MODULES)
    ar_mb = sum(c.bytes for c in ar if not c.name.startswith("ep_")) / MODEL.num_layers / 1e6
    dgather = comms(dec8["SP"], names=("kv_allgather",))
    out.append(Claim("10", "ganyi1996ppo", "the gathered KV cache is small and fast, and can overlap on a second "
                     "stream", f"{S // 1024}K prompt: {_f(sum(c.bytes for c in gather) / MODEL.num_layers / 1e6)} MB "
                     f"per layer vs TP{w}'s {_f(ar_mb)} MB of hidden-state all-reduce buffers; {_f(gather_t)} ms over "
                     f"the step, {_f(gather_x)} ms exposed; decode b{DECODE_BATCH}: "
                     f"{_f(sum(c.time_s for c in dgather) * 1e3)} ms, {_f(sum(c.exposed_s for c in dgather) * 1e3)} "
                     "exposed (61 link latencies; the layer's attention compute is microseconds)",
                     "agrees in prefill; in decode its latency shows" if gather_x == 0 else "differs",
                     (command(dep, SP, "prefill", 1, S), command(dep, SP, "decode", DECODE_BATCH, 8192))))
    mt = dict(moe_option_configs(w))
    tpm, spm = run(dep, mt[f"TP{w} + MoE TP{w}"], "prefill", 1, S), run(dep, mt[f"SP{w} + MoE TP{w}"], "prefill", 1, S)
    half = hidden_wire_bytes(spm) / hidden_wire_bytes(tpm)
    tpe, spe = run(dep, mt[f"TP{w} + MoE EP{w}"], "prefill", 1, S), run(dep, mt[f"SP{w} + MoE EP{w}"], "prefill", 1, S)
    out.append(Claim("11", "ganyi1996ppo", "communication cut to half of the hidden states",
                     f"MoE TP{w}: hidden-state bytes sent per rank SP{w} / TP{w} = {half:.2f} (one all-gather + one "
                     "reduce-scatter around the MoE vs two all-reduces); MoE EP: SP "
                     f"{_f(hidden_wire_bytes(spe) / MODEL.num_layers / 1e6)} MB vs TP "
                     f"{_f(hidden_wire_bytes(tpe) / MODEL.num_layers / 1e6)} MB per layer (SP sends only the EP "
                     "all-to-all)",
                     "agrees" if 0.4 < half < 0.6 else "differs",
                     (command(dep, mt[f"SP{w} + MoE TP{w}"], "prefill", 1, S),
                      command(dep, mt[f"TP{w} + MoE TP{w}"], "prefill", 1, S))))
    out.append(Claim("12", "ganyi1996ppo", "supports both piecewise and full graph",
                     "graph capture mode is not a knob; decode steps are costed at the captured batch", "not modelled",
                     ()))
    out.append(Claim("13", "ganyi1996ppo", "con: complicated metadata calculation", "no host-side metadata cost",
                     "not modelled", ()))
    one, full = run(dep, SP, "decode", 1, S), run(dep, SP, "decode", w, S)
    attn = {k: groups_ms(e)["core"] + groups_ms(e)["indexer"] for k, e in (("one", one), ("full", full))}
    out.append(Claim("14", "ganyi1996ppo", "con: execution time divergence over ranks, especially in piecewise graph",
                     f"tokens split evenly over the SP ranks; a decode step of fewer tokens than ranks is split "
                     f"fractionally (batch 1 on SP{w}, {S // 1024}K context: core + indexer {_f(attn['one'])} ms vs "
                     f"{_f(attn['full'])} ms at one token per rank, of a {_f(one.tpot_s * 1e3)} ms TPOT)",
                     "not modelled", (command(dep, SP, "decode", 1, S), command(dep, SP, "decode", w, S))))
    # -- wuhuikx's reading, ganyi's graph
    long_lens = (*PREFILL_LENS, LONGEST)
    g15 = {(k, L): groups_ms(run(dep, pc, "prefill", 1, L)) for k, pc in (("TP", TP), ("SP", SP)) for L in long_lens}

    def share(k: str, L: int) -> str:
        step_ms = step_of(run(dep, TP if k == "TP" else SP, "prefill", 1, L)).time_s * 1e3
        return f"{g15[(k, L)]['indexer'] / step_ms:.0%}"

    over = [L for L in long_lens if g15[("TP", L)]["indexer"] >= g15[("TP", L)]["core"]]
    out.append(Claim("15", "wuhuikx", "the indexer is the bottleneck of DS-V3.2",
                     f"one prompt of {', '.join(f'{L // 1024}K' for L in long_lens)}: indexer share of the step "
                     f"TP{w} " + " / ".join(share("TP", L) for L in long_lens) + f", SP{w} "
                     + " / ".join(share("SP", L) for L in long_lens) + f"; indexer vs sparse-MLA core under TP{w}: "
                     + " / ".join(f"{_f(g15[('TP', L)]['indexer'])} vs {_f(g15[('TP', L)]['core'])}" for L in long_lens)
                     + " ms", f"agrees under TP from {over[0] // 1024}K (the indexer passes the core); "
                     "SP removes it" if over else "differs: the core stays larger",
                     (command(dep, TP, "prefill", 1, LONGEST),)))
    c8, c64 = groups_ms(by_len[("SP", 8192)])["core"], groups_ms(by_len[("SP", 65536)])["core"]
    i8, i64 = groups_ms(by_len[("SP", 8192)])["indexer"], groups_ms(by_len[("SP", 65536)])["indexer"]
    out.append(Claim("16", "wuhuikx", "sparse MLA: each query attends to the top-k (2048) keys, not all",
                     f"SP{w}, 8K -> 64K prompt (8x the tokens): core {_f(c8)} -> {_f(c64)} ms "
                     f"({_ratio(c64, c8)}: linear), indexer {_f(i8)} -> {_f(i64)} ms ({_ratio(i64, i8)}: quadratic)",
                     "agrees" if c64 / c8 < 12 < i64 / i8 else "differs",
                     (command(dep, SP, "prefill", 1, 65536),)))
    out.append(Claim("17", "wuhuikx", "the indexer loops over the query's sequence; SP cuts it from S to S/N per card",
                     f"indexer score FLOPs per rank: SP{w} = TP{w} / {sc['TP'] / sc['SP']:.0f}; CP{w} the same",
                     "agrees" if abs(sc["TP"] / sc["SP"] - w) < 1e-9 and sc["CP"] == sc["SP"] else "differs",
                     (command(dep, SP, "prefill", 1, S),)))
    c64_tp = groups_ms(by_len[("TP", 65536)])["core"]
    out.append(Claim("18", "ganyi1996ppo", "bottleneck 1: sparse MLA with sharded heads (tiles only on heads)",
                     f"64K prompt: core {_f(c64_tp)} ms under TP{w} vs {_f(c64)} ms under SP{w} "
                     f"({_ratio(c64_tp, c64)}); see 4", "agrees" if c64_tp > 2 * c64 else "differs",
                     (command(dep, TP, "prefill", 1, 65536),)))
    out.append(Claim("19", "ganyi1996ppo", "bottleneck 2: the indexer under DP/TP repeats on every card what needs "
                     "1/SP", "see 3 and 17", "agrees" if redundant else "differs", ()))
    for cid, name in (("20", f"SP{w} + MoE TP{w}"), ("21", f"SP{w} + MoE EP{w}")):
        pc = mt[name]
        e, d = run(dep, pc, "prefill", 1, S), run(dep, pc, "decode", DECODE_BATCH, 8192)
        out.append(Claim(cid, "wuhuikx", f"attention SP + MoE {'TP' if 'TP' in name.split('+')[1] else 'EP'}",
                         f"{name}: TTFT {_f(e.ttft_s * 1e3)} ms ({S // 1024}K), TPOT {_f(d.tpot_s * 1e3)} ms "
                         f"(b{DECODE_BATCH} 8K), {_f(mem_gb(d))} GB per rank; {expressed(dep, pc)}",
                         "agrees (expressible)",
                         (command(dep, pc, "prefill", 1, S),)))
    out.append(Claim("22", "ganyi1996ppo", "SP for decode too",
                     f"b{DECODE_BATCH} TPOT at 8K: SP{w} {_f(dec8['SP'].tpot_s * 1e3)} vs DP{w} "
                     f"{_f(dec8['DP'].tpot_s * 1e3)} vs CP{w} {_f(dec8['CP'].tpot_s * 1e3)} ms; memory at 64K: SP{w} "
                     f"{_f(mem_gb(dec64['SP']))} GB ({'fits' if dec64['SP'].memory.feasible else 'does not fit'}) vs "
                     f"DP{w} {_f(mem_gb(dec64['DP']))} GB: every SP rank holds the whole batch's cache",
                     "differs: no decode gain at equal request lengths, the group's cache on every rank",
                     (command(dep, SP, "decode", DECODE_BATCH, 65536),
                      command(dep, DP, "decode", DECODE_BATCH, 65536))))
    return out


def claims_table(dep: Deployment) -> None:
    rows = claims(dep)
    print(f"### the RFC's claims on {dep.name}\n")
    print("| # | who | RFC claim | the tool's figure | verdict |")
    print("|---|---|---|---|---|")
    for c in rows:
        print(f"| {c.cid} | {c.who} | {c.text} | {c.figure} | {c.verdict} |")
    print("\nCommands (each prints the figure of its claim):\n")
    for c in rows:
        for cmd in c.commands:
            print(f"- {c.cid}: `{cmd}`")
    counts: dict[str, int] = {}
    for c in rows:
        key = "not modelled" if c.verdict.startswith("not modelled") else c.verdict.split(" ")[0].split(":")[0]
        counts[key] = counts.get(key, 0) + 1
    print("\nVerdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + "\n")


def main() -> None:
    deps = deployments()
    rfc = deps[0]
    print("## DeepSeek-V3.2: attention TP vs DP vs SP vs CP (times in ms per step)\n")
    print("proj = q/kv (MLA) projections; core = sparse MLA; indexer = indexer projections + scoring + top-k; "
          "o_proj = o_proj GEMM; MoE = routed experts (with their token permute) + shared experts + router; "
          "other = dense FFN layers + embedding + lm_head; comm = exposed communication (all modules); idx % = "
          "indexer share of the step; mem GB = memory per rank including the 3.76 GB (3.5 GiB) runtime reserve; "
          "fits = mem GB less the reserve within min(0.95 x capacity, capacity - reserve). TTFT / TPOT are what "
          "`shardplan estimate` prints (the step plus the engine's fixed costs), the parts are the step's.\n")
    claims_table(rfc)
    sp_degree_table(rfc)
    moe_option_table(rfc)
    memory_table(rfc)
    print("## Tables per deployment\n")
    for dep in deps:
        deployment_tables(dep)


if __name__ == "__main__":
    main()
