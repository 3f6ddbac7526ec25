"""The SLA edge: where the SLAs stop a power's best configurations, the most requests they still run within them
(docs/planner.md, "How it decides").

The planner plans powers of two. With a TPOT or TTFT bound, the last power a configuration meets can be far below
what it runs within the bound (Llama-3.1-70B on 8 H100 under vLLM, 2K/512, TPOT <= 40 ms: TP8 meets it at 64 and at
120, not at 128): a throughput plan stopping at the power would leave up to half of the load the bound allows. So
each class optimum of a power whose own configuration misses the SLAs (or memory) at the next planned concurrency
is followed to its edge between the two, whatever else meets the next one: a much worse configuration meeting it
there (Qwen3-30B-A3B on 64 H100, 4K/1K, TPOT <= 40 ms: only CP32 at 4,096, 869 output tok/s per rank, where the
plain optimum of 2,048 runs 1,407 at its edge) must not hide the edge. Per power the largest edge of its optima is
planned like any concurrency, so the planner proves the optimum there; the front holds it beside the next power's
points, and dominance decides. A configuration the power's optima do not include could run more still: the edge is
a lower bound of the deployment's, found at the cost of one bisection per optimum that stops.
A candidate the SLAs stop at a power beside one at an edge moves to its own edge (at_own_edges), and a point at an
edge says where its concurrency comes from (sla_edge_note). The tests the edges are bisected with (sla_tests) judge
a configuration as the search accepts an answer (full_estimate_misses, the memory the figures assume).
"""
from __future__ import annotations

from typing import Callable

from solver.estimate.compute import Factors
from solver.estimate.memory_options import MemoryOptions
from solver.estimate.serving import Estimate, Workload, estimate
from solver.plan import cpsat
from solver.plan.layout_memory import assumed_memory
from solver.plan.memory_edge import bisect_edge
from solver.plan.points import Point, attention_family, pattern_key
from solver.plan.tables import Tables
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision
from solver.specs.rule_env import device_facts, model_env
from solver.specs.scenario import Scenario


def power_edge(optima: list[Point], power: int, batches: tuple[int, ...],
               meets: Callable[[Point, int], bool], runs: Callable[[Point, int], bool], slas: bool = True
               ) -> int | None:
    """The largest edge of these optima of `power` below the next planned concurrency each runs: the most requests
    an optimum still meets and runs where its configuration misses the SLAs there, or where the engine cannot run
    the next planned concurrency at all (a batch rule: DP768 runs multiples of 768, none between 3,072 and 6,144
    on the grid) and it misses them, or nothing it runs is planned, at the next one it runs; None where there is
    no next one, or every optimum carries on to the next it runs, or none runs more than `power`.

    `meets(p, c)`: p's configuration at c concurrent requests meets the SLAs and fits (monotone: what meets c
    meets fewer); `runs(p, c)`: the engine may run that many (its batch rules, not monotone). `slas`: False where
    the plan has no SLAs, so only an optimum the grid skips is followed (the memory edge is memory_edge's)."""
    later = [b for b in batches if b > power]
    if not later:
        return None
    edge = None
    for p in optima:
        skipped = not runs(p, later[0])
        if not skipped and not slas:
            continue  # runs the next one and no SLA stops it: the memory edge is the deployment's (memory_edge)
        if not meets(p, later[0]):
            hi = later[0]
        elif not skipped:
            continue  # its configuration carries on to the next concurrency: no edge of its own below it
        else:
            # the grid skips it: the next planned concurrency it runs, else every count to the last planned
            nxt = next((b for b in later[1:] if runs(p, b)), None)
            if nxt is not None and meets(p, nxt):
                continue
            hi = nxt if nxt is not None else later[-1] + 1
            top = next((c for c in range(hi - 1, power, -1) if runs(p, c)), None)
            if top is not None and meets(p, top):  # the usual case: nothing stops it below the next it runs
                edge = top if edge is None or top > edge else edge
                continue
        most = bisect_edge(power, hi, lambda c, p=p: meets(p, c))
        # under a batch rule (the batch a multiple of the attention replicas) the most it also runs
        ran = next((c for c in range(most, power, -1) if runs(p, c)), None) if most is not None else None
        if ran is not None and (edge is None or ran > edge):
            edge = ran
    return edge


def sla_edges(classes: dict[tuple[int, float], Point], batches: tuple[int, ...],
              meets: Callable[[Point, int], bool], runs: Callable[[Point, int], bool], slas: bool = True
              ) -> dict[int, int]:
    """Each edge to plan (power_edge of a planned concurrency's class optima, between it and the next planned
    one) -> the planned concurrency it was found from: empty where every optimum's configuration meets the SLAs
    at the next one."""
    by_power: dict[int, list[Point]] = {}
    for (b, _), p in sorted(classes.items(), key=lambda kv: kv[0]):
        by_power.setdefault(b, []).append(p)
    out = {}
    for b, optima in by_power.items():
        edge = power_edge(optima, b, batches, meets, runs, slas)
        if edge is not None:
            out[edge] = b
    return out


def at_own_edges(stopped: list[Point], powers: tuple[int, ...], meets: Callable[[Point, int], bool],
                 runs: Callable[[Point, int], bool], planner_at: Callable[[int], cpsat.Planner],
                 fixed: set[tuple], slas: bool = True) -> dict[Point, tuple[Point, cpsat.Planner]]:
    """Beside a candidate at the SLA edge, one the SLAs stop at a power (the next planned concurrency misses them),
    or one planned at another configuration's edge whose own runs more within them (DeepSeek-R1 int8 on 16 A3 under
    vllm-ascend, 2K/1K, TTFT <= 3 s, TPOT <= 50 ms: Attn DP + O_proj TP8 at TP4 x DP4's 76, its own 80 the same TTFT
    and TPOT),
    would compare unequal loads (Llama-3.1-70B, 8 H100, TPOT <= 40: TP4 x DP2 at 64 reads 27% below TP8 at 121,
    6% at its own 112). Each such candidate -> (its pattern's best configuration at the most it runs within the
    SLAs, plan.sla_edge's bisection; the planner that proved it). The slot's exclusions hold there: every pattern
    but its own is excluded. A `fixed` candidate (the verified deployment) keeps its configuration: what was
    verified is that one, so it is only admitted at its edge."""
    out = {}
    for p in stopped:
        c = power_edge([p], p.batch, powers, meets, runs, slas)
        if c is None:
            continue  # not stopped by the SLAs (a latency plan's low concurrency is its own choice), or no room
        pl = planner_at(c)
        picks = dict(p.picks)
        if p.key() in fixed:
            hit = pl.admissible(c, picks)
            q = hit[1] if hit is not None else None
        else:
            t = pl.t
            family = attention_family(t.choices["attn"][picks["attn"]])
            own = pattern_key(t, picks)
            others = sorted({pattern_key(t, {"attn": i, "dense": j, "moe": k})
                             for i, a in enumerate(t.choices["attn"]) if attention_family(a) == family
                             for j in range(len(t.choices["dense"])) for k in range(len(t.choices["moe"]))} - {own})
            families = frozenset(attention_family(a) for a in t.choices["attn"]) - {family}
            q = pl.best(c, others, exclude_families=families)
        if q is not None:  # p's own configuration meets c, so the search finds one: None only past its time limit
            out[p] = (q, pl)
    return out


def sla_edge_note(edge: int, top: int, scenario: Scenario) -> str:
    """One line on a configuration at an edge: where its concurrency comes from (the whole plan's edge, or a
    candidate's own: the configurations at `top` are the power's optima, or that candidate's). Without SLAs the
    edge is the engine's batch rule's: the most requests they run below the next planned concurrency they run."""
    if not scenario.has_slas():
        return (f"concurrency {edge:,} is the runnable edge of the configurations at {top:,}: the most requests they "
                f"run under the engine's batch rules (and memory) below the next planned concurrency they run, "
                f"planned between the powers of two, which skip every count they run there")
    slas = " and ".join(f"{name} <= {v:g} ms" for name, v in (("TTFT", scenario.ttft_ms), ("TPOT", scenario.tpot_ms))
                        if v is not None)
    return (f"concurrency {edge:,} is the SLA edge of the configurations at {top:,}: the most requests they run "
            f"within {slas} (and memory), planned between the powers of two, where the SLAs stop them")


def full_estimate_misses(e: Estimate, scenario: Scenario) -> list[str]:
    """Constraint families the full estimate breaks (the planner's tables are a proxy; this has the last
    word)."""
    return ([] if e.memory.feasible else ["B.memory_per_rank"]) + scenario.sla_misses(e.ttft_s, e.tpot_s)


def sla_tests(tables: Tables, model: ModelSpec, hw: Hardware, prec: Precision, f: Factors, fw: FrameworkProfile,
              world: int, scenario: Scenario, mem_opts: MemoryOptions
              ) -> tuple[Callable[[Point, int], bool], Callable[[Point, int], bool]]:
    """sla_edge's two tests. A configuration meets the SLAs at c as the search accepts an answer: the tables'
    memory constraint, then the full estimate (its SLAs and memory) and the memory the figures assume; it runs c
    under the engine's batch rules."""
    def meets(p: Point, c: int) -> bool:
        picks = dict(p.picks)
        if not tables.with_batch(c).fits(c, picks):
            return False
        cfg = ParallelConfig(world_size=world, **tables.config(picks))
        e = estimate(model, hw, cfg, prec, f, Workload.for_scenario(scenario, c), mem_opts)
        return not full_estimate_misses(e, scenario) and assumed_memory(model, hw, cfg, prec, scenario, c,
                                                                         mem_opts).feasible

    def runs(p: Point, c: int) -> bool:
        return engine_runs(tables.config(dict(p.picks)), model, hw, fw, world, c, scenario.mtp)

    return meets, runs


def engine_runs(knobs: dict[str, int], model: ModelSpec, hw: Hardware, fw: FrameworkProfile, world: int, c: int,
                mtp: int = 0) -> bool:
    """The engine may run c concurrent requests on this configuration (its batch rules: cann-recipes, the batch a
    multiple of the attention DP size)."""
    if not fw.batch_rules:
        return True
    env = model_env(knobs, model, **device_facts(hw), world=world, batch=c, mtp=mtp)
    return all(r.holds(env) for r in fw.batch_rules)


def runs_more(knobs: dict[str, int], model: ModelSpec, hw: Hardware, fw: FrameworkProfile, world: int, c: int,
              cap: int, mtp: int = 0) -> bool:
    """Whether the engine runs this configuration at some count in (c, cap]: False where its batch rules leave
    none (DP768 at 3,840 under a cap of 4,096), so c is the top of the range for it (space.range_note)."""
    # from the cap down: a configuration that runs the cap itself (every power of two a DP of 2^k divides) is
    # settled in one test
    return any(engine_runs(knobs, model, hw, fw, world, n, mtp) for n in range(cap, c, -1))


def edges_planned(scenario: Scenario, fw: FrameworkProfile) -> bool:
    """A serving plan whose concurrency the planner decides, under SLAs or under an engine's batch rules (the
    planned concurrencies can skip every count a layout runs between two of them): only there do edges exist (the
    powers' optima's and each candidate's own)."""
    return (scenario.concurrency is None and scenario.phase == "serving"
            and (scenario.has_slas() or bool(fw.batch_rules)))


def planned_sla_edges(classes: dict[tuple[int, float], Point], tables: Tables, scenario: Scenario,
                      fw: FrameworkProfile, meets: Callable[[Point, int], bool], runs: Callable[[Point, int], bool]
                      ) -> dict[int, int]:
    """sla_edges for a serving plan whose concurrency the planner decides under SLAs or batch rules, else none."""
    if not edges_planned(scenario, fw):
        return {}
    return sla_edges(classes, tables.batches, meets, runs, scenario.has_slas())


__all__ = ["at_own_edges", "edges_planned", "engine_runs", "runs_more", "full_estimate_misses", "planned_sla_edges", "power_edge", "sla_edge_note",
           "sla_edges", "sla_tests"]
