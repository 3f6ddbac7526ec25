"""Metamorphic properties of the estimator: relations between two estimates of related configurations that hold
whatever the model, device or parallel config, drawn (derandomized) over catalog models of every family (dense,
MoE, MLA, hybrid linear attention, Mamba), five devices and the TP knobs' divisors of the world size.

Each test is one physical rule. Where a naive form of the rule does not hold physically, the test states the
narrower form that does and its docstring says why."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from conftest import examples
from solver.errors import InputError
from solver.estimate.compute import factors_for
from solver.estimate.serving import Estimate, estimate
from solver.estimate.step import StepCost
from solver.estimate.workload import Workload
from solver.specs.dtypes import FORMATS
from solver.specs.framework import load_framework
from solver.specs.hardware import Hardware
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model import ModelSpec
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig, absent_knobs, make_parallel_config
from solver.specs.precision import Precision, resolve_precision

MODELS = ("qwen3-8b", "llama-3.1-70b", "qwen3-30b-a3b", "deepseek-v3", "qwen3-next-80b-a3b", "qwen3.5-35b-a3b",
          "nemotron-3-nano-30b-a3b", "gpt-oss-20b")
DEVICES = ("h100_sxm", "h200_sxm", "b200_sxm", "mi300x", "atlas_a3")
TP_KNOBS = ("attn_tp_size", "dense_tp_size", "moe_tp_size", "embed_tp_size", "lmhead_tp_size")
SEQUENCE_KNOBS = ("cp_size", "kvp_size", "attn_sp_size")
FRAMEWORKS = ("vllm", "sglang", "trtllm", "generic", "cann-recipes", "vllm-ascend", "atom")
REL = 1e-9  # float noise between two evaluations of the same formulas
SETTINGS = dict(derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                         HealthCheck.filter_too_much])


@dataclass(frozen=True)
class Case:
    model: ModelSpec
    hw: Hardware
    knobs: dict[str, int]
    world: int
    framework: str | None = None

    @property
    def pc(self) -> ParallelConfig:
        return make_parallel_config(self.world, **self.knobs)

    def prec(self, weight_dtype: str | None = None) -> Precision:
        return resolve_precision(self.model, self.hw, weight_dtype)

    def run(self, wl: Workload, hw: Hardware | None = None, knobs: dict[str, int] | None = None,
            prec: Precision | None = None) -> Estimate:
        """The estimate under the profile's factors for this device (its fitted ones: `self.hw`'s, also when
        `hw` is a faster copy), or the device's own without a profile."""
        hw = hw or self.hw
        pc = make_parallel_config(self.world, **(knobs or self.knobs))
        scale = load_framework(self.framework).efficiency_for(self.hw) if self.framework else None
        return estimate(self.model, hw, pc, prec or self.prec(), factors_for(hw, scale), wl)


@st.composite
def cases(draw, worlds: tuple[int, ...] = (1, 2, 4, 8), frameworks: bool = False, sharded: bool = False) -> Case:
    """A catalog model on a catalog device, TP knobs drawn from the world's divisors, sometimes one sequence knob
    (CP, KVP or attention SP); with `frameworks`, a profile that runs on the device (its factors, custom
    all-reduce and serving loop), else the device's own factors; `sharded`: always a sequence knob of 2 or more."""
    model = load_model(draw(st.sampled_from(MODELS)))
    hw = load_hardware(draw(st.sampled_from(DEVICES)))
    world = draw(st.sampled_from(worlds))
    absent = set(absent_knobs(model))
    sizes = [d for d in (1, 2, 4, 8) if world % d == 0]
    knobs = {k: 1 if k in absent else draw(st.sampled_from(sizes)) for k in TP_KNOBS}
    seq = draw(st.sampled_from(SEQUENCE_KNOBS if sharded else (None,) + SEQUENCE_KNOBS))
    if seq is not None and seq not in absent:
        knobs[seq] = draw(st.sampled_from(sizes[1:] if sharded else sizes))
    elif sharded:
        reject()
    fw = draw(st.sampled_from(FRAMEWORKS)) if frameworks else None
    case = Case(model, hw, knobs, world, fw)
    try:
        case.pc, case.prec()
    except InputError:
        reject()  # a config the space refuses
    if fw is not None and hw.vendor not in load_framework(fw).vendors:
        reject()  # the profile does not run on this device
    return case


def _serving(isl: int, osl: int, c: int) -> Workload:
    return Workload("serving", isl=isl, osl=osl, concurrency=c)


def _or_reject(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except InputError:
        reject()


# ------------------------------------------------------------------------------------------------ memory


def _memory_at_double(case, knob: str, batch: int, seq: int):
    """(memory at the case's knobs, memory with `knob` doubled) of a decode step; rejected where the model lacks
    the knob's module, the doubled knob outgrows the world, or either config is refused."""
    if knob in absent_knobs(case.model) or case.knobs[knob] * 2 > case.world:
        reject()
    wider = {**case.knobs, knob: case.knobs[knob] * 2}
    wl = Workload("decode", batch=batch, seq_len=seq)
    return _or_reject(case.run, wl).memory, _or_reject(case.run, wl, knobs=wider).memory


@settings(max_examples=examples(25), **SETTINGS)
@given(cases(worlds=(2, 4, 8)), st.sampled_from(TP_KNOBS), st.sampled_from((1, 16, 64)),
       st.sampled_from((128, 4096)))
def test_weights_per_rank_never_grow_when_a_module_tp_doubles(case, knob, batch, seq) -> None:
    """Each module's weights per rank, and their sum, do not grow when any one TP knob doubles (the others
    fixed): a larger TP group holds a smaller or equal shard of every matrix it splits."""
    a, b = _memory_at_double(case, knob, batch, seq)
    for module, w in b.weights_bytes.items():
        assert w <= a.weights_bytes[module] * (1 + REL), (module, knob, case.knobs)
    assert b.weights_total <= a.weights_total * (1 + REL)


@settings(max_examples=examples(25), **SETTINGS)
@given(cases(worlds=(2, 4, 8)), st.sampled_from(("dense_tp_size", "embed_tp_size", "lmhead_tp_size")),
       st.sampled_from((1, 16, 64)), st.sampled_from((128, 4096)))
def test_memory_per_rank_but_communicators_never_grows_when_a_dense_embed_or_lmhead_tp_doubles(
        case, knob, batch, seq) -> None:
    """Weights + request state + activations per rank do not grow when the dense FFN's, the embedding's or the
    LM head's TP doubles at a fixed world size. Narrowed from 'memory per rank never grows under a larger TP':
    - the communication buffers can grow: a TP group that was 1 rank gets its communicator (NCCL/HCCL buffers,
      buffers.comm_buffers_per_rank);
    - attention TP at a fixed world size halves the attention-DP replicas, so each rank holds twice the
      sequences: the residual stream and the KV of heads TP replicates (TP above the KV heads) double;
    - MoE TP at a fixed world size trades expert parallelism for TP, and every rank of the TP group holds the
      full hidden vector of each token routed to its experts (moe.MoEBlock.activation).
    These three are physical, so this rule leaves them out."""
    a, b = _memory_at_double(case, knob, batch, seq)
    assert b.model_bytes - b.comm_buffer_bytes <= (a.model_bytes - a.comm_buffer_bytes) * (1 + REL)


@settings(max_examples=examples(25), **SETTINGS)
@given(cases(worlds=(2, 4, 8)))
def test_sharded_weights_cover_the_whole_model(case) -> None:
    """Weights per rank x ranks >= the model's weight bytes (the same precision on one rank), module by module:
    sharding splits or replicates a matrix, it never drops part of it."""
    wl = Workload("decode", batch=1, seq_len=128)
    whole = _or_reject(case.run, wl, knobs={k: 1 for k in TP_KNOBS}).memory.weights_bytes
    per_rank = _or_reject(case.run, wl).memory.weights_bytes
    for module, w in whole.items():
        assert per_rank[module] * case.world >= w * (1 - REL), module


def _weight_formats(hw: Hardware) -> list[str]:
    """The weight formats `hw` computes in (or stores weight-only): names by descending bytes per parameter."""
    names = [n for n, f in FORMATS.items()
             if f.compute in ("bf16", "fp16", "fp32") or hw.supports(f.compute) or f.compute in hw.weight_only_formats]
    return sorted(names, key=lambda n: -(FORMATS[n].bits / 8 + FORMATS[n].scale_bytes_per_param))


@settings(max_examples=examples(25), **SETTINGS)
@given(cases(), st.data())
def test_a_lower_weight_precision_never_gives_more_weight_bytes(case, data) -> None:
    """Fewer bits per weight (scales included) never gives more weight bytes per rank, module by module."""
    fmts = _weight_formats(case.hw)
    i = data.draw(st.integers(0, len(fmts) - 2))
    j = data.draw(st.integers(i + 1, len(fmts) - 1))
    hi, lo = fmts[i], fmts[j]
    wl = Workload("decode", batch=1, seq_len=128)
    a = _or_reject(case.run, wl, prec=_or_reject(case.prec, hi)).memory.weights_bytes
    b = _or_reject(case.run, wl, prec=_or_reject(case.prec, lo)).memory.weights_bytes
    for module, w in b.items():
        assert w <= a[module] * (1 + REL), (module, hi, lo)


@settings(max_examples=examples(25), **SETTINGS)
@given(cases(frameworks=True), st.sampled_from((1, 16, 64)), st.sampled_from((128, 4096, 32768)))
def test_memory_per_rank_never_falls_as_the_batch_or_the_context_grows(case, batch, seq) -> None:
    """More sequences, or longer ones, never need less memory per rank: weights are fixed, and the caches, the
    state, the activations and the EP staging grow or stay."""
    mem = [_or_reject(case.run, Workload("decode", batch=b, seq_len=n)).memory
           for b, n in ((batch, seq), (2 * batch, seq), (batch, 2 * seq))]
    assert mem[1].model_bytes >= mem[0].model_bytes * (1 - REL)
    assert mem[2].model_bytes >= mem[0].model_bytes * (1 - REL)


@settings(max_examples=examples(25), **SETTINGS)
@given(cases(), st.sampled_from((16, 64)), st.sampled_from((4096, 32768)))
def test_a_narrower_kv_dtype_never_adds_cache_bytes(case, batch, seq) -> None:
    """An 8-bit KV cache never holds more bytes per rank than a 16-bit one (fp8 where the device computes it,
    else int8)."""
    narrow = "fp8" if case.hw.supports("fp8") else "int8"
    wl = Workload("decode", batch=batch, seq_len=seq)
    wide = _or_reject(resolve_precision, case.model, case.hw, None, None, "bf16")
    thin = _or_reject(resolve_precision, case.model, case.hw, None, None, narrow)
    a, b = _or_reject(case.run, wl, prec=wide).memory, _or_reject(case.run, wl, prec=thin).memory
    assert b.cache_total <= a.cache_total * (1 + REL)
    assert b.kv_cache_bytes <= a.kv_cache_bytes * (1 + REL)


# ------------------------------------------------------------------------------------------------ latency


@settings(max_examples=examples(25), **SETTINGS)
@given(cases(frameworks=True), st.sampled_from((1, 4, 16, 64)), st.sampled_from((128, 1024, 4096)),
       st.sampled_from((64, 512)))
def test_tpot_never_falls_as_the_batch_grows(case, c, isl, osl) -> None:
    """At a fixed config, doubling the decode batch or the serving concurrency never lowers TPOT: each step
    reads the same weights and more KV, and computes more tokens. Narrowed to groups inside one node (<= 8
    ranks) and decode all-reduces under 8 MB: an engine's custom all-reduce switches form at fixed sizes
    (comm.all_reduce_s), and at a switch a larger message can cost less (one-shot's (n - 1)-fold reads on 16
    Atlas A3 ranks past the two-shot of twice the bytes; the two-shot's fitted latency past NCCL's two tier
    latencies at its 8 MB buffer), so the step can fall there."""
    dec = [_or_reject(case.run, Workload("decode", batch=b, seq_len=isl)).tpot_s for b in (c, 2 * c)]
    assert dec[1] >= dec[0] * (1 - REL)
    srv = [_or_reject(case.run, _serving(isl, osl, n)).tpot_s for n in (c, 2 * c)]
    assert srv[1] >= srv[0] * (1 - REL)


@settings(max_examples=examples(25), **SETTINGS)
@given(cases(frameworks=True), st.sampled_from((1, 4, 16, 64)), st.sampled_from((128, 1024, 4096)),
       st.sampled_from((64, 512)))
def test_ttft_never_falls_as_the_prompt_grows(case, c, isl, osl) -> None:
    """At a fixed config, doubling the ISL never lowers TTFT: a prefill of a longer prompt, or of as many
    longer prompts in a serving loop."""
    pre = [_or_reject(case.run, Workload("prefill", batch=1, seq_len=s)).ttft_s for s in (isl, 2 * isl)]
    assert pre[1] >= pre[0] * (1 - REL)
    srv = [_or_reject(case.run, _serving(s, osl, c)).ttft_s for s in (isl, 2 * isl)]
    assert srv[1] >= srv[0] * (1 - REL)


def _faster(hw: Hardware, what: str, k: float) -> Hardware:
    if what == "hbm_bandwidth_Bps":
        return hw.model_copy(update={"hbm_bandwidth_Bps": hw.hbm_bandwidth_Bps * k})
    return hw.model_copy(update={"peak_flops": {d: v * k for d, v in hw.peak_flops.items()}})


@settings(max_examples=examples(25), **SETTINGS)
@given(cases(frameworks=True), st.sampled_from(("hbm_bandwidth_Bps", "peak_flops")), st.sampled_from((1.25, 2.0)),
       st.sampled_from((1, 4, 16, 64, 256)), st.sampled_from((128, 1024, 4096)), st.sampled_from((64, 512)))
def test_a_faster_device_never_gives_slower_steps_or_requests(case, what, k, c, isl, osl) -> None:
    """The same device with more HBM bandwidth or more FLOP/s never gives a slower prefill (TTFT of a prefill),
    a slower decode step (TPOT), a slower serving TPOT or a longer serving request (TTFT + (OSL - 1) TPOT).
    Narrowed: the serving TTFT alone may rise under the decode-first policy. In the closed loop a faster
    decode returns requests sooner, their clients send the next ones sooner, and the busier prefill queue
    (closed_loop: rho = lambda p, the M/D/1 wait W_q) adds to each prompt's wait; the request as a whole still
    finishes sooner. Under the prefill-first policy a cohort's TTFT is its prefill steps only, so it holds."""
    fast = _faster(case.hw, what, k)
    for wl in (Workload("prefill", batch=1, seq_len=isl), Workload("decode", batch=c, seq_len=isl)):
        a, b = _or_reject(case.run, wl), _or_reject(case.run, wl, hw=fast)
        assert b.ttft_s <= a.ttft_s * (1 + REL) and b.tpot_s <= a.tpot_s * (1 + REL), wl
    wl = _serving(isl, osl, c)
    a, b = _or_reject(case.run, wl), _or_reject(case.run, wl, hw=fast)
    assert b.tpot_s <= a.tpot_s * (1 + REL)
    assert b.ttft_s + (osl - 1) * b.tpot_s <= (a.ttft_s + (osl - 1) * a.tpot_s) * (1 + REL)
    assert b.prefill_step_s <= a.prefill_step_s * (1 + REL) and b.decode_step_s <= a.decode_step_s * (1 + REL)
    if a.policy == b.policy == "prefill_first":
        assert b.ttft_s <= a.ttft_s * (1 + REL)


@settings(max_examples=examples(60), **SETTINGS)
@given(cases(worlds=(2, 4, 8), frameworks=True, sharded=True), st.sampled_from(("hbm_bandwidth_Bps", "peak_flops")),
       st.sampled_from((1, 8, 64)), st.sampled_from((4096, 16384, 65536)))
def test_a_faster_device_never_slows_a_sequence_sharded_decode(case, what, batch, ctx) -> None:
    """The same rule at long contexts under CP, KVP or attention SP, where a KV gather on the second stream
    hides behind the attention core: faster FLOP/s shorten the core's FLOP time but not its KV reads, and the
    gather stays hidden as long as the core runs (step_parts.hiding_s)."""
    wl = Workload("decode", batch=batch, seq_len=ctx)
    a, b = _or_reject(case.run, wl), _or_reject(case.run, wl, hw=_faster(case.hw, what, 2.0))
    assert b.tpot_s <= a.tpot_s * (1 + REL)


def test_a_kv_gather_hides_behind_the_whole_attention_core() -> None:
    """Llama-3.1-8B decode under attention SP 2 at 32K context, batch 8, on H100: per layer the attention core
    computes for 89 us / 32 layers but reads the KV for 6.41 ms / 32; the SP KV all-gather (1 MiB over the
    step, 0.32 ms) runs beside the whole kernel, so none of it is exposed (beside its FLOP time alone,
    0.32 - 0.09 = 0.23 ms would be)."""
    m, hw = load_model("llama-3.1-8b"), load_hardware("h100_sxm")
    pc = make_parallel_config(2, attn_sp_size=2)
    step = estimate(m, hw, pc, resolve_precision(m, hw), factors_for(hw),
                    Workload("decode", batch=8, seq_len=32768)).decode
    core = next(o for o in step.ops if o.name == "attention_core")
    gather = next(c for c in step.comms if c.name == "kv_allgather")
    assert core.compute_s < gather.time_s < core.memory_s  # the case the rule decides
    assert gather.exposed_s == max(0.0, gather.time_s - max(core.compute_s, core.memory_s)) == 0.0


# ------------------------------------------------------------------------------------------------ floors, sums


@settings(max_examples=examples(25), **SETTINGS)
@given(cases(frameworks=True), st.sampled_from((1, 16, 128)), st.sampled_from((128, 4096)))
def test_a_decode_step_takes_at_least_its_memory_and_compute_floors(case, batch, ctx) -> None:
    """A decode step lasts at least its bytes over the peak HBM bandwidth and its FLOPs over the device's
    highest peak FLOP/s (any dtype), op by op and in total: efficiencies only slow it down."""
    step = _or_reject(case.run, Workload("decode", batch=batch, seq_len=ctx)).decode
    peak = max(case.hw.peak_flops.values())
    for o in step.ops:
        assert o.time_s >= o.bytes / case.hw.hbm_bandwidth_Bps * (1 - REL), o.name
        assert o.time_s >= o.flops / peak * (1 - REL), o.name
    assert step.time_s >= sum(o.bytes for o in step.ops) / case.hw.hbm_bandwidth_Bps * (1 - REL)
    assert step.time_s >= sum(o.flops for o in step.ops) / peak * (1 - REL)


def _sums_to_step(step: StepCost) -> None:
    mods = step.by_module()
    assert math.isclose(sum(d["time_s"] for d in mods.values()) + step.overhead_s, step.time_s, rel_tol=1e-9)
    assert math.isclose(sum(step.split().values()), step.time_s, rel_tol=1e-9)


@settings(max_examples=examples(25), **SETTINGS)
@given(cases(frameworks=True), st.sampled_from((1, 16, 64)), st.sampled_from((128, 4096)), st.sampled_from((64, 512)))
def test_the_per_module_breakdown_sums_to_the_step_time(case, c, isl, osl) -> None:
    """Module times (compute + exposed communication) plus the step's fixed overhead are the step time, and so
    are the split's four kinds, for the prefill and the decode step of a serving estimate."""
    e = _or_reject(case.run, _serving(isl, osl, c))
    _sums_to_step(e.prefill)
    _sums_to_step(e.decode)


# ------------------------------------------------------------------------------------------------ entry points


def _cli_json(*args: str) -> dict:
    from solver.cli.main import main

    res = CliRunner().invoke(main, list(args))
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


FLAGS = {"attn_tp_size": "--attn-tp", "dense_tp_size": "--dense-tp", "moe_tp_size": "--moe-tp",
         "embed_tp_size": "--embed-tp", "lmhead_tp_size": "--lmhead-tp", "o_proj_tp_size": "--oproj-tp",
         "cp_size": "--cp", "kvp_size": "--kvp", "attn_sp_size": "--attn-sp", "pp_size": "--pp"}


@pytest.mark.parametrize("model,hw,cards,framework", [
    ("qwen3-30b-a3b", "h100_sxm", 4, "vllm"),
    ("llama-3.1-70b", "h200_sxm", 8, "sglang"),
    ("qwen3-next-80b-a3b", "b200_sxm", 4, "trtllm"),
])
def test_estimate_and_solve_give_one_candidates_figures(model, hw, cards, framework) -> None:
    """Each of solve's candidates, run through `estimate` (CLI, JSON) with its knobs, shows solve's TTFT,
    TPOT and memory, and the JSON's figures are the estimator's own (the step breakdown sums to its step)."""
    wl = ["--isl", "1024", "--osl", "256", "--concurrency", "32"]
    base = [model, "--hardware", hw, "--cards", str(cards), "--framework", framework]
    sol = _cli_json("solve", *base, *wl, "--top", "3", "--format", "json")
    assert sol["candidates"]
    for cand in sol["candidates"]:
        pc, e = cand["parallel_config"], cand["estimation"]
        knobs = [x for k, flag in FLAGS.items() if pc.get(k, 1) > 1 for x in (flag, str(pc[k]))]
        est = _cli_json("estimate", *base, *wl, *knobs, "--format", "json")
        assert est["ttft_ms"] == pytest.approx(e["ttft_ms"], abs=0.006), knobs
        assert est["tpot_ms"] == pytest.approx(e["tpot_ms"], abs=0.0006), knobs
        assert est["memory_per_rank_gb"] == pytest.approx(e["memory_per_rank_gb"], abs=0.006), knobs
        for step in est["breakdown"].values():
            parts = sum(d["time_ms"] for d in step["by_module"].values()) + step["split_ms"]["overhead"]
            assert parts == pytest.approx(step["step_ms"], rel=1e-9)


def test_the_cli_estimate_is_the_estimators_figure() -> None:
    """`estimate --format json` shows what estimate() returns for the same config under the same profile."""
    fw = load_framework("vllm")
    m, hw = load_model("qwen3-30b-a3b"), load_hardware("h100_sxm")
    pc = make_parallel_config(4, attn_tp_size=2, moe_tp_size=1, embed_tp_size=2, lmhead_tp_size=2)
    e = estimate(m, hw, pc, resolve_precision(m, hw), factors_for(hw, fw.efficiency_for(hw)), _serving(1024, 256, 32))
    d = _cli_json("estimate", "qwen3-30b-a3b", "--hardware", "h100_sxm", "--cards", "4", "--framework", "vllm",
                  "--attn-tp", "2", "--embed-tp", "2", "--lmhead-tp", "2", "--isl", "1024", "--osl", "256",
                  "--concurrency", "32", "--format", "json")
    assert d["ttft_ms"] == pytest.approx(e.ttft_s * 1e3, rel=1e-12)
    assert d["tpot_ms"] == pytest.approx(e.tpot_s * 1e3, rel=1e-12)
    assert d["memory_per_rank_gb"] == pytest.approx(e.memory.model_bytes / 1e9, rel=1e-12)
