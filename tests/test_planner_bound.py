"""The layout bound (plan.bound): the exact minimum over one option per group of a monotone figure of the summed
shares, when launches do not matter; never above it when they do (launch seconds relaxed per group)."""
from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings, strategies as st

from solver.plan.bound import combined, corner_figure, joint_part, minimum, nondominated, pareto_sums, relaxed_minimum
from solver.plan.group_cost import Share

sec = st.floats(0.0, 1.0)


@st.composite
def groups(draw, stages: int):
    out = []
    for _ in range(draw(st.integers(1, 4))):
        opts = []
        for _ in range(draw(st.integers(1, 5))):
            pre = Share(tuple(draw(sec) for _ in range(stages)), tuple(draw(sec) for _ in range(stages)))
            dec = Share(tuple(draw(sec) for _ in range(stages)), tuple(draw(sec) for _ in range(stages)))
            opts.append((pre, dec))
        out.append(opts)
    return out


def _brute(gs, figure):
    best = math.inf
    for combo in itertools.product(*gs):
        pre, dec = combo[0]
        for p, d in combo[1:]:
            pre, dec = pre + p, dec + d
        best = min(best, figure(pre, dec))
    return best


def _latency(pre: Share, dec: Share, launch_weight: float) -> float:
    # a monotone figure of the kind the serving model is: slowest stage, a launch floor, a queue-like term
    pe = max(max(pre.gpu_s), launch_weight * max(pre.launch_s))
    te = max(max(dec.gpu_s), launch_weight * max(dec.launch_s))
    return pe + 255 * te + pe * te / (1.0 + te)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 3).flatmap(lambda s: groups(s)))
def test_relaxed_minimum_is_the_minimum_over_every_configuration_without_launch_floors(gs):
    fig = lambda pre, dec: _latency(pre, dec, 0.0)  # noqa: E731
    assert math.isclose(relaxed_minimum(gs, fig), _brute(gs, fig), rel_tol=1e-12, abs_tol=1e-15)


# 50 draws in the default suite (each enumerates every configuration by brute force); 200 in the slow suite
@settings(max_examples=50, deadline=None)
@given(st.integers(1, 3).flatmap(lambda s: groups(s)))
def test_relaxed_minimum_never_exceeds_the_best_configuration(gs):
    fig = lambda pre, dec: _latency(pre, dec, 3.0)  # noqa: E731
    assert relaxed_minimum(gs, fig) <= _brute(gs, fig) * (1 + 1e-12)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.integers(1, 3).flatmap(lambda s: groups(s)))
def test_relaxed_minimum_never_exceeds_the_best_configuration_many(gs):
    fig = lambda pre, dec: _latency(pre, dec, 3.0)  # noqa: E731
    assert relaxed_minimum(gs, fig) <= _brute(gs, fig) * (1 + 1e-12)


def test_nondominated_keeps_the_points_nothing_dominates():
    pts = [(1.0, 3.0), (2.0, 2.0), (2.0, 3.0), (3.0, 1.0), (3.0, 3.0), (1.0, 3.0)]
    assert nondominated(pts) == [(1.0, 3.0), (2.0, 2.0), (3.0, 1.0)]


def test_the_dense_and_moe_pairs_add_the_fused_all_reduce_correction():
    one = Share((1.0,), (0.1,))
    dense = {0: (one, one)}
    moe = {0: (one, one), 1: (one, one)}
    corr = Share((-0.5,), (0.0,))
    part = joint_part(dense, moe, {(0, 1): (corr, corr)})
    assert part.vectors == [(2.0, 2.0), (1.5, 1.5)]  # (prefill, decode) GPU seconds of each pair
    assert joint_part(dense, moe, {}, excluded=frozenset({(0, 0), (0, 1)})) is None


def _two_parts(stages: int):
    # at most two groups a part: their Minkowski sum stays within MAX_SUMS, where combined is exact
    return st.tuples(groups(stages), groups(stages)).map(lambda ab: (ab[0][:2], ab[1][:2]))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 3).flatmap(_two_parts))
def test_sums_built_in_two_parts_and_combined_are_the_minimum_over_every_configuration(parts):
    # Planner._bound sums the attention choices and the other groups apart (each memoised), then combines them
    a, b = parts
    fig = lambda pre, dec: _latency(pre, dec, 0.0)  # noqa: E731
    both = minimum(combined(pareto_sums(a), pareto_sums(b)), fig)
    assert math.isclose(both, _brute(a + b, fig), rel_tol=1e-12, abs_tol=1e-15)
    launch = lambda pre, dec: _latency(pre, dec, 3.0)  # noqa: E731
    assert minimum(combined(pareto_sums(a), pareto_sums(b)), launch) <= _brute(a + b, launch) * (1 + 1e-12)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 3).flatmap(_two_parts))
def test_the_corners_figure_never_exceeds_the_best_configuration(parts):
    # what lets the scan drop a layout with one figure call: it must be a lower bound of every configuration
    a, b = parts
    for w in (0.0, 3.0):
        fig = lambda pre, dec: _latency(pre, dec, w)  # noqa: E731
        sa, sb = pareto_sums(a), pareto_sums(b)
        low = corner_figure(sa, sb, fig)
        assert low <= minimum(combined(sa, sb), fig) * (1 + 1e-12)
        assert low <= _brute(a + b, fig) * (1 + 1e-12)


def test_the_corner_is_below_every_point_and_on_the_lowest_of_each_coordinate():
    s = pareto_sums([[(Share((1.0,), (0.0,)), Share((4.0,), (0.0,))), (Share((3.0,), (0.0,)), Share((2.0,), (0.0,)))]])
    assert s.corner == (1.0, 2.0)
    z = pareto_sums([[(Share((0.0,), (0.0,)), Share((0.0,), (0.0,)))]])
    fig = lambda pre, dec: pre.gpu_s[0] + 10 * dec.gpu_s[0]  # noqa: E731
    assert corner_figure(s, z, fig) == 21.0 < minimum(s, fig) == 23.0
