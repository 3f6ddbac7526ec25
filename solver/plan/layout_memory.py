"""A layout's memory, stage by stage, as the planner constrains it: the memory model's terms that do not add
up per group choice (StageMemory: the transient's terms, the EP staging, the communicator buffers), and the
Tables methods that build them per (concurrency, layout) and read a configuration's bytes per rank from them
(LayoutMemory, one of Tables' bases). The per-choice entries that do add up are plan.memory_rows'; the sequences
every replica holds are held_sequences'.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from solver.estimate.activations import activation_peak_of
from solver.estimate.buffers import COMM_BUFFER_BYTES, a2a_buffer_bytes, comm_groups, ep_staging_bytes, staging_tokens
from solver.estimate.memory import MemoryReport, memory_per_rank
from solver.estimate.memory_options import MemoryOptions
from solver.estimate.params import count_params
from solver.estimate.pipeline import held_absent
from solver.plan.groups import GROUPS
from solver.plan.memory_rows import attention_transient, stage_entry, unowned_weights
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision
from solver.specs.scenario import Scenario

if TYPE_CHECKING:
    from solver.estimate.pipeline import Stage


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


@dataclass(frozen=True)
class StageMemory:
    """The memory of one attention layout at one concurrency on one pipeline stage, beyond what adds up.

    The memory model's transient is the largest of its terms (activations.activation_peak_terms: attention blocks,
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


class LayoutMemory:
    """The Tables' memory side: a layout's StageMemory per concurrency (memoised in Tables._view_memory), and a
    configuration's bytes per rank and whether it fits, from the tables' entries and those terms."""

    def view_memory(self, b: int, key: tuple[int, ...]) -> ViewMemory:
        """The layout's memory at concurrency b, stage by stage (StageMemory)."""
        hit = self._view_memory.get((b, key))
        if hit is not None:
            return hit
        rep = self._layout_pc(key)
        held = held_sequences(b, rep)
        if key[4] == 1:  # a view at another step budget than the entries' (Tables.layouts) sizes its own
            own = self.view_budget(key) != (self.entry_budget or self.mem_opts.token_budget)
            out: ViewMemory = (self._stage_memory(key, None, held, own_base=own),)
        else:
            from solver.estimate.pipeline import stages

            out = tuple(self._stage_memory(key, st, held) for st in stages(self.model, key[4]))
        self._view_memory[(b, key)] = out
        return out

    def _stage_memory(self, key: tuple[int, ...], st: "Stage | None", held: int,
                      own_base: bool = False) -> StageMemory:
        """One stage's terms with `held` sequences (`st` None: the single stage, whose additive part is the
        tables' entries unless `own_base`). A view split by its default step budget (Tables.layouts) sizes its
        terms at that budget, with its MoE choices only (the tables' entries are at the least budget)."""
        model = self.model if st is None else st.model
        params = count_params(model)
        mtp = self.mtp_layers if st is None or st.last else 0
        absent = frozenset() if st is None else held_absent(st, mtp or 0, self.mem_opts.pp_drafter_own_embedding,
                                                            self.mem_opts.pp_tower_first_stage_model_types)
        seq_len, opts = self.scenario.max_seq_len, self.mem_opts
        kept = self.moe_in(key)
        if opts.token_budget != self.view_budget(key):
            opts = replace(opts, token_budget=self.view_budget(key))
        seqs = held / self._layout_pc(key).attn_replicas

        def on_stage(pc: ParallelConfig) -> ParallelConfig:
            return pc if st is None else pc.stage()

        base: dict[str, dict[int, float]] | None = None if st is None and not own_base else {}
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
                if c[-1] != pp or (g == "moe" and kept is not None and j not in kept):
                    continue
                pc = on_stage(self._layout_pc(key, **dict(zip(GROUPS[g][:-1], c[:-1]))))
                if base is not None:
                    base.setdefault(g, {})[j] = stage_entry(g, model, pc, self.prec, opts, params, self.groups,
                                                            held, seq_len, mtp, "all", absent)
                t = activation_peak_of(model, pc, opts, seq_len, seqs, owned)
                if t is not None:
                    terms.setdefault(g, {})[j] = t
                if g == "moe":
                    staging[j] = (ep_staging_bytes(model, pc, staging_tokens(model, opts, pc, seq_len, seqs))
                                  + a2a_buffer_bytes(model, self.hw, pc, opts, seqs))
                if any(v > 1 for v in comm_groups(pc)):
                    comm_open[g] = comm_open.get(g, ()) + (j,)
        limit = self.memory_limit_bytes - (self.const_memory_bytes if st is None else
                                           unowned_weights(model, self.world // pp, self.prec, opts, params,
                                                           self.groups, mtp, absent))
        return StageMemory(limit, base, attn_transient, terms, staging, tuple(comm_free), comm_open)

    def memory_of(self, b: int, picks: dict[str, int]) -> float:
        """Bytes per rank the memory model gives this configuration (the held sequences at the longest context,
        the largest stage's under PP; without the runtime reserve), from the tables and the layout's terms."""
        key = self.key_of(picks)
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
