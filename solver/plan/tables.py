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
knob each layer block declares for them (`module_groups`): the tables never name a layer type.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar

from solver.estimate.compute import Factors, Work
from solver.estimate.figures import Figures, StepPlan, figures, step_plan
from solver.estimate.memory import (
    COMM_BUFFER_BYTES,
    MemoryOptions,
    MemoryReport,
    memory_per_rank,
    activation_peak_of,
    memory_limit,
    comm_groups,
    ep_staging_bytes,
    staging_tokens,
)
from solver.estimate.params import ParamReport, count_params
from solver.estimate.serving import Workload
from solver.estimate.step import block_modules, decode_layout
from solver.plan.group_cost import NONE, Pipeline, Share, pipeline_of, shares
from solver.plan.memory_rows import (
    PER_SEQUENCE_MEMORY,
    attention_transient,
    group_memory,
    stage_entry,
    unowned_weights,
)
from solver.space.domains import Space, redundant_for
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.knobs import KNOB_SPECS, SETTING_GROUP, SPLIT_ONLY, group_knobs
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision
from solver.specs.rule_env import model_env
from solver.specs.scenario import Scenario

if TYPE_CHECKING:
    from solver.estimate.pipeline import Stage

T = TypeVar("T")

# Pipeline stages change every group's cost (layers per stage, ranks per stage), so the stage count is the
# last entry of every group's choice and the planner makes all groups pick the same one (SHARED): with it
# fixed, the groups stay additive. Which group owns which knob is the registry's (specs.knobs); an attention
# choice is spelled layout first (TP, CP, KVP, SP), then o_proj TP, as the planner reads it by position.
SHARED = group_knobs("stage")
ATTN_ORDER = ("attn_tp_size", "cp_size", "kvp_size", "attn_sp_size", "o_proj_tp_size")
# redundant experts ride with MoE TP: the planner places the fewest that make EP divide the experts
# (space.domains.redundant_for), so each MoE choice is (moe_tp, redundant, pp)
GROUPS: dict[str, tuple[str, ...]] = {
    g: (*(ATTN_ORDER if g == "attn" else group_knobs(g)), *(k for k, sg in SETTING_GROUP.items() if sg == g), *SHARED)
    for g in dict.fromkeys(k.group for k in KNOB_SPECS if k.group != "stage")
}
# a module belongs to the group of the knob that owns it (each layer block declares its modules' knobs:
# specs/layers); shared experts follow the dense group's knob by default (MemoryOptions.shared_experts_knob)
# the non-attention groups in the order the planner's bounds fill them: the usually largest share first, so a
# layout that cannot win is dropped before the rest are costed; dense last, as its pairwise correction with
# MoE (negative) is only known once both are (a bound over MoE and dense without it would not be one)
FILL_ORDER = ("moe", "lmhead", "embed", "dense")
KNOB_GROUP: dict[str, str] = ({k: g for g, knobs in GROUPS.items() for k in knobs if k not in SHARED}
                              | {k: g for k, g in SPLIT_ONLY.items() if g})


def held_sequences(batch: int, pc: ParallelConfig) -> int:
    """Sequences a configuration must have room for at concurrency `batch`: every replica the busiest one's
    C_r = ceil(B / replicas), so the running batch stays at C_r, as the serving figures assume
    (figures.step_plan)."""
    return held_of(batch, pc.attn_replicas)


def held_of(batch: int, replicas: int) -> int:
    """held_sequences of a configuration with `replicas` attention replicas."""
    return math.ceil(batch / replicas) * replicas


def assumed_memory(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, scenario: Scenario,
                   batch: int, mem_opts: MemoryOptions | None = None) -> MemoryReport:
    """The memory model's figure for what the planner's figures assume: the held sequences at the scenario's
    longest context (the tables approximate it per group; the planner holds each answer to it)."""
    return memory_per_rank(model, hw, pc, prec, held_sequences(batch, pc), scenario.max_seq_len, mem_opts,
                           mtp_layers=scenario.mtp if model.num_mtp_layers else 0)


def module_groups(params: ParamReport) -> dict[str, str | None]:
    """module name -> planner group (None: replicated, owned by no knob: norms, encoders, MTP glue)."""
    return {name: KNOB_GROUP.get(knob) if knob else None for name, knob in params.knobs().items()}


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
        per-sequence cost (serving.step_time's max(GPU, kernels x eager launch), prefill always eager); what
        the serving figures are monotone in, and what the planner's CP-SAT variables hold."""
        pe = te = 0.0
        if pre is not None:
            pe = max(self.pre_pipe.gpu_s(pre.gpu_s), self.pre_pipe.kernels(pre.launch_s, f) * f.eager_launch_s)
        if dec is not None:
            te = self.dec_pipe.gpu_s(dec.gpu_s)
            if self.plan.dec_eager:
                te = max(te, self.dec_pipe.kernels(dec.launch_s, f) * f.eager_launch_s)
        return pe, te


@dataclass(frozen=True)
class StageMemory:
    """The memory of one attention layout at one concurrency on one pipeline stage, beyond what adds up.

    The memory model's transient is the largest of its terms (memory.activation_peak_terms: attention blocks,
    dense FFN, MoE, logits, each sized by one group's knob), so it fits iff the additive part plus each term
    does: one linear constraint per term. The attention term sits in the attention choice's entry
    (`attn_transient`, subtracted where another term replaces it); the EP all-to-all staging depends on the
    layout's tokens per rank and the MoE choice (`staging`); the communicator buffers count once however many
    groups open one (`comm_free`: attention choices that open none themselves; `comm_open`: the other groups'
    choices that do). `base`: the stage's additive bytes per group choice (None: the tables' entries, single
    stage); `limit`: the bytes they may take (the memory limit less the stage's unowned weights)."""

    limit: float
    base: dict[str, dict[int, float]] | None
    attn_transient: dict[int, float]
    terms: dict[str, dict[int, float]]
    staging: dict[int, float]
    comm_free: tuple[int, ...]
    comm_open: dict[str, tuple[int, ...]]


# A layout's memory, stage by stage: the memory model's figure is the largest stage's (memory.stage_memory), so
# a configuration fits iff it fits on every stage. With it the planner's memory constraint is the memory
# model's, not a bound of it.
ViewMemory = tuple[StageMemory, ...]


# entries a Tables keeps per memo (shares, pipelines): past it the memo starts over (a generic W=128 plan asks
# for ~80K shares)
_TABLE_MEMO = 1_000_000


@dataclass
class Tables:
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
    _views: dict[tuple[int, tuple], ViewCosts] = field(default_factory=dict)
    _view_memory: dict[tuple[int, tuple], ViewMemory] = field(default_factory=dict)
    _shares: dict[tuple, tuple[Work, dict[str, Share]]] = field(default_factory=dict)
    _unowned_blocks: bool | None = None
    _layouts: dict[tuple[int, ...], list[int]] | None = None
    _pcs: dict[tuple, ParallelConfig] = field(default_factory=dict)
    _plans: dict[tuple[int, tuple], StepPlan] = field(default_factory=dict)  # (b, layout) -> its step plan
    _shapes: dict[tuple[int, int, int], StepPlan] = field(default_factory=dict)  # (b, pp, replicas) -> one plan
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

    def config(self, picks: dict[str, int]) -> dict[str, int]:
        out: dict[str, int] = {}
        for g, i in picks.items():
            out.update(dict(zip(GROUPS[g], self.choices[g][i])))
        return out

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
        """Attention layout -> the attention choices (indices) that have it."""
        if self._layouts is None:
            self._layouts = {}
            for i, c in enumerate(self.choices["attn"]):
                self._layouts.setdefault(self.layout_key(c), []).append(i)
        return self._layouts

    @staticmethod
    def layout_key(attn_choice: tuple[int, ...]) -> tuple[int, ...]:
        """What of an attention choice the other groups and the serving shape see: all but o_proj TP."""
        return (*attn_choice[:4], attn_choice[5])

    def _pc(self, values: dict[str, int]) -> ParallelConfig:
        key = tuple(values.items())  # each call site spells its knobs in one order
        pc = self._pcs.get(key)
        if pc is None:
            pc = self._pcs[key] = ParallelConfig(world_size=self.world, **values)
        return pc

    def _attn_pc(self, i: int) -> ParallelConfig:
        """The config of attention choice i, other knobs at 1."""
        pc = self._attn_pcs.get(i)
        if pc is None:
            pc = self._attn_pcs[i] = self._pc(dict(zip(GROUPS["attn"], self.choices["attn"][i])))
        return pc

    def _layout_pc(self, key: tuple[int, ...], **more: int) -> ParallelConfig:
        if not more:  # the layout's own config (replicas, step plan, pipeline), asked per concurrency
            pc = self._rep_pcs.get(key)
            if pc is not None:
                return pc
        tp, cp, kvp, sp, pp = key
        pc = self._pc({"attn_tp_size": tp, "cp_size": cp, "kvp_size": kvp, "attn_sp_size": sp, "pp_size": pp,
                       **more})
        if not more:
            self._rep_pcs[key] = pc
        return pc

    def _share(self, pc: ParallelConfig, w: Work | None, mtp: int, want: tuple[str, ...],
               attention_only: bool = False) -> dict[str, Share] | None:
        if w is None:
            return None
        # keyed by the config object's id: the tables' own (from _pc, one per knob values), which _pcs keeps
        # alive as long as the tables, so an id names one config; `w` by its id too, held in the entry (the
        # tables' works are one object per value: _work); a plain dict: ~65K lookups a plan
        key = (id(pc), id(w), mtp, want, attention_only)
        hit = self._shares.get(key)
        if hit is not None and hit[0] is w:
            return hit[1]
        if len(self._shares) >= _TABLE_MEMO:
            self._shares.clear()
        out = shares(self.model, self.hw, pc, self.prec, self.f, w, mtp, self.groups, want, attention_only)
        self._shares[key] = (w, out)
        return out

    def _work(self, w: Work | None) -> Work | None:
        """The tables' one object of work `w`'s value: the one other tables met first (_WORKS), so the
        estimator's memos, keyed by the work's value, meet the very object again in a later plan and skip
        comparing it field by field; the tables keep theirs alive (their memos key a work by its id)."""
        if w is None:
            return None
        hit = self._works.get(w)
        if hit is None:
            if len(_WORKS) >= _TABLE_MEMO:
                _WORKS.clear()
            hit = self._works[w] = _WORKS.setdefault(w, w)
        return hit

    def _none(self, pc: ParallelConfig, w: Work | None, mtp: int, pipe: Pipeline | None = None
              ) -> dict[str, Share] | None:
        """The unowned modules' share; nothing to cost when no block (of the stack or MTP) holds one. `pipe`:
        the step's pipeline (pipeline_of), when the caller has it."""
        if w is None:
            return None
        if self._unowned_blocks is None:
            unowned = frozenset(m for m, g in self.groups.items() if g is None)
            blocks = [b for b, _ in self.model.block_groups]
            blocks += [b for layer in (self.model.mtp_modules[0] if self.model.mtp_modules else ()) for b in layer.blocks]
            self._unowned_blocks = any(block_modules(b) & unowned for b in blocks)
        if not self._unowned_blocks:
            stages = (pipe or self._pipeline(pc, w)).stages
            return {NONE: Share((0.0,) * stages, (0.0,) * stages)}
        return self._share(pc, w, mtp, (NONE,))

    def _pipeline(self, pc: ParallelConfig, w: Work) -> Pipeline:
        """pipeline_of a layout's config and step: concurrencies whose steps coincide share it (keyed by the
        ids of the tables' config and work objects, which the entry keeps)."""
        key = (id(pc), id(w))
        hit = self._pipes.get(key)
        if hit is None:
            if len(self._pipes) >= _TABLE_MEMO:
                self._pipes.clear()
            hit = self._pipes[key] = (pc, w, pipeline_of(self.model, self.hw, pc, self.f, w))
        return hit[2]

    def step_plan_of(self, b: int, key: tuple[int, ...]) -> StepPlan:
        """The steps layout `key` runs at concurrency b (nothing costed yet)."""
        sp = self._plans.get((b, key))
        if sp is None:
            rep = self._layout_pc(key)
            # step_plan reads of a config only its world, stage count and attention replicas
            # (tests/test_step_plan_shape.py): layouts equal there share one plan (3,386 step plans -> 429 at
            # generic W=128)
            shape = (b, rep.pp_size, rep.attn_replicas)
            sp = self._shapes.get(shape)
            if sp is None:
                sp = step_plan(self.model, rep, self.f, Workload.for_scenario(self.scenario, b))
                pre, dec = self._work(sp.pre_work), self._work(sp.dec_work)
                if pre is not sp.pre_work or dec is not sp.dec_work:  # the same values, the tables' objects
                    sp = replace(sp, pre_work=pre, dec_work=dec)
                self._shapes[shape] = sp
            self._plans[(b, key)] = sp
        return sp

    def view_memory(self, b: int, key: tuple[int, ...]) -> ViewMemory:
        """The layout's memory at concurrency b, stage by stage (StageMemory)."""
        hit = self._view_memory.get((b, key))
        if hit is not None:
            return hit
        rep = self._layout_pc(key)
        held = held_sequences(b, rep)
        if key[4] == 1:
            out: ViewMemory = (self._stage_memory(key, None, held),)
        else:
            from solver.estimate.pipeline import stages

            out = tuple(self._stage_memory(key, st, held) for st in stages(self.model, key[4]))
        self._view_memory[(b, key)] = out
        return out

    def _stage_memory(self, key: tuple[int, ...], st: "Stage | None", held: int) -> StageMemory:
        """One stage's terms with `held` sequences (`st` None: the single stage, whose additive part is the
        tables' entries)."""
        model = self.model if st is None else st.model
        params = count_params(model)
        absent = frozenset() if st is None else st.absent_modules
        mtp = self.mtp_layers if st is None or st.last else 0
        seq_len, opts = self.scenario.max_seq_len, self.mem_opts
        seqs = held / self._layout_pc(key).attn_replicas

        def on_stage(pc: ParallelConfig) -> ParallelConfig:
            return pc if st is None else pc.stage()

        base: dict[str, dict[int, float]] | None = None if st is None else {}
        attn_transient: dict[int, float] = {}
        comm_free = []
        for i in self.layouts()[key]:
            pc = on_stage(self._pc(dict(zip(GROUPS["attn"], self.choices["attn"][i]))))
            attn_transient[i] = attention_transient(model, pc, opts, seq_len, seqs)
            if base is not None:
                base.setdefault("attn", {})[i] = stage_entry("attn", model, pc, self.prec, opts, params, self.groups,
                                                             held, seq_len, mtp, "all", absent)
            if not any(v > 1 for v in comm_groups(pc)):
                comm_free.append(i)
        terms: dict[str, dict[int, float]] = {}
        comm_open: dict[str, tuple[int, ...]] = {}
        staging: dict[int, float] = {}
        pp = key[4]
        for g in ("dense", "moe", "embed", "lmhead"):
            owned = [k for k in GROUPS[g] if k != "pp_size"]
            for j, c in enumerate(self.choices[g]):
                if c[-1] != pp:
                    continue
                pc = on_stage(self._layout_pc(key, **dict(zip(GROUPS[g][:-1], c[:-1]))))
                if base is not None:
                    base.setdefault(g, {})[j] = stage_entry(g, model, pc, self.prec, opts, params, self.groups,
                                                            held, seq_len, mtp, "all", absent)
                t = activation_peak_of(model, pc, opts, seq_len, seqs, owned)
                if t is not None:
                    terms.setdefault(g, {})[j] = t
                if g == "moe":
                    staging[j] = ep_staging_bytes(model, pc, staging_tokens(opts, pc, seq_len, seqs))
                if any(v > 1 for v in comm_groups(pc)):
                    comm_open[g] = comm_open.get(g, ()) + (j,)
        limit = self.memory_limit_bytes - (self.const_memory_bytes if st is None else
                                           unowned_weights(model, self.world // pp, self.prec, opts, params,
                                                           self.groups, mtp, absent))
        return StageMemory(limit, base, attn_transient, terms, staging, tuple(comm_free), comm_open)

    def memory_of(self, b: int, picks: dict[str, int]) -> float:
        """Bytes per rank the memory model gives this configuration (the held sequences at the longest context,
        the largest stage's under PP; without the runtime reserve), from the tables and the layout's terms."""
        key = self.layout_key(self.choices["attn"][picks["attn"]])
        out = 0.0
        for sm in self.view_memory(b, key):
            unowned = self.memory_limit_bytes - sm.limit
            if sm.base is None:
                base = sum(self.memory[(b, g, i)] for g, i in picks.items())
            else:
                base = sum(sm.base[g].get(i, 0.0) for g, i in picks.items() if g in sm.base)
            extra = sm.staging.get(picks["moe"], 0.0)
            if picks["attn"] in sm.comm_free and any(picks[g] in js for g, js in sm.comm_open.items()):
                extra += COMM_BUFFER_BYTES
            tr = sm.attn_transient[picks["attn"]]
            out = max(out, unowned + base + extra - tr + max([tr] + [t[picks[g]] for g, t in sm.terms.items()]))
        return out

    def fits(self, b: int, picks: dict[str, int]) -> bool:
        """The planner's memory constraint on one configuration (the CP-SAT model's, in bytes)."""
        return self.memory_of(b, picks) <= self.memory_limit_bytes

    def view(self, b: int, key: tuple[int, ...], full: bool = True) -> ViewCosts:
        """The costs of layout `key` at concurrency b; `full=False` fills the attention choices only (what the
        planner's first bound reads)."""
        vc = self._views.get((b, key))
        if vc is None:
            rep = self._layout_pc(key)
            sp = self.step_plan_of(b, key)
            mtp = sp.mtp_layers
            pre_pipe, dec_pipe = self.pipelines(b, key)
            tkey = ("attn", key, id(sp.pre_work), id(sp.dec_work), mtp)  # the tables' works: ids name them
            attn = self._group_tables.get(tkey)
            if attn is None:
                none_pre = self._none(rep, sp.pre_work, 0, pre_pipe)
                none_dec = self._none(rep, sp.dec_work, mtp, dec_pipe)
                attn = {}
                for i in self.layouts()[key]:
                    pc = self._attn_pc(i)
                    pre = self._share(pc, sp.pre_work, 0, ("attn",), attention_only=True)
                    dec = self._share(pc, sp.dec_work, mtp, ("attn",), attention_only=True)
                    attn[i] = (pre["attn"] + none_pre[NONE] if pre else None,
                               dec["attn"] + none_dec[NONE] if dec else None)
                self._group_tables[tkey] = attn
            vc = ViewCosts(sp, pre_pipe, dec_pipe, attn)
            self._views[(b, key)] = vc
        if full and not vc.complete:
            self._fill(vc, key)
        return vc

    def pipelines(self, b: int, key: tuple[int, ...]) -> tuple[Pipeline | None, Pipeline | None]:
        """(prefill, decode) pipeline of layout `key` at concurrency b, as its view holds them; no share costed."""
        rep, sp = self._layout_pc(key), self.step_plan_of(b, key)
        return (self._pipeline(rep, sp.pre_work) if sp.pre_work else None,
                self._pipeline(rep, sp.dec_work) if sp.dec_work else None)

    def outside(self, key: tuple[int, ...], w: Work | None) -> tuple[tuple[int, ...], Work | None]:
        """The attention layout as the other groups see it, and the work they see: they read the attention
        TP degree, the attention group's size and the replicas (compute.group_tokens, the reshard test against
        attention TP), not how the group splits (CP, KVP, SP). So layouts with equal (TP, group size, PP) share
        their tables (spelled with KVP); a decode step under CP is first put in its decode layout
        (step.decode_layout), except under PP, where each stage's microbatch is laid out by itself."""
        tp, cp, kvp, sp, pp = key
        if w is not None and w.phase == "decode" and cp > 1:
            if pp > 1:
                return key, w
            hit = self._outside.get((key, id(w)))  # the entry keeps `w`, so a hit is on this very object
            if hit is None or hit[0] is not w:
                pc, dw = decode_layout(self._layout_pc(key), w)
                hit = self._outside[(key, id(w))] = (
                    w, (pc.attn_tp_size, 1, pc.cp_size * pc.kvp_size * pc.attn_sp_size, 1, pp), self._work(dw))
            return hit[1], hit[2]
        return (tp, 1, cp * kvp * sp, 1, pp), w

    def fill_group(self, vc: ViewCosts, key: tuple[int, ...], g: str) -> None:
        """One non-attention group's shares beside layout `key` (the planner's bounds ask group by group)."""
        if g in vc.other:
            return
        sp, mtp, pp = vc.plan, vc.plan.mtp_layers, key[4]
        (k_pre, w_pre), (k_dec, w_dec) = self.outside(key, sp.pre_work), self.outside(key, sp.dec_work)
        tkey = (g, k_pre, id(w_pre), k_dec, id(w_dec), mtp)  # the tables' works (outside): ids name them
        opts = self._group_tables.get(tkey)
        if opts is None:
            pre, dec = self._half(g, pp, k_pre, w_pre, 0), self._half(g, pp, k_dec, w_dec, mtp)
            opts = {j: (pre[j] if pre else None, dec[j] if dec else None) for j in self._choices_at(g, pp)}
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

    def _group_pc(self, outside: tuple[int, ...], g: str, j: int) -> ParallelConfig:
        """The config group g's choice j is costed at beside the layout `outside` (outside), memoised: every
        concurrency asks for the same ones."""
        key = (outside, g, j)
        pc = self._group_pcs.get(key)
        if pc is None:
            c = self.choices[g][j]
            pc = self._group_pcs[key] = self._layout_pc(_beside(outside, c[0], self.world),
                                                        **dict(zip(GROUPS[g][:-1], c[:-1])))
        return pc

    def _pair_pc(self, outside: tuple[int, ...], jd: int, jm: int, tp: int, knobs: dict[str, int]
                 ) -> ParallelConfig:
        """The config a (dense, MoE) pair of TP `tp` (_pair_choices) is costed at beside `outside`, memoised
        as _group_pc."""
        key = (outside, jd, jm)
        pc = self._pair_pcs.get(key)
        if pc is None:
            pc = self._pair_pcs[key] = self._layout_pc(_beside(outside, tp, self.world), **knobs)
        return pc

    def _choices_at(self, g: str, pp: int) -> list[int]:
        """Group g's choices (indices) with `pp` stages, in the choices' order (once per group and stage count:
        every fill of a group reads them)."""
        out = self._at_pp.get((g, pp))
        if out is None:
            out = self._at_pp[(g, pp)] = [j for j, c in enumerate(self.choices[g]) if c[-1] == pp]
        return out

    def _pair_choices(self, pp: int) -> list[tuple[int, int, int, dict[str, int]]]:
        """The (dense, MoE) choices with `pp` stages that may share the fused all-reduce (the same TP degree,
        above 1), dense-major as the pairs are filled: (dense index, MoE index, TP degree, their knobs)."""
        out = self._at_pp.get(("pairs", pp))
        if out is None:
            out = self._at_pp[("pairs", pp)] = [
                (jd, jm, cd[0], {"dense_tp_size": cd[0], "moe_tp_size": cm[0], "redundant_experts": cm[1]})
                for jd in self._choices_at("dense", pp) for cd in (self.choices["dense"][jd],)
                for jm in self._choices_at("moe", pp) for cm in (self.choices["moe"][jm],)
                if cd[0] == cm[0] and cd[0] != 1]
        return out

    def _fill(self, vc: ViewCosts, key: tuple[int, ...]) -> None:
        sp, mtp, pp = vc.plan, vc.plan.mtp_layers, key[4]
        (k_pre, w_pre), (k_dec, w_dec) = self.outside(key, sp.pre_work), self.outside(key, sp.dec_work)
        for g in FILL_ORDER:
            self.fill_group(vc, key, g)
        # the one cross-group term: dense and MoE at the same TP degree may share a collective
        tkey = ("pairs", k_pre, id(w_pre), k_dec, id(w_dec), mtp)
        pairs = self._group_tables.get(tkey)
        if pairs is not None:
            vc.pairs = pairs
        elif "dense" in vc.other and "moe" in vc.other and self.model.is_moe:
            self._group_tables[tkey] = vc.pairs
            for jd, jm, tp, knobs in self._pair_choices(pp):
                both = [self._share(self._pair_pc(k, jd, jm, tp, knobs), w, m, ("dense", "moe"))
                        for k, w, m in ((k_pre, w_pre, 0), (k_dec, w_dec, mtp))]
                sep = [vc.other["dense"][jd], vc.other["moe"][jm]]
                corr = tuple(None if s is None else (s["dense"] + s["moe"]) - sep[0][k] - sep[1][k]
                             for k, s in enumerate(both))
                if any(c is not None and (any(abs(x) > 0 for x in c.gpu_s) or any(abs(x) > 0 for x in c.launch_s))
                       for c in corr):
                    vc.pairs[(jd, jm)] = corr
        vc.complete = True

    def sums(self, b: int, picks: dict[str, int]) -> tuple[ViewCosts, Share | None, Share | None]:
        """(view, prefill share, decode share) of a whole configuration: the per-stage sums over its groups."""
        key = self.layout_key(self.choices["attn"][picks["attn"]])
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


def _beside(key: tuple[int, ...], degree: int, world: int) -> tuple[int, ...]:
    """The layout a group of TP `degree` is costed beside: of attention TP it reads only whether it equals its
    own degree (an all-reduce when it does, a gather and a scatter when it reshards) or the MoE group's span
    (degree x EP: attention TP over the whole MoE group needs no dispatch), so any other value is spelled 1
    with the same group size (KVP), and layouts differing only there share the table."""
    tp, cp, kvp, sp, pp = key
    if tp in (1, degree, world // pp) or (cp, sp) != (1, 1):
        return key
    return (1, 1, tp * kvp, 1, pp)


def figures_of(vc: ViewCosts, pre: Share | None, dec: Share | None, f: Factors) -> Figures:
    args = {}
    if pre is not None:
        args.update(pre_gpu_s=vc.pre_pipe.gpu_s(pre.gpu_s), pre_kernels=vc.pre_pipe.kernels(pre.launch_s, f))
    if dec is not None:
        args.update(dec_gpu_s=vc.dec_pipe.gpu_s(dec.gpu_s), dec_kernels=vc.dec_pipe.kernels(dec.launch_s, f))
    return figures(vc.plan, f, **args)


def _attention_tuples(space: Space, model: ModelSpec, fw: FrameworkProfile, world: int, hw: Hardware,
                      scenario: Scenario) -> list[tuple[int, ...]]:
    """Attention choices: at most one token-sharding mode (CP, KVP or SP) at a time, group divides W, and
    every framework rule that reads only attention knobs holds."""
    d = space.domains
    names = set(GROUPS["attn"])
    local_rules = [r for r in fw.rules if r.severity == "error"
                   and r.names <= names | {"pp_size", "world", "mtp", "ranks_per_node", "afd", "num_attention_heads",
                                           "num_key_value_heads", "n_routed_experts", "has_mla", "has_dsa",
                                           "is_moe", "o_proj_dim", "attn_dp_size"}]
    out = []
    # in itertools.product's order, the one-mode test made before the o_proj and stage loops (it reads neither)
    splits = [(cp, kvp, sp) for cp, kvp, sp in itertools.product(d["cp_size"], d["kvp_size"], d["attn_sp_size"])
              if (cp > 1) + (kvp > 1) + (sp > 1) <= 1]
    for tp, (cp, kvp, sp), op, pp in itertools.product(d["attn_tp_size"], splits, d["o_proj_tp_size"],
                                                       d["pp_size"]):
        if tp > 1 and op not in (1, tp):
            # seed Layer 1: o_proj gets its own TP only under attention DP; under attention TP it follows
            # attn_tp (written 1, or equal to attn_tp where a framework requires that spelling)
            continue
        if (world // pp) % (tp * cp * kvp * sp):
            continue
        if kvp > 1 and scenario.phase == "prefill":
            continue  # KVP splits a decode cache; it does nothing for a prefill-only deployment
        cfg = {"attn_tp_size": tp, "cp_size": cp, "kvp_size": kvp, "attn_sp_size": sp, "o_proj_tp_size": op,
               "pp_size": pp}
        env = model_env(cfg, model, hw.ranks_per_node, world=world, mtp=scenario.mtp)
        if all(r.holds(env) for r in local_rules):
            out.append((tp, cp, kvp, sp, op, pp))
    # under attention TP, o_proj_tp = attn_tp and = 1 are the same layout: keep one spelling, the framework's
    accepted = set(out)
    return [c for c in out if not (c[0] > 1 and c[4] == c[0] and (*c[:4], 1, c[5]) in accepted)]


def _per_stage(values: list[int], pps: tuple[int, ...], world: int, rest=None) -> list[tuple[int, ...]]:
    """A group's choices with each stage count: the knob must divide the stage's ranks."""
    return [(v, *((rest(v, p),) if rest else ()), p) for p in pps for v in values
            if (world // p) % v == 0 and (rest is None or rest(v, p) is not None)]


def build_tables(model: ModelSpec, hw: Hardware, prec: Precision, f: Factors, fw: FrameworkProfile,
                 space: Space, scenario: Scenario, mem_opts: MemoryOptions | None = None) -> Tables:
    """The choices of every group and their memory per concurrency; step costs are filled per layout on
    first use (Tables.view)."""
    mem_opts = mem_opts or MemoryOptions()
    hw, prec, f = _one_of(hw), _one_of(prec), _one_of(f)
    W = space.world
    pps = space.domains["pp_size"]
    params = count_params(model)
    groups = _one_of(module_groups(params))  # one object per value too: the share recipes key it by id
    choices: dict[str, list[tuple[int, ...]]] = {
        "attn": _attention_tuples(space, model, fw, W, hw, scenario),
        "dense": _per_stage(space.domains["dense_tp_size"], pps, W),
        "moe": [c for c in _per_stage(space.domains["moe_tp_size"], pps, W,
                                      lambda v, p: _redundant(model, fw, hw, W // p // v))],
        "embed": _per_stage(space.domains["embed_tp_size"], pps, W),
        "lmhead": _per_stage(space.domains["lmhead_tp_size"], pps, W),
    }
    mtp_layers = scenario.mtp if model.num_mtp_layers else 0
    # memory not owned by any group: norms and encoders (replicated); the runtime reserve is in the limit
    # (the MTP layers' modules split like the stack's, with their groups; their glue is replicated)
    const_mem = unowned_weights(model, W, prec, mem_opts, params, groups, mtp_layers, frozenset())
    limit = memory_limit(hw.memory_bytes, hw.reserved_bytes, mem_opts.total_fraction)
    batches = []
    memory: dict[tuple[int, str, int], float] = {}
    pcs = {(g, i): ParallelConfig(world_size=W, **dict(zip(GROUPS[g], values)))
           for g, opts in choices.items() for i, values in enumerate(opts)}
    # what does not grow with the sequences held (weights, the attention groups' buffers): once per choice
    fixed = {(g, i): group_memory(g, model, pc, prec, mem_opts, params, groups, 0, scenario.max_seq_len,
                                  mtp_layers, part="fixed") for (g, i), pc in pcs.items()}
    # what grows with the sequences held, per (choice, sequences held): under attention DP a small concurrency
    # still holds one sequence per replica, so several concurrencies ask for the same figure. An attention
    # choice's growing part (caches, its activation term) reads its layout, not o_proj TP
    # (tests/test_planner_memory.py::test_the_attention_entrys_growing_part_reads_no_o_proj_tp): the choices
    # of one layout share it (726 choices, 282 layouts at generic W=128)
    grown = {(g, i): ((g, Tables.layout_key(choices[g][i])) if g == "attn" else (g, i), pc.attn_replicas)
             for (g, i), pc in pcs.items() if g in PER_SEQUENCE_MEMORY}
    per_held: dict[tuple, float] = {}
    for b in space.batches:
        mem = {}
        for (g, i), pc in pcs.items():
            if g not in PER_SEQUENCE_MEMORY:
                mem[(g, i)] = fixed[(g, i)]
                continue
            gk, replicas = grown[(g, i)]
            held = held_of(b, replicas) if g == "attn" else b
            grow = per_held.get((gk, held))
            if grow is None:
                grow = per_held[(gk, held)] = group_memory(g, model, pc, prec, mem_opts, params, groups, held,
                                                           scenario.max_seq_len, mtp_layers, part="batch")
            mem[(g, i)] = fixed[(g, i)] + grow
        best = {g: min((mem[(g, i)] for i in range(len(opts))), default=0.0) for g, opts in choices.items()}
        if const_mem + sum(best.values()) > limit and b != min(space.batches):
            continue  # no configuration holds this many sequences: the concurrency leaves the space
        batches.append(b)
        memory.update({(b, g, i): m for (g, i), m in mem.items()})
    return Tables(W, choices, tuple(batches), memory, const_mem, limit, scenario.latency_terms[2],
                  model, hw, prec, f, scenario, groups, mem_opts, mtp_layers)


# one object per value among the works tables cost (Tables._work)
_WORKS: dict[Work, Work] = {}
# one object per value among the hardware, precisions and factors tables were built with (_one_of)
_BUILT_WITH: list = []


def _one_of(x: T) -> T:
    """The first object equal to `x` that tables were built with. The estimator's memos key the hardware,
    precision and factors by identity (step._KITS, compute._COLLECTIVES) and each plan makes its own factors
    and precision: with one object per value, the plans of one deployment at other world sizes (a sweep) or
    again share what they cost alike (the mixers' sums of equal works: step.mixer_key). Equal values cost the
    same (the estimator is pure)."""
    for y in _BUILT_WITH:
        if type(y) is type(x) and y == x:
            return y
    if len(_BUILT_WITH) >= 64:
        _BUILT_WITH.clear()
    _BUILT_WITH.append(x)
    return x


def _redundant(model: ModelSpec, fw: FrameworkProfile, hw: Hardware, ep: int) -> int | None:
    """Redundant experts at this EP size (space.domains.redundant_for), None where EP cannot hold the
    experts or the copies break the hardware's experts-per-rank cap."""
    r = redundant_for(model, fw, ep)
    if r is None or not model.is_moe or ep <= 1 or not hw.max_experts_per_rank:
        return r
    return r if (model.num_experts + r) / ep <= hw.max_experts_per_rank else None
