"""group_cost.Share: a named tuple whose + and - are stage-by-stage sums (spelled out for one and two stages,
by map past that): the same floats as adding the tuples element by element, a Share again, picklable."""
from __future__ import annotations

import pickle
import random

from solver.plan.group_cost import Share


def _share(rng: random.Random, n: int) -> Share:
    return Share(tuple(rng.uniform(0, 1e-3) for _ in range(n)), tuple(rng.uniform(0, 1e-4) for _ in range(n)))


def test_share_sums_are_stage_by_stage() -> None:
    rng = random.Random(7)
    for n in range(1, 6):
        for _ in range(50):
            a, b = _share(rng, n), _share(rng, n)
            s, d = a + b, a - b
            assert type(s) is Share and type(d) is Share
            assert s.gpu_s == tuple(x + y for x, y in zip(a.gpu_s, b.gpu_s))
            assert s.launch_s == tuple(x + y for x, y in zip(a.launch_s, b.launch_s))
            assert d.gpu_s == tuple(x - y for x, y in zip(a.gpu_s, b.gpu_s))
            assert d.launch_s == tuple(x - y for x, y in zip(a.launch_s, b.launch_s))
            assert len(s.gpu_s) == len(s.launch_s) == n


def test_a_share_is_its_two_fields() -> None:
    a = Share((1.0, 2.0), (0.5, 0.25))
    assert a == Share((1.0, 2.0), (0.5, 0.25)) and a != Share((1.0, 2.0), (0.5, 0.5))
    assert hash(a) == hash(((1.0, 2.0), (0.5, 0.25)))
    assert pickle.loads(pickle.dumps(a)) == a and type(pickle.loads(pickle.dumps(a))) is Share
