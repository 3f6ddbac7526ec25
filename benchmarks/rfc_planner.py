"""The RFC case through the planner: DeepSeek-V3.2 with long prompts on 8 MI355X (the RFC's hardware: the generic
profile, which has every knob, and ATOM's, which has no attention SP; FP8 weights and KV), 8 H200s (sglang
profile, FP8 weights and KV) and 16 Atlas A3 dies (generic profile, W8A8 and INT8 KV), latency scenario, OSL 512,
concurrency chosen by the planner. One markdown table per (hardware, profile, ISL): the top 3 with their knobs and
estimates.

    .venv/bin/python benchmarks/rfc_planner.py
"""
from __future__ import annotations

from solver.api import run_solve
from solver.specs.scenario import Scenario

CASES = [("mi355x", 8, "generic", None, "fp8"), ("mi355x", 8, "atom", None, "fp8"),
         ("h200_sxm", 8, "sglang", None, "fp8"), ("atlas_a3", 16, "generic", "int8", "int8")]
ISLS = (8192, 32768, 65536)


def main() -> None:
    for hw, cards, fw, wdt, kv in CASES:
        for isl in ISLS:
            sc = Scenario(kind="latency", isl=isl, osl=512)
            _, cands = run_solve("deepseek-v3.2", hw, cards, sc, fw, wdt, None, kv, explain_binding=False)
            print(f"\n### {hw} x{cards} ({fw}), isl {isl}, osl 512, latency\n")  # timing: benchmarks/solver_speed.py
            print("| # | pattern | knobs > 1 | concurrency | GB/rank | TTFT ms | TPOT ms | tok/s/rank | reference |")
            print("|---|---|---|---|---|---|---|---|---|")
            for c in cands:
                p = c.planned
                knobs = " ".join(f"{k.removesuffix('_size')}={v}" for k, v in p.config.knobs().items() if v > 1)
                e = p.estimate
                print(f"| {c.rank} | {c.pattern} | {knobs} | {p.batch} | {e.memory.total / 1e9:.1f} | "
                      f"{e.ttft_s * 1e3:,.0f} | {e.tpot_s * 1e3:.2f} | {e.output_tokens_per_s_per_rank:.1f} | "
                      f"{c.reference} |")


if __name__ == "__main__":
    main()
