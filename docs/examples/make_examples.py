"""Rebuild the synthetic traces of docs/calibration-example.md.

    .venv/bin/python docs/examples/make_examples.py

Two 8-rank runs of Qwen3-30B-A3B on 8 x H200 (attn_tp_size 4, EP8): a prefill step (2 prompts of 4096 tokens)
and a decode step (128 sequences at 4096 tokens of context). Every kernel time is the estimate of that config
with known 'true' efficiencies (gemm 0.62, attention 0.55, hbm 0.70, NVLink tier 0.65) instead of the catalog's
(0.78, 0.75, 0.80, 0.82); rank r runs jitter[r] times slower (mean 1, spread 4%). The builder is
tests/test_recalibrate.py::write_estimate_run (kernel names and Chrome-trace layout from tests/traces_synth.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "tests"))

from test_recalibrate import HARDWARE, MODEL, TRUE, write_estimate_run  # noqa: E402

from solver.calibrate.compare import make_setup  # noqa: E402
from solver.calibrate.config import load_profiled_config  # noqa: E402
from solver.calibrate.fit import factor_values, with_factors  # noqa: E402
from solver.specs.hardware_catalog import load_hardware  # noqa: E402


def main() -> None:
    hw = load_hardware(HARDWARE)
    true_hw = with_factors(hw, {**factor_values(hw), **TRUE})
    for name in ("prefill", "decode"):
        cfg = load_profiled_config(HERE / f"qwen3-30b-{name}.yaml", trace_world=8, trace_ranks=8)
        folder = HERE / f"trace-{name}"
        for old in folder.glob("*.json"):
            old.unlink()
        write_estimate_run(folder, make_setup(MODEL, hw, cfg), true_hw)
        print(f"wrote {folder.relative_to(HERE.parent.parent)}/ ({len(list(folder.glob('*.json')))} rank files)")


if __name__ == "__main__":
    main()
