"""Plain data and tables for `shardplan estimate` (renderers only: every figure comes from estimate/)."""
from __future__ import annotations

from typing import Any

from rich.console import Console

from solver.estimate.serving import Estimate, Workload
from solver.estimate.step import StepCost
from solver.report.model_view import memory_data
from solver.report.render import table
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision

MS = 1e3
GB = 1e9


def step_breakdown(step: StepCost) -> dict[str, Any]:
    """One forward step: time by module, by kind (compute/memory/communication/overhead), every collective."""
    mods = {
        name: {"time_ms": d["time_s"] * MS, "compute_ms": d["compute_s"] * MS, "memory_ms": d["memory_s"] * MS,
               "comm_ms": d["comm_s"] * MS, "exposed_comm_ms": d["exposed_comm_s"] * MS,
               "gflops": d["flops"] / 1e9, "gbytes": d["bytes"] / GB}
        for name, d in step.by_module().items()
    }
    comms = [{"name": c.name, "module": c.module, "primitive": c.primitive, "group": c.group, "tier": c.tier,
              "mbytes": c.bytes / 1e6, "time_ms": c.time_s * MS, "exposed_ms": c.exposed_s * MS}
             for c in step.comms]
    return {
        "step_ms": step.time_s * MS,
        "by_module": mods,
        "split_ms": {k.removesuffix("_s"): v * MS for k, v in step.split().items()},
        "communication": comms,
    }


def workload_data(wl: Workload) -> dict[str, Any]:
    if wl.kind == "serving":
        d: dict[str, Any] = {"kind": "serving", "isl": wl.isl, "osl": wl.osl, "concurrency": wl.concurrency}
    else:
        d = {"kind": wl.kind, "batch": wl.batch, "seq_len": wl.seq_len}
        if wl.osl:  # a decode over its prompts' output: costed at seq_len, memory holding isl + osl
            d.update(isl=wl.isl, osl=wl.osl)
    if wl.mtp:
        d.update(mtp=wl.mtp, mtp_accept=wl.mtp_accept)
    if wl.prefix_hit:
        d.update(prefix_hit=wl.prefix_hit)
    return d


def estimate_data(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, fw: FrameworkProfile,
                  wl: Workload, est: Estimate, notes: list[str]) -> dict[str, Any]:
    mem = memory_data(model, hw, pc, prec, est.memory, 0, wl.sequences, wl.context_len)
    mem.pop("max_batch", None)
    has_ttft = wl.kind in ("prefill", "serving")
    has_tpot = wl.kind in ("decode", "serving")
    breakdown: dict[str, Any] = {}
    if est.prefill is not None:
        breakdown["prefill"] = step_breakdown(est.prefill)
    if est.decode is not None:
        breakdown["decode"] = step_breakdown(est.decode)
    data: dict[str, Any] = {
        "model": model.name, "hardware": hw.name, "cards": pc.world_size, "framework": fw.name,
        "parallel_config": pc.own_with_derived(model),
        "precision": mem["precision"],
        "workload": workload_data(wl),
        "ttft_ms": est.ttft_s * MS if has_ttft else None,
        "tpot_ms": est.tpot_s * MS if has_tpot else None,
        "output_tokens_per_s": est.output_tokens_per_s,
        "output_tokens_per_s_per_rank": est.output_tokens_per_s_per_rank,
        "tokens_per_s_per_user": est.tokens_per_s_per_user if has_tpot else None,
        "memory_per_rank_gb": est.memory.model_bytes / GB,  # what the limit bounds: the runtime reserve aside
        "feasible": est.memory.feasible,
        "memory": {k: mem[k] for k in ("params_per_card_gb", "kv_cache_per_card_gb", "model_gb", "reserve_gb",
                                       "limit_gb", "total_gb", "capacity_gb", "feasible", "tight",
                                       "weights_kv_share", "sequences_per_rank", "breakdown", "pipeline_stage")
                   if k in mem},
        "breakdown": breakdown,
        "notes": notes,
    }
    if wl.kind == "prefill":
        # pure prefill emits one token per prompt; the prompt tokens are the useful throughput
        data["input_tokens_per_s_per_rank"] = est.output_tokens_per_s_per_rank * wl.seq_len
    return data


def _fmt_ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.2f} ms"


def render_estimate(data: dict[str, Any], con: Console) -> None:
    knobs = " ".join(f"{k}={v}" for k, v in data["parallel_config"].items() if k != "world_size")
    config = f" (config {data['config']})" if data.get("config") else ""
    con.print(f"[bold]{data['model']}[/bold]{config} on {data['cards']} x {data['hardware']} ({data['framework']}): {knobs}")
    prec = data["precision"]
    con.print("precision: " + ", ".join(f"{k} {v}" for k, v in prec.items()))
    wl = data["workload"]
    con.print("workload: " + ", ".join(f"{k}={v}" for k, v in wl.items()))
    rows = [["TTFT", _fmt_ms(data["ttft_ms"])], ["TPOT", _fmt_ms(data["tpot_ms"])],
            ["output tok/s (deployment)", data["output_tokens_per_s"]],
            ["output tok/s per rank", data["output_tokens_per_s_per_rank"]]]
    if data.get("tokens_per_s_per_user") is not None:
        rows.append(["tok/s per user", data["tokens_per_s_per_user"]])
    if "input_tokens_per_s_per_rank" in data:
        rows.append(["prompt tok/s per rank", data["input_tokens_per_s_per_rank"]])
    m = data["memory"]
    # under PP the figures are the largest stage's: say which
    stage = (f" (pipeline stage {m['pipeline_stage']} of {data['parallel_config']['pp_size']}, the largest)"
             if "pipeline_stage" in m else "")
    rows += [[f"memory per rank{stage}", f"{data['memory_per_rank_gb']:.2f} GB of limit {m['limit_gb']:.2f} GB "
                                 f"(+ {m['reserve_gb']:.2f} GB runtime reserve = {m['total_gb']:.2f} of "
                                 f"{m['capacity_gb']:.2f} GB capacity)"],
             ["feasible", data["feasible"]]]
    con.print(table("estimate", ["figure", "value"], rows))
    con.print(table("memory per rank (GB)", ["item", "GB"], [[k, v] for k, v in m["breakdown"].items()]))
    for phase, b in data["breakdown"].items():
        mods = sorted(b["by_module"].items(), key=lambda kv: -kv[1]["time_ms"])
        con.print(table(f"{phase} step {b['step_ms']:,.2f} ms: time by module (ms)",
                        ["module", "time", "FLOP time", "HBM time", "exposed comm", "comm (raw)", "share"],
                        [[name, d["time_ms"], d["compute_ms"], d["memory_ms"], d["exposed_comm_ms"], d["comm_ms"],
                          f"{d['time_ms'] / b['step_ms']:.1%}" if b["step_ms"] else "-"] for name, d in mods]))
        s = b["split_ms"]
        con.print(f"{phase} split: " + ", ".join(f"{k} {v:,.2f} ms" for k, v in s.items()))
        if b["communication"]:
            con.print(table(f"{phase} communication per step",
                            ["collective", "module", "primitive", "group", "tier", "MB", "time (ms)", "exposed (ms)"],
                            [[c["name"], c["module"], c["primitive"], c["group"], c["tier"], c["mbytes"],
                              c["time_ms"], c["exposed_ms"]] for c in b["communication"]]))
