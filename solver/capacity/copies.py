"""A sweep row's note where copies of a smaller size of the same sweep carry more output tokens/s per rank.

A sweep row is one deployment of W cards. Where k copies of a deployment of W / k cards, a size the same sweep
planned for the same hardware, workload and scenario, run their recommended configuration at more output tokens/s
per rank than W's recommended row, by the margin `solve`'s own copies hint uses (plan.copies.MARGIN), W's
recommended row says so: the fall of throughput per rank with the cluster is then the one deployment's (a rule that
reads the world size, a fabric the world leaves, an SLA its wider groups miss), not the load's, and `recommend`
weighs copies. The sizes are plan.copies.copy_sizes (copies never split a node unevenly), the fewest copies that
reach the margin named. Nothing is planned: the figures are the sweep's own rows.
"""
from __future__ import annotations

from typing import Any, Mapping

from solver.capacity.sweep import UNROUNDED
from solver.plan.copies import MARGIN, copy_sizes
from solver.specs.hardware_catalog import load_hardware


def _per_rank(row: dict[str, Any]) -> float:
    """Output tokens/s per rank before the file's rounding (the row's own figure where it has no other)."""
    return row.get(UNROUNDED, {}).get("output_tokens_per_s_per_rank", row["output_tokens_per_s_per_rank"])


def _seconds(row: dict[str, Any]) -> str:
    return f"{row['request_latency_ms'] / 1e3:,.1f} s"


def _key(row: dict[str, Any], cards: int) -> tuple:
    """The combination a row answers, at `cards` cards: the same hardware, workload, SLAs and scenario."""
    return (row["hardware"], cards, row["scenario"], row["isl"], row["osl"], row["ttft_sla_ms"], row["tpot_sla_ms"],
            row["prefix_hit"], row["weight_dtype"])


def note_copies(rows: list[dict[str, Any]], hardware: Mapping[str, str]) -> None:
    """Append the copies note to each recommended row (candidate 1) that copies of a smaller swept size beat.
    `hardware`: canonical name -> what the user gave (a catalog name or a YAML path), for the node size."""
    best = {_key(r, r["cards"]): r for r in rows if r.get("candidate") == 1 and r.get("feasible")}
    for row in best.values():
        here, hw, world = _per_rank(row), row["hardware"], row["cards"]
        for size in copy_sizes(world, load_hardware(hardware[hw])):
            copy = best.get(_key(row, size))
            if copy is None or _per_rank(copy) < MARGIN * here:
                continue
            shown = f"{here:,.1f}" if here >= 10 else f"{here:.3g}"
            # the request latency beside it: the trade the scenario's score weighs (a latency pick gives way per rank)
            said = (f"{world // size} copies of {size} x {hw} ({copy['pattern']}, {copy['concurrency']:,} requests "
                    f"each: this sweep's {size}-card row) would run {_per_rank(copy):,.1f} output tokens/s per rank "
                    f"at a request latency of {_seconds(copy)}, against {shown} at {_seconds(row)} here; a row is one "
                    f"deployment of {world} cards, `recommend` weighs copies")
            row["note"] = "; ".join(n for n in (row.get("note"), said) if n)
            break
