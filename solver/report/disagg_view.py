"""`--serving disagg` output: both pools in the seed's candidate format, the serving estimate of the pair (TTFT
parts, KV transfer, rate match), and the comparison with the best aggregated plan on the same cards and SLA.

`solver.entry.run_disagg` is the entry point the CLI calls (solve, and per cluster size sweep / recommend): it plans
the pools (plan.disagg), ranks each pool's configuration like an aggregated candidate (rank.select), plans the
aggregated deployment for the comparison and hands this module the DisaggReport to render. Launch commands: each `DisaggReport.pools` entry carries the command of
one of its workers (solver.launch.candidates.pool_launch: the pool's parallel_config and batch plus the profile's
launch.disagg role and KV-transfer flags, and the line saying what the facts do not give); `--format launch`
prints both as shell text.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from solver.plan.disagg import DisaggPlan
from solver.rank.select import Candidate
from solver.report.candidates import candidate_dict
from solver.report.digits import rounded
from solver.specs.knobs import nondefault_label
from solver.specs.parallel import KNOBS
from solver.specs.scenario import PERF_TIE, Scenario, within_tie

GB = 1e9


@dataclass(frozen=True)
class PoolView:
    phase: str
    workers: int
    candidate: Candidate  # the pool's config in the seed's format (candidate.planned.config: the launch hook)
    launch: dict[str, Any] | None = None  # one worker's command (emit.emit_launch with role); None: no engine


@dataclass(frozen=True)
class Comparison:
    winner: str  # "disagg" | "agg" | "none" (no aggregated plan fits)
    throughput_ratio: float | None  # disagg / agg output tokens/s per rank
    why: tuple[str, ...]
    # disagg's score minus agg's (Scenario.score, lower wins); within the tie band the ranking counts them as tied
    score_gap: float | None = None

    def tied(self) -> bool:
        """The two within the tie band (select.ORDERING): the winner is the sign of a gap the estimate does not
        resolve."""
        return self.score_gap is not None and within_tie(self.score_gap)


@dataclass
class DisaggReport:
    model: str
    hardware: str
    cards: int
    scenario: Scenario
    plan: DisaggPlan
    pools: tuple[PoolView, PoolView]
    alternatives: list[DisaggPlan]
    aggregated: Candidate | None
    aggregated_error: str | None
    comparison: Comparison
    skipped: dict = field(default_factory=dict)  # 'phase W=size' -> the InfeasibleError of that plan
    input_notes: tuple[str, ...] = ()  # what reading the inputs noted (specs/notes.input_notes)
    knobs: tuple[str, ...] = KNOBS  # the model's own (parallel.model_knobs): what the outputs show
    kvp_in_tp: bool = False  # the engine's KVP reuses its TP ranks: TP as the engine counts it
    replica_knobs: tuple[str, ...] = ()  # FrameworkProfile.replica_knobs: DP as the engine counts it
    config: str | None = None  # the config's own name where `model` (as asked) is another's (model_catalog.model_names)
    aggregated_cards: int | None = None  # the cards the aggregated plan is on: the disaggregated plan's or every card (entry.run_disagg)
    aggregated_copies: int = 0  # the aggregated plan is this many copies of aggregated_cards (none fits one server)


def utilisation(share: float) -> str:
    """The prefill pool's utilisation as every line prints it: from the figure the YAML / JSON carry (rounded to
    0.001), at that precision, so the headline and the comparison never show two percentages for one figure
    (a raw 0.92507 read as 93% beside its rounded 0.925 read as 92%)."""
    return f"{round(share, 3):.1%}"


def replicas(n: int) -> str:
    return "1 replica" if n == 1 else f"{n} replicas"


def each_worker(workers: int) -> str:
    """A pool's replicas are counted in one worker: where the pool has several, say so (2 workers of TP4 are 2
    replicas, not the '1 replica' one worker has)."""
    return f" in each of {workers} workers" if workers > 1 else ""


def idle_reason(concurrency: int, scenario: Scenario) -> str:
    """Why cards sit idle: where the load is fixed (--concurrency) or at its cap (--max-concurrency), the pools that
    carry it use fewer cards than given (more workers at that load would each run fewer sequences), and a larger
    load fills more; else the rate match sized the pools below the cards."""
    if scenario.concurrency:
        return (f"--concurrency {scenario.concurrency:,} fixes the load these pools carry; more workers would each "
                "run fewer sequences")
    if concurrency >= scenario.max_concurrency:
        return (f"the load is at the --max-concurrency cap of {scenario.max_concurrency:,}; more workers at that "
                "load would each run fewer sequences, a higher cap lets more cards serve")
    return "the rate match leaves the rest idle"


def compare(d: DisaggPlan, agg: Candidate | None, scenario: Scenario, cards: int,
            kvp_in_tp: bool = False, agg_error: str | None = None, agg_cards: int | None = None,
            agg_used: Candidate | None = None, agg_copies: int = 0) -> Comparison:
    """Which wins on the scenario's score (request latency vs output tokens/s per rank), by how much, why
    (`agg_error`: why the aggregated plan on the same cards and SLA has no configuration, said beside the
    verdict, so a disaggregated win by default reads as one; `agg_cards`: the cards the aggregated plan was
    planned on: the disaggregated plan's own or every card, whichever scores better (entry.run_disagg);
    `agg_used`: the aggregated plan on the disaggregated plan's cards where it lost to every card; `agg_copies`:
    the aggregated plan is that many copies of `agg_cards` cards, where one server on the cards has none, and
    `agg_error` then the binding families of that one server)."""
    e = d.estimate
    if agg is None:
        return Comparison("disagg", None, ("no aggregated configuration fits these cards and SLA"
                                           + (f": {agg_error}" if agg_error else ""),))
    a = agg.planned.estimate
    ratio = e.output_tokens_per_s_per_rank / a.output_tokens_per_s_per_rank
    lat_d = scenario.request_latency(e.ttft_s, e.tpot_s)
    lat_a = scenario.request_latency(a.ttft_s, a.tpot_s)
    inv_d, inv_a = 1 / e.output_tokens_per_s_per_rank, 1 / a.output_tokens_per_s_per_rank
    sd = scenario.score(lat_d, inv_d, min(lat_d, lat_a), min(inv_d, inv_a))
    sa = scenario.score(lat_a, inv_a, min(lat_d, lat_a), min(inv_d, inv_a))
    w_lat, w_inv = scenario.objective_weights
    # the same ISL / OSL and SLAs; the concurrency is each plan's own unless --concurrency fixed it
    load = (f"both at --concurrency {scenario.concurrency:,}" if scenario.concurrency else
            f"concurrency {e.concurrency:,} vs {agg.planned.batch:,}, each the load its own plan picks")
    tie = (f" (within the {PERF_TIE:.0%} tie band, where the ranking counts two configurations as tied)"
           if within_tie(sd - sa) else "")
    why = [f"on the {scenario.kind} score ({w_lat:g} x log request latency + {w_inv:g} x log 1 / output tokens/s "
           f"per rank, lower wins): output tokens/s per rank: disagg {e.output_tokens_per_s_per_rank:,.1f} vs "
           f"aggregated {a.output_tokens_per_s_per_rank:,.1f} ({(ratio - 1) * 100:+.0f}%); TTFT "
           f"{e.ttft_s * 1e3:,.0f} vs {a.ttft_s * 1e3:,.0f} ms; TPOT {e.tpot_s * 1e3:.1f} vs {a.tpot_s * 1e3:.1f} "
           f"ms; request latency {lat_d * 1e3:,.0f} vs {lat_a * 1e3:,.0f} ms; score {sd - sa:+.3f} for disagg "
           f"against aggregated{tie}; {load}"]
    if 0 < a.prefill_share < 1:  # all prefill (OSL 1 in lockstep): no decode step to stretch
        why.append(f"aggregated decode steps carry the prefills: {a.prefill_share:.0%} of its time is prefill, "
                   f"which stretches every decode step by {1 / (1 - a.prefill_share):.2f}x; the decode pool has none")
    pc_p, pc_d, pc_a = d.prefill.planned.config, d.decode.planned.config, agg.planned.config
    # attention TP as the engine counts it (TP x DCP where its DCP reuses the TP ranks)
    why.append(f"each pool has its own layout: prefill {pc_p.attn_tp_group(kvp_in_tp)}-way attention TP "
               f"x {replicas(pc_p.attn_replicas)}{each_worker(d.prefill.workers)}, decode "
               f"{pc_d.attn_tp_group(kvp_in_tp)}-way x {replicas(pc_d.attn_replicas)}{each_worker(d.decode.workers)} "
               f"(aggregated: {pc_a.attn_tp_group(kvp_in_tp)}-way x {pc_a.attn_replicas}); decode runs "
               f"{e.shape.running} sequence{'' if e.shape.running == 1 else 's'} per replica (aggregated "
               f"{a.running_per_replica:g})")
    why.append(f"disaggregation pays {e.transfer.time_s * 1e3:.2f} ms of KV transfer per request "
               f"({e.transfer.bytes_per_request / 1e6:.1f} MB over {e.transfer.tier}) and keeps "
               f"{d.prefill.ranks} of {d.cards} ranks on prefill (utilisation {utilisation(e.times.prefill_utilization)})")
    if agg_copies:
        bound = f" ({agg_error})" if agg_error else ""  # with copies: what binds one server
        why.append(f"one aggregated server has no configuration on {d.cards} cards{bound}: the aggregated plan "
                   f"is {agg_copies} copies of {agg_cards} cards behind a load balancer, its per-rank figures and "
                   f"latency one copy's")
    elif d.cards < cards:
        same = (f"the aggregated plan is priced on the same {d.cards}" if agg_cards == d.cards else
                f"the aggregated plan, which has no configuration on {d.cards}, on all {cards}" if agg_used is None
                else f"the aggregated plan on all {cards}, which it runs better than on {d.cards} (there "
                     f"{agg_used.planned.estimate.output_tokens_per_s_per_rank:,.1f} output tokens/s per rank, "
                     f"{agg_used.pattern})")
        why.append(f"the disaggregated plan uses {d.cards} of the {cards} cards "
                   f"({idle_reason(e.concurrency, scenario)}); its per-rank figures count only the ranks used, "
                   f"and {same}")
    winner = "disagg" if sd < sa else "agg"
    return Comparison(winner, ratio, tuple(why), sd - sa)


def serving_estimation(d: DisaggPlan, hw_ranks_per_node: int | None = None) -> dict[str, Any]:
    e = d.estimate
    t = e.times
    out = {
        "concurrency": e.concurrency,
        "ttft_ms": rounded(e.ttft_s * 1e3, "ttft_ms"),
        "ttft_parts_ms": {"prefill_wait": round(t.prefill_wait_s * 1e3, 2), "prefill": round(t.prefill_s * 1e3, 2),
                          "kv_transfer": round(t.transfer_s * 1e3, 3),
                          "first_decode_step": round(t.first_decode_s * 1e3, 3),
                          "first_wave_mean": round(t.ttft_first_wave_s * 1e3, 2),
                          "steady_state": round(t.ttft_steady_s * 1e3, 2),
                          # what the steady state adds to its listed parts: the fixed per-request cost
                          "front_end": round((t.ttft_steady_s - t.prefill_wait_s - t.prefill_s - t.transfer_s
                                              - t.first_decode_s) * 1e3, 3),
                          "slot_wait": round(t.slot_wait_s * 1e3, 3),
                          # TTFT = share x first wave + (1 - share) x steady state + slot wait
                          "first_wave_share": round((t.ttft_s - t.slot_wait_s - t.ttft_steady_s)
                                                    / (t.ttft_first_wave_s - t.ttft_steady_s), 4)
                          if t.ttft_first_wave_s != t.ttft_steady_s else 0.0},
        "tpot_ms": rounded(e.tpot_s * 1e3, "tpot_ms"),
        "output_tokens_per_s": rounded(e.output_tokens_per_s, "output_tokens_per_s"),
        "output_tokens_per_s_per_rank": rounded(e.output_tokens_per_s_per_rank, "output_tokens_per_s_per_rank"),
        "input_tokens_per_s": rounded(e.input_tokens_per_s, "input_tokens_per_s"),
        "tokens_per_s_per_user": rounded(e.tokens_per_s_per_user, "tokens_per_s_per_user"),
        "kv_transfer": {"tier": e.transfer.tier, "bytes_per_request": round(e.transfer.bytes_per_request),
                        "recv_bytes_per_rank": round(e.transfer.recv_bytes_per_rank)},
        "rate_match": {"decode_demand_requests_per_s": round(d.demand_rps, 3),
                       "prefill_requests_per_s_per_worker": round(d.prefill_rps_per_worker, 3),
                       "prefill_utilization": round(t.prefill_utilization, 3)},
        "ranks_used": d.cards,
    }
    if hw_ranks_per_node:
        nodes_p = d.prefill.ranks / hw_ranks_per_node
        nodes_d = d.decode.ranks / hw_ranks_per_node
        out["per_node"] = {"prefill_input_tokens_per_s": round(e.input_tokens_per_s / nodes_p, 1),
                           "decode_output_tokens_per_s": round(e.output_tokens_per_s / nodes_d, 1)}
    return out


def _pool_dict(v: PoolView, d: DisaggPlan, knobs: tuple[str, ...], replica_knobs: tuple[str, ...]) -> dict[str, Any]:
    c = candidate_dict(v.candidate, knobs, replica_knobs)
    pool = d.prefill if v.phase == "prefill" else d.decode
    mem = d.estimate.prefill_memory if v.phase == "prefill" else d.estimate.decode_memory
    pc = pool.planned.config
    est = {"workers": v.workers, "ranks_per_worker": pc.world_size, "ranks": pool.ranks,
           "params_per_card_gb": round(mem.weights_total / GB, 2),
           "kv_cache_per_card_gb": round(mem.cache_total / GB, 2),
           "memory_per_rank_gb": round(mem.model_bytes / GB, 2), "memory_limit_gb": round(mem.limit_bytes / GB, 2),
           "memory_feasible": mem.feasible,
           "cross_node_comm": v.candidate.cross_node}
    if v.phase == "prefill":
        est["prompts_per_step_per_replica"] = d.estimate.shape.prompts_per_step
        est["prefill_step_ms"] = round(d.estimate.times.prefill_s * 1e3, 2)
    else:
        est["running_per_replica"] = d.estimate.shape.running
        est["decode_step_ms"] = round(d.estimate.times.decode_step_s * 1e3, 3)
    return {"workers": v.workers, "pattern": c["pattern"], "reason": c["reason"], "reference": c["reference"],
            "parallel_config": c["parallel_config"], "estimation": est, "tradeoff": c["tradeoff"],
            "launch": v.launch}


def launch_gaps(r: DisaggReport) -> list[str]:
    """What the engine's pool commands lack to run disaggregated (LaunchSpec's disagg `missing`: no role or KV
    transfer flags in the facts), once each: the table and the YAML say it beside the plan, not only `--format
    launch`, so a plan the engine cannot be told to run as pools is not read as one it can."""
    seen: list[str] = []
    for v in r.pools:
        gap = (v.launch or {}).get("missing")
        if gap and gap not in seen:
            seen.append(gap)
    return seen


def _reads_head(launch: dict[str, Any]) -> bool:
    """Whether any node's argv or environment names the head node's address placeholder."""
    from solver.launch import HEAD_ADDR

    return any(HEAD_ADDR in t for n in launch.get("nodes", ()) for t in (*n["argv"], *n["env"].values()))


def launch_text(r: DisaggReport) -> str:
    """`solve --serving disagg --format launch`: one worker's command per pool, run once per worker."""
    from solver.launch.shell import render_shell

    out = []
    for v in r.pools:
        pc = v.candidate.planned.config
        # a worker whose command reads the head node's address (one that spans nodes, or a one-node worker's KV
        # side channel) runs with its own: the pool's workers are on different nodes
        multi = v.launch is not None and _reads_head(v.launch)
        title = (f"{v.phase} pool: {v.workers} worker(s) of {pc.world_size} ranks, {v.candidate.pattern}; run once "
                 f"per worker, each on its own cards" + (" and its own ${HEAD_NODE_ADDR}" if multi else ""))
        if v.launch is None:
            out.append(f"# {title}\n# error: the framework profile gives no command template (no launch "
                       "section): name a profile that has one, or add one (docs/bring-your-own.md)\n")
        elif "error" in v.launch:
            out.append(f"# {title}\n# error: {v.launch['error']}\n")
        else:
            out.append(render_shell(v.launch, title))
    return "\n".join(out)


def _brief(d: DisaggPlan, knobs: tuple[str, ...], replica_knobs: tuple[str, ...] = ()) -> dict[str, Any]:
    """An alternative: each pool's workers, worker size and parallel_config as the recommended pools show them."""
    e = d.estimate
    return {"ratio": d.ratio,
            **{f"{pool.phase}_{k}": v for pool in (d.prefill, d.decode)
               for k, v in (("workers", pool.workers), ("ranks_per_worker", pool.planned.config.world_size),
                            ("parallel_config", pool.planned.config.model_view(knobs, replica_knobs)))},
            "ranks_used": d.cards,
            "ttft_ms": rounded(e.ttft_s * 1e3, "ttft_ms"), "tpot_ms": rounded(e.tpot_s * 1e3, "tpot_ms"),
            "output_tokens_per_s_per_rank": rounded(e.output_tokens_per_s_per_rank, "output_tokens_per_s_per_rank")}


def report_dict(r: DisaggReport, ranks_per_node: int | None = None) -> dict[str, Any]:
    agg = None
    if r.aggregated is not None:
        a = candidate_dict(r.aggregated, r.knobs, r.replica_knobs)
        agg = {"cards": r.aggregated_cards or r.cards, **({"copies": r.aggregated_copies} if r.aggregated_copies else {}),
               "pattern": a["pattern"], "parallel_config": a["parallel_config"], "estimation": a["estimation"]}
    return {
        "serving": "disagg",
        "model": r.model, **({"config": r.config} if r.config else {}), "hardware": r.hardware, "cards": r.cards,
        "ratio": r.plan.ratio,
        "prefill_pool": _pool_dict(r.pools[0], r.plan, r.knobs, r.replica_knobs),
        "decode_pool": _pool_dict(r.pools[1], r.plan, r.knobs, r.replica_knobs),
        "estimation": serving_estimation(r.plan, ranks_per_node),
        "alternatives": [_brief(d, r.knobs, r.replica_knobs) for d in r.alternatives],
        "aggregated": agg if agg is not None else {"infeasible": r.aggregated_error},
        "comparison": {"winner": r.comparison.winner,
                       **({"score_disagg_minus_agg": round(r.comparison.score_gap, 4),
                           "within_tie_band": r.comparison.tied()} if r.comparison.score_gap is not None else {}),
                       "throughput_per_rank_ratio": None if r.comparison.throughput_ratio is None
                       else round(r.comparison.throughput_ratio, 3),
                       "why": list(r.comparison.why)},
        "input_notes": list(r.input_notes),
    }


def render(r: DisaggReport, fmt: str, ranks_per_node: int | None = None) -> str:
    """yaml (the seed's commented blocks), json, or a plain table."""
    from solver.report.render import dump

    if fmt == "launch":
        return launch_text(r)
    data = report_dict(r, ranks_per_node)
    if fmt == "json":
        return dump(data, "json") + "\n"
    if fmt == "yaml":
        out = [f"# disaggregated serving: {data['ratio']} ({r.plan.prefill.workers} prefill worker(s) of "
               f"{r.plan.prefill.planned.config.world_size} ranks, {r.plan.decode.workers} decode worker(s) of "
               f"{r.plan.decode.planned.config.world_size}; {r.plan.cards} of {r.cards} cards)"]
        out += [f"# missing: {gap}" for gap in launch_gaps(r)]
        for key in ("prefill_pool", "decode_pool"):
            p = data[key]
            out.append(f"# {key}: {p['pattern']}")
            out.append(f"# reason: {p['reason']}")
            out.append(f"# reference: {p['reference']}")
            out.append(yaml.safe_dump({key: {k: p[k] for k in ("workers", "parallel_config", "estimation",
                                                                "tradeoff")}}, sort_keys=False).rstrip())
        out.append(yaml.safe_dump({k: data[k] for k in ("estimation", "alternatives", "aggregated", "comparison")},
                                  sort_keys=False, width=110).rstrip())
        return "\n".join(out) + "\n"
    e = data["estimation"]
    title = r.model if r.config is None else f"{r.model} (config {r.config})"
    lines = [f"{title} on {r.cards} x {r.hardware}, disaggregated: {data['ratio']} ({r.plan.cards} ranks used)"]
    for key in ("prefill_pool", "decode_pool"):
        p = data[key]
        knobs = nondefault_label(p["parallel_config"])
        lines.append(f"  {key.split('_')[0]:<8} {p['workers']} x {p['estimation']['ranks_per_worker']} ranks  "
                     f"{p['pattern']}  ({knobs})  mem {p['estimation']['memory_per_rank_gb']} of limit "
                     f"{p['estimation']['memory_limit_gb']} GB/rank")
    parts = e["ttft_parts_ms"]
    share = parts["first_wave_share"]
    slot = f" + slot wait {parts['slot_wait']:,.1f}" if parts["slot_wait"] else ""
    # the parts add up to the TTFT shown: the steady state's terms, blended with the first wave's mean
    lines.append(f"  TTFT {e['ttft_ms']:,.1f} ms = {1 - share:.0%} x steady {parts['steady_state']:,.1f} (front end "
                 f"{parts['front_end']:.1f} + wait {parts['prefill_wait']:,.1f} + prefill {parts['prefill']:,.1f} + KV "
                 f"{parts['kv_transfer']:.2f} over {e['kv_transfer']['tier']} + decode admission and first step "
                 f"{parts['first_decode_step']:.2f}) + {share:.0%} x first wave {parts['first_wave_mean']:,.1f}{slot}  "
                 f"TPOT {e['tpot_ms']:.2f} ms")
    lines.append(f"  output {e['output_tokens_per_s']:,.0f} tok/s ({e['output_tokens_per_s_per_rank']:,.1f} per rank), "
                 f"input {e['input_tokens_per_s']:,.0f} tok/s; prefill utilisation "
                 f"{utilisation(e['rate_match']['prefill_utilization'])}")
    c = data["comparison"]
    tied = f", within the {PERF_TIE:.0%} tie band" if c.get("within_tie_band") else ""
    lines.append(f"  vs aggregated: {c['winner']} wins{tied}" + (f" (throughput per rank disagg / agg "
                                                            f"{c['throughput_per_rank_ratio']:.2f}x)"
                                                            if c["throughput_per_rank_ratio"] else ""))
    lines += [f"    - {w}" for w in c["why"]]
    lines += [f"  missing: {gap}" for gap in launch_gaps(r)]
    return "\n".join(lines) + "\n"


