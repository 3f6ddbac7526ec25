"""The planner's tables: what each module group's choice costs, computed by the estimator, exactly as the
full estimate adds it up.

A configuration's figures at concurrency B are a function of its attention layout (which fixes the replicas,
the serving shape and the work of the steps to cost: estimate.figures.StepPlan) and of four step quantities,
the GPU seconds and kernels of its prefill and decode steps. Those are sums over module groups: attention
(attn_tp, cp, kvp, sp, o_proj_tp), dense (dense FFN + shared experts), moe (routed experts, router, EP
all-to-all), embed, lmhead; under PP the max over stages of the per-stage sums (plan.group_cost). A group
other than attention costs differently under different attention layouts (tokens per rank, resharding
against attention TP, CP's decode layout), so its table is per (layout, choice): a pairwise table. The one
term that pairs two non-attention groups, the fused shared + routed all-reduce when dense TP equals MoE TP
(specs/layers/moe.py), is a pairwise correction per (dense, moe) choice. The tables are filled per layout
on first use (`Tables.view`): the planner's bounds skip layouts that cannot win. Modules map to groups by the
knob each layer block declares for them (`plan.groups.module_groups`): the tables never name a layer type.

Here: the views (ViewCosts) and the Tables that fill and sum them. What they cost at is plan.table_inputs', a
layout's memory plan.layout_memory's, the groups plan.groups', and build_tables (plan.table_build) makes them.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from solver.estimate.compute import Factors, Work
from solver.estimate.figures import Figures, StepPlan, figures
from solver.estimate.memory_options import MemoryOptions
from solver.estimate.stage_ranks import launched_device
from solver.plan.group_cost import NONE, Pipeline, Share
from solver.plan.groups import FILL_ORDER, GROUPS
from solver.plan.layout_memory import LayoutMemory, ViewMemory
from solver.plan.table_inputs import TableInputs
from solver.specs.hardware import Hardware
from solver.specs.knobs import SETTING_GROUP
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision
from solver.specs.profile_serving import step_default
from solver.specs.scenario import Scenario


@dataclass
class ViewCosts:
    """One attention layout at one concurrency: the steps it runs and every group's share of them."""

    plan: StepPlan
    pre_pipe: Pipeline | None  # None: the workload runs no prefill step (decode-only)
    dec_pipe: Pipeline | None
    attn: dict[int, tuple[Share | None, Share | None]]  # attention choice -> (prefill, decode), with NONE
    other: dict[str, dict[int, tuple[Share | None, Share | None]]] = field(default_factory=dict)
    # (dense choice, moe choice) -> correction to the sum of their shares (the fused all-reduce)
    pairs: dict[tuple[int, int], tuple[Share | None, Share | None]] = field(default_factory=dict)
    complete: bool = False

    def step_times(self, pre: Share | None, dec: Share | None, f: Factors) -> tuple[float, float]:
        """(Pe, Te): the prefill and decode steps of these summed shares as the engine runs them, less the
        per-sequence cost (engine_step.step_time's max(GPU, kernels x eager launch), prefill always eager); what
        the serving figures are monotone in, and what the planner's CP-SAT variables hold."""
        pe = te = 0.0
        if pre is not None:
            pe = max(self.pre_pipe.gpu_s(pre.gpu_s), self.pre_pipe.kernels(pre.launch_s, f) * f.eager_launch_s)
        if dec is not None:
            te = self.dec_pipe.gpu_s(dec.gpu_s)
            if self.plan.dec_eager:
                te = max(te, self.dec_pipe.kernels(dec.launch_s, f) * f.eager_launch_s)
        return pe, te


@dataclass
class Tables(TableInputs, LayoutMemory):
    """Every group's choices, their memory per concurrency, and the views of the layouts costed so far."""

    world: int
    choices: dict[str, list[tuple[int, ...]]]  # group -> list of knob-value tuples (GROUPS order)
    batches: tuple[int, ...]
    memory: dict[tuple[int, str, int], float]  # (batch, group, choice) -> bytes per rank
    const_memory_bytes: float
    memory_limit_bytes: float
    tokens_per_request: int  # tokens a request yields (output, or input for prefill-only)
    # what the lazily filled views read
    model: ModelSpec
    hw: Hardware
    prec: Precision
    f: Factors
    scenario: Scenario
    groups: dict[str, str | None]
    mem_opts: MemoryOptions = field(default_factory=MemoryOptions)
    mtp_layers: int = 0  # MTP layers whose weights and caches the deployment holds (0: MTP off)
    # (group, choice) -> bytes per rank at a concurrency the tables do not plan (table_build's rows): with_batch
    rows_at: Callable[[int], dict[tuple[str, int], float]] | None = field(default=None, repr=False, compare=False)
    _views: dict[tuple[int, tuple], ViewCosts] = field(default_factory=dict)
    _view_memory: dict[tuple[int, tuple], ViewMemory] = field(default_factory=dict)
    _shares: dict[tuple, tuple[Work, dict[str, Share]]] = field(default_factory=dict)
    _unowned_blocks: bool | None = None
    _layouts: dict[tuple[int, ...], list[int]] | None = None
    _pcs: dict[tuple, ParallelConfig] = field(default_factory=dict)
    _plans: dict[tuple[int, tuple], StepPlan] = field(default_factory=dict)  # (b, layout) -> its step plan
    _shapes: dict[tuple, StepPlan] = field(default_factory=dict)  # (b, pp, replicas, budget) -> one plan
    _attn_pcs: dict[int, ParallelConfig] = field(default_factory=dict)
    _group_pcs: dict[tuple, ParallelConfig] = field(default_factory=dict)
    _rep_pcs: dict[tuple[int, ...], ParallelConfig] = field(default_factory=dict)  # _layout_pc of a layout alone
    _pair_pcs: dict[tuple, ParallelConfig] = field(default_factory=dict)
    _pipes: dict[tuple[int, int], tuple[ParallelConfig, Work, Pipeline]] = field(default_factory=dict)
    # a group's shares, the attention choices' and the dense x MoE corrections depend on the layout only through
    # what they are costed at (outside, the works): concurrencies and layouts that coincide there share one
    # (read-only) table, looked up once instead of choice by choice
    _group_tables: dict[tuple, dict] = field(default_factory=dict)
    _at_pp: dict[tuple, list] = field(default_factory=dict)  # _choices_at, _pair_choices
    _halves: dict[tuple, dict[int, Share]] = field(default_factory=dict)  # _half
    _outside: dict[tuple, tuple[Work, tuple[int, ...], Work]] = field(default_factory=dict)  # outside, CP's decode
    # one Work object per value among the works the tables cost (step_plan_of, outside), kept for the tables'
    # life: the memos below key a work by its id (hashing a Work's six fields cost a lookup's time again)
    _works: dict[Work, Work] = field(default_factory=dict)
    # where the engine's EP kernels set their own step budget (kernel_budgets): (layout, MoE choice) -> the
    # configuration's default budget, and view key -> the MoE choices it keeps
    _budget_of: dict[tuple, int] = field(default_factory=dict)
    _moe_in: dict[tuple, frozenset[int] | None] = field(default_factory=dict)
    # the default step budget the memory entries are sized at (None: the scheduler's, mem_opts'); a view at
    # another sizes its own (layout_memory)
    entry_budget: int | None = None

    def config(self, picks: dict[str, int]) -> dict[str, int]:
        out: dict[str, int] = {}
        for g, i in picks.items():
            out.update(dict(zip(GROUPS[g], self.choices[g][i])))
        return out

    def with_batch(self, b: int) -> Tables:
        """These tables with concurrency b planned too (plan.sla_edge): its memory rows added. What the views
        and memos hold is shared with these tables (every entry is keyed by its concurrency)."""
        if b in self.batches:
            return self
        if self.rows_at is None:
            raise ValueError("tables built without their memory rows cannot plan another concurrency")
        memory = {**self.memory, **{(b, g, i): m for (g, i), m in self.rows_at(b).items()}}
        return replace(self, batches=tuple(sorted((*self.batches, b))), memory=memory)

    def picks_of(self, knobs: dict[str, int]) -> dict[str, int] | None:
        """The choice of every group that sets these knobs (a knob not given is 1; settings such as the
        redundant experts are the planner's own), or None when a group has no such choice: a configuration
        outside this space (a knob the framework does not expose, a value a rule removed)."""
        picks = {}
        for g, opts in self.choices.items():
            keys = [(n, k) for n, k in enumerate(GROUPS[g]) if k not in SETTING_GROUP]
            want = tuple(knobs.get(k, 1) for _, k in keys)
            i = next((i for i, c in enumerate(opts) if tuple(c[n] for n, _ in keys) == want), None)
            if i is None:
                return None
            picks[g] = i
        return picks

    def layouts(self) -> dict[tuple[int, ...], list[int]]:
        """View key -> the attention choices (indices) that have it: the attention layout (layout_key), and where
        the EP kernels set their own step budget beside some of its MoE choices (kernel_budgets) a second view,
        the budget appended, of those choices (each view keeps its MoE choices only: moe_in)."""
        if self._layouts is None:
            self._layouts = {}
            split = self.kernel_budgets
            for i, c in enumerate(self.choices["attn"]):
                key = self.layout_key(c)
                if not split:
                    self._layouts.setdefault(key, []).append(i)
                    continue
                for budget in sorted({self._budget(key, j) for j in self._choices_at("moe", key[4])}):
                    self._layouts.setdefault(self._keyed(key, budget), []).append(i)
        return self._layouts

    def _keyed(self, layout: tuple[int, ...], budget: int) -> tuple[int, ...]:
        """The view key of a layout at a default step budget: the layout itself at the scheduler's."""
        return layout if budget == self.mem_opts.token_budget else (*layout, budget)

    def view_budget(self, key: tuple[int, ...]) -> int:
        """The default step budget view `key` plans its steps and memory at (step_default)."""
        return key[5] if len(key) > 5 else self.mem_opts.token_budget

    @staticmethod
    def layout_key(attn_choice: tuple[int, ...]) -> tuple[int, ...]:
        """What of an attention choice the other groups and the serving shape see: all but o_proj TP."""
        return (*attn_choice[:4], attn_choice[5])

    @property
    def kernel_budgets(self) -> bool:
        """Whether a layout's step plan and memory depend on its MoE choice: the engine's EP kernels set their own
        default step budget (profile_serving.step_default) on a model with routed experts. The views then split
        by that budget (layouts)."""
        return kernel_budgets(self.f, self.model)

    def _budget(self, layout: tuple[int, ...], j: int) -> int:
        """The default step budget of layout `layout` (layout_key) beside MoE choice j (step_default)."""
        hit = self._budget_of.get((layout, j))
        if hit is None:
            c = self.choices["moe"][j]
            pc = self._layout_pc(layout, **dict(zip(GROUPS["moe"][:-1], c[:-1])))
            hit = self._budget_of[(layout, j)] = step_default(
                self.f.ep_kernels, self.mem_opts.token_budget, True, pc, launched_device(self.hw))
        return hit

    def key_of(self, picks: dict[str, int]) -> tuple[int, ...]:
        """The view key of a configuration (layouts): its attention layout, and its default step budget where
        the views split by it."""
        key = self.layout_key(self.choices["attn"][picks["attn"]])
        return self._keyed(key, self._budget(key, picks["moe"])) if self.kernel_budgets else key

    def moe_in(self, key: tuple[int, ...]) -> frozenset[int] | None:
        """The MoE choices view `key` keeps (those giving its budget); None: every one with its stage count."""
        if not self.kernel_budgets:
            return None
        hit = self._moe_in.get(key, False)
        if hit is False:
            every = self._choices_at("moe", key[4])
            budget = self.view_budget(key)
            kept = frozenset(j for j in every if self._budget(key[:5], j) == budget)
            hit = self._moe_in[key] = None if len(kept) == len(every) else kept
        return hit

    def view(self, b: int, key: tuple[int, ...], full: bool = True) -> ViewCosts:
        """The costs of layout `key` at concurrency b; `full=False` fills the attention choices only (what the
        planner's first bound reads)."""
        vc = self._views.get((b, key))
        if vc is None:
            rep = self._layout_pc(key)
            sp = self.step_plan_of(b, key)
            mtp, pmtp = sp.mtp_layers, sp.pre_mtp_layers
            pre_pipe, dec_pipe = self.pipelines(b, key)
            tkey = ("attn", key, id(sp.pre_work), id(sp.dec_work), mtp)  # the tables' works: ids name them
            attn = self._group_tables.get(tkey)
            if attn is None:
                none_pre = self._none(rep, sp.pre_work, pmtp, pre_pipe)
                none_dec = self._none(rep, sp.dec_work, mtp, dec_pipe)
                # no unowned module: its share is all +0.0, and a share (summed up from +0.0) plus +0.0 is itself
                bare = not self._unowned_blocks
                attn = {}
                for i in self.layouts()[key]:
                    pc = self._attn_pc(i)
                    pre = self._share(pc, sp.pre_work, pmtp, ("attn",), attention_only=True)
                    dec = self._share(pc, sp.dec_work, mtp, ("attn",), attention_only=True)
                    if bare:
                        attn[i] = (pre["attn"] if pre else None, dec["attn"] if dec else None)
                        continue
                    attn[i] = (pre["attn"] + none_pre[NONE] if pre else None,
                               dec["attn"] + none_dec[NONE] if dec else None)
                self._group_tables[tkey] = attn
            vc = ViewCosts(sp, pre_pipe, dec_pipe, attn)
            self._views[(b, key)] = vc
        if full and not vc.complete:
            self._fill(vc, key)
        return vc

    def fill_group(self, vc: ViewCosts, key: tuple[int, ...], g: str) -> None:
        """One non-attention group's shares beside layout `key` (the planner's bounds ask group by group)."""
        if g in vc.other:
            return
        sp, mtp, pp = vc.plan, vc.plan.mtp_layers, key[4]
        (k_pre, w_pre), (k_dec, w_dec) = self.outside(key, sp.pre_work), self.outside(key, sp.dec_work)
        kept = self.moe_in(key) if g == "moe" else None  # a view split by its budget keeps its MoE choices
        tkey = (g, k_pre, id(w_pre), k_dec, id(w_dec), mtp, kept)  # the tables' works (outside): ids name them
        opts = self._group_tables.get(tkey)
        if opts is None:
            pre, dec = self._half(g, pp, k_pre, w_pre, sp.pre_mtp_layers), self._half(g, pp, k_dec, w_dec, mtp)
            opts = {j: (pre[j] if pre else None, dec[j] if dec else None) for j in self._choices_at(g, pp)
                    if kept is None or j in kept}
            self._group_tables[tkey] = opts
        vc.other[g] = opts

    def _half(self, g: str, pp: int, outside: tuple[int, ...], w: Work | None, mtp: int) -> dict[int, Share] | None:
        """Group g's share of one step (`w`, None: no such step) per choice with `pp` stages beside the layout
        `outside`: a group table is two of them, and tables that differ in one step share the other's."""
        if w is None:
            return None
        hkey = (g, outside, id(w), mtp)  # the tables' works: ids name them
        out = self._halves.get(hkey)
        if out is None:
            want = (g,)
            out = self._halves[hkey] = {j: self._share(self._group_pc(outside, g, j), w, mtp, want)[g]
                                        for j in self._choices_at(g, pp)}
        return out

    def _fill(self, vc: ViewCosts, key: tuple[int, ...]) -> None:
        sp, mtp, pp = vc.plan, vc.plan.mtp_layers, key[4]
        (k_pre, w_pre), (k_dec, w_dec) = self.outside(key, sp.pre_work), self.outside(key, sp.dec_work)
        for g in FILL_ORDER:
            self.fill_group(vc, key, g)
        # the one cross-group term: dense and MoE at the same TP degree may share a collective
        kept = self.moe_in(key)
        tkey = ("pairs", k_pre, id(w_pre), k_dec, id(w_dec), mtp, kept)
        pairs = self._group_tables.get(tkey)
        if pairs is not None:
            vc.pairs = pairs
        elif "dense" in vc.other and "moe" in vc.other and self.model.is_moe:
            self._group_tables[tkey] = vc.pairs
            for jd, jm, tp, knobs in self._pair_choices(pp):
                if kept is not None and jm not in kept:
                    continue
                both = [self._share(self._pair_pc(k, jd, jm, tp, knobs), w, m, ("dense", "moe"))
                        for k, w, m in ((k_pre, w_pre, sp.pre_mtp_layers), (k_dec, w_dec, mtp))]
                sep = [vc.other["dense"][jd], vc.other["moe"][jm]]
                corr = tuple(None if s is None else (s["dense"] + s["moe"]) - sep[0][k] - sep[1][k]
                             for k, s in enumerate(both))
                if any(c is not None and (any(abs(x) > 0 for x in c.gpu_s) or any(abs(x) > 0 for x in c.launch_s))
                       for c in corr):
                    vc.pairs[(jd, jm)] = corr
        vc.complete = True

    def sums(self, b: int, picks: dict[str, int]) -> tuple[ViewCosts, Share | None, Share | None]:
        """(view, prefill share, decode share) of a whole configuration: the per-stage sums over its groups."""
        key = self.key_of(picks)
        vc = self.view(b, key)
        pre, dec = vc.attn[picks["attn"]]
        for g in GROUPS:  # one summation order, whatever the order of `picks`: the same floats every time
            if g == "attn" or g not in picks:
                continue
            p, d = vc.other[g][picks[g]]
            pre = pre + p if pre is not None else None
            dec = dec + d if dec is not None else None
        corr = vc.pairs.get((picks.get("dense", -1), picks.get("moe", -1)))
        if corr:
            pre = pre + corr[0] if pre is not None else None
            dec = dec + corr[1] if dec is not None else None
        return vc, pre, dec

    def figures(self, b: int, picks: dict[str, int]) -> Figures:
        """The configuration's figures, as the full estimate computes them (tests/test_planner_exact.py)."""
        vc, pre, dec = self.sums(b, picks)
        return figures_of(vc, pre, dec, self.f)


def kernel_budgets(f: Factors, model: ModelSpec) -> bool:
    """Tables.kernel_budgets of an engine's factors and a model."""
    ep = f.ep_kernels
    return ep is not None and ep.token_budget is not None and model.is_moe


def figures_of(vc: ViewCosts, pre: Share | None, dec: Share | None, f: Factors) -> Figures:
    args = {}
    if pre is not None:
        args.update(pre_gpu_s=vc.pre_pipe.gpu_s(pre.gpu_s), pre_kernels=vc.pre_pipe.kernels(pre.launch_s, f))
    if dec is not None:
        args.update(dec_gpu_s=vc.dec_pipe.gpu_s(dec.gpu_s), dec_kernels=vc.dec_pipe.kernels(dec.launch_s, f))
    return figures(vc.plan, f, **args)
