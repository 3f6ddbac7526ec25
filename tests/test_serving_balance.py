"""The decode-first closed loop's balance (closed_loop.balance_root): the closed form is the root of the balance
lambda (TTFT_ss + steps_out s) = B, on both sides of the M/D/1 wait's cap: the balance changes sign across it,
evaluated in exact rational arithmetic."""
from __future__ import annotations

import math
from fractions import Fraction

from hypothesis import given, settings, strategies as st

from solver.estimate.serving import balance_root


def _excess(q: Fraction, B: int, tau: Fraction, p: Fraction, chunks: int, fixed: Fraction, steps_out: Fraction
            ) -> Fraction:
    S = p + (chunks - 1) * tau
    s = tau + q * p
    lam, rho = q / s, q * p / s
    wait = min(rho * S / (2 * (1 - rho)), (B - 1) * S)
    return lam * (fixed + tau / 2 + S + wait + steps_out * s) - B


pos = st.floats(1e-5, 10.0)


@settings(max_examples=300, deadline=None)
@given(B=st.integers(1, 4096), tau=pos, p=pos, chunks=st.integers(1, 8), o=st.floats(0.0, 1.0),
       steps_out=st.floats(0.0, 4096.0))
def test_balance_root_is_where_the_closed_loop_balances(B, tau, p, chunks, o, steps_out):
    q = balance_root(B, tau, p, chunks, o, steps_out)
    args = (B, Fraction(tau), Fraction(p), chunks, Fraction(o), Fraction(steps_out))
    assert _excess(Fraction(q) * Fraction(1 - 1e-9), *args) <= 0 <= _excess(Fraction(q) * Fraction(1 + 1e-9), *args)


def test_balance_root_hand_computed_one_sequence():
    # B = 1: no wait (cap 0); tau = 10 ms, p = 100 ms, no decode after the first token: the loop runs one
    # request at a time, q / (tau + q p) x (tau / 2 + p) = 1:  q x 0.105 = 0.01 + 0.1 q  ->  q = 2
    assert math.isclose(balance_root(1, 0.01, 0.1, 1, 0.0, 0.0), 2.0, rel_tol=1e-12)


def test_balance_root_hand_computed_at_the_wait_cap():
    # B = 17, tau = 10 us, p = 4 s, one chunk, nothing else: the wait sits at its cap 16 S, and the balance
    # q (tau / 2 + 17 S) = 17 (tau + q p) gives q tau / 2 = 17 tau: q = 34
    assert math.isclose(balance_root(17, 1e-5, 4.0, 1, 0.0, 0.0), 34.0, rel_tol=1e-12)


def test_balance_root_none_without_a_decode_step():
    assert balance_root(8, 0.0, 0.1, 1, 0.2, 10.0) is None
