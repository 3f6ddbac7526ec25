"""The pools of a disaggregated plan: the phase plans (prefill, decode) of the existing planner per worker size,
their fronts of points, and why a pool has none.

For every worker size W (ranks per worker) that fits the model, `pool_fronts` gives the prefill front (configs x
prompts per step, with the prefill time) and the decode front (configs x running sequences, with TPOT under the
SLA). A prefill point's batch is the prompts its step holds, all of them: the pool's serving model steps every
attention replica with the same n prompts (estimate.disagg: mu = x R_p n / P_n), so the prefill plans admit only
layouts whose replicas divide the batch (FILLS_REPLICAS) and try every batch that is one prompt per replica for
some layout (the divisors of W) besides the larger steps (prefill_batches).
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Iterator, Sequence

from solver.errors import InfeasibleError
from solver.estimate.workload import Workload
from solver.memo import IdentityMemo
from solver.plan.solve import Planned, PlanResult, plan
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.profile_rules import Rule
from solver.specs.scenario import Scenario

if TYPE_CHECKING:
    from solver.plan.disagg_floor import PrefillScreen

# Largest prefill step the prompt grid goes to, tokens per rank: SGLang's large-scale EP prefill runs 16384
# tokens per GPU (facts/measurements.md #3). The prefill planner plans one batch per call (space._batch_values).
PREFILL_TOKENS_PER_RANK_MAX = 16384



# A disaggregated prefill worker under load gives each attention replica its own share of the queued prompts and
# steps them together (estimate.disagg's pool model: n prompts on every replica, mu = x R_p n / P_n). A step of
# `batch` prompts is that only where the replicas divide it; a layout with more replicas than prompts would leave
# some idle, a step the pool model never runs, so the prefill plans the pool pairs from hold this rule beside the
# framework's (the planner's served classes alone cannot: every layout at one batch serves that batch).
FILLS_REPLICAS = Rule(
    id="C.prefill_pool_fills_replicas",
    require="divides(world // (attn_tp_size * cp_size * kvp_size * attn_sp_size), batch)",
    message="a disaggregated prefill worker steps every attention replica with the same prompts: the batch must be "
            "a multiple of the attention replicas",
    source="estimate.disagg (the prefill pool's step: n prompts on each of the R_p attention replicas)",
    bookkeeping=True)


_POOL_FW = IdentityMemo(64)  # profile -> pool_framework(profile)


def _transfer_rules(fw: FrameworkProfile, role: str) -> list[Rule]:
    """What the profile's KV transfer requires of a `role` pool's config (launch.disagg.rules)."""
    disagg = fw.launch.disagg if fw.launch is not None else None
    return list(disagg.rules.get(role, [])) if disagg is not None else []


def pool_framework(fw: FrameworkProfile) -> FrameworkProfile:
    """The framework's rules, its KV transfer's prefill rules and FILLS_REPLICAS, read as a prefill worker's
    (prefill_role): what a prefill pool's plans hold. One object per profile, so the planner's memos keyed by the
    profile's identity (its static rule tables) serve every plan of the pool."""
    return _POOL_FW.get((fw,), None, lambda: fw.for_role("prefill", [*_transfer_rules(fw, "prefill"), FILLS_REPLICAS]))


_PHASE_FW = IdentityMemo(128)  # (profile, phase) -> phase_framework(profile, phase)


def decode_framework(fw: FrameworkProfile) -> FrameworkProfile:
    """The framework's rules and its KV transfer's decode rules (vllm-ascend's Mooncake connector: no decode PP):
    what a decode pool's plans hold; the profile itself where the transfer adds none."""
    return phase_framework(fw, "decode")


def phase_framework(fw: FrameworkProfile, phase: str) -> FrameworkProfile:
    """The rules a worker of `phase` holds at any batch, read as that role's (prefill_role): the profile's and its
    KV transfer's rules for that role (for prefill FILLS_REPLICAS aside: it reads the step's batch, which the pools
    try several of); the profile itself where neither the transfer nor the role changes them. What a question
    about one worker size (disagg_remedies) plans with, so its answer is a pool's."""
    extra = _transfer_rules(fw, phase)
    return _PHASE_FW.get((fw,), phase, lambda: fw.for_role(phase, extra)) if extra else fw.for_role(phase)


def worker_sizes(model: ModelSpec, hw: Hardware, cards: int) -> list[int]:
    """Sizes a worker may take: powers of two and multiples of a node that divide the cards, below the cards
    (the other pool needs at least one rank)."""
    sizes = {1 << k for k in range(cards.bit_length()) if (1 << k) < cards}
    sizes |= {w for w in range(hw.ranks_per_node, cards, hw.ranks_per_node) if cards % w == 0}
    return sorted(sizes)


def is_worker_size(hw: Hardware, size: int, cards: int) -> bool:
    """`size` in worker_sizes(model, hw, cards), without listing them (cards_for asks it of every count it tries,
    which a remedy's search at a large --concurrency takes into the hundreds of thousands)."""
    return 0 < size < cards and (size & (size - 1) == 0 or (size % hw.ranks_per_node == 0 and cards % size == 0))


def prefill_batches(new_tokens: int, world: int) -> list[int]:
    """Prompts per prefill step of one worker the prefill plans try: the divisors of W (each is one prompt per
    replica for the layouts of that many replicas, the least step they run, and a few per replica for layouts of
    fewer: at most one prompt's tokens per rank), then W x 2^k up to the token cap, counted in the tokens a step
    computes: `new_tokens` per prompt (ISL less its prefix-cache hit, Workload.prompt_tokens)."""
    out, b = [d for d in range(1, world + 1) if world % d == 0], 2 * world
    while b * new_tokens <= PREFILL_TOKENS_PER_RANK_MAX * world:
        out.append(b)
        b *= 2
    return out


def phase_scenario(scenario: Scenario, phase: str, batch: int | None = None) -> Scenario:
    """The scenario a pool is planned for: prefill keeps the TTFT SLA (its step must fit in it) at `batch`
    prompts per step, decode the TPOT SLA with the concurrency the planner's to choose. Both keep the MTP depth:
    the prefill worker runs the MTP layers too (its command enables them, and it builds their cache, which the
    KV transfer carries: estimate.disagg), so it holds their weights. Prefill keeps the prefix-cache hit (its step
    computes the uncached tokens: Workload.prompt_tokens); decode has no prompt to hit."""
    if phase == "prefill":
        return Scenario(kind=scenario.kind, isl=scenario.isl, osl=scenario.osl, concurrency=batch,
                        max_concurrency=scenario.max_concurrency, ttft_ms=scenario.ttft_ms, mtp=scenario.mtp,
                        mtp_accept=scenario.mtp_accept, phase="prefill", prefix_hit=scenario.prefix_hit)
    # OSL 1: no token follows the first, so the TPOT SLA bounds no gap (scheduler.tpot_of) nor the decode pool
    return Scenario(kind=scenario.kind, isl=scenario.isl, osl=scenario.osl, max_concurrency=scenario.max_concurrency,
                    tpot_ms=scenario.tpot_ms if scenario.osl > 1 else None, mtp=scenario.mtp,
                    mtp_accept=scenario.mtp_accept, phase="decode")


class PlanGroup:
    """The phase plans the disaggregated solves of one model, hardware and workload share across cluster sizes
    (a phase plan reads the worker's size, never the cards) and across scenarios that differ only in what ranks
    the plans (a sweep's kinds): one memo of phase plans (_memo_plan) for them all, and a phase plan one of them
    asks is planned for every scenario of the group at once, while the planner's reused tables and planners
    (plan.solve._cached, a small LRU that one solve's pools overflow) still hold it, so that the other kinds'
    plans reuse them instead of planning again. A plan's result is the same whichever solve asks it first (the
    planner's cache is shared by kinds by design)."""

    def __init__(self, scenarios: Sequence[Scenario]) -> None:
        self.scenarios = tuple(scenarios)
        self._inputs: tuple | None = None
        self._plans: dict = {}

    def plans_for(self, inputs: tuple) -> tuple[dict, tuple[Scenario, ...]]:
        """(the memo of phase plans, the scenarios planned together) for a solve of these job inputs (model,
        hardware, precision, framework, solver parameters, cross-node, memory options, method): the group's
        for the inputs it was first asked for, a memo of its own for any other (nothing is shared)."""
        if self._inputs is None:
            self._inputs = inputs
        if len(inputs) == len(self._inputs) and all(a is b or a == b for a, b in zip(inputs, self._inputs)):
            return self._plans, self.scenarios
        return {}, ()


_GROUP: ContextVar[PlanGroup | None] = ContextVar("disagg_plan_group", default=None)


@contextmanager
def planned_together(group: PlanGroup) -> Iterator[None]:
    """Within: the disaggregated solves share `group`'s phase plans (PlanGroup)."""
    token = _GROUP.set(group)
    try:
        yield
    finally:
        _GROUP.reset(token)


def active_group() -> PlanGroup | None:
    return _GROUP.get()


def pool_fronts(model, hw, prec, fw, cards, scenario, params, allow_cross_node, mem_opts, sizes, method,
            diagnose: bool = True, plans: dict | None = None, screen: "PrefillScreen | None" = None,
            together: Sequence[Scenario] = ()):
    """(the prefill and decode fronts per worker size, 'phase W=size' -> why that pool has no point).
    `diagnose`: explain those failures (the caller reads them). A prefill batch below W that fails is passed over
    (FILLS_REPLICAS admits more layouts at a larger one); from W on a failure ends the batches. Only a pool with
    no point is diagnosed (a diagnosis re-plans with each constraint family relaxed): _prefill_failure.
    `plans`: a memo of the phase plans (_memo_plan) shared by the calls of one solve. `screen`: the decode fronts
    are planned first, and a prefill step the screen passes over (its points all lie past what the caller reads,
    disagg_floor) is not planned: the fronts hold the same points but those. `together`: the scenarios whose
    phase plans are planned with the scenario's own (PlanGroup), into `plans`; only where `scenario` is one of
    them."""
    fronts: dict[str, dict[int, list[Planned]]] = {"prefill": {}, "decode": {}}
    skipped: dict[str, InfeasibleError] = {}
    pool_fw = pool_framework(fw)

    def phase_plan(phase: str, w: int, b: int | None, rules: FrameworkProfile, diagnosed: bool) -> PlanResult:
        def run() -> PlanResult:
            return plan(model, hw, prec, rules, w, phase_scenario(scenario, phase, b), params, method=method,
                        allow_cross_node=allow_cross_node, mem_opts=mem_opts, explain_binding=False,
                        diagnose=diagnosed)
        if plans is None:
            return run()
        key = (phase, w, id(rules), phase_scenario(scenario, phase, b))
        plans.setdefault(("rules", id(rules)), rules)  # the keys name the rules by identity: kept alive with them
        if others and key not in plans:
            # the scenario's own plan first (its solve plans as it would alone), then the group's others while
            # the planner's caches hold it
            _memo_plan_quiet(plans, key, diagnosed, run)
            for other in others:
                sc = phase_scenario(other, phase, b)
                _memo_plan_quiet(plans, (phase, w, id(rules), sc), diagnosed, lambda sc=sc: plan(
                    model, hw, prec, rules, w, sc, params, method=method, allow_cross_node=allow_cross_node,
                    mem_opts=mem_opts, explain_binding=False, diagnose=diagnosed))
        return _memo_plan(plans, key, diagnosed, run)

    others = [s for s in together if s != scenario] if plans is not None and scenario in together else []

    def add(phase: str, w: int) -> None:
        if phase == "decode":
            pts, failure = _decode_points(phase_plan, w, decode_framework(fw), diagnose)
        else:
            # a step never holds more prompts than requests are in flight (the given concurrency, else its cap)
            most = scenario.concurrency or scenario.max_concurrency
            new = Workload.for_scenario(scenario, 1).prompt_tokens[0]
            batches = [b for b in prefill_batches(new, w) if b <= most] or [1]
            pts, failure = _prefill_points(phase_plan, w, batches, fw, pool_fw, diagnose, screen)
        if failure is not None:
            skipped[f"{phase} W={w}"] = failure
        if not pts:
            return
        seen, uniq = set(), []
        for p in pts:
            k = (tuple(p.config.knobs().items()), p.batch)
            if k not in seen:
                seen.add(k)
                uniq.append(p)
        fronts[phase][w] = uniq
        if screen is not None and phase == "prefill":
            screen.note(w, uniq)

    if screen is None:
        for w in sizes:
            add("decode", w)
            add("prefill", w)
        return fronts, skipped
    for w in sizes:  # the screen reads the decode points
        add("decode", w)
    if fronts["decode"]:  # else no pair, whatever the prefill plans
        screen.start(fronts["decode"])
        for w in sizes:
            add("prefill", w)
    return fronts, skipped


def _memo_plan(plans: dict, key: tuple, diagnosed: bool, run) -> PlanResult:
    """The plan of `key` (phase, W, the rules' identity, the phase scenario), planned once per solve (per
    PlanGroup within one; the memo holds the rules, which its keys name by identity, alive): a pool's
    plans repeat across the solve's scenarios wherever its phase scenario stays (a TTFT SLA set aside leaves the
    decode plans as they were, a TPOT SLA the prefill ones). A failure planned undiagnosed is planned again
    where a diagnosis is asked for."""
    hit = plans.get(key)
    if hit is None or (diagnosed and not hit[1] and isinstance(hit[0], InfeasibleError)):
        try:
            hit = (run(), diagnosed)
        except InfeasibleError as exc:
            hit = (exc, diagnosed)
        plans[key] = hit
    if isinstance(hit[0], InfeasibleError):
        raise hit[0]
    return hit[0]


def _memo_plan_quiet(plans: dict, key: tuple, diagnosed: bool, run) -> None:
    """_memo_plan, its failure kept in the memo and not raised."""
    try:
        _memo_plan(plans, key, diagnosed, run)
    except InfeasibleError:
        pass


def _points(res: PlanResult) -> list[Planned]:
    return [p for p in res.front + res.candidates if p.estimate.memory.feasible]


def _decode_points(phase_plan, w: int, fw: FrameworkProfile, diagnose: bool
                   ) -> tuple[list[Planned], InfeasibleError | None]:
    """(a W-rank decode worker's points, why it has none)."""
    try:
        return _points(phase_plan("decode", w, None, fw, diagnose)), None
    except InfeasibleError as exc:
        return [], exc


def _prefill_points(phase_plan, w: int, batches: list[int], fw: FrameworkProfile, pool_fw: FrameworkProfile,
                    diagnose: bool, screen: "PrefillScreen | None") -> tuple[list[Planned], InfeasibleError | None]:
    """(a W-rank prefill worker's points over `batches`, why it has none). A step the screen passes over from W on
    is planned after all, before the next step it does not pass over, where the batches would have ended on
    its failure (the steps after it would not be in the fronts)."""
    pts: list[Planned] = []
    passed: list[int] = []  # batches from W on the screen passed over since the last one planned
    for b in batches:
        if screen is not None and not screen.reaches(w, b):
            if b >= w:
                passed.append(b)
            continue
        if any(_fails(phase_plan, w, q, pool_fw) for q in passed):  # in order: the first failure ends them
            break  # (their points lie past the screen's: not taken)
        passed = []
        try:
            res = phase_plan("prefill", w, b, pool_fw, False)
        except InfeasibleError:
            if b >= w:
                break  # every layout is admitted from W on: more prompts per step will not fit either
            continue  # below W the rule admits more layouts at a larger batch
        pts += _points(res)
    if pts or screen is not None:  # the screen's caller reads no failure
        return pts, None
    return pts, _prefill_failure(phase_plan, w, max(b for b in batches if b <= w or b == batches[0]), fw, diagnose)


def _fails(phase_plan, w: int, b: int, pool_fw: FrameworkProfile) -> bool:
    try:
        phase_plan("prefill", w, b, pool_fw, False)
    except InfeasibleError:
        return True
    return False


def _prefill_failure(phase_plan, w: int, full: int, fw: FrameworkProfile, diagnose: bool) -> InfeasibleError:
    """Why no prefill step of a W-rank worker plans: the plan of one prompt on any layout (the least load of every
    layout, so what binds it binds every step the pool could run) under the framework's own rules as a prefill
    worker reads them (prefill_role), diagnosed;
    where that one plans, the layouts that fit leave replicas idle, a step the pool model never runs: then the
    pool's plan of `full` prompts (W, one per rank, a step every layout runs with its replicas full, or the
    largest step tried below it), diagnosed with FILLS_REPLICAS held (the model's bookkeeping, never what binds:
    the SLA or memory the full layouts miss is).
    Not re-planned where the failure goes unread (`diagnose` False)."""
    if not diagnose:
        return InfeasibleError(f"no prefill step of a {w}-rank worker plans", [])
    for rules, batch in ((fw.for_role("prefill"), 1), (pool_framework(fw), full)):
        try:
            phase_plan("prefill", w, batch, rules, True)
        except InfeasibleError as exc:
            return exc
    # unreachable while the step of W prompts failed among the batches (_prefill_points), and kept as a guard
    return InfeasibleError(f"no prefill step of a {w}-rank worker keeps every attention replica busy within the "
                           "limits", [])


def cards_for(model: ModelSpec, hw: Hardware, prefill_size: int, decode_size: int, at_least: int = 0) -> int:
    """The fewest cards (at least `at_least`) on which a prefill worker and a decode worker of these sizes are
    both worker sizes."""
    c = max(prefill_size + decode_size, at_least)
    while not (is_worker_size(hw, prefill_size, c) and is_worker_size(hw, decode_size, c)):
        c += 1
    return c
