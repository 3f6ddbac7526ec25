"""More metamorphic properties of the estimator (test_metamorphic_estimate.py holds the first ones and the `Case`
strategy): a layer type's own knob (window, top-k, context), MTP, the network, the per-request state and the
serving figures. Each test is one physical rule; where the naive form does not hold physically, the test states
the narrower form that does and its docstring says why."""
from __future__ import annotations

import dataclasses
from collections import defaultdict

import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from conftest import examples
from solver.specs.dtypes import KV16, KVFormat
from solver.estimate.compute import factors_for
from solver.estimate.request_state import request_state
from solver.estimate.serving import Estimate, estimate
from solver.estimate.workload import Workload
from solver.specs.framework import load_framework
from solver.specs.hardware import Hardware
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model import ModelSpec
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision
from test_metamorphic_estimate import FRAMEWORKS, REL, SETTINGS, Case, _or_reject, _serving, cases

# one catalog model per layer type whose cost reads the context (its mixer class in the model's stack)
BY_LAYER_TYPE = {
    "GatedDeltaNet": "qwen3-next-80b-a3b", "Mamba2": "nemotron-3-nano", "Lightning": "minimax-m1",
    "KDA": "kimi-k3", "MLA": "deepseek-v3", "MLA+DSA": "deepseek-v3.2", "CompressedAttention": "deepseek-v4-pro",
    "Attention (sliding GQA)": "gpt-oss-20b", "Attention (sliding, 5:1)": "gemma-3-27b",
    "Attention (chunked)": "llama-4-scout",
}
LINEAR_TYPES = ("GatedDeltaNet", "Mamba2", "Lightning", "KDA")
DEVICES = ("h100_sxm", "h200_sxm", "b200_sxm", "mi300x", "atlas_a3")


def _with_mixers(model: ModelSpec, change) -> ModelSpec:
    """The model with `change(block)` in place of every layer's mixer (MTP modules included): None keeps it."""
    def layer(l):
        blocks = tuple((change(b) or b) if b.role == "mixer" else b for b in l.blocks)
        return dataclasses.replace(l, blocks=blocks)
    return dataclasses.replace(model, layers=tuple(layer(l) for l in model.layers),
                               mtp_modules=tuple(tuple(layer(l) for l in m) for m in model.mtp_modules))


def _run(model: ModelSpec, hw: Hardware, knobs: dict[str, int], world: int, wl: Workload,
         fw: str | None = None, base: Hardware | None = None) -> Estimate:
    """The estimate under profile `fw`'s factors for `base` (the device `hw` is a faster copy of; default `hw`),
    or the device's own factors without a profile."""
    pc = _or_reject(make_parallel_config, world, **knobs)
    prec = _or_reject(resolve_precision, model, hw)
    scale = load_framework(fw).efficiency_for(base or hw) if fw else None
    return _or_reject(estimate, model, hw, pc, prec, factors_for(hw, scale), wl)


def _op_times(step) -> dict[tuple[str, str], float]:
    """Time per (module, op name) of a step, summed over layers."""
    out: dict[tuple[str, str], float] = defaultdict(float)
    for o in step.ops:
        out[(o.module, o.name)] += o.time_s
    return out


@st.composite
def layer_cases(draw, types=tuple(BY_LAYER_TYPE)):
    """A model of one layer type on a catalog device under a profile that runs on it (or none), on 1 to 8 ranks
    with TP knobs from the world's divisors and sometimes a sequence knob (CP or KVP)."""
    kind = draw(st.sampled_from(types))
    model = load_model(BY_LAYER_TYPE[kind])
    hw = load_hardware(draw(st.sampled_from(DEVICES)))
    world = draw(st.sampled_from((1, 2, 4, 8)))
    sizes = [d for d in (1, 2, 4, 8) if world % d == 0]
    knobs = {k: draw(st.sampled_from(sizes)) for k in ("attn_tp_size", "moe_tp_size", "dense_tp_size")}
    seq = draw(st.sampled_from((None, "cp_size", "kvp_size")))
    if seq and world > 1:
        knobs[seq] = draw(st.sampled_from(sizes[1:]))
    fw = draw(st.sampled_from((None,) + FRAMEWORKS))
    if fw is not None and hw.vendor not in load_framework(fw).vendors:
        reject()
    return kind, model, hw, knobs, world, fw


# ------------------------------------------------------------------------------------------------ a layer's knob


@settings(max_examples=examples(60), **SETTINGS)
@given(layer_cases(), st.sampled_from((1, 16, 64)), st.sampled_from((1024, 8192, 65536)))
def test_a_longer_context_never_makes_a_decode_step_or_its_ops_faster(case, batch, ctx) -> None:
    """Per layer type (GDN, Mamba-2, lightning, KDA, MLA, DSA, CSA/HCA, sliding and chunked GQA), a decode step
    at twice the context is no faster, nor is any of its ops: a step reads the same weights and as many or more
    keys (a recurrent layer's state is the same size at any context; a window or a top-k caps the keys, it
    never lowers them). Also for decode steps over OSL = 512 tokens after prompts of twice the length."""
    kind, model, hw, knobs, world, fw = case
    a = _run(model, hw, knobs, world, Workload("decode", batch=batch, seq_len=ctx), fw)
    b = _run(model, hw, knobs, world, Workload("decode", batch=batch, seq_len=2 * ctx), fw)
    assert b.tpot_s >= a.tpot_s * (1 - REL), kind
    a2, b2 = (_run(model, hw, knobs, world, Workload.decode_of(batch, n, 512), fw) for n in (ctx, 2 * ctx))
    assert b2.tpot_s >= a2.tpot_s * (1 - REL), kind
    ta, tb = _op_times(a.decode), _op_times(b.decode)
    for key, t in ta.items():
        assert tb[key] >= t * (1 - REL), (kind, key)


@settings(max_examples=examples(60), **SETTINGS)
@given(layer_cases(), st.sampled_from((1, 4)), st.sampled_from((512, 4096, 32768)))
def test_a_longer_prompt_never_makes_a_prefill_step_or_its_ops_faster(case, batch, isl) -> None:
    """Per layer type, a prefill of prompts twice as long is no faster, nor is any of its ops, nor a serving
    request (TTFT + (OSL - 1) TPOT): more tokens through every projection, each query sees as many or more keys,
    and the decode steps hold longer contexts."""
    kind, model, hw, knobs, world, fw = case
    a = _run(model, hw, knobs, world, Workload("prefill", batch=batch, seq_len=isl), fw)
    b = _run(model, hw, knobs, world, Workload("prefill", batch=batch, seq_len=2 * isl), fw)
    assert b.ttft_s >= a.ttft_s * (1 - REL), kind
    a2, b2 = (_run(model, hw, knobs, world, _serving(n, 256, 8 * batch), fw) for n in (isl, 2 * isl))
    assert b2.ttft_s + 255 * b2.tpot_s >= (a2.ttft_s + 255 * a2.tpot_s) * (1 - REL), kind
    ta, tb = _op_times(a.prefill), _op_times(b.prefill)
    for key, t in ta.items():
        assert tb[key] >= t * (1 - REL), (kind, key)


def _wider_window(block):
    return dataclasses.replace(block, window=block.window * 2) if getattr(block, "window", None) else None


def _larger_topk(block):
    idx = getattr(block, "indexer", None)
    return dataclasses.replace(block, indexer=dataclasses.replace(idx, topk=idx.topk * 2)) if idx else None


@settings(max_examples=examples(60), **SETTINGS)
@given(layer_cases(("Attention (sliding GQA)", "Attention (sliding, 5:1)", "Attention (chunked)", "CompressedAttention", "MLA+DSA")),
       st.sampled_from(("window", "topk")), st.sampled_from((1, 16, 64)), st.sampled_from((4096, 65536)))
def test_a_larger_window_or_top_k_never_makes_a_step_faster(case, knob, batch, ctx) -> None:
    """Doubling the window of the sliding / chunked / compressed layers, or the top-k of a selecting indexer
    (DSA, CSA), never makes a decode step or a prefill faster, op by op, nor a serving request (TTFT + (OSL - 1)
    TPOT) shorter: each query attends to as many or more keys, and the cache holds as many or more. Narrowed
    from 'never lowers the serving TPOT': a larger cache fits fewer sequences, and where the KV capacity caps
    the running batch the smaller batch decodes faster steps (Llama-4-Scout, window 8192 -> 16384, 4 x H100
    at 2K tokens: 3 running sequences in place of 4, TPOT 33.3 ms in place of 38.0 ms) while the waiting
    requests' slot wait lengthens TTFT more (4.13 s in place of 1.36 s)."""
    kind, model, hw, knobs, world, fw = case
    changed = _with_mixers(model, _wider_window if knob == "window" else _larger_topk)
    if changed == model:
        reject()  # the model has no such knob
    for wl in (Workload("decode", batch=batch, seq_len=ctx), Workload("prefill", batch=1, seq_len=ctx // 4)):
        a, b = _run(model, hw, knobs, world, wl, fw), _run(changed, hw, knobs, world, wl, fw)
        step_a, step_b = (a.decode, b.decode) if wl.kind == "decode" else (a.prefill, b.prefill)
        assert step_b.time_s >= step_a.time_s * (1 - REL), (kind, knob, wl.kind)
        tb = _op_times(step_b)
        for key, t in _op_times(step_a).items():
            assert tb[key] >= t * (1 - REL), (kind, knob, wl.kind, key)
        assert b.memory.cache_total >= a.memory.cache_total * (1 - REL)
    wl = _serving(ctx // 4, 256, batch)
    a, b = _run(model, hw, knobs, world, wl, fw), _run(changed, hw, knobs, world, wl, fw)
    assert b.ttft_s + 255 * b.tpot_s >= (a.ttft_s + 255 * a.tpot_s) * (1 - REL), (kind, knob, "serving")


# ------------------------------------------------------------------------------------------------ MTP


MTP_MODELS = ("deepseek-v3", "qwen3.5-35b-a3b", "glm-4.5", "mimo-7b")


@st.composite
def mtp_cases(draw):
    model = load_model(draw(st.sampled_from(MTP_MODELS)))
    hw = load_hardware(draw(st.sampled_from(DEVICES)))
    world = draw(st.sampled_from((1, 2, 4, 8)))
    sizes = [d for d in (1, 2, 4, 8) if world % d == 0]
    knobs = {k: draw(st.sampled_from(sizes)) for k in ("attn_tp_size", "moe_tp_size", "dense_tp_size")}
    fw = draw(st.sampled_from((None,) + FRAMEWORKS))
    if fw is not None and hw.vendor not in load_framework(fw).vendors:
        reject()
    return model, hw, knobs, world, fw


@settings(max_examples=examples(60), **SETTINGS)
@given(mtp_cases(), st.sampled_from((1, 2, 3)), st.sampled_from((0.3, 0.6, 0.8)), st.sampled_from((1, 16, 64)),
       st.sampled_from((1024, 8192)), st.sampled_from((128, 1024)))
def test_a_higher_mtp_acceptance_never_raises_tpot(case, depth, acc, c, isl, osl) -> None:
    """At the same config, depth and concurrency, a higher draft acceptance never raises TPOT: the step runs
    the same draft and verify work and emits more tokens (mtp_tokens_per_step grows with the acceptance)."""
    model, hw, knobs, world, fw = case
    lo, hi = (_run(model, hw, knobs, world, Workload.decode_of(c, isl, osl, depth, a), fw) for a in (acc, acc + 0.15))
    assert hi.tpot_s <= lo.tpot_s * (1 + REL)
    lo, hi = (_run(model, hw, knobs, world, dataclasses.replace(_serving(isl, osl, c), mtp=depth, mtp_accept=a), fw)
              for a in (acc, acc + 0.15))
    assert hi.tpot_s <= lo.tpot_s * (1 + REL)


@settings(max_examples=examples(60), **SETTINGS)
@given(mtp_cases(), st.sampled_from((0, 1, 2)), st.sampled_from((1, 16, 64)), st.sampled_from((1024, 8192)))
def test_a_deeper_mtp_never_shortens_the_decode_step(case, depth, c, ctx) -> None:
    """One more draft token never makes the decode step itself shorter: the step verifies one more token
    per sequence and runs the draft module once more (the step, not TPOT, which divides by the tokens it
    emits)."""
    model, hw, knobs, world, fw = case
    a, b = (_run(model, hw, knobs, world, Workload("decode", batch=c, seq_len=ctx, mtp=d), fw) for d in (depth, depth + 1))
    assert b.decode.time_s >= a.decode.time_s * (1 - REL)


# ------------------------------------------------------------------------------------------------ network


def _better_network(hw: Hardware, what: str) -> Hardware:
    tiers = {n: t.model_copy(update={"bandwidth_Bps": t.bandwidth_Bps * 2} if what == "bandwidth"
                             else {"latency_s": t.latency_s / 2}) for n, t in hw.tiers.items()}
    return hw.model_copy(update={"tiers": tiers})


@settings(max_examples=examples(60), **SETTINGS)
@given(cases(worlds=(2, 4, 8, 16), frameworks=True), st.sampled_from(("bandwidth", "latency")), st.sampled_from((1, 16, 64)),
       st.sampled_from((1024, 8192)), st.sampled_from((64, 512)))
def test_a_better_network_never_slows_a_step(case: Case, what, c, isl, osl) -> None:
    """Every tier at twice the bandwidth, or half the latency, never slows a prefill or a decode step nor any
    collective in it, nor the serving TPOT or a whole serving request (TTFT + (OSL - 1) TPOT), inside a node
    and across two: a collective moves the same bytes in as few or fewer seconds, and the compute does not read
    the network. (The serving TTFT alone may rise, as under a faster device: test_metamorphic_estimate.)"""
    fast = _better_network(case.hw, what)
    for wl in (Workload("prefill", batch=1, seq_len=isl), Workload("decode", batch=c, seq_len=isl)):
        a, b = _or_reject(case.run, wl), _or_reject(case.run, wl, hw=fast)
        sa, sb = (a.prefill, b.prefill) if wl.kind == "prefill" else (a.decode, b.decode)
        assert sb.time_s <= sa.time_s * (1 + REL), wl
        for ca, cb in zip(sa.comms, sb.comms):
            assert cb.time_s <= ca.time_s * (1 + REL), (wl.kind, ca.name)
    a, b = _or_reject(case.run, _serving(isl, osl, c)), _or_reject(case.run, _serving(isl, osl, c), hw=fast)
    assert b.tpot_s <= a.tpot_s * (1 + REL)
    assert b.ttft_s + (osl - 1) * b.tpot_s <= (a.ttft_s + (osl - 1) * a.tpot_s) * (1 + REL)


# ------------------------------------------------------------------------------------------------ memory


@pytest.mark.parametrize("kind", LINEAR_TYPES)
def test_a_linear_layers_request_state_is_independent_of_the_context(kind) -> None:
    """A recurrent layer (GDN, Mamba-2, lightning, KDA) keeps one fixed-size state per request: it adds no
    bytes per token, and a request's constant state is the same at 1K and 128K tokens."""
    model = load_model(BY_LAYER_TYPE[kind])
    hw = load_hardware("h100_sxm")
    blocks = [l.mixer for l in model.layers if type(l.mixer).__name__ == kind]
    assert blocks
    for b in blocks:
        st_ = b.state(KV16, 1)
        assert st_.per_token_bytes == 0 and st_.index_per_token_bytes == 0 and st_.constant_bytes > 0
    pc, prec = make_parallel_config(1), resolve_precision(model, hw)
    assert request_state(model, pc, prec, 1024).constant == request_state(model, pc, prec, 131072).constant
    short, long = (_run(model, hw, {}, 1, Workload("decode", batch=4, seq_len=n)).memory for n in (1024, 131072))
    assert short.state_bytes == long.state_bytes > 0


@pytest.mark.parametrize("model,kv_bytes,attn_tp,expected", [
    # Llama-3.1-8B GQA: 8 KV heads x (128 K + 128 V) x 2 B = 4096 B; TP 4: 2 heads a rank -> 1024 B
    ("llama-3.1-8b", 2, 1, 8 * 256 * 2),
    ("llama-3.1-8b", 2, 4, 2 * 256 * 2),
    # TP 16 above the 8 KV heads: each rank still holds one whole head -> 256 x 2 = 512 B
    ("llama-3.1-8b", 2, 16, 1 * 256 * 2),
    # DeepSeek-V3 MLA: latent 512 + rope key 64, bf16 -> 1152 B, whatever the attention TP
    ("deepseek-v3", 2, 1, (512 + 64) * 2),
    ("deepseek-v3", 2, 8, (512 + 64) * 2),
    # dense MLA at FP8: the plain row, (512 + 64) x 1 B = 576 B
    ("deepseek-v3", 1, 1, 512 + 64),
    # sparse (DSA) MLA at FP8: the sparse kernels' row, 512 fp8 + 4 fp32 scales (one per 128) + 64 bf16 rope = 656 B
    ("deepseek-v3.2", 1, 1, 512 + 4 * 4 + 64 * 2),
    # gpt-oss-20b sliding and full GQA layers alike: 8 KV heads x (64 + 64) x 2 B = 2048 B
    ("gpt-oss-20b", 2, 1, 8 * 128 * 2),
])
def test_kv_bytes_per_token_per_layer_are_the_attention_kinds_formula(model, kv_bytes, attn_tp, expected) -> None:
    """KV bytes one token adds in one attention layer on one rank are the hand formula of its attention kind."""
    m = load_model(model)
    for l in m.layers:
        if type(l.mixer).__name__ in ("Attention", "MLA"):
            assert l.mixer.state(KVFormat(kv_bytes), attn_tp).per_token_bytes == expected, l.mixer


def test_a_sliding_layer_holds_its_window_and_a_full_layer_the_context() -> None:
    """gpt-oss-20b at 8192 tokens, one request, bf16 KV, one rank: 12 full layers hold 8192 tokens and 12
    sliding layers their 128-token window, 2048 B a token each: (12 x 8192 + 12 x 128) x 2048 B."""
    m, hw = load_model("gpt-oss-20b"), load_hardware("h100_sxm")
    windows = [l.mixer.window for l in m.layers]
    assert windows.count(None) == 12 and windows.count(128) == 12
    prec = resolve_precision(m, hw, None, None, "bf16")
    assert request_state(m, make_parallel_config(1), prec, 8192).kv == (12 * 8192 + 12 * 128) * 2048


# ------------------------------------------------------------------------------------------------ serving figures


@settings(max_examples=examples(60), **SETTINGS)
@given(cases(frameworks=True), st.sampled_from((1, 4, 16, 64, 256)), st.sampled_from((128, 1024, 4096)),
       st.sampled_from((64, 512)), st.sampled_from((0, 0, 1, 3)))
def test_serving_throughput_never_exceeds_concurrency_over_the_request_time(case, c, isl, osl, mtp) -> None:
    """Output tokens/s per rank <= C / (TTFT + (OSL - 1) TPOT) x OSL / ranks: C clients in a closed loop each
    wait a whole request (its first token, then OSL - 1 more) before sending the next, so at most C x OSL
    tokens leave per request time (Little's law); and TTFT is no shorter than the prefill of one prompt. With
    or without MTP (TPOT is then the step over the tokens it emits)."""
    if mtp and len(case.model.mtp_modules) == 0:
        reject()
    e = _or_reject(case.run, dataclasses.replace(_serving(isl, osl, c), mtp=mtp))
    request_s = e.ttft_s + (osl - 1) * e.tpot_s
    assert e.output_tokens_per_s_per_rank <= c * osl / request_s / e.world_size * (1 + 1e-6)
    one = _or_reject(case.run, Workload("prefill", batch=1, seq_len=isl))
    assert e.ttft_s >= one.prefill.time_s * (1 - REL)


@pytest.mark.parametrize("ep", (2, 4, 8))
def test_an_ep_rank_sends_top_k_hidden_vectors_per_token_per_moe_layer(ep) -> None:
    """DeepSeek-V3 decode on H100 under attention DP and EP = world (2, 4, 8), 8 sequences a rank: per MoE
    layer a rank dispatches each of its tokens to its 8 routed experts as 7168 fp8 values and takes back as
    many bf16 values, whatever the EP size: 58 MoE layers x 8 tokens x 8 x 7168 x 1 B = 26,607,616 B
    dispatched, twice that combined."""
    m, hw = load_model("deepseek-v3"), load_hardware("h100_sxm")
    e = _run(m, hw, {"attn_tp_size": 1, "moe_tp_size": 1, "dense_tp_size": 1}, ep,
             Workload("decode", batch=8 * ep, seq_len=4096))
    comms = {c.name: c for c in e.decode.comms}
    assert comms["ep_dispatch"].group == comms["ep_combine"].group == ep
    assert comms["ep_dispatch"].bytes == 58 * 8 * 8 * 7168 * 1
    assert comms["ep_combine"].bytes == 58 * 8 * 8 * 7168 * 2


def _faster(hw: Hardware, what: str) -> Hardware:
    if what == "hbm":
        return hw.model_copy(update={"hbm_bandwidth_Bps": hw.hbm_bandwidth_Bps * 2})
    return hw.model_copy(update={"peak_flops": {d: v * 2 for d, v in hw.peak_flops.items()}})


@settings(max_examples=examples(60), **SETTINGS)
@given(layer_cases(), st.sampled_from(("hbm", "flops")), st.sampled_from((1, 16, 256)),
       st.sampled_from((1024, 32768)))
def test_a_faster_device_never_slows_an_op(case, what, batch, ctx) -> None:
    """Twice the HBM bandwidth, or twice the FLOP/s, never slows any op of a prefill or a decode step, per layer
    type: an op's time is its bytes over the bandwidth and its FLOPs over the FLOP/s (each with its fitted
    efficiency, which reads the op's shape, not the device's speed), plus a fixed launch cost. Nor a serving
    loop's prefill or decode step, nor a whole serving request."""
    kind, model, hw, knobs, world, fw = case
    fast = _faster(hw, what)
    for wl in (Workload("prefill", batch=1, seq_len=ctx // 8), Workload("decode", batch=batch, seq_len=ctx)):
        a, b = _run(model, hw, knobs, world, wl, fw), _run(model, fast, knobs, world, wl, fw, hw)
        sa, sb = (a.prefill, b.prefill) if wl.kind == "prefill" else (a.decode, b.decode)
        tb = _op_times(sb)
        for key, t in _op_times(sa).items():
            assert tb[key] <= t * (1 + REL), (kind, what, wl.kind, key)
    wl = _serving(ctx // 8, 256, batch)
    a, b = _run(model, hw, knobs, world, wl, fw), _run(model, fast, knobs, world, wl, fw, hw)
    assert b.prefill_step_s <= a.prefill_step_s * (1 + REL) and b.decode_step_s <= a.decode_step_s * (1 + REL)
    assert b.ttft_s + 255 * b.tpot_s <= (a.ttft_s + 255 * a.tpot_s) * (1 + REL)


@settings(max_examples=examples(60), **SETTINGS)
@given(layer_cases(), st.sampled_from((1, 16, 64)), st.sampled_from((4096, 32768)))
def test_a_narrower_kv_cache_never_reads_more_bytes_in_a_decode_step(case, batch, ctx) -> None:
    """An 8-bit KV cache (fp8 where the device computes it, else int8) never makes a decode step's ops read
    more bytes than a 16-bit one, op by op: the same keys at half the bytes or fewer (scales included)."""
    kind, model, hw, knobs, world, fw = case
    narrow = "fp8" if hw.supports("fp8") else "int8"
    pc = _or_reject(make_parallel_config, world, **knobs)
    scale = load_framework(fw).efficiency_for(hw) if fw else None
    wl = Workload("decode", batch=batch, seq_len=ctx)
    steps = [_or_reject(estimate, model, hw, pc, _or_reject(resolve_precision, model, hw, None, None, kv), 
                        factors_for(hw, scale), wl).decode for kv in ("bf16", narrow)]
    wide: dict[tuple[str, str], float] = defaultdict(float)
    for o in steps[0].ops:
        wide[(o.module, o.name)] += o.bytes
    thin: dict[tuple[str, str], float] = defaultdict(float)
    for o in steps[1].ops:
        thin[(o.module, o.name)] += o.bytes
    for key, b in thin.items():
        assert b <= wide[key] * (1 + REL), (kind, key)
