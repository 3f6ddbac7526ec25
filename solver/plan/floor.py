"""Floors on what a non-attention group adds beside a layout, from tables already costed at smaller works.

A group's table beside a layout is its share per choice at the layout's outside (what the group sees of the
attention layout: Tables.outside) and the step's work. At a fixed config (the outside and the choice), the
share a group other than attention takes of a step is non-decreasing in every field the formulas read of the
work, as the stage sees it (`reads`: new tokens, context, sequences, logits tokens, busy replicas with 0 read
as all, CP copies), stage by stage, GPU and launch seconds alike, when the engine has no custom all-reduce
kernel and the stage's decode is not laid out again under CP (docs/planner.md, "How it decides" 3; checked
directly against the estimator by tests/test_planner_floor.py). So a table costed at the same outside and a
work whose reads are all at most this step's is, choice by choice and stage by stage, at most this layout's
table: a floor that needs no costing (the planner takes the one with the most new tokens), and a bound over it
is a bound of the layout. Dense and MoE enter together (JOINT): each pair's two shares and correction at one
work sum to the pair's joint share there.
"""
from __future__ import annotations

import math
from operator import le
from typing import TYPE_CHECKING

from solver.estimate.comm import CustomAllReduce
from solver.estimate.compute import Factors, Work
from solver.estimate.figures import StepPlan
from solver.estimate.step import micro_work
from solver.plan.group_cost import Share

if TYPE_CHECKING:
    from solver.plan.tables import Tables, ViewCosts

# the groups floored: dense is costed last with its (negative) correction with MoE, which a floor of its own
# would have to bound too (groups.FILL_ORDER)
FLOOR_GROUPS = ("moe", "lmhead", "embed")
# dense x MoE as one group, of a complete view: per pair, the two shares and their correction at one work are
# the pair's joint share there (a share of both groups' modules at one config: non-decreasing alike)
JOINT = "dense x moe"
Reads = tuple[float, float, float, float, float, float]


def reads(w: Work, pp: int) -> Reads:
    """What a non-attention group's formulas read of step `w` on a stage of a `pp`-stage pipeline (its
    microbatch under PP), each non-decreasing in the group's cost; busy replicas 0 means all (the most); the
    CP copies a decode gathers over (Work.cp_copies: the LM head's hidden-state gather grows with them)."""
    if pp > 1:
        w = micro_work(pp, w)[1]
    return (w.new_tokens, w.context, w.sequences, w.logits_tokens,
            w.busy_replicas if w.busy_replicas > 0 else math.inf, w.cp_copies)


def at_most(a: Reads, b: Reads) -> bool:
    return all(map(le, a, b))


def floors_apply(f: Factors) -> bool:
    """Whether the floors hold for this engine: its all-reduce is the ring's (non-decreasing in the bytes);
    a custom kernel's one-shot / two-shot / ring switches can make a larger message faster (estimate.comm)."""
    return CustomAllReduce.of(f) is None


class _Joint:
    """One step of a complete view's dense and MoE tables with their pairs' corrections (at one work)."""

    def __init__(self, dense: dict[int, Share], moe: dict[int, Share], pairs: dict[tuple[int, int], Share]):
        self.dense, self.moe, self.pairs = dense, moe, pairs

    def sums(self, kept: tuple[frozenset, frozenset] | None) -> list[Share]:
        """Each kept pair's joint share: dense + MoE + their correction."""
        out = []
        for jd, d in self.dense.items():
            if kept is not None and jd not in kept[0]:
                continue
            for jm, m in self.moe.items():
                if kept is not None and jm not in kept[1]:
                    continue
                sh = d + m
                corr = self.pairs.get((jd, jm))
                out.append(sh + corr if corr is not None else sh)
        return out


class GroupFloors:
    """The group tables a planner has seen, per (group, phase, outside, MTP passes) and work reads, and the
    floors they give another layout's groups (`floors`)."""

    def __init__(self, t: Tables):
        self.t = t
        # a view split by its step budget keeps a part of the MoE choices (Tables.moe_in): a table of another
        # view's may lack a choice this one has, so no floors there
        self.on = floors_apply(t.f) and not t.kernel_budgets
        self._src: dict[tuple, dict[Reads, dict[int, Share | None]]] = {}
        self._noted: dict[int, dict] = {}  # id -> table (kept alive: ids stay unique)
        self._memo: dict[tuple, tuple[dict, tuple | None]] = {}  # (id(source step), kept) -> minima
        self._outs: dict[tuple, tuple] = {}
        self._tables: set[tuple] = set()  # (group, outsides and works, MTP) of the tables noted
        self._picked: dict[tuple, tuple] = {}  # _source per step: (work, sources then, the table picked)
        self._kept_memo: dict[tuple, tuple] = {}  # _kept_low: (source step, screen sets, minima)

    def _outsides(self, vc: ViewCosts, key: tuple[int, ...]) -> tuple:
        hit = self._outs.get((id(vc), key))
        if hit is not None and hit[0] is vc:
            return hit[1]
        sp = vc.plan
        # each step at the MTP passes its tables were costed at (the prompt's pass, the decode's drafts)
        out = ((*self.t.outside(key, sp.pre_work), sp.pre_mtp_layers),
               (*self.t.outside(key, sp.dec_work), sp.mtp_layers))
        self._outs[(id(vc), key)] = (vc, out)
        return out

    def _table_key(self, g: str, outs: tuple) -> tuple:
        return (g, *((k, w) for k, w, _ in outs), outs[1][2])

    def costed(self, vc: ViewCosts, key: tuple[int, ...], g: str) -> bool:
        """Whether group g's table beside this layout was seen already (costing it again is a look-up)."""
        return self._table_key(g, self._outsides(vc, key)) in self._tables

    def note(self, vc: ViewCosts, key: tuple[int, ...]) -> None:
        """Index the floored groups' tables of view `vc` (layout `key`) as sources of floors; of a complete
        view also dense x MoE (JOINT): each (dense, MoE) pair's shares with their correction, all at one work."""
        if not self.on:
            return
        outs = None
        tables = {g: vc.other[g] for g in FLOOR_GROUPS if g in vc.other}
        if vc.complete and "dense" in vc.other and "moe" in vc.other:
            tables[JOINT] = (vc.other["dense"], vc.other["moe"], vc.pairs)
        for g, opts in tables.items():
            if id(opts if g != JOINT else opts[2]) in self._noted:
                continue
            self._noted[id(opts if g != JOINT else opts[2])] = opts
            outs = outs or self._outsides(vc, key)
            self._tables.add(self._table_key(g, outs))
            for idx, (k, w, mtp) in enumerate(outs):
                if w is None or k[1] > 1:  # no such step; a decode laid out again under CP (not monotone)
                    continue
                src = self._src.setdefault((g, w.phase, k, mtp), {})
                r = reads(w, k[4])
                if r in src:
                    continue
                if g != JOINT:
                    src[r] = {j: o[idx] for j, o in opts.items()}
                    continue
                dense, moe, pairs = opts  # summed per pair only when used (_low)
                src[r] = _Joint({j: o[idx] for j, o in dense.items()}, {j: o[idx] for j, o in moe.items()},
                                {p: c[idx] for p, c in pairs.items() if c[idx] is not None})

    def corner(self, vc: ViewCosts, key: tuple[int, ...], screen: dict[str, set[int]] | None,
               groups: tuple[str, ...] = FLOOR_GROUPS) -> tuple[list[float], list[float], list[float], list[float]] | None:
        """The floored groups not yet costed in `vc`, summed at their corners: per step (prefill, decode) the
        GPU and launch seconds per stage of each group's per-coordinate minimum over its kept choices (`screen`),
        each choice's share taken from the costed table at the same outside with the largest new tokens among
        those whose reads are all at most this step's (so at most its own share there); a step with no such
        table adds 0. None when no group has a source (the corner would be the attention choices' alone)."""
        if not self.on:
            return None
        outs = self._outsides(vc, key)
        pipes = (vc.pre_pipe, vc.dec_pipe)
        sums = [[0.0] * p.stages if p is not None else [] for p in pipes for _ in (0, 1)]
        found = False
        for g in groups:
            if g in vc.other:
                continue
            for idx, (k, w, mtp) in enumerate(outs):
                if w is None or k[1] > 1:
                    continue
                part = self._source(g, k, w, mtp)
                if part is None:
                    continue
                low = self._kept_low(g, part, screen)
                if low is None:
                    continue
                found = True
                gpu, launch = sums[2 * idx], sums[2 * idx + 1]
                for s, v in enumerate(low[0]):
                    gpu[s] += v
                for s, v in enumerate(low[1]):
                    launch[s] += v
        return (sums[0], sums[1], sums[2], sums[3]) if found else None

    def _source(self, g: str, k: tuple[int, ...], w: Work, mtp: int) -> dict[int, Share | None] | None:
        skey = (g, w.phase, k, mtp)
        src = self._src.get(skey)
        if not src:
            return None
        # the pick per step (the tables' works: ids name them) stands until a table is noted there
        hit = self._picked.get((skey, id(w)))
        if hit is not None and hit[0] is w and hit[1] == len(src):
            return hit[2]
        r = reads(w, k[4])
        best = None
        for rr, part in src.items():
            if at_most(rr, r) and (best is None or rr[0] > best[0][0]):
                best = (rr, part)
        out = None if best is None else best[1]
        self._picked[(skey, id(w))] = (w, len(src), out)
        return out

    def _kept_low(self, g: str, part, screen: dict | None) -> tuple[tuple[float, ...], ...] | None:
        """_low of a source step over the choices `screen` keeps, looked up by the screen's sets (shared by the
        layouts that keep the same choices: Planner._memory_screen) before their kept choices are spelled out."""
        sets = None if screen is None else (screen["dense"], screen["moe"]) if g == JOINT else (screen[g],)
        mkey = (id(part), None if sets is None else tuple(map(id, sets)))
        hit = self._kept_memo.get(mkey)
        if hit is not None and hit[0] is part and hit[1] == sets:
            return hit[2]
        if screen is None:
            kept = None
        elif g == JOINT:
            kept = (frozenset(part.dense.keys() & screen["dense"]), frozenset(part.moe.keys() & screen["moe"]))
        else:
            kept = frozenset(part.keys() & screen[g])
        out = self._low(part, kept)
        self._kept_memo[mkey] = (part, sets, out)
        return out

    def _low(self, part: dict, kept: frozenset | None) -> tuple[tuple[float, ...], ...] | None:
        """(GPU, launch) per-stage minima over the kept choices of one source table's step."""
        mkey = (id(part), kept)
        hit = self._memo.get(mkey)
        if hit is not None:
            return hit[1]
        if isinstance(part, _Joint):
            shs = part.sums(kept)
        else:
            shs = [sh for j, sh in part.items() if sh is not None and (kept is None or j in kept)]
        out = (tuple(map(min, zip(*(sh.gpu_s for sh in shs)))), tuple(map(min, zip(*(sh.launch_s for sh in shs))))) \
            if shs else None
        self._memo[mkey] = (part, out)
        return out


def attention_monotone(key: tuple[int, ...]) -> bool:
    """Whether the floors take layout `key`'s attention shares as non-decreasing in the works' attention reads at
    a fixed choice: not where the step's tokens are sharded (CP, SP). Their shares are non-decreasing too since the
    KV gather hides behind the attention core's whole kernel (step_parts.hiding_s: max(core, gather) plus the
    core's launches), but floors there were measured to buy nothing (generic DeepSeek-V3.2 on 128 A3 dies, plan
    1.01 -> 1.04 CPU s with them: benchmarks/README.md, stop 39), so those layouts are costed as they come."""
    return key[1] == 1 and key[3] == 1


AttentionReads = tuple[Reads, float]


def attention_reads(w: Work, pp: int) -> AttentionReads:
    """What an attention choice's formulas read of step `w` on a stage of a `pp`-stage pipeline: the other
    groups' reads and the positions one sequence's queries spread over, which the keys of a query follow from
    (compute.query_positions): of a prefill step its new tokens per sequence (compute.mean_keys_capped: at one
    context, longer prompts attend to more keys on average, so fewer sequences of the same tokens can cost
    more), of a decode step its span (a window's keys are concave in the position: at one context a wider span
    attends to fewer keys on average; at one span they are non-decreasing in the context). Floors compare the
    first as at_most does and ask the second to be equal."""
    micro = micro_work(pp, w)[1] if pp > 1 else w
    if micro.phase == "prefill":
        per = max(1.0, micro.new_tokens / micro.sequences) if micro.sequences > 0 else 0.0
    else:
        per = micro.span
    return reads(micro, 1), per


def attention_at_most(a: AttentionReads, b: AttentionReads) -> bool:
    return a[1] == b[1] and at_most(a[0], b[0])


StepReads = tuple[AttentionReads | None, AttentionReads | None, int]


def _step_reads(sp: StepPlan, pp: int) -> StepReads:
    return (None if sp.pre_work is None else attention_reads(sp.pre_work, pp),
            None if sp.dec_work is None else attention_reads(sp.dec_work, pp), sp.mtp_layers)


def _below(a: StepReads, b: StepReads) -> bool:
    """Each step of `a` at most that of `b` (the same steps, the same MTP passes)."""
    return a[2] == b[2] and all((x is None) == (y is None) and (x is None or attention_at_most(x, y))
                                for x, y in zip(a[:2], b[:2]))


class AttentionFloors:
    """The attention tables a planner has costed, per layout and the reads of its steps, and the floor they
    give the same layout at another concurrency (`table`): a table costed at works whose reads are all at most
    that concurrency's is at most its own, choice by choice and stage by stage (attention_monotone), so the
    attention-only bound over it, with that concurrency's step plan, is at most that bound."""

    def __init__(self, t: Tables):
        # a chunked-attention layer's keys fall at each chunk boundary: a longer context can cost less
        self.on = floors_apply(t.f) and t.model.keys_monotone
        self._src: dict[tuple[int, ...], dict[tuple, dict]] = {}

    def note(self, key: tuple[int, ...], vc: ViewCosts) -> None:
        """Keep view `vc`'s attention table (layout `key`) as a source of floors."""
        if self.on and attention_monotone(key):
            self._src.setdefault(key, {}).setdefault(_step_reads(vc.plan, key[4]), vc.attn)

    def table(self, key: tuple[int, ...], sp: StepPlan) -> dict | None:
        """The costed attention table of layout `key` whose steps' reads are at most those of `sp`, the one with
        the most decode, then prefill, new tokens; None when there is none."""
        src = self._src.get(key)
        if not src:
            return None
        r = _step_reads(sp, key[4])
        best = None
        for rr, attn in src.items():
            if _below(rr, r):
                rank = (rr[1][0][0] if rr[1] else 0.0, rr[0][0][0] if rr[0] else 0.0)
                if best is None or rank > best[0]:
                    best = (rank, attn)
        return None if best is None else best[1]


__all__ = ["GroupFloors", "AttentionFloors", "attention_monotone", "attention_reads", "attention_at_most", "FLOOR_GROUPS", "JOINT", "reads", "at_most", "floors_apply"]
