"""Published row #12 (DeepSeek-V3.2, 8xH200, ShareGPT 'max load') as the benchmark ran it, and how much of its
miss the run's shape can carry (never fitted on).

    python benchmarks/burst_tail.py

The engines' benchmark_serving sends its 1,000 ShareGPT prompts at once (vLLM 0.34.0 benchmarks/serve.py:
--request-rate inf, --max-concurrency None, --num-prompts 1000): one burst, one wave (published_rows builds it
so). Its reported total token throughput is N x (ISL + OSL) over the run's duration D (first request sent to
last token), so D_pub = N x (ISL + OSL) / published. The estimate's D is the same with its throughput.

ShareGPT's output lengths vary (the reply's length); the sampler keeps prompts of 4-1,024 tokens with prompt +
output <= 2,048 (vLLM 0.34.0 benchmarks/datasets/datasets.py is_valid_sequence), so the longest output of the
run is at most OSL_MAX = 2,048 - 4. With a decode step linear in the batch, tau(B) = a + b B, a run whose outputs
vary decodes for sum_t tau(B(t)) = a OSL_longest + b N OSL_mean against (a + b N) OSL_mean at a fixed OSL: the
tail adds a (OSL_longest - OSL_mean), a ~ tau at one sequence per replica (tau_1). The sample's longest output is
not in facts/ (nor is the dataset), so this prints the bound at OSL_MAX and the tail the published figure would
need (tail = (D_pub - D_est) / tau_1 extra steps, against the OSL_MAX - OSL_mean the sampler allows).
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from published_rows import PUBLISHED, SHAREGPT_OSL, SHAREGPT_PROMPTS, metric_value, published_case  # noqa: E402
from solver.estimate.serving import estimate  # noqa: E402
from solver.measured import factors  # noqa: E402

# the sampler's bounds (module docstring): prompt >= 4 tokens, prompt + output <= 2,048
OSL_MAX = 2048 - 4


def main() -> int:
    print(f"{'setup':<52}{'published':>10}{'est k=1':>9}{'err':>7}{'D_pub s':>9}{'D_est s':>9}{'tau_1 ms':>9}"
          f"{'tail bound':>11}{'err':>7}{'tail needed':>12}")
    for pub in PUBLISHED:
        if pub.source_row != 12:
            continue
        case, wl, _ = published_case(pub)
        f = factors(case)
        est = estimate(case.model, case.hw, case.pc, case.prec, f, wl)
        one = estimate(case.model, case.hw, case.pc, case.prec, f, replace(wl, concurrency=case.pc.attn_replicas))
        tokens = SHAREGPT_PROMPTS * (wl.isl + wl.osl)
        value = metric_value(pub, est, wl)
        d_pub, d_est, tau_1 = tokens / pub.value, tokens / value, one.decode_step_s
        bound = tokens / (d_est + (OSL_MAX - wl.osl) * tau_1)
        needed = (d_pub - d_est) / tau_1
        print(f"{pub.label:<52}{pub.value:>10.0f}{value:>9.0f}{value / pub.value - 1:>+7.0%}{d_pub:>9.1f}"
              f"{d_est:>9.1f}{tau_1 * 1e3:>9.2f}{bound:>11.0f}{bound / pub.value - 1:>+7.0%}{needed:>12.0f}")
    print(f"tail bound: the estimate with the longest output at the sampler's cap ({OSL_MAX} tokens); tail needed: "
          f"extra steps at tau_1 the published duration implies (the sampler allows at most {OSL_MAX - SHAREGPT_OSL})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
