"""Leave one device out: how the estimator does on a device no calibration row measured.

For each hardware of the calibration CSV, the whole fit (fit_efficiency.fit_all) is rerun on the rows of the
other devices, and the held-out device's rows are priced the way the shipped code prices a (framework, device)
pair the fit has no rows of (specs/fitted.pair_factors, fitted_global): the framework profile's multipliers on
the device YAML's own efficiencies, the global factors (grouped_gemm, allreduce_latency_s) and the engine's own
factors (seq_layer_s) of that fit, and the fixed TTFT cost of workload.DEFAULT_REQUEST_OVERHEAD_S's rule
(fit_efficiency.default_request_overhead) on that fit. Block (e) of `accuracy.py --device`.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from accuracy_rows import Prepared, predict, profile_params
from fit_efficiency import default_request_overhead, engine_factors, fit_all


def device_errors(prepared: Sequence[Prepared]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(TTFT errors, TPOT errors, notes) of every row, each priced by a fit that saw no row of its device."""
    et = np.full(len(prepared), np.nan)
    ep = np.full(len(prepared), np.nan)
    notes = []
    for device in sorted({p.hardware for p in prepared}):
        factors, filled, shared = fit_all([p for p in prepared if p.hardware != device], log=lambda _: None)
        engines = engine_factors(factors)
        o = default_request_overhead(factors, filled)
        held = [i for i, p in enumerate(prepared) if p.hardware == device]
        for i in held:
            p = prepared[i]
            params = {**profile_params(p, None), **shared, **engines.get(p.framework, {})}
            if o is not None:
                params["request_overhead_s"] = o
            t, s = predict(p, params)
            et[i], ep[i] = t / p.ttft_s - 1, s / p.tpot_s - 1
        notes.append(f"without {device} ({len(held)} rows): request_overhead_s {o:.4g}, "
                     + ", ".join(f"{k} {v:.4g}" for k, v in shared.items()))
    return et, ep, notes
