"""Reduce a Chrome trace's event list (PyTorch profiler / Kineto, torch_npu) to device-event tuples, step
annotations, kernel launches and memory peaks, reading past (and counting) the events that cannot be used.

Which events are device work ("device events"):
  * CUDA (Kineto): `ph == "X"` with `cat` in {kernel, gpu_memcpy, gpu_memset} (also the older spellings
    Kernel/Memcpy/Memset).
  * torch_npu: `ph == "X"` events in any process whose `process_name` metadata contains "Ascend Hardware",
    "NPU", "HCCL" or "Communication" -- except the derived "Overlap Analysis" process and threads whose
    name contains "Plane" (HCCL's per-link task breakdown, which would count each collective twice).
    Identical (name, start, duration) ops seen in two such processes are kept once.

Slices given as begin/end pairs (`ph` "B" then "E" on one pid/tid, the Chrome format's other way to write a
slice) are read as the complete events they delimit: paired per row in file order, nested as the format nests
them; a "B" with no "E" (a trace cut short) or an "E" with no "B" is counted as left out.

Timestamps become exact integer nanoseconds, so that large epoch timestamps with fractional parts lose no
precision.
"""
from __future__ import annotations

import itertools
import math
import re
import sys
from decimal import Decimal, InvalidOperation
from typing import Any, NamedTuple

from solver.calibrate.classify import classify

_CUDA_DEVICE_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"})
_NPU_DEVICE_PROCESS = re.compile(r"ascend hardware|npu|hccl|communication", re.IGNORECASE)
_NPU_EXCLUDED_PROCESS = re.compile(r"overlap analysis", re.IGNORECASE)
_NPU_EXCLUDED_THREAD = re.compile(r"plane", re.IGNORECASE)
_PROFILER_STEP = re.compile(r"^ProfilerStep#(\d+)$")


def _ns(value: Any) -> int | None:
    """Microsecond timestamp (int, float or decimal string) -> integer nanoseconds; None if unusable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, float):
        return round(value * 1000) if math.isfinite(value) else None  # NaN/Infinity literals: unusable
    if isinstance(value, str):
        head, dot, frac = value.strip().partition(".")
        if head.isdigit() and (not dot or frac.isdigit()):
            return int(head) * 1000 + int((frac + "000")[:3]) + (1 if frac[3:4] >= "5" else 0)
        try:
            d = Decimal(value)
            if not d.is_finite() or d.adjusted() > 30:  # NaN, Infinity, or beyond any clock (1e30 us)
                return None
            return int((d * 1000).to_integral_value())
        except (InvalidOperation, ValueError, OverflowError):
            return None
    return None


class Reduced(NamedTuple):
    """What a trace's events leave once reduced; times in integer nanoseconds."""

    # device events as (name, kind, start_ns, dur_ns, stream, correlation)
    device: list[tuple[str, str, int, int, str, int | None]]
    gpu_annotations: list[tuple[str, int, int]]  # (name, start_ns, end_ns)
    host_annotations: list[tuple[str, int, int]]
    launches: dict[int, int]  # correlation id -> host launch start_ns
    peak_allocated: int | None
    peak_reserved: int | None
    left_out: int = 0  # events with no usable name, ts, dur or memory figure
    left_out_example: str = ""


def _scalar(value: Any) -> Any:
    """A pid/tid as a row key: str or int as given; anything else (a list, a mapping, a float NaN) is unusable."""
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return value
    return None


def _metadata(events: list[Any]) -> tuple[set[Any], set[tuple[Any, Any]]]:
    """pids that hold torch_npu device ops, and (pid, tid) rows to leave out."""
    npu_pids: set[Any] = set()
    excluded_rows: set[tuple[Any, Any]] = set()
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "M":
            continue
        args = e.get("args")
        label = args.get("name") if isinstance(args, dict) else None
        if not isinstance(label, str):
            continue
        if e.get("name") == "process_name":
            if _NPU_DEVICE_PROCESS.search(label) and not _NPU_EXCLUDED_PROCESS.search(label):
                npu_pids.add(_scalar(e.get("pid")))
        elif e.get("name") == "thread_name" and _NPU_EXCLUDED_THREAD.search(label):
            excluded_rows.add((_scalar(e.get("pid")), _scalar(e.get("tid"))))
    return npu_pids, excluded_rows


def _is_step_name(name: str, step_marker: str | None) -> bool:
    if step_marker is not None:
        return name.startswith(step_marker)
    return _PROFILER_STEP.match(name) is not None


def _us(ns: int) -> str:
    """Integer nanoseconds as an exact microsecond string (what _ns reads back)."""
    return f"{ns // 1000}.{ns % 1000:03d}"


def _paired_slices(events: list[Any]) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
    """Complete ("X") events for the begin/end pairs of `events`, and (index, why) of those left unpaired."""
    open_by_row: dict[tuple[Any, Any], list[tuple[int, dict[str, Any], int]]] = {}
    out: list[dict[str, Any]] = []
    unpaired: list[tuple[int, str]] = []
    for i, e in enumerate(events):
        if not isinstance(e, dict) or e.get("ph") not in ("B", "E"):
            continue
        row = (_scalar(e.get("pid")), _scalar(e.get("tid")))
        t = _ns(e.get("ts"))
        if t is None:
            unpaired.append((i, f"{e['ph']} event with no usable ts ({_shown(e.get('ts'))})"))
            continue
        stack = open_by_row.setdefault(row, [])
        if e["ph"] == "B":
            stack.append((i, e, t))
            continue
        if not stack:
            unpaired.append((i, f"E event with no B before it on pid {row[0]} tid {row[1]}"))
            continue
        _, begin, start = stack.pop()
        args = [a for a in (begin.get("args"), e.get("args")) if isinstance(a, dict)]  # the format merges them
        out.append({**begin, "ph": "X", "ts": _us(start), "dur": _us(t - start),
                    "args": {k: v for a in args for k, v in a.items()}})
    for stack in open_by_row.values():
        for i, begin, _ in stack:
            unpaired.append((i, f"B event {_shown(begin.get('name'))} with no E (a trace cut short?)"))
    return out, sorted(unpaired)


def reduce_events(events: list[Any], step_marker: str | None) -> Reduced:
    """The device events (NPU duplicates kept once), the step annotations (`step_marker`'s, else ProfilerStep#N),
    the kernel launches by correlation id and the device memory peaks; events that cannot be used are counted."""
    npu_pids, excluded_rows = _metadata(events)
    device: list[tuple[str, str, int, int, str, int | None]] = []
    seen_npu: set[tuple[str, int, int]] = set()
    gpu_ann: list[tuple[str, int, int]] = []
    host_ann: list[tuple[str, int, int]] = []
    launches: dict[int, int] = {}
    peak_alloc: int | None = None
    peak_res: int | None = None
    streams: dict[tuple[Any, Any], str] = {}

    left_out = 0
    example = ""

    def leave_out(i: int, why: str) -> None:
        nonlocal left_out, example
        left_out += 1
        example = example or f"event {i}: {why}"

    slices, unpaired = _paired_slices(events)
    for i, why in unpaired:
        leave_out(i, why)
    # a slice from a B/E pair is numbered after the file's events in a left-out note
    for i, e in enumerate(itertools.chain(events, slices)):
        if not isinstance(e, dict):
            leave_out(i, f"{type(e).__name__} value, not an event object")
            continue
        ph = e.get("ph")
        if ph == "X":
            name = e.get("name")
            start = _ns(e.get("ts"))
            dur = _ns(e.get("dur", 0))
            if not isinstance(name, str) or start is None or dur is None or dur < 0:
                bad = [k for k, ok in (("name", isinstance(name, str)), ("ts", start is not None),
                                       ("dur", dur is not None and dur >= 0)) if not ok]
                shown = f" {name[:40]!r}" if isinstance(name, str) else ""
                leave_out(i, f"complete event{shown} with no usable {' or '.join(bad)} "
                             f"({', '.join(f'{k}={_shown(e.get(k))}' for k in bad)})")
                continue
            cat = e.get("cat")
            cat = cat.lower() if isinstance(cat, str) else ""
            pid, tid = _scalar(e.get("pid")), _scalar(e.get("tid"))
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            is_cuda = cat in _CUDA_DEVICE_CATS
            is_npu = (not is_cuda and pid in npu_pids and (pid, tid) not in excluded_rows
                      and cat not in ("gpu_user_annotation", "user_annotation", "cpu_op", "python_function"))
            if is_cuda or is_npu:
                if is_npu:
                    key = (name, start, dur)
                    if key in seen_npu:
                        continue
                    seen_npu.add(key)
                row = (pid, tid)
                stream = streams.get(row)
                if stream is None:
                    stream = streams[row] = sys.intern(f"{pid}:{row[1]}")
                corr = args.get("correlation")
                name = sys.intern(name)
                device.append((name, classify(name), start, dur, stream, corr if isinstance(corr, int) else None))
            elif cat == "gpu_user_annotation":
                if _is_step_name(name, step_marker):
                    gpu_ann.append((name, start, start + dur))
            elif cat in ("cuda_runtime", "cuda_driver"):
                corr = args.get("correlation")
                if isinstance(corr, int):
                    launches[corr] = start
            elif _is_step_name(name, step_marker):
                host_ann.append((name, start, start + dur))
        elif ph in ("i", "I") and e.get("name") == "[memory]":
            args = e.get("args")
            if not isinstance(args, dict) or args.get("Device Type") == 0 or args.get("Device Id") == -1:
                continue  # host-memory samples
            alloc, res = args.get("Total Allocated"), args.get("Total Reserved")
            bad = [k for k, v in (("Total Allocated", alloc), ("Total Reserved", res))
                   if v is not None and not _bytes(v)]
            if bad:  # a negative or non-integer total would set (or hide) the peak
                leave_out(i, f"[memory] event with {', '.join(f'{k}={_shown(args.get(k))}' for k in bad)}")
                continue
            if alloc is not None:
                peak_alloc = alloc if peak_alloc is None else max(peak_alloc, alloc)
            if res is not None:
                peak_res = res if peak_res is None else max(peak_res, res)
    return Reduced(device, gpu_ann, host_ann, launches, peak_alloc, peak_res, left_out, example)


def _bytes(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _shown(value: Any) -> str:
    text = "missing" if value is None else repr(value)
    return text if len(text) <= 30 else text[:27] + "..."
