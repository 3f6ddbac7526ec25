"""The CP-SAT model of one attention layout at one concurrency (cpsat.Planner solves it): a Boolean per group
choice, the prefill and decode steps as integer sums of the cost tables (max over pipeline stages, the eager
launch floor), the memory cap term by term, and each hard rule as a table of allowed knob values, switched on
through assumptions. Times and sizes are scaled to integers that stay exact once summed."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from solver.errors import InputError
from solver.estimate import pipeline
from solver.estimate.buffers import COMM_BUFFER_BYTES
from solver.ortools_cp import cp_model  # OR-Tools' cp_model without its eager pandas import
from solver.plan.groups import GROUPS
from solver.plan.tables import Tables
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.limits import MAX_COEF
from solver.specs.model import ModelSpec
from solver.specs.scenario import Scenario

TIME_SCALE = 1e7  # integer units of 0.1 us
MEM_SCALE = 1e-3  # integer units of kB
TIE_WEIGHT = 128  # > the largest simplicity penalty, so latency always dominates



# Memory enters only `sum <= cap` with non-negative terms: any term above the largest cap a device can have
# (hardware.MAX_BYTES) breaks it alone, so clamping there keeps the constraint exact and the integers small.
_MEM_CLAMP = 2.0**50 * MEM_SCALE


def exact(value: float, what: str, weight: int = TIE_WEIGHT) -> int:
    """A CP-SAT coefficient or bound: an integer well inside int64 once summed and tie-weighted, or bad input
    (times or sizes so large the inputs cannot describe a real deployment)."""
    if not math.isfinite(value) or abs(value) > MAX_COEF / (weight * 64):
        raise InputError("planner", f"{what} of {value:.3g} (scaled) is beyond what the planner's integer model "
                                    "holds; the inputs (sequence lengths, sizes, device figures) are out of range")
    return round(value)


def memory_cap(t: Tables) -> int:
    return exact(min((t.memory_limit_bytes - t.const_memory_bytes) * MEM_SCALE, _MEM_CLAMP), "the memory cap", 1)


def memory_coef(t: Tables, b: int, g: str, i: int) -> int:
    return exact(min(t.memory[(b, g, i)] * MEM_SCALE, _MEM_CLAMP), "a memory size", 1)


@dataclass
class ViewModel:
    """The model of one attention layout at one concurrency, built once and never changed afterwards: what
    one question adds (exclusions, cuts, bounds) goes on a working copy (Planner._solve_view)."""

    batch: int
    key: tuple[int, ...]
    model: cp_model.CpModel
    x: dict[str, dict[int, cp_model.IntVar]]  # group -> choice index (in Tables.choices) -> Boolean
    knob_vars: dict[str, cp_model.IntVar]
    pe: cp_model.IntVar | None  # prefill step as the engine runs it, TIME_SCALE units (None: no prefill)
    te: cp_model.IntVar | None  # decode step
    slack: int  # rounding: integer step times are within `slack` units of the exact ones
    families: dict[str, cp_model.IntVar] = field(default_factory=dict)

    def family(self, name: str) -> cp_model.IntVar:
        """The literal that switches a constraint family on; families are on through assumptions, so one can
        be relaxed (left out of the assumptions) to see whether it binds."""
        if name not in self.families:
            self.families[name] = self.model.new_bool_var(f"family_{name}")
        return self.families[name]


def _stage_sums(m: cp_model.CpModel, terms: list[tuple[object, tuple[float, ...]]], stages: int, scale: float,
                what: str) -> list:
    """Per-stage linear sums of (Boolean, per-stage seconds) terms, in integer units."""
    return [sum(exact(v[s] * scale, what) * lit for lit, v in terms if v[s]) for s in range(stages)]


def _step_var(m: cp_model.CpModel, name: str, gpu_terms, launch_terms, pipe, eager: bool, f) -> cp_model.IntVar:
    """The step as the engine runs it, less its per-sequence cost: max(GPU, kernels x eager launch) when it
    runs eagerly, else the GPU time; GPU = the stages' sums combined as the pipeline does, with their
    hand-offs, + overhead (group_cost.Pipeline; one stage without PP)."""
    S = pipe.stages
    gpu = _stage_sums(m, gpu_terms, S, TIME_SCALE, "a step time")
    hi = exact(MAX_STEP_S * TIME_SCALE, "a step time")
    out = m.new_int_var(0, hi * max(1, pipe.slots) + exact((pipe.handoff_s * max(1, pipe.slots) + pipe.overhead_s)
                                                            * TIME_SCALE, "a step overhead"), name)
    terms = _paced(m, f"{name}_stage", gpu, pipe, hi, pipe.handoff_s)
    if eager and f.kernel_overhead_s > 0 and f.eager_launch_s > 0:
        ratio = f.eager_launch_s / f.kernel_overhead_s
        launch = _stage_sums(m, launch_terms, S, TIME_SCALE * ratio, "a launch time")
        terms += _paced(m, f"{name}_launch", launch, pipe, hi, None)
    if len(terms) > 1:
        m.add_max_equality(out, terms)
    else:
        m.add(out == terms[0])
    return out


def _paced(m: cp_model.CpModel, name: str, sums: list, pipe, hi: int, send: float | None) -> list:
    """The linear forms whose max is a step of these per-stage sums (pipeline.paced): one stage, slots x it
    (+ the overhead where `send` is given: the GPU side); prefill total + (m - 1) x top; decode total and
    m x top, each with its hand-offs."""
    top = m.new_int_var(0, hi, name)
    m.add_max_equality(top, sums)
    def send_c(n: int) -> int:
        """n hand-offs and the step overhead, scaled (launches: none)."""
        return 0 if send is None else exact((n * send + pipe.overhead_s) * TIME_SCALE, "a step overhead")

    if pipe.slots == 1:
        return [top + send_c(0)]
    total = sum(c * s for c, s in zip(pipe.counts, sums))
    pp, mb = sum(pipe.counts), pipe.micro
    if pipe.phase == "prefill":
        return [total + (mb - 1) * top + send_c(pipeline.sends("prefill", pp, mb))]
    return [total + send_c(pp), mb * top + send_c(mb)]


class _Model(cp_model.CpModel):
    """A CpModel without the camelCase aliases its constructor attaches to every instance (about 2 ms a model
    in OR-Tools 9.15: 2.5 s of a generic W=128 plan, which builds and clones about a thousand); the planner
    calls the snake_case API only."""

    def _add_pre_pep8_methods(self) -> None:
        pass

    def clone(self) -> "_Model":
        out = _Model()
        out.proto.copy_from(self.proto)
        out.rebuild_constant_map()
        return out


MAX_STEP_S = 3600.0  # a step longer than an hour is outside any deployment the inputs can describe


def _bytes(v: float) -> int:
    return exact(min(v * MEM_SCALE, _MEM_CLAMP), "a memory size", 1)


def _memory_constraints(m: cp_model.CpModel, t: Tables, b: int, key: tuple, x: dict, lit) -> None:
    """The memory model's cap on a layout, stage by stage (layout_memory.StageMemory): the additive part (the tables'
    entries on one stage, the stage's own under PP) plus each transient term on its own (the transient is the
    largest of them), the EP staging, and the communicator buffers once."""
    for k, sm in enumerate(t.view_memory(b, key)):
        if sm.base is None:
            mem = sum(memory_coef(t, b, g, i) * xv for g, bools in x.items() for i, xv in bools.items())
        else:
            mem = sum(_bytes(sm.base[g][i]) * xv for g, bools in x.items() for i, xv in bools.items()
                      if i in sm.base.get(g, {}))
        cap = exact(min(sm.limit * MEM_SCALE, _MEM_CLAMP), "the memory cap", 1)
        extra = sum(_bytes(sm.staging[j]) * xv for j, xv in x["moe"].items() if sm.staging.get(j))
        free = [x["attn"][i] for i in sm.comm_free if i in x["attn"]]
        opening = [x[g][j] for g, js in sm.comm_open.items() for j in js if j in x[g]]
        if free and opening:
            comm = m.new_bool_var(f"comm_buffers_{k}")  # a group opens a communicator the attention choice does not
            for xv in opening:
                m.add(comm >= sum(free) + xv - 1)
            extra += _bytes(COMM_BUFFER_BYTES) * comm
        m.add(mem + extra <= cap).only_enforce_if(lit)
        transient = sum(_bytes(sm.attn_transient[i]) * xv for i, xv in x["attn"].items())
        for g, terms in sm.terms.items():
            term = sum(_bytes(terms[j]) * xv for j, xv in x[g].items() if j in terms)
            m.add(mem - transient + extra + term <= cap).only_enforce_if(lit)


def build_view(t: Tables, model_spec: ModelSpec, hw: Hardware, fw: FrameworkProfile, scenario: Scenario, b: int,
               key: tuple[int, ...], rules: list) -> ViewModel:
    vc = t.view(b, key)
    m = _Model()
    x: dict[str, dict[int, cp_model.IntVar]] = {"attn": {i: m.new_bool_var(f"x_attn_{i}") for i in vc.attn}}
    for g, opts in vc.other.items():
        x[g] = {j: m.new_bool_var(f"x_{g}_{j}") for j in opts}
    for g in GROUPS:
        x.setdefault(g, {})
    for bools in x.values():
        m.add_exactly_one(list(bools.values()))
    pre_terms = [(x["attn"][i], sh[0]) for i, sh in vc.attn.items()]
    dec_terms = [(x["attn"][i], sh[1]) for i, sh in vc.attn.items()]
    for g, opts in vc.other.items():
        pre_terms += [(x[g][j], sh[0]) for j, sh in opts.items()]
        dec_terms += [(x[g][j], sh[1]) for j, sh in opts.items()]
    for (jd, jm), corr in vc.pairs.items():
        both = m.new_bool_var(f"pair_{jd}_{jm}")
        m.add_bool_and([x["dense"][jd], x["moe"][jm]]).only_enforce_if(both)
        m.add_bool_or([x["dense"][jd].negated(), x["moe"][jm].negated(), both])
        pre_terms.append((both, corr[0]))
        dec_terms.append((both, corr[1]))
    pe = te = None
    n_terms = 2 + len(GROUPS)
    if vc.pre_pipe is not None:
        pe = _step_var(m, "pe", [(lit, sh.gpu_s) for lit, sh in pre_terms],
                       [(lit, sh.launch_s) for lit, sh in pre_terms], vc.pre_pipe, True, t.f)
    if vc.dec_pipe is not None:
        te = _step_var(m, "te", [(lit, sh.gpu_s) for lit, sh in dec_terms],
                       [(lit, sh.launch_s) for lit, sh in dec_terms], vc.dec_pipe, vc.plan.dec_eager, t.f)
    knob_vars: dict[str, cp_model.IntVar] = {}
    for g, knobs in GROUPS.items():
        for k_idx, knob in enumerate(knobs):
            if knob in knob_vars:
                continue  # the stage count: one value for the whole layout
            values = sorted({t.choices[g][i][k_idx] for i in x[g]}) or [1]
            var = m.new_int_var_from_domain(cp_model.Domain.from_values(values), knob)
            m.add(var == sum(t.choices[g][i][k_idx] * xv for i, xv in x[g].items()))
            knob_vars[knob] = var
    slack = n_terms * max(1, vc.pre_pipe.slots if vc.pre_pipe else 1, vc.dec_pipe.slots if vc.dec_pipe else 1)
    vm = ViewModel(b, key, m, x, knob_vars, pe, te, slack)
    _memory_constraints(m, t, b, key, x, vm.family("B.memory_per_rank"))
    for rule_id, knobs, allowed in rules:
        lit = vm.family(rule_id)
        if not knobs:
            m.add_bool_or([]).only_enforce_if(lit)  # a rule that fails whatever the knobs
        else:
            m.add_allowed_assignments([knob_vars[k] for k in knobs], allowed).only_enforce_if(lit)
    return vm


# ----------------------------------------------------------------------------------------------- solving


__all__ = ["ViewModel", "build_view", "exact", "memory_cap", "memory_coef", "TIME_SCALE", "MEM_SCALE", "TIE_WEIGHT", "MAX_STEP_S"]
