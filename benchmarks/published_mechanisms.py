"""Where the estimate of each large published miss goes (the rows of `published_rows.py`; never fitted on).

    python benchmarks/published_mechanisms.py

For the published rows the estimator misses most (#5, #6, #7, #13, #14, #17) it prints the quantities that carry
the error, from the shipped estimator and factors, beside what the published figures imply:

- serving rows: running sequences per replica B, prompts per prefill step n, the prefill step P_n and the decode
  step tau as the engine runs them, the policy, the first-wave and steady-state TTFT;
- throughput rows (#5, #6, #17): the time per request C x OSL / throughput (Little's law) the published figure
  implies against the estimate's, split into the prefill steps of a wave and the decode steps;
- TTFT rows (#13, #14): TTFT against the benchmark's request count k x C (closed_loop: the first-wave burst weighs
  1 / k), and the k that would meet the published figure (the sources record no request count or warm-up);
- MTP rows (#7): the tokens per step the published per-user figure implies at the estimate's step, against the
  default acceptance's;
- #17: tok/s/GPU at lower running batches (the source records neither max_batch_size nor the KV pool).

benchmarks/README.md ("stop pub1") reads these figures.
"""
from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from published_rows import PUBLISHED, Published  # noqa: E402
from solver.estimate.serving import Estimate, estimate, kv_capacity_per_replica, mtp_tokens_per_step  # noqa: E402
from solver.measured import case_from_row, factors  # noqa: E402
from solver.specs.scenario import DEFAULT_MTP_ACCEPT  # noqa: E402

ROWS = (5, 6, 7, 13, 14, 17)


def _run(pub: Published, waves: int | None = None, concurrency: int | None = None) -> tuple[Estimate, dict]:
    """The estimate of a published row as `published_rows` makes it ('max load' = the KV capacity), with the
    benchmark's request count k x C (`waves`) or the concurrency overridden."""
    row = dict(pub.row)
    mtp, max_running = int(row.pop("mtp", 0)), int(row.pop("max_running", 0))
    if concurrency:
        row["concurrency"] = concurrency
    elif not row["concurrency"]:
        probe = case_from_row({**row, "concurrency": 1})
        cap = kv_capacity_per_replica(probe.model, probe.hw, probe.pc, probe.prec, probe.workload.context_len)
        row["concurrency"] = max(1, int(cap) * probe.pc.attn_replicas)
    case = case_from_row(row, waves=waves)
    wl = replace(case.workload, mtp=mtp, max_running=max_running)
    return estimate(case.model, case.hw, case.pc, case.prec, factors(case), wl), {**row, "mtp": mtp}


def _steps(est: Estimate) -> str:
    return (f"B {est.running_per_replica:g}, P_n {est.prefill_step_s * 1e3:.1f} ms, tau {est.decode_step_s * 1e3:.2f} ms, "
            f"{est.policy}, TTFT first wave {est.ttft_first_wave_s:.2f} s / steady {est.ttft_steady_s:.2f} s")


def little(pub: Published, est: Estimate, row: dict) -> list[str]:
    """Time per request implied by the published throughput against the estimate's, and the estimate's split."""
    c, osl = row["concurrency"], row["osl"]
    per_rank = pub.metric == "tok_s_gpu"
    ranks = est.world_size if per_rank else 1
    pub_req = c * osl / (pub.value * ranks)
    est_req = c * osl / est.output_tokens_per_s
    ttft, decode = est.ttft_s, (osl - 1) * est.tpot_s  # a request's wait for its first token, then its decode
    return [f"     request time (Little): published {pub_req:.1f} s = {pub_req / (osl - 1) * 1e3:.0f} ms per output "
            f"token; estimate {est_req:.1f} s = TTFT {ttft:.1f} s + (OSL - 1) x TPOT {decode:.1f} s "
            f"({est_req / (osl - 1) * 1e3:.0f} ms per token): the published time needs the decode part x "
            f"{1 + (pub_req - est_req) / decode:.2f} or the TTFT part x {1 + (pub_req - est_req) / ttft:.2f}"]


def waves(pub: Published) -> list[str]:
    """TTFT against the benchmark's request count k x C, and the k that meets the published figure."""
    out = []
    for k in (1, 2, 5, 20):
        est, _ = _run(pub, waves=k)
        out.append(f"k={k} {est.ttft_s * 1e3:.0f} ms")
    est, _ = _run(pub)
    t1, tss = est.ttft_first_wave_s, est.ttft_steady_s
    target = pub.value / 1e3
    k = (t1 - tss) / (target - tss) if target > tss else math.inf
    return [f"     TTFT by request count: {', '.join(out)}; the published {pub.value:g} ms needs k = {k:.1f}"
            + (" (above the steady state: none)" if k == math.inf else "")]


def mtp(pub: Published, est: Estimate, row: dict) -> list[str]:
    step = est.decode_step_s
    implied = step * pub.value
    default = mtp_tokens_per_step(row["mtp"], DEFAULT_MTP_ACCEPT)
    return [f"     decode step {step * 1e3:.2f} ms at {default:.2f} tokens per step (default acceptance); the "
            f"published {pub.value:g} tok/s/user needs {implied:.2f} tokens per step at this step, or a step of "
            f"{default / pub.value * 1e3:.2f} ms at the default"]


def batch_scan(pub: Published) -> list[str]:
    parts = []
    for b in (128, 256, 512):
        est, _ = _run(pub, concurrency=b)
        parts.append(f"C {b}: {est.output_tokens_per_s_per_rank:.0f}")
    return [f"     tok/s/GPU at lower running batches: {', '.join(parts)} (published {pub.value:g})"]


def report() -> list[str]:
    lines = []
    for pub in PUBLISHED:
        if pub.source_row not in ROWS:
            continue
        est, row = _run(pub)
        value = {"tok_s_gpu": est.output_tokens_per_s_per_rank, "tok_s_user": est.tokens_per_s_per_user,
                 "ttft_ms": est.ttft_s * 1e3, "tpot_ms": est.tpot_s * 1e3,
                 "tok_s_total": est.output_tokens_per_s}[pub.metric]
        lines.append(f"#{pub.source_row} {pub.label.strip()} [{pub.metric}]: published {pub.value:g}, estimate "
                     f"{value:.4g} ({(value / pub.value - 1) * 100:+.0f}%); C {row['concurrency']}")
        lines.append(f"     {_steps(est)}")
        if pub.metric in ("tok_s_gpu", "tok_s_total") and row["concurrency"] > 1:
            lines += little(pub, est, row)
        if pub.metric == "ttft_ms" and row["concurrency"] > 1:
            lines += waves(pub)
        if pub.metric == "tok_s_user" and row["mtp"]:
            lines += mtp(pub, est, row)
        if pub.source_row == 17:
            lines += batch_scan(pub)
    return lines


if __name__ == "__main__":
    print("\n".join(report()))
