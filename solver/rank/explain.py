"""`solve --explain`: why the seed's main alternative patterns lost to the recommendation, in numbers."""
from __future__ import annotations

from solver.errors import ShardplanError
from solver.estimate.compute import Factors
from solver.estimate.serving import Estimate, Workload, estimate, mtp_tokens_per_step
from solver.estimate.workload import engine_accept_rate
from solver.estimate.step import StepCost
from solver.plan.layout_memory import assumed_memory
from solver.rank.cell import apart, change_pct, fmt_cell
from solver.rank.reason import ULTRA_LONG_FROM_SEQ
from solver.rank.select import pattern_name
from solver.space.domains import config_violations, largest_tp
from solver.specs.framework import FrameworkProfile
from solver.specs.rule_env import device_facts, model_env
from solver.specs.hardware import Hardware
from solver.specs.knobs import nondefault_label
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig, make_parallel_config, model_knobs
from solver.specs.precision import Precision
from solver.specs.scenario import PERF_TIE, Scenario, within_tie


def alternatives(model: ModelSpec, hw: Hardware, world: int, scenario: Scenario) -> dict[str, dict[str, int]]:
    """The seed's baseline patterns for this model and world size (Step 2 quick reference), in the model's
    own knobs: MoE EP only for a model with routed experts, o_proj's own TP only for MLA. Past 64K with a decode
    to serve, the ultra-long row's KVP at the widest TP on the fast fabric with o_proj TP equal to it, and the dense FFN
    at the same TP as the verified KVP deployment runs it (lc-ep32-kvp8: dense_tp = o_proj_tp = kvp_size)."""
    tp = largest_tp(world, hw, model)
    present = model_knobs(model)

    def own(knobs: dict[str, int]) -> dict[str, int]:
        return {k: v for k, v in knobs.items() if k in present}

    moe = " + MoE EP" if model.is_moe else ""
    alts = {f"all-TP{tp}": own({"attn_tp_size": tp, "dense_tp_size": tp, "moe_tp_size": tp, "embed_tp_size": tp,
                                "lmhead_tp_size": tp, "o_proj_tp_size": tp})}
    alts[f"Attn DP{moe}" if moe else f"DP{world}"] = own({"attn_tp_size": 1, "moe_tp_size": 1,
                                                            "embed_tp_size": tp, "lmhead_tp_size": tp})
    if model.is_moe:
        alts[f"Attn TP{tp}{moe}"] = own({"attn_tp_size": tp, "dense_tp_size": tp, "moe_tp_size": 1,
                                          "embed_tp_size": tp, "lmhead_tp_size": tp, "o_proj_tp_size": tp})
    # in decode, CP's ranks run as DP; a model without attention has no CP (it would be DP under another name)
    if scenario.max_seq_len > 4096 and scenario.phase != "decode" and "cp_size" in present:
        alts[f"Attn DP + CP{world}{moe}"] = own({"cp_size": world, "moe_tp_size": 1, "embed_tp_size": tp,
                                                  "lmhead_tp_size": tp})
    # KVP shards a decode's cache by tokens; a prefill-only plan has no decode for it to split
    if scenario.max_seq_len > ULTRA_LONG_FROM_SEQ and scenario.phase != "prefill" and "kvp_size" in present:
        alts[f"{'Attn DP' if moe else 'DP'} + KVP{tp}{moe}"] = own({
            "attn_tp_size": 1, "moe_tp_size": 1, "kvp_size": tp, "o_proj_tp_size": tp, "dense_tp_size": tp,
            "embed_tp_size": tp, "lmhead_tp_size": tp})
    return alts


SIDE_KNOBS = ("embed_tp_size", "lmhead_tp_size", "o_proj_tp_size")  # knobs a pattern's name does not fix


def side_variants(pc: ParallelConfig, model: ModelSpec) -> list[ParallelConfig]:
    """The same pattern with the vocabulary and o_proj degrees at the values engines tie them to (attention TP,
    attention TP x KVP, 1, the widest TP in the config): an engine that cannot split the vocabulary independently
    still expresses the pattern."""
    import itertools

    present = [k for k in SIDE_KNOBS if k in model_knobs(model)]
    values = []
    for v in (pc.attn_tp_size, pc.attn_tp_size * pc.kvp_size, 1, max(pc.attn_tp_size, pc.dense_tp_size, pc.moe_tp_size)):
        if v not in values and pc.stage_world % v == 0:
            values.append(v)
    out = []
    for combo in itertools.product(values, repeat=len(present)):
        try:
            out.append(make_parallel_config(pc.world_size, **{**pc.knobs(), **dict(zip(present, combo))}))
        except ShardplanError:
            continue
    return out


def _shares(step: StepCost, hw: Hardware) -> tuple[dict[str, float], dict[str, str]]:
    """Seconds per component, and each component's name: each module's compute/memory time, and the exposed time
    of each collective primitive over each link tier, its modules together (TP's all-reduce runs after o_proj and
    after the dense FFN alike, so the one link's cost is one share, not two halves of it). The keys match across
    configurations (a primitive over a tier); the names add the modules and the tier's line rate."""
    out: dict[str, float] = {}
    names: dict[str, str] = {}
    for o in step.ops:
        key = f"{o.module} ({o.bound}-bound)"
        out[key] = out.get(key, 0.0) + o.time_s
        names[key] = key
    mods: dict[str, list[str]] = {}
    for c in step.comms:
        key = f"{c.primitive} {c.tier}"
        out[key] = out.get(key, 0.0) + c.exposed_s
        mods.setdefault(key, [])
        if c.module not in mods[key]:
            mods[key].append(c.module)
        names[key] = comm_label(c.primitive, c.tier, mods[key], hw)
    return out, names


def comm_label(primitive: str, tier: str, modules: list[str], hw: Hardware) -> str:
    """A collective's share named as the reader checks it: "all-reduce (o_proj, dense_ffn) over intra_node
    (32 GB/s)", the tier's one-direction line rate from the hardware file."""
    over = f" over {tier}"
    if tier in hw.tiers:
        over += f" ({hw.tiers[tier].bandwidth_Bps / 1e9:,.4g} GB/s)"
    return f"{primitive.replace('_', '-')} ({', '.join(modules)}){over}"


def _main_step(e: Estimate, scenario: Scenario) -> tuple[str, StepCost | None]:
    """The phase that dominates this configuration's request latency."""
    if e.decode is None or (e.prefill is not None and scenario.request_latency(e.ttft_s, 0.0)
                            >= scenario.request_latency(0.0, e.tpot_s)):
        return "prefill step", e.prefill
    return "decode step", e.decode


def score_word(s: float) -> str:
    """A score against a configuration in words the ordering agrees with (select.ORDERING): within the tie band
    the two count as tied, whatever the sign."""
    if within_tie(s):
        return f"within the {PERF_TIE:.0%} tie band"
    return "worse" if s > 0 else "better"


def engine_margin(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, prec: Precision, f: Factors,
                  scenario: Scenario, best_cfg: ParallelConfig, best_est: Estimate, best_pattern: str,
                  generic: FrameworkProfile | None = None, best_batch: int | None = None) -> list[str]:
    """What the engine cannot express costs: the generic profile's best configuration (every knob, only
    divisibility rules), estimated with this engine's own factors so only expressiveness differs, against the
    engine's recommendation. Empty under the generic profile itself."""
    from solver.errors import InfeasibleError
    from solver.plan.solve import plan
    from solver.specs.framework import load_framework

    if fw.name == "generic":
        return []
    generic = generic or load_framework("generic")
    try:
        result = plan(model, hw, prec, generic, best_cfg.world_size, scenario, top=1, explain_binding=False)
    except InfeasibleError:
        return [f"generic profile: no feasible configuration either; {fw.name} loses nothing it could express"]
    g = result.candidates[0]
    own = model_knobs(model)
    shown = nondefault_label({k: v for k, v in g.config.knobs().items() if k in own})
    name = pattern_name(g.config, model)
    env = model_env(g.config.settings(), model, **device_facts(hw), world=g.config.world_size, batch=g.batch,
                    mtp=scenario.mtp)
    blocked = fw.check(env, severity="error")
    if not blocked:
        return [f"generic profile's best ({name}: {shown}) is expressible in {fw.name}: its "
                "rules cost nothing here"]
    e = estimate(model, hw, g.config, prec, f, Workload.for_scenario(scenario, g.batch))
    lat, best_lat = (scenario.request_latency(x.ttft_s, x.tpot_s) for x in (e, best_est))
    # the two can share a pattern name (Pure TP8 with and without the embedding split): name what differs
    mine, theirs = g.config.knobs(), best_cfg.knobs()
    differs = [f"{k} {mine[k]} vs {theirs[k]}" for k in mine if (k in own or k == "pp_size") and mine[k] != theirs[k]]
    if best_batch is not None and best_batch != g.batch:
        differs.append(f"concurrency {g.batch} vs {best_batch}")
    # a phase without a first token (decode only) or without decoding (prefill only) has no such figure
    changes = ([f"TTFT {change_pct(e.ttft_s, best_est.ttft_s)} ({fmt_cell(best_est.ttft_s * 1e3)} -> "
                f"{fmt_cell(e.ttft_s * 1e3)} ms)"] if e.has_ttft else [])
    changes += ([f"TPOT {change_pct(e.tpot_s, best_est.tpot_s)} ({fmt_cell(best_est.tpot_s * 1e3)} -> "
                 f"{fmt_cell(e.tpot_s * 1e3)} ms)"] if e.has_tpot else [])
    rate = "output tokens/s per rank" if e.has_tpot else "prompt tokens/s per rank"  # prefill: one token a prompt
    changes += [f"request latency {change_pct(lat, best_lat)}",
                f"{rate} {change_pct(e.output_tokens_per_s_per_rank, best_est.output_tokens_per_s_per_rank)}"]
    return [f"generic profile's best: {name} ({shown}, concurrency {g.batch}; differs from "
            f"{fw.name}'s pick in {', '.join(differs) or 'nothing shown'}); {ruled_out(fw.name, blocked)}. With {fw.name}'s own factors it would change {', '.join(changes)} "
            f"vs {fw.name}'s {best_pattern}"
            + (f"; so what {fw.name} cannot express costs nothing here: by its own factors its pick scores better "
               f"({score_vs(scenario, e, best_est):+.3f} for the generic profile's best)"
               if score_vs(scenario, e, best_est) >= 0 else "")]


def ruled_out(engine: str, blocked: list[str]) -> str:
    """Every problem the engine's profile finds with a configuration, the first in full and the others by their
    rule: a configuration that breaks two rules needs both lifted, and naming one would say it needs that one."""
    more = [b.split("]")[0].lstrip("[") if b.startswith("[") else b for b in blocked[1:]]
    return (f"{engine}'s profile rules it out ({blocked[0]}"
            + (f"; also {', '.join(more)}" if more else "") + ")")


def score_vs(scenario: Scenario, e: Estimate, ref: Estimate) -> float:
    """The scenario's score of `e` with `ref` as the reference (0 for ref itself; lower is better): the
    weighted log-ratio of request latency and inverse throughput the planner ranks by (Scenario.score)."""
    def pair(x: Estimate) -> tuple[float, float]:
        return (max(scenario.request_latency(x.ttft_s, x.tpot_s), 1e-12),
                1.0 / max(x.output_tokens_per_s_per_rank, 1e-12))

    (lat, inv), (lat0, inv0) = pair(e), pair(ref)
    return scenario.score(lat, inv, lat0, inv0)


def _scored(scenario: Scenario, e: Estimate, ref: Estimate) -> str:
    lat, lat0 = (scenario.request_latency(x.ttft_s, x.tpot_s) for x in (e, ref))
    thr, thr0 = e.output_tokens_per_s_per_rank, ref.output_tokens_per_s_per_rank
    return (f"score {score_vs(scenario, e, ref):+.3f} (request latency {change_pct(lat, lat0)}, "
            f"tokens/s per rank {change_pct(thr, thr0)})")


def best_of_planned(scenario: Scenario, candidates: list, i: int) -> str:
    """Where candidate i holds the role 'best score' (the front's optimum over the planned concurrencies) and a
    candidate moved to its own SLA edge, a concurrency the front did not plan, scores better: that it does, in
    one clause, so the role does not read as the best of those shown; '' otherwise."""
    mine = candidates[i]
    if mine.planned.role != "best score":
        return ""
    better = [j for j, c in enumerate(candidates) if j != i and c.planned.sla_edge_from is not None
              and score_vs(scenario, c.planned.estimate, mine.planned.estimate) < 0]
    if not better:
        return ""
    return (f" over the planned concurrencies; #{better[0] + 1}, at its own SLA edge between them, scores better")


def ahead_by_tie(scenario: Scenario, candidates: list, i: int) -> str:
    """Why candidate i stands ahead of a later one with a better score, in one clause, by the first key of the
    ranking's order (select.rank_candidates) that puts it there: a core candidate (planned whatever --top asks)
    ahead of one that is not, one that fits ahead of one that does not, one with TP in the node ahead of one
    that leaves it, and within the tie band the configuration closer to a verified deployment (the distance
    and its terms); '' where none scores better."""
    from solver.rank.select import PERF_TIE

    mine = candidates[i]
    better = [(j, c) for j, c in enumerate(candidates) if j > i
              and score_vs(scenario, c.planned.estimate, mine.planned.estimate) < 0]
    if not better:
        return ""
    j, c = better[0]
    head = f"; ahead of #{j + 1}, which scores better, because "
    if mine.planned.core and not c.planned.core:
        return head + f"it is one of the core candidates, planned whatever --top asks, and #{j + 1} is not"
    if mine.planned.estimate.memory.feasible and not c.planned.estimate.memory.feasible:
        return head + f"it fits in memory and #{j + 1} does not"
    if not mine.cross_node and c.cross_node:
        return head + f"its TP groups stay in the node and #{j + 1}'s leave it"

    def near(x) -> str:
        if x.reference == "none":
            return "none"
        return f"{x.reference} (distance {x.reference_distance:.2f}: {', '.join(x.reference_terms)})"

    return (head + f"the two are within the {PERF_TIE:.0%} tie band and the seed then prefers the configuration "
            f"closer to a verified deployment: {near(mine)} vs {near(c)}")


def concurrency_vs_first(candidates: list, i: int) -> str:
    """Where candidate i runs at another concurrency than #1, the clause saying so: its score and figures
    against #1's compare two operating points, not two configurations at one load."""
    if i == 0 or candidates[i].planned.batch == candidates[0].planned.batch:
        return ""
    return f"; at concurrency {candidates[i].planned.batch}, #1 at {candidates[0].planned.batch}"


def candidate_scores(scenario: Scenario, candidates: list[tuple[str, Estimate, str]]) -> list[str]:
    """One line per candidate: its score against #1 and why it is in the list ((pattern, estimate, role))."""
    if not candidates:
        return []
    ref = candidates[0][1]
    w_lat, w_inv = scenario.objective_weights
    head = (f"score: {w_lat:g} x ln(request latency / #1's) + {w_inv:g} x ln(inverse throughput per rank / "
            f"#1's) ({scenario.kind}); lower is better, 0 = #1")
    return [head] + [f"#{i + 1} {pattern} ({role}): {_scored(scenario, e, ref)}"
                     + (_costs(scenario, e, ref) if i else "") for i, (pattern, e, role) in enumerate(candidates)]


def _costs(scenario: Scenario, e: Estimate, ref: Estimate) -> str:
    """What a candidate costs against #1 in the table's own columns (mem GB, TTFT ms, TPOT ms), the figures a
    phase has: the score alone does not say where the difference lies."""
    parts = [f"mem {e.memory.model_bytes / 1e9:.2f} vs {ref.memory.model_bytes / 1e9:.2f} GB"]
    if scenario.phase != "decode":
        parts.append(f"TTFT {change_pct(e.ttft_s, ref.ttft_s)}")
    if scenario.phase != "prefill":
        parts.append(f"TPOT {change_pct(e.tpot_s, ref.tpot_s)}")
    return "; against #1: " + ", ".join(parts)


def rules_broken(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, scenario: Scenario, pc: ParallelConfig,
                 batch: int) -> list[str]:
    """The framework's rules and limits and the space's constraints `pc` breaks at concurrency `batch`."""
    env = model_env(pc.settings(), model, **device_facts(hw), world=pc.world_size, batch=batch, mtp=scenario.mtp)
    return ([r.id for r in fw.violated(env, severity="error")] + fw.limits(env)
            + config_violations(model, hw, fw, pc, scenario, allow_cross_node=True))


def expressed(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, scenario: Scenario, pc: ParallelConfig,
              batch: int) -> tuple[ParallelConfig, list[str]]:
    """The pattern of `pc` as the engine can express it at concurrency `batch`: `pc` itself where it breaks
    nothing, else of it and its side variants (the vocabulary / o_proj degrees engines tie) the one breaking
    least, with what it breaks."""
    broken = rules_broken(model, hw, fw, scenario, pc, batch)
    if broken:
        pc, broken = min(((v, rules_broken(model, hw, fw, scenario, v, batch))
                          for v in [pc, *side_variants(pc, model)]), key=lambda vb: len(vb[1]))
    return pc, broken


def runnable(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, scenario: Scenario, pc: ParallelConfig,
             batch: int) -> list[ParallelConfig]:
    """Every form of `pc`'s pattern the engine runs at concurrency `batch` as it is: `pc` itself where it breaks
    nothing, else each of its side variants (the vocabulary / o_proj degrees engines tie) that breaks nothing,
    once per set of knobs; empty where none does (expressed then says what the least-breaking one breaks)."""
    if not rules_broken(model, hw, fw, scenario, pc, batch):
        return [pc]
    out: dict[tuple, ParallelConfig] = {}
    for v in side_variants(pc, model):
        if not rules_broken(model, hw, fw, scenario, v, batch):
            out.setdefault(tuple(sorted(v.knobs().items())), v)
    return list(out.values())


def side_change(pc: ParallelConfig, v: ParallelConfig, model: ModelSpec) -> str:
    """The vocabulary / o_proj degrees `v` sets otherwise than `pc` ("embed_tp=1 lmhead_tp=8"), '' where none."""
    present = [k for k in SIDE_KNOBS if k in model_knobs(model)]
    a, b = pc.knobs(), v.knobs()
    return " ".join(f"{k.replace('_size', '')}={b[k]}" for k in present if a.get(k) != b.get(k))


def admitted(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, prec: Precision, f: Factors,
             scenario: Scenario, pc: ParallelConfig, batch: int) -> tuple[Estimate | None, str]:
    """The full estimate of `pc` at concurrency `batch` and '' where it may run there, else None and the first
    thing that rules it out, as the planner checks it: a rule or limit (rules_broken's ids), memory (the
    estimate's, or the busiest replica at the longest context: layout_memory.assumed_memory), an SLA."""
    broken = rules_broken(model, hw, fw, scenario, pc, batch)
    if broken:
        return None, f"violates {', '.join(dict.fromkeys(broken))}"
    e = estimate(model, hw, pc, prec, f, Workload.for_scenario(scenario, batch))
    mem = assumed_memory(model, hw, pc, prec, scenario, batch)
    if not (e.memory.feasible and mem.feasible):
        over, where = (e.memory, "") if not e.memory.feasible else (mem, " at the longest context")
        used, limit = apart(over.model_bytes / 1e9, over.limit_bytes / 1e9)
        return None, f"does not fit ({used} GB per rank{where}, limit {limit} GB)"
    misses = scenario.sla_misses(e.ttft_s, e.tpot_s)
    if misses:
        return None, (f"misses {', '.join(misses)} (TTFT {fmt_cell(e.ttft_s * 1e3)} ms, "
                      f"TPOT {fmt_cell(e.tpot_s * 1e3)} ms)")
    return e, ""


def figures_vs(e: Estimate, ref: Estimate, prompt_len: int | None = None) -> str:
    """The table's figures of `ref` -> `e` that the phase has (mem GB, TTFT, TPOT, tokens/s per rank); a
    prefill-only estimate's rate in prompt tokens (`prompt_len` per prompt, one output token each), the table's
    column for that phase, not the one token per prompt it emits."""
    parts = [f"mem {ref.memory.model_bytes / 1e9:.2f} -> {e.memory.model_bytes / 1e9:.2f} GB"]  # as the YAML, finer than a cell
    parts += [f"TTFT {fmt_cell(ref.ttft_s * 1e3)} -> {fmt_cell(e.ttft_s * 1e3)} ms"] if e.has_ttft else []
    parts += [f"TPOT {fmt_cell(ref.tpot_s * 1e3)} -> {fmt_cell(e.tpot_s * 1e3)} ms"] if e.has_tpot else []
    if prompt_len is not None and not e.has_tpot:
        return ", ".join(parts + [f"prompt tok/s per rank {fmt_cell(ref.output_tokens_per_s_per_rank * prompt_len)} "
                                  f"-> {fmt_cell(e.output_tokens_per_s_per_rank * prompt_len)}"])
    return ", ".join(parts + [f"tok/s per rank {fmt_cell(ref.output_tokens_per_s_per_rank)} -> "
                              f"{fmt_cell(e.output_tokens_per_s_per_rank)}"])


def best_form(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, prec: Precision, f: Factors,
              scenario: Scenario, pc: ParallelConfig, forms: list[ParallelConfig], batch: int,
              ref: Estimate) -> tuple[ParallelConfig, Estimate | None, str, str]:
    """Of `forms` (forms of `pc`'s pattern: runnable's, or expressed's where none runs), the one the planner admits
    at concurrency `batch` (admitted) that scores best against `ref` (score_vs; the first found may score worse
    than another the engine runs as well), of forms scoring alike the one changing fewest degrees from `pc`: the
    form, its full estimate, the degrees it sets otherwise than `pc` (side_change) and ''; where none is admitted,
    the first form, None, '' and what rules it out."""
    ran, first = [], None
    for v in forms:
        e, no = admitted(model, hw, fw, prec, f, scenario, v, batch)
        if e is None:
            first = first or (v, None, "", no)
        else:
            side = side_change(pc, v, model)
            ran.append((score_vs(scenario, e, ref), len(side.split()), v, e, side))
    if not ran:
        return first
    _, _, v, e, side = min(ran, key=lambda x: (x[0], x[1]))
    return v, e, side, ""


def seed_knobs(label: str) -> tuple[str, ...]:
    """The knobs a seed value's label sets ("attn_tp=4", "embed_tp=lmhead_tp=8": reason.seed_attention /
    seed_split), as ParallelConfig names them."""
    return tuple(n + "_size" for n in label.rpartition("=")[0].split("="))


def seed_value_priced(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, prec: Precision, f: Factors,
                      scenario: Scenario, est: Estimate, batch: int,
                      seeds: list[tuple[str, ParallelConfig | str]], role: str = "") -> str:
    """Why a configuration (estimated `est` at concurrency `batch`, listed for `role`, Planned.role) departs from
    a value the seed suggests or allows for one of its choices, in one clause: the value(s) (`seeds`: label -> the
    configuration with that value, the rest unchanged, or the space's refusal of it) in the best-scoring form the
    engine runs (runnable; the degrees it changes said), priced by the full estimate at the same concurrency (the
    best of them where the seed suggests several: its score against the configuration, Scenario.score, and the
    table's figures), and what rules out the others
    (admitted); where the seed's value scores better, the role the configuration is listed for."""
    priced, refused = [], {}
    for label, pc in seeds:
        if isinstance(pc, str):
            refused.setdefault(pc, []).append(label)
            continue
        # a form that sets the seed's own knob back (the replicated table's side variant) is the configuration
        # itself, not the seed's value: where no form keeps the value, what rules the value out is said
        def keeps(forms: list[ParallelConfig]) -> list[ParallelConfig]:
            return [v for v in forms if all(v.knobs()[k] == pc.knobs()[k] for k in seed_knobs(label))]

        forms = (keeps(runnable(model, hw, fw, scenario, pc, batch))
                 or keeps([expressed(model, hw, fw, scenario, pc, batch)[0]]) or [pc])
        _, e, side, why = best_form(model, hw, fw, prec, f, scenario, pc, forms, batch, est)
        if e is None:
            refused.setdefault(why, []).append(label)
        else:
            priced.append((score_vs(scenario, e, est), label, e, side))

    def together(labels: list[str]) -> str:  # "attn_tp=2/4/8": the knob once
        return labels[0] + "".join("/" + lb.rpartition("=")[2] for lb in labels[1:])

    at = f"at the same backbone and concurrency {batch}"
    out = "; ".join(f"{together(labels)}: {why}" for why, labels in refused.items())
    if not priced:
        return f"{out}, {at}"
    s, label, e, side = min(priced, key=lambda x: x[0])
    notes = ([f"the best of {together([x[1] for x in priced])}"] if len(priced) > 1 else []) + (
        [f"with {side}, the form {fw.name} runs that scores best"] if side else [])
    of = f" ({'; '.join(notes)})" if notes else ""
    return (f"{label}{of} {at} scores {s:+.3f} ({score_word(s)}) against it: "
            f"{figures_vs(e, est, scenario.isl if scenario.phase == 'prefill' else None)}"
            + (f"; {out}" if out else "")
            + (f"; listed for its role ({role})" if s < 0 and role else ""))


def concurrency_neighbours(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, prec: Precision, f: Factors,
                           scenario: Scenario, cfg: ParallelConfig, best_est: Estimate, batch: int) -> list[str]:
    """Why #1 runs at its concurrency: the same configuration at half and at twice it, scored against #1 (the
    scenario's trade of request latency for tokens/s per rank along the concurrency axis), or what stops it there
    (--max-concurrency, a rule at that concurrency, memory at the longest context as the planner checks it, an
    SLA). One that scores better than #1 is said to (score_word: inside the tie band or beyond it); the same
    configuration has one verified deployment at every concurrency, so closeness to it is not why #1 stands
    first. Nothing where the user fixed the concurrency."""
    if scenario.concurrency is not None:
        return []
    lines = []
    for b in (batch // 2, batch * 2):
        if b < 1 or b == batch:
            continue
        head = f"concurrency {b} (#1's configuration): "
        if b > scenario.max_concurrency:
            lines.append(head + f"above --max-concurrency {scenario.max_concurrency}")
            continue
        e, why = admitted(model, hw, fw, prec, f, scenario, cfg, b)
        if e is None:
            lines.append(head + why)
            continue
        # the same configuration has the same verified deployment at every concurrency, so closeness to one
        # cannot be why #1 stands first: say only where the score lies
        s = score_vs(scenario, e, best_est)
        tie = f"; {score_word(s)} against #1" if s < 0 else ""
        lines.append(head + _scored(scenario, e, best_est) + tie)
    return lines


def mtp_clause(model: ModelSpec, wl: Workload) -> list[str]:
    """What MTP does to the figures, where it is on: its depth, the acceptance rate, the tokens a decode step
    emits (workload.mtp_tokens_per_step) and the draft passes each step runs."""
    if not (wl.mtp and model.num_mtp_layers):
        return []
    a, n = wl.mtp_accept, wl.mtp
    prefill = "each prefill step runs one draft pass through the MTP layer over the prompts"
    if wl.kind == "prefill":  # no decode step: the acceptance is unread
        return [f"MTP depth {n}: {prefill}"]
    terms = " + ".join(["1", *(f"{a:g}^{i}" if i > 1 else f"{a:g}" for i in range(1, n + 1))])
    m = mtp_tokens_per_step(n, a)
    # the two figures an engine's own metrics print, to hold the acceptance against a running server's
    logged = (f"the engines log it as their mean acceptance length, and an accepted / drafted rate of "
              f"{engine_accept_rate(n, a):.1%}")
    decode = (f"MTP depth {n} at acceptance {a:g}: {terms} = {m:.2f} tokens per decode step "
              f"(TPOT = step time / that; {logged}); each decode step verifies {1 + n} tokens per sequence and "
              f"runs {n} draft pass{'es' if n > 1 else ''} through the MTP layer")
    return [decode if wl.kind == "decode" else f"{decode}; {prefill}"]


AFD_NAME = "+AFD"  # the seed's quick reference: "Advanced High-throughput: +AFD+EPLB+MTP", "Large-scale (AFD)"


def afd_priced(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, prec: Precision, f: Factors,
               scenario: Scenario, pc: ParallelConfig, best_est: Estimate, batch: int) -> list[str]:
    """The seed's AFD baseline beside #1, where the engine runs attention-FFN disaggregation (its profile's feature)
    and the plan is a decode: #1's knobs over each half of its world (afd: true in its deployment file), estimated
    by estimate.afd at #1's concurrency, or the first thing that refuses it as `check` would (specs.afd.check_afd,
    the engine's rules on a half, memory on the binding side, an SLA). Priced: its score against #1, the side that
    binds (each side's busy time over the step, the transfer left exposed) and, where it scores better, a note
    saying how to review it. The planner does not enumerate AFD (its front stays exact for what it plans)."""
    from solver.errors import InputError
    from solver.estimate.afd import AfdStepCost, afd_estimate, half_config
    from solver.specs.afd import FEATURE, check_afd

    if not fw.has_feature(FEATURE) or scenario.phase != "decode":
        return []
    half = pc.world_size // 2
    name = (f"{AFD_NAME} (the seed's high-throughput baseline: #1's knobs over each half, {half} attention ranks + "
            f"{half} FFN ranks, at #1's concurrency {batch})")
    try:
        check_afd(fw, model, hw, pc.knobs(), pc.world_size, scenario.phase, batch, scenario.mtp, lambda k: k)
    except InputError as exc:
        return [f"{name}: refused ({exc})"]
    broken = rules_broken(model, hw, fw, scenario, half_config(pc), batch)
    if broken:
        return [f"{name}: a half violates {', '.join(dict.fromkeys(broken))}"]
    e = afd_estimate(model, hw, pc, prec, f, Workload.for_scenario(scenario, batch))
    step = e.decode
    if not isinstance(step, AfdStepCost) or step.memory_sides is None:
        return []
    if not e.memory.feasible:
        worst = "attention" if e.memory is step.memory_sides.attention else "FFN"
        used, limit = apart(e.memory.model_bytes / 1e9, e.memory.limit_bytes / 1e9)
        return [f"{name}: does not fit ({used} GB per rank on the {worst} side, limit {limit} GB)"]
    misses = scenario.sla_misses(e.ttft_s, e.tpot_s)
    if misses:
        return [f"{name}: misses {', '.join(misses)} (TPOT {fmt_cell(e.tpot_s * 1e3)} ms)"]
    busy = {"attention": step.side_busy_s["attention"], "FFN": step.side_busy_s["ffn"]}
    binds = max(busy, key=busy.get)
    other = "FFN" if binds == "attention" else "attention"
    s = score_vs(scenario, e, best_est)
    lines = [f"{name}: {_scored(scenario, e, best_est)}, {score_word(s)} against #1; "
             f"{figures_vs(e, best_est)}; the {binds} side binds: busy {fmt_cell(busy[binds] * 1e3)} ms of the "
             f"{fmt_cell(step.step_s * 1e3)} ms step ({other} side {fmt_cell(busy[other] * 1e3)} ms), transfer "
             f"exposed {fmt_cell(step.exposed_transfer_s * 1e3)} ms"]
    if s < 0:
        lines.append(f"note: the AFD form of #1 scores {s:+.3f} ({score_word(s)}) against #1 by the estimate; the "
                     f"planner does not enumerate AFD: write #1's deployment file (--format yaml), set its field "
                     f"`afd: true` and run `shardplan check FILE` to review it")
    return lines


def explain(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, prec: Precision, f: Factors,
            scenario: Scenario, best_cfg: ParallelConfig, best_est: Estimate, batch: int, wl: Workload,
            best_pattern: str, candidates: list[tuple[str, Estimate, str]] = ()) -> list[str]:
    lines = candidate_scores(scenario, list(candidates))
    lines += mtp_clause(model, wl)
    lines += engine_margin(model, hw, fw, prec, f, scenario, best_cfg, best_est, best_pattern, best_batch=batch)
    lines += concurrency_neighbours(model, hw, fw, prec, f, scenario, best_cfg, best_est, batch)
    lines += afd_priced(model, hw, fw, prec, f, scenario, best_cfg, best_est, batch)
    shown = {pattern: i + 1 for i, (pattern, _, _) in reversed(list(enumerate(candidates)))}
    for name, knobs in alternatives(model, hw, best_cfg.world_size, scenario).items():
        try:
            pc = make_parallel_config(best_cfg.world_size, **knobs)
        except ShardplanError as exc:
            lines.append(f"{name}: not expressible here ({exc})")
            continue
        if pc.knobs() == best_cfg.knobs() or pattern_name(pc, model, fw.kvp_splits_attention_weights) == best_pattern:
            continue  # the recommendation itself (or the same pattern with other vocabulary/o_proj degrees)

        # the pattern may still be expressible with the vocabulary / o_proj degrees the engine ties (priced at the
        # best-scoring such form, as the seed's values are); else what the pattern itself breaks (the variant
        # breaking least)
        forms = runnable(model, hw, fw, scenario, pc, batch)
        if not forms:
            v, broken = expressed(model, hw, fw, scenario, pc, batch)
            k = shown.get(pattern_name(v, model, fw.kvp_splits_attention_weights))
            # a listed candidate is admissible at its own concurrency: what it breaks here is #1's batch
            # (cann-recipes' batch % DP), so say where, not that the pattern cannot run
            where = f" at #1's concurrency {batch} [listed as #{k} at its own concurrency]" if k is not None else ""
            lines.append(f"{name}: violates {', '.join(dict.fromkeys(broken))}{where}")  # a rule once, not per knob
            continue
        v, e, side, why = best_form(model, hw, fw, prec, f, scenario, pc, forms, batch, best_est)
        k = shown.get(pattern_name(v, model, fw.kvp_splits_attention_weights))
        name += f" (at #1's concurrency {batch}" + (f"; with {side}, the form {fw.name} runs that scores best"
                                                    if side else "") + ")"
        if k is not None:
            name += f" [listed as #{k} at its own concurrency]"
        if e is None:  # memory (the estimate's, or at the longest context) or an SLA, as the planner checks it
            lines.append(f"{name}: {why}")
            continue
        label, step = _main_step(e, scenario)
        # compare the same phase of the recommendation
        best_step = best_est.prefill if label == "prefill step" else best_est.decode
        best_parts = _shares(best_step, hw)[0] if best_step else {}
        parts, names = _shares(step, hw) if step else ({}, {})
        total = step.time_s if step else 0.0
        worst = max(parts, key=lambda k: parts[k] - best_parts.get(k, 0.0)) if parts else ""
        share = parts.get(worst, 0.0) / total if total else 0.0
        base_share = best_parts.get(worst, 0.0) / best_step.time_s if best_step and best_step.time_s else 0.0
        lines.append(f"{name}: {_scored(scenario, e, best_est)} vs {best_pattern}; {names.get(worst, worst)} is "
                     f"{share:.0%} of its {label} ({base_share:.0%} for the recommendation)")
    return lines
