"""The search's cuts remove only points that cannot beat the incumbent (docs/planner.md, item 3)."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.estimate.compute import factors_for
from solver.plan import cpsat, dominance
from solver.plan.table_build import build_tables
from solver.space.domains import build_space
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario

CASES = [("deepseek-v3.2", "atlas_a3", "cann-recipes", 16), ("qwen3-30b-a3b", "h200_sxm", "sglang", 8),
         ("qwen3-8b", "a100_sxm", "vllm", 4)]
_PLANNERS: dict = {}


def _planner(case) -> cpsat.Planner:
    if case not in _PLANNERS:
        model, hw, fw, world = case
        m, h, f = load_model(model), load_hardware(hw), load_framework(fw)
        prec = resolve_precision(m, h, weight_dtype="int8" if h.name.startswith("atlas") else None)
        sc = Scenario(isl=2048, osl=256, max_concurrency=64)
        t = build_tables(m, h, prec, factors_for(h, f.efficiency_for(h)), f, build_space(m, h, f, world, sc), sc)
        _PLANNERS[case] = cpsat.Planner(t, m, h, f, sc)
    return _PLANNERS[case]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), data=st.data(), pe=st.floats(1e-4, 5.0), te=st.floats(1e-4, 0.2),
       above=st.floats(1.0, 1.5))
def test_a_level_corner_is_on_the_level_curve_so_every_point_dominating_it_is_no_better(case, data, pe, te,
                                                                                           above) -> None:
    """A point (pe, te) that does not beat the incumbent, best_l <= L(pe, te): each level corner has L >= best_l
    (so, L being non-decreasing in both steps, so has every point dominating it), lies at or below the point (to the
    bisection's precision) in the coordinate it was searched in, and is tight: 1e-4 less of its searched coordinate gives L < best_l."""
    pl = _planner(case)
    b = data.draw(st.sampled_from(pl.t.batches))
    key = data.draw(st.sampled_from(sorted({pl.t.layout_key(c) for c in pl.t.choices["attn"]})))
    vc = pl.t.view(b, key, full=False)
    best_l = pl._lf(vc, pe, te) / above
    corners = pl.level_corners(vc, best_l, pe, te)
    assert len(corners) == 2
    (p1, t1), (p2, t2) = corners
    slack = 2 * dominance.LEVEL_PRECISION  # the bisection stops within its precision above the curve
    assert p1 == pe and t2 == te and t1 <= te * (1 + slack) + 1e-7 and p2 <= pe * (1 + slack) + 1e-7
    for p, t in corners:
        assert pl._lf(vc, p, t) >= best_l
    assert t1 == 0 or pl._lf(vc, p1, t1 * (1 - 2 * dominance.LEVEL_PRECISION) - 1e-7) < best_l or t1 < 1e-6
    assert p2 == 0 or pl._lf(vc, p2 * (1 - 2 * dominance.LEVEL_PRECISION) - 1e-7, t2) < best_l or p2 < 1e-6
