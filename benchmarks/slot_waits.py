"""Slot waits: the rows whose TTFT is dominated by waiting for a running slot, predicted B against implied B.

    python benchmarks/slot_waits.py [--csv PATH] [--top N] [--rows N]

In a closed loop at concurrency C, an engine that holds only B < C_r running sequences per replica makes the
other C_r - B requests wait for a slot. By Little's law over the run, the requests in flight on a replica split
into those running and those waiting in the same proportion as a request's time splits between its time in a
slot (its prefill and its OSL - 1 decode steps) and its wait, so the measured figures imply

    B_implied = C_r x in_slot / (TTFT + (OSL - 1) TPOT),   in_slot = (OSL - 1) TPOT + min(TTFT, TTFT_served)

where TTFT_served is the predicted TTFT without the slot wait (closed_loop.ServingTimes: ttft_s - slot_wait_s),
with the fitted factors. (It ignores that the first B requests of a k-wave run never wait: closed_loop.py's
(1 - B / (k C_r)); with k = 5 that lowers the implied wait by up to 20%.) `B slot` inverts closed_loop.py's own
slot-wait formula instead (implied_slots), with the k-wave share.

For each of the top-N rows by measured TTFT it prints the measured and predicted (fitted factors, in-sample)
TTFT and TPOT, C_r, the predicted B (closed_loop.serving_shape: min(C_r, KV capacity, max_running)), the KV
capacity in sequences of ISL + OSL tokens, B_implied, and the memory terms per rank (weights, KV bytes per
sequence of ISL + OSL tokens, activations, the memory limit: solver/estimate/memory.py).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import accuracy as acc  # noqa: E402
import accuracy_rows as rows_  # noqa: E402

from solver.estimate.memory import memory_per_rank  # noqa: E402
from solver.estimate.request_state import request_state  # noqa: E402
from solver.estimate.serving import kv_capacity_per_replica, slot_wait_s  # noqa: E402

GIB = 2**30


def implied_running(p: rows_.Prepared, served_s: float) -> float:
    """B from the measured TTFT and TPOT by Little's law (module docstring)."""
    w = p.case.workload
    decode = (w.osl - 1) * p.tpot_s
    in_slot = decode + min(p.ttft_s, served_s)
    return p.shape.per_replica * in_slot / (p.ttft_s + decode)


def implied_slots(p: rows_.Prepared, served_s: float) -> float:
    """B that closed_loop.slot_wait_s would need to give the measured TTFT, at the measured TPOT and the predicted
    TTFT without the slot wait: TTFT = served + (C_r - B) / B x (served + (OSL - 1) TPOT) x (1 - B / (k C_r))
    (decreasing in B), solved by bisection on 1..C_r; C_r where the measured TTFT is at most `served`."""
    w, cr = p.case.workload, p.shape.per_replica
    request = served_s + (w.osl - 1) * p.tpot_s

    def ttft(b: float) -> float:
        return served_s + slot_wait_s(b, cr, request, w)

    if p.ttft_s <= served_s or cr <= 1:
        return float(cr)
    lo, hi = 1.0, float(cr)
    if ttft(lo) <= p.ttft_s:
        return lo
    for _ in range(60):
        mid = (lo + hi) / 2
        if ttft(mid) > p.ttft_s:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def report(prepared: list[rows_.Prepared], fitted, top: int) -> list[str]:
    rows = sorted(prepared, key=lambda p: -p.ttft_s)[:top]
    lines = [f"{'id':<58} {'model':<20} {'system':<9} {'fw':<6} {'ver':<14} {'ISL':>5} {'OSL':>5} {'C':>4} "
             f"{'TP':>2} {'DP':>2}  {'TTFT meas':>9} {'pred':>8}  {'TPOT meas':>9} {'pred':>7}  {'C_r':>4} "
             f"{'B pred':>6} {'cap':>6} {'B impl':>6} {'B slot':>6}  {'wts GiB':>7} {'KV/seq MiB':>10} {'act GiB':>7} "
             f"{'lim GiB':>7}"]
    for p in rows:
        params = rows_.profile_params(p, fitted)
        t, _, _ = rows_.predict_times(p, params)
        c, w = p.case, p.case.workload
        served = t.ttft_s - t.slot_wait_s
        cap = kv_capacity_per_replica(c.model, c.hw, c.pc, c.prec, w.context_len)
        mem = memory_per_rank(c.model, c.hw, c.pc, c.prec, max(1, p.shape.running) * c.pc.attn_replicas,
                              w.context_len)
        st = request_state(c.model, c.pc, c.prec, w.context_len)
        lines.append(
            f"{str(p.row['id'])[:58]:<58} {acc.short_model(p.model)[:20]:<20} {p.hardware[:9]:<9} "
            f"{p.framework:<6} {str(p.row.get('backend_version', ''))[:14]:<14} {w.isl:>5} {w.osl:>5} "
            f"{w.concurrency:>4} {c.pc.attn_tp_size:>2} {c.pc.attn_replicas:>2}  {p.ttft_s * 1e3:>9.0f} "
            f"{t.ttft_s * 1e3:>8.0f}  {p.tpot_s * 1e3:>9.2f} {t.tpot_s * 1e3:>7.2f}  {p.shape.per_replica:>4} "
            f"{p.shape.running:>6} {cap:>6.0f} {implied_running(p, served):>6.0f} {implied_slots(p, served):>6.0f}  "
            f"{mem.weights_total / GIB:>7.1f} {(st.kv + st.index + st.constant) / 2**20:>10.1f} "
            f"{mem.activation_bytes / GIB:>7.2f} {mem.limit_bytes / GIB:>7.1f}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", type=Path, default=rows_.DEFAULT_CSV)
    ap.add_argument("--factors", type=Path, default=rows_.FACTORS_YAML)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--rows", type=int, default=0)
    args = ap.parse_args(argv)
    rows = rows_.load_rows(args.csv)
    if args.rows:
        rows = rows[: args.rows]
    prepared, _ = rows_.prepare_all(rows)
    print("\n".join(report(prepared, rows_.load_factors(args.factors), args.top)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
