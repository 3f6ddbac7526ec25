"""Read Chrome-trace JSON from the PyTorch profiler (Kineto) or torch_npu into compact per-rank records: the trace
files a path names, each file's rank, and its steps.

A trace is parsed once with `json.load` and immediately reduced (trace_events: which events are device work) to
`DeviceEvent` tuples, step windows and a memory peak; the raw event dicts are dropped before steps are built, so a
large trace costs its parse once.

Steps, in order of preference:
  1. `step_marker` given: annotations whose name starts with it (GPU-side copies preferred);
  2. `ProfilerStep#N` annotations: the GPU-side `gpu_user_annotation` copy when present (its window is on
     the device clock already), else the host-side one;
  3. neither: the whole trace is one step spanning the first to the last device event.
With a GPU-side window, a device event belongs to the step its start falls in (metrics clip to the window).
With a host-side window, a kernel belongs to the step that *launched* it: matched through the launch's
`correlation` id; with no launch record (torch_npu ops), the step whose host window holds the op's start, or,
for an op that starts between two steps, the earlier one: the device runs behind the host and never ahead of it,
so such an op is that step's tail, not the next step's work. An op with no launch record after the last step
may be its tail or work past the profiled steps; no step takes it and the report notes it. The step is widened
to cover the device work it launched: [min(host start, first kernel start), max(host end, last kernel end)], because the
GPU runs behind the CPU and the host window alone would cut the tail of the step off.

Times are microseconds relative to `RankTrace.origin_us` (the earliest device event or step start), taken
from exact integer nanoseconds so that large epoch timestamps with fractional parts lose no precision.
"""
from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, NamedTuple

from solver.calibrate.trace_events import Reduced, reduce_events
from solver.errors import InputError
from solver.specs.validation import load_json

FIELD = "traces"

_STEP_NUMBER = re.compile(r"#(\d+)\s*$")
_RANK_IN_NAME = re.compile(r"rank[_\-]?(\d+)", re.IGNORECASE)
_NPU_PROFILER_INFO = re.compile(r"^profiler_info_(\d+)\.json$")


class DeviceEvent(NamedTuple):
    """One kernel / memcpy / memset / NPU op. A tuple to keep millions of them cheap."""

    name: str
    kind: str  # classify.CLASSES
    start_us: float
    dur_us: float
    stream: str  # "pid:tid" of the device timeline row

    @property
    def end_us(self) -> float:
        return self.start_us + self.dur_us


@dataclass(frozen=True)
class Step:
    index: int
    start_us: float
    end_us: float
    events: tuple[DeviceEvent, ...]

    @property
    def duration_us(self) -> float:
        return self.end_us - self.start_us


@dataclass(frozen=True)
class RankTrace:
    rank: int
    steps: list[Step]
    peak_memory_bytes: int | None  # max "Total Allocated" of device [memory] events
    peak_reserved_bytes: int | None = None  # max "Total Reserved"
    source: str = ""
    origin_us: float = 0.0  # absolute trace timestamp of time zero
    step_source: str = "whole_trace"  # "gpu_annotation" | "host_annotation" | "whole_trace"
    world_size: int | None = None
    left_out: int = 0  # events read past: no usable name, ts, dur or memory figure (the report notes them)
    left_out_example: str = ""
    outside_steps: int = 0  # device events no step window holds: not in any step's figures (the report notes them)
    outside_steps_us: float = 0.0  # their summed duration
    outside_example: str = ""


# --------------------------------------------------------------------------------------------- reading


def _read_json(path: Path) -> Any:
    # floats stay strings: only ts/dur are needed and they are converted exactly (trace_events)
    return load_json(path, FIELD, parse_float=str, depth_check=False)


# ------------------------------------------------------------------------------------------- steps


def _windows(annotations: list[tuple[str, int, int]]) -> list[tuple[int, int, int]]:
    """(index, start_ns, end_ns) sorted by start; the index is the "#N" of the name, else the ordinal."""
    out: list[tuple[int, int, int]] = []
    seen: set[tuple[str, int]] = set()
    for ordinal, (name, start, end) in enumerate(sorted(annotations, key=lambda a: (a[1], a[0]))):
        if (name, start) in seen:
            continue
        seen.add((name, start))
        m = _STEP_NUMBER.search(name)
        out.append((int(m.group(1)) if m else ordinal, start, end))
    return out


def _locate(starts: list[int], max_ends: list[int], windows: list[tuple[int, int, int]], t: int) -> int | None:
    """Position of the latest-starting window that contains t (windows may nest or overlap)."""
    i = bisect.bisect_right(starts, t) - 1
    while i >= 0 and max_ends[i] > t:
        if t < windows[i][2]:
            return i
        i -= 1
    return None


def _build_steps(red: Reduced, path: Path,
                 step_marker: str | None) -> tuple[list[tuple[int, int, int, list]], str, list]:
    """Steps as (index, start_ns, end_ns, device tuples), where the boundaries came from, and the device events
    no step holds (before the first step, or between GPU-side windows)."""
    if red.gpu_annotations:
        windows, source = _windows(red.gpu_annotations), "gpu_annotation"
    elif red.host_annotations:
        windows, source = _windows(red.host_annotations), "host_annotation"
    elif step_marker is not None:
        raise InputError("step_marker", f"{path}: no annotation whose name starts with {step_marker!r}; "
                                        "check the record_function name or drop the marker")
    else:
        first = min(d[2] for d in red.device)
        last = max(d[2] + d[3] for d in red.device)
        return [(0, first, last, list(red.device))], "whole_trace", []

    starts = [w[1] for w in windows]
    max_ends = list(itertools.accumulate((w[2] for w in windows), max))
    buckets: list[list] = [[] for _ in windows]
    outside: list = []
    for dev in red.device:
        t = dev[2]
        launched = source == "host_annotation" and dev[5] is not None and dev[5] in red.launches
        if launched:
            t = red.launches[dev[5]]
        i = _locate(starts, max_ends, windows, t)
        if i is None and source == "host_annotation" and not launched:
            i = bisect.bisect_right(starts, t) - 1  # the last step begun by then (-1: before the first)
            i = i if 0 <= i < len(windows) - 1 else None  # between steps only (module docstring)
        if i is None:
            outside.append(dev)
        else:
            buckets[i].append(dev)

    steps = []
    for (index, start, end), bucket in zip(windows, buckets):
        if source == "host_annotation" and bucket:
            start = min(start, min(d[2] for d in bucket))
            end = max(end, max(d[2] + d[3] for d in bucket))
        steps.append((index, start, end, bucket))
    return steps, source, outside


# ---------------------------------------------------------------------------------------------- rank


def _rank_from_path(path: Path) -> int | None:
    for part in (path.name, *(p.name for p in list(path.parents)[:3])):
        m = _RANK_IN_NAME.search(part)
        if m:
            return int(m.group(1))
    # torch_npu: <run>_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json next to <run>_ascend_pt/profiler_info_N.json
    for folder in (path.parent, path.parent.parent):
        try:
            for child in folder.iterdir():
                m = _NPU_PROFILER_INFO.match(child.name)
                if m:
                    return int(m.group(1))
        except OSError:
            continue
    return None


def _distributed_info(obj: Any, path: Path) -> tuple[int | None, int | None]:
    """distributedInfo's rank and world_size; one given but not a rank (an integer >= 0, below the world size) is
    an error: read past, the file would take a rank from its name or position instead."""
    info = obj.get("distributedInfo") if isinstance(obj, dict) else None
    if info is None:
        return None, None
    if not isinstance(info, dict):
        raise InputError(FIELD, f"{path}: distributedInfo: expected an object, got {type(info).__name__}")
    rank, world = info.get("rank"), info.get("world_size")
    for key, value, low in (("rank", rank, 0), ("world_size", world, 1)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
            raise InputError(FIELD, f"{path}: distributedInfo.{key}: must be an integer >= {low}, got {value!r}")
    if rank is not None and world is not None and rank >= world:
        raise InputError(FIELD, f"{path}: distributedInfo.rank: {rank} but world_size is {world} "
                                f"(ranks 0..{world - 1})")
    return rank, world


def load_trace_file(path: str | Path, step_marker: str | None = None, default_rank: int = 0) -> RankTrace:
    """One rank's trace file (plain or gzip JSON). The rank is distributedInfo.rank, else a rank_N/rankN
    in the path, else torch_npu's profiler_info_N.json beside it, else `default_rank`."""
    path = Path(path)
    if not path.is_file():
        raise InputError(FIELD, f"{path}: no such file")
    obj = _read_json(path)
    if isinstance(obj, dict) and isinstance(obj.get("traceEvents"), list):
        events = obj["traceEvents"]
    elif isinstance(obj, list):
        events = obj
    else:
        raise InputError(FIELD, f"{path}: JSON but not a Chrome trace (expected a traceEvents list or a list of events)")
    rank, world = _distributed_info(obj, path)
    red = reduce_events(events, step_marker)
    del obj, events  # the raw dicts are no longer referenced from here on
    if not red.device:
        raise InputError(FIELD, f"{path}: no device events (kernels, memcpy/memset or NPU ops); "
                                "profile with the CUDA/NPU activity enabled")
    if rank is None:
        rank = _rank_from_path(path)
    if rank is None:
        rank = default_rank

    raw_steps, source, outside = _build_steps(red, path, step_marker)
    origin = min(min(s[1] for s in raw_steps), min(d[2] for d in red.device))
    steps = [
        Step(
            index=index,
            start_us=(start - origin) / 1000,
            end_us=(end - origin) / 1000,
            events=tuple(DeviceEvent(n, k, (s - origin) / 1000, d / 1000, st) for n, k, s, d, st, _ in bucket),
        )
        for index, start, end, bucket in raw_steps
    ]
    return RankTrace(rank=rank, steps=steps, peak_memory_bytes=red.peak_allocated,
                     peak_reserved_bytes=red.peak_reserved, source=str(path), origin_us=origin / 1000,
                     step_source=source, world_size=world, left_out=red.left_out,
                     left_out_example=red.left_out_example, outside_steps=len(outside),
                     outside_steps_us=sum(d[3] for d in outside) / 1000,
                     outside_example=outside[0][0] if outside else "")


# -------------------------------------------------------------------------------------------- folders

_TRACE_SUFFIXES = (".json", ".json.gz")
_NPU_TRACE = ("trace_view.json", "trace_view.json.gz")  # torch_npu's trace, in ASCEND_PROFILER_OUTPUT
_NESTED_PATTERNS = ("*.pt.trace.json", "*.pt.trace.json.gz", *_NPU_TRACE)


def _natural_key(path: Path) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(path))]


def trace_files(path: str | Path) -> list[Path]:
    """The trace files a path names: itself, or the *.json / *.json.gz files directly in a folder; when a
    folder has none, the *.pt.trace.json[.gz] and torch_npu trace_view.json files anywhere below it.

    torch_npu's folders hold other JSON beside the trace, so they are read by its layout: a folder with a
    trace_view.json in it (ASCEND_PROFILER_OUTPUT, beside communication.json) is that one trace, and a rank's run
    folder (<run>_ascend_pt, holding profiler_info_N.json) is the trace_view.json below it."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise InputError(FIELD, f"{path}: no such file or folder")
    files = [p for p in path.iterdir() if p.is_file() and p.name.lower().endswith(_TRACE_SUFFIXES)]
    npu_view = [p for p in files if p.name.lower() in _NPU_TRACE]
    if npu_view:
        files = npu_view
    elif any(_NPU_PROFILER_INFO.match(p.name) for p in files):
        files = [p for name in _NPU_TRACE for p in path.rglob(name) if p.is_file()]
    if not files:
        files = [p for pattern in _NESTED_PATTERNS for p in path.rglob(pattern) if p.is_file()]
    if not files:
        raise InputError(FIELD, f"{path}: folder holds no trace files (*.json, *.json.gz, *.pt.trace.json)")
    return sorted(set(files), key=_natural_key)


def left_out_notes(traces: Iterable[RankTrace]) -> list[str]:
    """One note per file that had events read past, so that nothing of a trace is dropped without a word."""
    notes = []
    for t in traces:
        if t.left_out:
            notes.append(f"{t.source}: {t.left_out} event{'s' if t.left_out > 1 else ''} left out "
                         f"(first: {t.left_out_example})")
        if t.outside_steps:
            notes.append(f"{t.source}: {t.outside_steps} device event{'s' if t.outside_steps > 1 else ''} "
                         f"({t.outside_steps_us / 1000:.3f} ms) outside every step window, in no step's figures "
                         f"(first: {t.outside_example[:60]})")
    return notes


def load_traces(path: str | Path | Iterable[str | Path], step_marker: str | None = None) -> list[RankTrace]:
    """Every rank's trace under `path` (a file, a folder, or a list of files), sorted by rank.
    A file whose rank cannot be read from it or its name takes its position in the sorted file list."""
    if isinstance(path, (str, Path)):
        files = trace_files(path)
    else:
        files = [f for p in path for f in trace_files(p)]
    traces = [load_trace_file(f, step_marker, default_rank=i) for i, f in enumerate(files)]
    by_rank: dict[int, RankTrace] = {}
    for t in traces:
        if t.rank in by_rank:
            raise InputError(FIELD, f"{t.source} and {by_rank[t.rank].source} both hold rank {t.rank}; "
                                    "pass one run's files only")
        by_rank[t.rank] = t
    return [by_rank[r] for r in sorted(by_rank)]
