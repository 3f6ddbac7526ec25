"""Calibration thresholds: bands and which side each boundary falls on."""
from __future__ import annotations

import pytest

from solver.calibrate.verdict import (
    RULES,
    communication_verdict,
    deviation,
    deviation_verdict,
    judge,
    variance_verdict,
)
from solver.errors import InputError


@pytest.mark.parametrize("ratio, level", [
    (0.0, "ok"), (0.1999, "ok"), (0.20, "warn"), (0.30, "warn"), (0.40, "warn"), (0.4001, "bad"), (1.0, "bad"),
])
def test_communication_ratio_boundaries(ratio, level):
    assert communication_verdict(ratio).level == level


def test_communication_ratio_actions():
    assert "crosses nodes" in communication_verdict(0.25).action
    assert "TP/EP ratio" in communication_verdict(0.5).action
    v = communication_verdict(0.2)
    assert (v.metric, v.value) == ("communication_ratio", 0.2) and "20.0%" in v.message


@pytest.mark.parametrize("value, level", [
    (0.0, "ok"), (0.0499, "ok"), (0.05, "warn"), (0.15, "warn"), (0.1501, "bad"),
])
def test_rank_variance_boundaries(value, level):
    assert variance_verdict(value).level == level


def test_rank_variance_actions():
    assert "perfect_eplb" in variance_verdict(0.10).action
    assert "EP strategy" in variance_verdict(0.2).action


@pytest.mark.parametrize("value, level", [
    (0.0, "ok"), (0.0999, "ok"), (0.10, "warn"), (0.30, "warn"), (0.3001, "bad"),
])
def test_estimate_deviation_boundaries(value, level):
    assert deviation_verdict(value).level == level


def test_estimate_deviation_from_float_arithmetic_lands_on_the_boundary():
    assert deviation(1.0, 1.3) != 0.3  # 0.30000000000000004
    assert deviation_verdict(deviation(1.0, 1.3)).level == "warn"
    assert deviation_verdict(deviation(100.0, 90.0)).level == "warn"  # 10% under the estimate
    assert "re-evaluate" in deviation_verdict(0.5).action


def test_bad_verdict_inputs_are_input_errors():
    with pytest.raises(InputError):
        judge("nope", 0.1)
    with pytest.raises(InputError):
        communication_verdict(-0.1)
    with pytest.raises(InputError):
        variance_verdict(float("nan"))
    with pytest.raises(InputError):
        deviation(0.0, 1.0)


def test_rules_are_data():
    assert {k: (r.ok_below, r.bad_above) for k, r in RULES.items()} == {
        "communication_ratio": (0.20, 0.40), "rank_variance": (0.05, 0.15), "estimate_deviation": (0.10, 0.30),
    }
