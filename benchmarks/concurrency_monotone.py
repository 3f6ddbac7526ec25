"""Is request latency non-decreasing in the concurrency, configuration by configuration?

A planner floor carried from one concurrency to the next (a layout's lower bound at B kept as a floor at 2B)
would be valid only if it were. For a few deployments this draws random configurations from the planner's own
tables (every group's choice at the attention choice's stage count) and evaluates L = TTFT + (OSL - 1) x TPOT at
each concurrency the planner visits (Tables.figures: the figures the planner optimises), then counts the
consecutive pairs where L falls and by how much (benchmarks/README.md, "Planner speed", stop 27).

Run: python benchmarks/concurrency_monotone.py [--samples 300] [--seed 0]
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from solver.estimate.compute import factors_for  # noqa: E402
from solver.plan.table_build import build_tables  # noqa: E402
from solver.plan.tables import Tables  # noqa: E402
from solver.space.domains import build_space  # noqa: E402
from solver.specs.framework import load_framework  # noqa: E402
from solver.specs.hardware_catalog import load_hardware  # noqa: E402
from solver.specs.model_catalog import load_model  # noqa: E402
from solver.specs.precision import resolve_precision  # noqa: E402
from solver.specs.scenario import Scenario  # noqa: E402

# (model, hardware, cards, framework, weight dtype, ISL, OSL): one MoE + DSA on Ascend, a dense model, an MXFP4 MoE,
# a hybrid linear-attention MoE and a small MoE, each on an engine that serves it
DEPLOYMENTS = (
    ("deepseek-v3.2", "atlas_a3", 32, "generic", "int8", 4096, 256),
    ("llama-3.1-70b", "h100_sxm", 8, "vllm", None, 1024, 1024),
    ("qwen3-30b-a3b", "h200_sxm", 8, "sglang", None, 8192, 1024),
    ("gpt-oss-120b", "b200_sxm", 8, "trtllm", None, 1024, 8192),
    ("qwen3-next-80b-a3b", "h200_sxm", 8, "vllm", None, 2048, 512),
)


def tables_of(model: str, hardware: str, cards: int, framework: str, weight_dtype: str | None, isl: int,
              osl: int, mtp: int = 0, phase: str = "serving") -> tuple[Tables, Scenario]:
    """The planner's tables of one deployment (balanced scenario; the phase and MTP depth as given)."""
    spec, hw, fw = load_model(model), load_hardware(hardware), load_framework(framework)
    sc = Scenario(kind="balanced", isl=isl, osl=osl, mtp=mtp, phase=phase)
    prec = resolve_precision(spec, hw, weight_dtype, None, None)
    space = build_space(spec, hw, fw, cards, sc, False)
    return build_tables(spec, hw, prec, factors_for(hw, fw.efficiency_for(hw)), fw, space, sc, None), sc


def random_picks(t: Tables, rng: random.Random) -> dict[str, int] | None:
    """One configuration: an attention choice and, for every other group, a choice at its stage count."""
    a = rng.randrange(len(t.choices["attn"]))
    pp = t.choices["attn"][a][-1]
    picks = {"attn": a}
    for g, choices in t.choices.items():
        if g == "attn":
            continue
        at = [j for j, c in enumerate(choices) if c[-1] == pp]
        if not at:
            return None
        picks[g] = rng.choice(at)
    return picks


def latency_steps(t: Tables, sc: Scenario, picks: dict[str, int]) -> list[tuple[int, float, float]]:
    """(concurrency, L at the concurrency before, L here) for each consecutive pair of the planner's concurrencies."""
    out, prev = [], None
    for b in t.batches:
        fig = t.figures(b, picks)
        lat = sc.request_latency(fig.ttft_s, fig.tpot_s)
        if prev is not None:
            out.append((b, prev, lat))
        prev = lat
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    print(f"{'deployment':<48} {'pairs':>6} {'L falls':>8} {'largest fall':>13}")
    for dep in DEPLOYMENTS:
        t, sc = tables_of(*dep)
        pairs = falls = 0
        worst = 0.0
        for _ in range(args.samples):
            picks = random_picks(t, rng)
            if picks is None:
                continue
            for _, prev, lat in latency_steps(t, sc, picks):
                pairs += 1
                if lat < prev * (1 - 1e-12):
                    falls += 1
                    worst = max(worst, 1 - lat / prev)
        name = f"{dep[0]} {dep[2]} x {dep[1]} ({dep[3]})"
        print(f"{name:<48} {pairs:>6} {falls:>8} {100 * worst:>12.2f}%")


if __name__ == "__main__":
    main()
