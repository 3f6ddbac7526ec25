"""Calibration figures over loaded traces: step time, communication share, compute by class, rank spread.

Everything here is a pure function of `RankTrace`/`Step`. Interval arithmetic is exact (sorted sweep over
closed-open intervals, no sampling). Device events are clipped to their step's window first, so no figure
can exceed the step time.

Definitions, per rank and step:
  step time            end - start of the step window
  comm raw             sum of communication event durations (overlaps between collectives counted twice)
  comm exposed         |union(comm) - union(non-comm device events, any stream)|: collective time that no
                       compute or copy hides
  compute[class]       |union(events of that class)| for attention, gemm_moe and other
  communication_ratio      = comm exposed / step time
  communication_ratio_raw  = comm raw / step time (the seed's "sum of Hccl* durations / step")
Across ranks: rank_variance = (max - min) / mean of each rank's mean step time.
Aggregate ratios are time-weighted: total exposed (raw) comm over total step time.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Sequence

from solver.calibrate.classify import CLASSES, COMMUNICATION, COMPUTE_CLASSES
from solver.calibrate.trace import FIELD, RankTrace, Step
from solver.errors import InputError

Interval = tuple[float, float]


# ------------------------------------------------------------------------------------ interval math


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """Disjoint, sorted cover of the given [start, end) intervals; empty ones are dropped."""
    merged: list[Interval] = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def length(disjoint: Iterable[Interval]) -> float:
    return sum(end - start for start, end in disjoint)


def overlap(a: Sequence[Interval], b: Sequence[Interval]) -> float:
    """Length of the intersection of two disjoint sorted interval lists (outputs of `union`)."""
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] <= b[j][1]:
            i += 1
        else:
            j += 1
    return total


# ------------------------------------------------------------------------------------------- per step


@dataclass(frozen=True)
class StepMetrics:
    rank: int
    index: int
    step_time_us: float
    comm_raw_us: float
    comm_union_us: float
    comm_exposed_us: float
    compute_us: dict[str, float]  # attention / gemm_moe / other, each an interval union
    busy_us: float  # union of all device events

    @property
    def communication_ratio(self) -> float:
        return _ratio(self.comm_exposed_us, self.step_time_us)

    @property
    def communication_ratio_raw(self) -> float:
        return _ratio(self.comm_raw_us, self.step_time_us)


def _ratio(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0


def step_metrics(step: Step, rank: int = 0) -> StepMetrics:
    by_class: dict[str, list[Interval]] = defaultdict(list)
    for ev in step.events:
        start, end = max(ev.start_us, step.start_us), min(ev.end_us, step.end_us)
        if end > start:
            by_class[ev.kind].append((start, end))
    comm = union(by_class[COMMUNICATION])
    non_comm = union(iv for kind in COMPUTE_CLASSES for iv in by_class[kind])
    comm_union = length(comm)
    return StepMetrics(
        rank=rank,
        index=step.index,
        step_time_us=step.duration_us,
        comm_raw_us=sum(end - start for start, end in by_class[COMMUNICATION]),
        comm_union_us=comm_union,
        comm_exposed_us=comm_union - overlap(comm, non_comm),
        compute_us={kind: length(union(by_class[kind])) for kind in COMPUTE_CLASSES},
        busy_us=length(union(iv for kind in CLASSES for iv in by_class[kind])),
    )


# ------------------------------------------------------------------------------------------- per rank


@dataclass(frozen=True)
class RankMetrics:
    rank: int
    steps: list[StepMetrics]
    peak_memory_bytes: int | None
    peak_reserved_bytes: int | None

    @property
    def mean_step_time_us(self) -> float:
        return sum(s.step_time_us for s in self.steps) / len(self.steps) if self.steps else 0.0

    @property
    def communication_ratio(self) -> float:
        return _ratio(sum(s.comm_exposed_us for s in self.steps), sum(s.step_time_us for s in self.steps))

    @property
    def communication_ratio_raw(self) -> float:
        return _ratio(sum(s.comm_raw_us for s in self.steps), sum(s.step_time_us for s in self.steps))


def rank_metrics(trace: RankTrace) -> RankMetrics:
    return RankMetrics(
        rank=trace.rank,
        steps=[step_metrics(s, trace.rank) for s in trace.steps],
        peak_memory_bytes=trace.peak_memory_bytes,
        peak_reserved_bytes=trace.peak_reserved_bytes,
    )


def peak_memory(trace: RankTrace, reserved: bool = False) -> int | None:
    """Largest "Total Allocated" (or "Total Reserved") the rank's [memory] events reported; None without."""
    return trace.peak_reserved_bytes if reserved else trace.peak_memory_bytes


# ------------------------------------------------------------------------------------------ all ranks


def check_step_counts(traces: Sequence[RankTrace]) -> None:
    """Ranks must cover the same number of steps, or per-step comparisons pair unrelated iterations."""
    if not traces:
        raise InputError(FIELD, "no traces given")
    first = traces[0]
    for t in traces[1:]:
        if len(t.steps) != len(first.steps):
            raise InputError(FIELD, f"rank {t.rank} has {len(t.steps)} steps but rank {first.rank} has "
                                    f"{len(first.steps)}; profile the same steps on every rank "
                                    "(same schedule / step_marker)")


def rank_variance(step_times_us: Sequence[float]) -> float:
    """(max - min) / mean over one mean step time per rank; 0 for fewer than two ranks."""
    if len(step_times_us) < 2:
        return 0.0
    mean = sum(step_times_us) / len(step_times_us)
    return (max(step_times_us) - min(step_times_us)) / mean if mean > 0 else 0.0


@dataclass(frozen=True)
class TraceSummary:
    ranks: list[RankMetrics]
    steps_per_rank: int
    mean_step_time_us: float  # mean over ranks of each rank's mean step time
    communication_ratio: float  # exposed, time-weighted over all ranks and steps
    communication_ratio_raw: float
    rank_variance: float
    compute_share: dict[str, float]  # class union time / step time, time-weighted; includes communication
    peak_memory_bytes: int | None  # max over ranks
    peak_reserved_bytes: int | None


def summarize(traces: Sequence[RankTrace]) -> TraceSummary:
    check_step_counts(traces)
    ranks = [rank_metrics(t) for t in traces]
    steps = [s for r in ranks for s in r.steps]
    total_time = sum(s.step_time_us for s in steps)
    share = {kind: _ratio(sum(s.compute_us[kind] for s in steps), total_time) for kind in COMPUTE_CLASSES}
    share[COMMUNICATION] = _ratio(sum(s.comm_union_us for s in steps), total_time)
    means = [r.mean_step_time_us for r in ranks]
    peaks = [r.peak_memory_bytes for r in ranks if r.peak_memory_bytes is not None]
    reserved = [r.peak_reserved_bytes for r in ranks if r.peak_reserved_bytes is not None]
    return TraceSummary(
        ranks=ranks,
        steps_per_rank=len(traces[0].steps),
        mean_step_time_us=sum(means) / len(means),
        communication_ratio=_ratio(sum(s.comm_exposed_us for s in steps), total_time),
        communication_ratio_raw=_ratio(sum(s.comm_raw_us for s in steps), total_time),
        rank_variance=rank_variance(means),
        compute_share=share,
        peak_memory_bytes=max(peaks) if peaks else None,
        peak_reserved_bytes=max(reserved) if reserved else None,
    )


@dataclass(frozen=True)
class KernelStat:
    name: str
    kind: str
    count: int
    total_us: float


def top_kernels(traces: Iterable[RankTrace], limit: int = 10) -> list[KernelStat]:
    """Kernels by summed duration (unclipped) over all ranks and steps, longest first."""
    acc: dict[str, list] = {}
    for t in traces:
        for s in t.steps:
            for ev in s.events:
                row = acc.setdefault(ev.name, [ev.kind, 0, 0.0])
                row[1] += 1
                row[2] += ev.dur_us
    rows = [KernelStat(n, k, c, d) for n, (k, c, d) in acc.items()]
    return sorted(rows, key=lambda r: (-r.total_us, r.name))[:limit]
