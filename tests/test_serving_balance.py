"""The decode-first closed loop's balance (serving.balance_root): the closed form is the root of the balance
lambda (TTFT_ss + steps_out s) = B that bisection finds, on both sides of the M/D/1 wait's cap."""
from __future__ import annotations

import math

from hypothesis import given, settings, strategies as st

from solver.estimate.serving import balance_root


def _excess(q: float, B: float, tau: float, p: float, S: float, base: float, steps_out: float) -> float:
    s = tau + q * p
    lam, rho = q / s, q * p / s
    wait = min(rho * S / (2 * (1 - rho)), (B - 1) * S)
    return lam * (base + wait + steps_out * s) - B


def _bisect(B, tau, p, S, base, steps_out) -> float:
    lo, hi = 0.0, 1.0
    while _excess(hi, B, tau, p, S, base, steps_out) < 0:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if _excess(mid, B, tau, p, S, base, steps_out) > 0:
            hi = mid
        else:
            lo = mid
    return lo


pos = st.floats(1e-5, 10.0)


@settings(max_examples=300, deadline=None)
@given(B=st.integers(1, 4096), tau=pos, p=pos, chunks=st.integers(1, 8), o=st.floats(0.0, 1.0),
       steps_out=st.floats(0.0, 4096.0))
def test_balance_root_is_the_root_bisection_finds(B, tau, p, chunks, o, steps_out):
    S = p + (chunks - 1) * tau
    base = o + tau / 2 + S
    q = balance_root(B, tau, p, S, base, steps_out)
    ref = _bisect(B, tau, p, S, base, steps_out)
    assert math.isclose(q, ref, rel_tol=1e-9, abs_tol=1e-300)


def test_balance_root_hand_computed_one_sequence():
    # B = 1: no wait (cap 0); tau = 10 ms, p = 100 ms, no decode after the first token: the loop runs one
    # request at a time, q / (tau + q p) x (base) = 1 with base = 0.005 + 0.1 = 0.105 s:
    # q x 0.105 = 0.01 + 0.1 q  ->  q = 0.01 / 0.005 = 2
    assert math.isclose(balance_root(1, 0.01, 0.1, 0.1, 0.105, 0.0), 2.0, rel_tol=1e-12)


def test_balance_root_none_without_a_decode_step():
    assert balance_root(8, 0.0, 0.1, 0.1, 0.2, 10.0) is None
