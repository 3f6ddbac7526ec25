"""Issue 15 stop slots17: the KV budget variants, refitted and measured in and out of sample (experiment harness).

    python benchmarks/slots17_variants.py NAME [memory=VARIANT] [kv=auto [kv_fw=vllm,sglang]] [oracle_slots=1 [min_ratio=R]] [mla=576] [cv=0|1] [out=DIR]

NAME picks how the engines size their KV cache (specs.framework.FrameworkMemory per framework, VARIANTS); the
variant is NAME unless memory= names one; kv=auto gives
the rows of kv_fw the engines' default KV dtype (the model's, not FP8); oracle_slots=1 sets each row's running
batch to the one its measured TTFT implies (a ceiling, use_oracle_slots); mla=576 stores FP8 MLA KV as its 576
values instead of FlashMLA's 656-byte layout. The harness then runs fit_efficiency.fit_all and accuracy.loo_errors exactly as accuracy.py does, prints (b) and (c)
TTFT / TPOT median (p90), the ranking, and writes the per-row errors with the predicted B to OUT/NAME.json.
"""
from __future__ import annotations

import contextlib
import io
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np  # noqa: E402

import accuracy as A  # noqa: E402
import fit_efficiency as F  # noqa: E402


from solver.specs.framework import FrameworkMemory, FrameworkProfile  # noqa: E402

# SGLang 0.5.9 server_args._handle_gpu_memory_settings (the PyPI wheel, as read): mem_fraction_static
SGLANG_STATIC = dict(rule="static_fraction", reserve_base_mib=512, reserve_per_budget_token_mib=1.5,
                     reserve_min_budget_tokens=2048, reserve_per_graph_batch_mib=2, reserve_per_rank_mib=128,
                     reserve_per_graph_batch_dp_mib=3, reserve_floor_mib=10240, reserve_floor_above_gib=60,
                     graph_max_batch=512, graph_max_batch_tiers=({"below_memory_gib": 160, "below_tp": 4,
                                                                  "batch": 256},))
VLLM_UTIL = dict(rule="utilization", fraction=0.9)  # vLLM 0.12 CacheConfig.gpu_memory_utilization
TRTLLM_FREE = dict(rule="free_fraction", fraction=0.9)  # TensorRT-LLM KvCacheConfig.free_gpu_memory_fraction
SEED: dict = {}
MEAN = dict(held_tokens="mean")
FULL = dict(sliding_window="full")
# variant -> framework -> FrameworkMemory fields (a framework not named keeps its profile's block)
VARIANTS: dict[str, dict[str, dict]] = {
    "base": {"vllm": SEED, "sglang": SEED, "trtllm": SEED},
    "engine": {"vllm": VLLM_UTIL, "sglang": SGLANG_STATIC, "trtllm": TRTLLM_FREE},
    "engine_mean": {"vllm": {**VLLM_UTIL, **MEAN}, "sglang": {**SGLANG_STATIC, **MEAN}, "trtllm": TRTLLM_FREE},
    "vllm_util": {"vllm": VLLM_UTIL, "sglang": SEED, "trtllm": SEED},
    "sglang_static": {"vllm": SEED, "sglang": SGLANG_STATIC, "trtllm": SEED},
    "trtllm_free": {"vllm": SEED, "sglang": SEED, "trtllm": TRTLLM_FREE},
    "seed_window_full": {"vllm": FULL, "sglang": FULL, "trtllm": FULL},
    "engine_window_full": {"vllm": {**VLLM_UTIL, **FULL}, "sglang": {**SGLANG_STATIC, **FULL},
                           "trtllm": {**TRTLLM_FREE, **FULL}},
    "profiles": {},  # the shipped framework profiles as they are
}


def use_variant(name: str) -> None:
    table = {fw: FrameworkMemory(**fields) for fw, fields in VARIANTS[name].items()}
    original = FrameworkProfile.serving_factors

    def serving_factors(self):
        out = original(self)
        if self.name in table:
            out["engine_memory"] = table[self.name]
        return out

    FrameworkProfile.serving_factors = serving_factors  # type: ignore[method-assign]


def use_engine_kv_dtype(frameworks: tuple[str, ...]) -> None:
    """The rows of `frameworks` with the engine's default KV-cache dtype, `auto` = the model's dtype (vLLM
    CacheConfig.cache_dtype; SGLang --kv-cache-dtype auto), instead of measured.py's FP8 KV on FP8 / FP4 rows."""
    import solver.measured as measured

    original_resolve, original_case = measured.resolve_precision, measured.case_from_row
    state = {"auto": False}

    def resolve(*args, **kwargs):
        if state["auto"]:
            kwargs["kv_dtype"] = None
        return original_resolve(*args, **kwargs)

    def case_from_row(row, framework=None, waves=None):
        state["auto"] = str(row.get("backend", "")).strip() in frameworks
        try:
            return original_case(row, framework, waves)
        finally:
            state["auto"] = False

    measured.resolve_precision = resolve
    measured.case_from_row = case_from_row
    A.case_from_row = case_from_row


def use_oracle_slots(rows, min_ratio: float = 0.0) -> None:
    """Diagnosis (a ceiling, not an estimate): each row's running batch set to the B its measured TTFT implies
    (slot_waits.implied_slots, shipped factors) where that is below C_r and the measured TTFT is at least
    `min_ratio` x the predicted one without a slot wait, so the slot wait and the decode batch
    are what the measurement says; every other row as it is."""
    import slot_waits

    prep, _ = A.prepare_all(rows)
    fitted = A.load_factors()
    implied = {}
    for p in prep:
        t, _, _ = A.predict_times(p, A.profile_params(p, fitted))
        served = t.ttft_s - t.slot_wait_s
        b = slot_waits.implied_slots(p, served)
        if b < p.shape.per_replica - 0.5 and p.ttft_s >= min_ratio * served:
            implied[p.index] = max(1, int(round(b)))
    original_prepare, original_shape = A.prepare, A.serving_shape
    current = {"i": None}

    def shape(wl, replicas, cap, synced=1, sizes=()):
        if current["i"] in implied:
            cap = implied[current["i"]]
        return original_shape(wl, replicas, cap, synced, sizes)

    def prepare(row, index=0, waves=None):
        current["i"] = index
        try:
            return original_prepare(row, index, waves)
        finally:
            current["i"] = None

    A.serving_shape, A.prepare = shape, prepare
    print(f"oracle slots on {len(implied)} rows")


def use_mla_values_only() -> None:
    """FP8 MLA KV as its 576 values (512 latent + 64 rope, 1 byte each; facts/attention-variants.md) instead of
    FlashMLA's 656-byte layout."""
    import math
    from solver.specs.layers import mla

    cls = [c for c in vars(mla).values() if isinstance(c, type) and "kv_bytes_per_token" in vars(c)]
    for c in cls:
        original = c.kv_bytes_per_token

        def kv_bytes_per_token(self, kv_bytes, attn_tp=1, _orig=original):
            if kv_bytes == 1:
                return self.kv_lora_rank + self.qk_rope_head_dim
            return _orig(self, kv_bytes, attn_tp)

        c.kv_bytes_per_token = kv_bytes_per_token
    print("mla576 on", [c.__name__ for c in cls])


def run(name: str, opts: dict[str, str]) -> None:
    use_variant(opts.get("memory", name))
    if opts.get("mla") == "576":
        use_mla_values_only()
    if opts.get("kv") == "auto":
        use_engine_kv_dtype(tuple(opts.get("kv_fw", "vllm,sglang").split(",")))
    t0 = time.time()
    rows = A.load_rows(Path(opts.get("csv", A.DEFAULT_CSV)))
    if opts.get("oracle_slots") == "1":
        use_oracle_slots(rows, float(opts.get("min_ratio", 0)))
    prep, _ = A.prepare_all(rows)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fac, filled, shared = F.fit_all(prep)
    print(buf.getvalue())

    def params_b(p):
        return {**A.profile_params(p, None), **fac[p.framework][p.hardware]}

    bt, bp = A.errors(prep, params_b)
    if opts.get("cv", "1") == "1":
        ct, cp, notes = A.loo_errors(prep, F.fit_group, F.fit_global, F.fit_framework)
    else:
        ct, cp, notes = bt * np.nan, bp * np.nan, []

    def s(e):
        a = np.abs(e) * 100
        return f"{np.nanmedian(a):.1f}% ({np.nanpercentile(a, 90):.1f})"

    print(f"{name}: (b) {s(bt)} / {s(bp)}   (c) {s(ct)} / {s(cp)}")
    print("(b)", A.ranking(prep, bt, bp)[0])
    if opts.get("cv", "1") == "1":
        print("(c)", A.ranking(prep, ct, cp)[0])
        print("\n".join(A.table(prep, ct, cp, "(c)") + A.mode_table(prep, ct, cp)))
    for n in notes:
        if "refitted" in n:
            print(n)
    rows = []
    for i, p in enumerate(prep):
        pc, w = p.case.pc, p.case.workload
        rows.append(dict(i=i, id=str(p.row.get("id")), fw=p.framework, hw=p.hardware, model=A.short_model(p.model),
                         tp=pc.attn_tp_size, dp=pc.attn_replicas, isl=w.isl, osl=w.osl, C=w.concurrency,
                         Cr=p.shape.per_replica, B=p.shape.running, ttft=p.ttft_s, tpot=p.tpot_s,
                         bt=float(bt[i]), bp=float(bp[i]), ct=float(ct[i]), cp=float(cp[i])))
    out = Path(opts.get("out", "/tmp"))
    json.dump(dict(rows=rows, shared=shared, fac=fac), open(out / f"{name}.json", "w"))
    print("runtime", round(time.time() - t0, 1))


if __name__ == "__main__":
    run(sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:]))
