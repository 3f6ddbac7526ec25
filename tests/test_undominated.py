"""One rule for the deployment's front, on solve's points and the sweep's rows alike (plan.deployment_front
.undominated): planned points none beats, then the others none beats, a tie keeping the first."""
from __future__ import annotations

from solver.plan.deployment_front import undominated

# (name, planned, request latency, output tokens/s per rank), best throughput first as the callers sort them
A = ("a", True, 2.0, 100.0)
B = ("b", True, 1.0, 50.0)
C = ("c", True, 2.5, 90.0)  # beaten by A: slower and fewer tokens/s
D = ("d", False, 1.5, 80.0)  # off the planned front, beaten by none: joins it
E = ("e", False, 1.0, 50.0)  # B's figures exactly: a tie, B keeps the point
F = ("f", False, 0.5, 40.0)
G = ("g", False, 0.5, 40.0)  # F's figures: the first of two unplanned ties joins


def _front(points: list[tuple]) -> list[str]:
    return [p[0] for p in undominated(points, lambda p: p[1], lambda p: (p[2], p[3]))]


def test_a_planned_point_another_beats_leaves_the_front() -> None:
    assert _front([A, C, B]) == ["a", "b"]


def test_an_unplanned_point_none_beats_joins_after_the_planned_ones() -> None:
    assert _front([A, C, D, B]) == ["a", "b", "d"]


def test_an_unplanned_point_with_a_front_points_figures_stays_off() -> None:
    assert _front([A, B, E]) == ["a", "b"]


def test_of_two_unplanned_ties_the_first_joins() -> None:
    assert _front([A, B, F, G]) == ["a", "b", "f"]


def test_an_unplanned_point_can_push_a_planned_one_off() -> None:
    """(0.9 s, 55 tok/s) beats B's (1.0 s, 50): faster and more; A (2.0 s, 100) it does not beat."""
    assert _front([A, B, ("h", False, 0.9, 55.0)]) == ["a", "h"]
