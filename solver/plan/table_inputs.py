"""What the planner's tables cost at, each made once: the configs of a layout and of a group's choice beside
it (one object per knob values), the step plans, the pipelines, the works (one object per value, so the memos
key them by identity), the layout as the other groups see it (outside), and the memoised share call into
plan.group_cost. TableInputs is one of Tables' bases: its memos are Tables' fields.
"""
from __future__ import annotations

from dataclasses import replace

from solver.estimate.compute import Work
from solver.estimate.figures import StepPlan, step_plan
from solver.estimate.serving import Workload
from solver.estimate.step_parts import block_modules, engine_decode_layout
from solver.plan.group_cost import NONE, Pipeline, Share, pipeline_of, shares
from solver.plan.groups import GROUPS
from solver.specs.parallel import ParallelConfig

# entries a Tables keeps per memo (shares, pipelines): past it the memo starts over (a generic W=128 plan asks
# for ~80K shares)
_TABLE_MEMO = 1_000_000
# one object per value among the works tables cost (Tables._work)
_WORKS: dict[Work, Work] = {}


class TableInputs:
    """The Tables' memoised configs, works, step plans, pipelines and shares (the views are filled from them)."""

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
        tp, cp, kvp, sp, pp = key[:5]  # a view split by its step budget (Tables.layouts) appends it
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
            # a view split by its default step budget (Tables.layouts) plans its steps at that budget
            budget = key[5] if len(key) > 5 else None
            shape = (b, rep.pp_size, rep.attn_replicas, budget)
            sp = self._shapes.get(shape)
            if sp is None:
                sp = step_plan(self.model, rep, self.f, Workload.for_scenario(self.scenario, b),
                               default_budget=budget)
                pre, dec = self._work(sp.pre_work), self._work(sp.dec_work)
                if pre is not sp.pre_work or dec is not sp.dec_work:  # the same values, the tables' objects
                    sp = replace(sp, pre_work=pre, dec_work=dec)
                self._shapes[shape] = sp
            self._plans[(b, key)] = sp
        return sp

    def pipelines(self, b: int, key: tuple[int, ...]) -> tuple[Pipeline | None, Pipeline | None]:
        """(prefill, decode) pipeline of layout `key` at concurrency b, as its view holds them; no share costed."""
        rep, sp = self._layout_pc(key), self.step_plan_of(b, key)
        return (self._pipeline(rep, sp.pre_work) if sp.pre_work else None,
                self._pipeline(rep, sp.dec_work) if sp.dec_work else None)

    def outside(self, key: tuple[int, ...], w: Work | None) -> tuple[tuple[int, ...], Work | None]:
        """The attention layout as the other groups see it, and the work they see: they read the attention
        TP group (the ranks its output is whole on: Kit.attn_tp_group), the attention group's size and the
        replicas (compute.group_tokens, the reshard test against attention TP), not how the group splits (CP,
        KVP, SP). So layouts with equal (TP group, group size, PP) share their tables (_spelled); a decode step
        under CP, or under SP whose ranks repeat the batch (Factors.sp_decode_repeats_batch), is first put in its
        decode layout (step_parts.decode_layout), except under PP, where each stage's microbatch is laid out by
        itself."""
        key = key[:5]  # the other groups read no step budget but through the works
        tp, cp, kvp, sp, pp = key
        relaid = cp > 1 or (sp > 1 and self.f.sp_decode_repeats_batch)
        if w is not None and w.phase == "decode" and relaid:
            if pp > 1:
                return key, w
            hit = self._outside.get((key, id(w)))  # the entry keeps `w`, so a hit is on this very object
            if hit is None or hit[0] is not w:
                pc, dw = engine_decode_layout(self._layout_pc(key), w, self.f)
                hit = self._outside[(key, id(w))] = (
                    w, self._spelled(pc.attn_tp_size, pc.kvp_size, pc.cp_size * pc.attn_sp_size, pp),
                    self._work(dw))
            return hit[1], hit[2]
        return self._spelled(tp, kvp, cp * sp, pp), w

    @property
    def _respells(self) -> bool:
        """Whether a group's layout may be respelled with attention TP 1 (_beside): not where the respelling's
        ranks land on SP (_spelled, KVP reusing the TP ranks) and the engine's decode reads SP
        (Factors.sp_decode_repeats_batch: step_parts.decode_layout would lay TP ranks out as repeating SP ranks)."""
        return not (self.f.kvp_splits_attention_weights and self.f.sp_decode_repeats_batch)

    def _spelled(self, tp: int, kvp: int, rest: int, pp: int) -> tuple[int, ...]:
        """A layout as the other groups read it, one spelling per (TP group, group size, PP): the non-TP ranks
        as KVP, but where KVP reuses the TP ranks (Factors.kvp_splits_attention_weights) KVP joins the TP group
        and the rest is spelled as SP (as KVP it would read as TP), which no other group reads but through a
        decode step's layout where the engine's SP ranks repeat the batch (_respells)."""
        if self.f.kvp_splits_attention_weights:
            return (tp * kvp, 1, 1, rest, pp)
        return (tp, 1, kvp * rest, 1, pp)

    def _group_pc(self, outside: tuple[int, ...], g: str, j: int) -> ParallelConfig:
        """The config group g's choice j is costed at beside the layout `outside` (outside), memoised: every
        concurrency asks for the same ones."""
        key = (outside, g, j)
        pc = self._group_pcs.get(key)
        if pc is None:
            c = self.choices[g][j]
            pc = self._group_pcs[key] = self._layout_pc(_beside(outside, c[0], self.world, self._spelled,
                                                                self._respells),
                                                        **dict(zip(GROUPS[g][:-1], c[:-1])))
        return pc

    def _pair_pc(self, outside: tuple[int, ...], jd: int, jm: int, tp: int, knobs: dict[str, int]
                 ) -> ParallelConfig:
        """The config a (dense, MoE) pair of TP `tp` (_pair_choices) is costed at beside `outside`, memoised
        as _group_pc."""
        key = (outside, jd, jm)
        pc = self._pair_pcs.get(key)
        if pc is None:
            pc = self._pair_pcs[key] = self._layout_pc(_beside(outside, tp, self.world, self._spelled,
                                                                       self._respells), **knobs)
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


def _beside(key: tuple[int, ...], degree: int, world: int, spelled, respell: bool = True) -> tuple[int, ...]:
    """The layout (outside's spelling) a group of TP `degree` is costed beside: of attention TP it reads only
    whether it equals its own degree (an all-reduce when it does, a gather and a scatter when it reshards) or
    the MoE group's span (degree x EP: attention TP over the whole MoE group needs no dispatch), so any other
    value is spelled 1 with the same group size (`spelled`: TableInputs._spelled), and layouts differing only
    there share the table. `respell` false (TableInputs._respells): kept as it is."""
    tp, cp, kvp, sp, pp = key
    if not respell or tp in (1, degree, world // pp) or cp != 1 or (sp != 1 and kvp != 1):
        return key
    return spelled(1, 1, tp * kvp * sp, pp)
