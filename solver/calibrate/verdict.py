"""Judge calibration figures against the profiling-calibration thresholds.

Each rule has two bounds as fractions (0.20 = 20%) and three bands:
    value <  ok_below              -> "ok"
    ok_below <= value <= bad_above -> "warn"   (both boundaries belong to the middle band)
    value >  bad_above             -> "bad"
So exactly 20% communication is "warn" and exactly 40% is still "warn"; 5% and 15% rank variance are
"warn"; 10% and 30% estimate deviation are "warn". A value within 1e-9 of a bound counts as on it, so that
0.3 reached through float arithmetic (e.g. |1.3 - 1.0| / 1.0) lands where the same figure written by
hand would.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from solver.calibrate.compare import signed_deviation
from solver.errors import InputError

Level = Literal["ok", "warn", "bad"]
_EPS = 1e-9


@dataclass(frozen=True)
class Band:
    message: str
    action: str


@dataclass(frozen=True)
class Rule:
    metric: str
    ok_below: float
    bad_above: float
    ok: Band
    warn: Band
    bad: Band


@dataclass(frozen=True)
class Verdict:
    metric: str
    value: float
    level: Level
    message: str
    action: str


COMMUNICATION_RATIO = "communication_ratio"
RANK_VARIANCE = "rank_variance"
ESTIMATE_DEVIATION = "estimate_deviation"

RULES: dict[str, Rule] = {
    COMMUNICATION_RATIO: Rule(
        COMMUNICATION_RATIO, 0.20, 0.40,
        ok=Band("communication under 20% of the step: the strategy is reasonable", "none"),
        warn=Band("communication 20-40% of the step: room for optimization",
                  "check whether TP communication crosses nodes (keep tp_size within one node)"),
        bad=Band("communication over 40% of the step: the strategy has issues", "adjust the TP/EP ratio"),
    ),
    RANK_VARIANCE: Rule(
        RANK_VARIANCE, 0.05, 0.15,
        ok=Band("step time spread across ranks under 5%: well balanced", "none"),
        warn=Band("step time spread across ranks 5-15%: expert load is uneven", "consider perfect_eplb: True"),
        bad=Band("step time spread across ranks over 15%", "the EP strategy may not suit this workload; "
                                                             "reconsider the EP degree"),
    ),
    ESTIMATE_DEVIATION: Rule(
        ESTIMATE_DEVIATION, 0.10, 0.30,
        ok=Band("measurement within 10% of the estimate: strategy confirmed", "none"),
        warn=Band("measurement 10-30% off the estimate", "fine-tune the deviating module "
                                                          "(e.g. adjust tp_size so communication stays in a node)"),
        bad=Band("measurement over 30% off the estimate", "re-evaluate the strategy; consider module-level "
                                                           "differentiated parallelism"),
    ),
}


def judge(metric: str, value: float) -> Verdict:
    """Verdict for a fraction-valued metric under `RULES[metric]` (see the module docstring for bounds)."""
    rule = RULES.get(metric)
    if rule is None:
        raise InputError("metric", f"unknown metric {metric!r}; known: {', '.join(RULES)}")
    if not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
        raise InputError(metric, f"must be a fraction >= 0, got {value!r}")
    if value < rule.ok_below - _EPS:
        level, band = "ok", rule.ok
    elif value > rule.bad_above + _EPS:
        level, band = "bad", rule.bad
    else:
        level, band = "warn", rule.warn
    return Verdict(metric, float(value), level, f"{band.message} ({value:.1%})", band.action)


def communication_verdict(ratio: float) -> Verdict:
    """Communication share of the step. The seed's figure is the raw sum of collective durations over the
    step time (`communication_ratio_raw`); the exposed share is the stricter reading of the same rule."""
    return judge(COMMUNICATION_RATIO, ratio)


def variance_verdict(variance: float) -> Verdict:
    """(max - min) / mean of per-rank step times."""
    return judge(RANK_VARIANCE, variance)


def deviation(estimated: float, measured: float) -> float:
    """Relative deviation |measured - estimated| / estimated of a measurement from its estimate: the magnitude
    of `compare.signed_deviation`, except that a missing estimate (<= 0) raises instead of giving None."""
    signed = signed_deviation(estimated, measured)
    if signed is None:
        raise InputError("estimate", f"must be > 0 to compare against, got {estimated!r}")
    return abs(signed)


def deviation_verdict(value: float) -> Verdict:
    """Relative deviation of a measured figure (step time, memory...) from the estimate."""
    return judge(ESTIMATE_DEVIATION, value)
