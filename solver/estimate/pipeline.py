"""Pipeline parallel: the layer stack split into `pp_size` stages, each run by `world / pp` ranks with every
other knob inside the stage.

Layout. Stages get consecutive layers, balanced: L // pp each, the first L % pp stages one more (an assumption:
the engines' own split is not in the facts; seed class A/B style: divisible is exact, otherwise the stages
differ by one layer and the slowest sets the pace). The embedding lives on the first stage, the LM head and
the MTP modules on the last (they follow the final hidden state). Memory per rank is the largest stage's.

Time. Stage i forwards one microbatch in t_i and hands its activations (tokens x hidden x 2 bytes) to the
next stage over the tier between them (t_send). With M microbatches (`paced`):
  prefill: sum_i t_i + (M - 1) x max_i t_i       -- the first microbatch crosses every stage (fill), the other
                                                    M - 1 follow at the slowest stage's pace (drain)
  decode:  max(sum_i t_i, M x max_i t_i)         -- a sequence's token crosses every stage once per step, and
                                                    M microbatches cannot come round faster than the slowest
                                                    stage serves them
each t_i with its hand-off (none after the last stage of a prefill). Equal stages give the slot forms
(M + pp - 1) x t and max(M, pp) x t (`slots`). Stages differ where the layers do not divide, where the first
and last carry the embedding / LM head / MTP, and where a command runs its own split.
M = min(pp, sequences): the engines keep pp batches in flight (one per stage), and one sequence is one
microbatch (a single prompt is not split).
"""
from __future__ import annotations

import math
from operator import mul
from dataclasses import dataclass, replace

from solver.estimate import comm
from solver.estimate.stage_ranks import STAGE_MAJOR, global_rank
from solver.memo import IdentityMemo
from solver.specs.layers.base import ACT_BYTES
from solver.specs.model import ModelSpec
from solver.specs.model_rules import model_stage_sizes
from solver.specs.profile_facts import EVERY_WRAPPER


@dataclass(frozen=True)
class Stage:
    index: int
    model: ModelSpec  # the stage's layers (MTP modules only on the last)
    first: bool  # holds the embedding
    last: bool  # holds the LM head (and MTP)

    @property
    def absent_modules(self) -> frozenset[str]:
        """Modules outside the layer stack this stage does not hold."""
        out = set()
        if not self.first:
            out.add("embedding")
        if not self.last:
            out.add("lm_head")
        if not self.first and not self.last and self.model.tie_word_embeddings:
            out.add("embedding")  # tied: the table sits on the first stage and, as the head, on the last
        return frozenset(out)


# stages per (model object, pp): keyed by identity (hashing a ModelSpec walks every layer), the entry keeps
# the model alive so its id is not reused
_STAGES: dict[tuple[int, int], tuple[ModelSpec, tuple["Stage", ...]]] = {}


def stages(model: ModelSpec, pp: int) -> tuple[Stage, ...]:
    """The model's pipeline stages."""
    hit = _STAGES.get((id(model), pp))
    if hit is not None and hit[0] is model:
        return hit[1]
    if len(_STAGES) > 1024:
        _STAGES.clear()
        _ORIGIN.clear()
    out = _build_stages(model, pp)
    _STAGES[(id(model), pp)] = (model, out)
    start = 0
    for st in out:
        _ORIGIN[id(st.model)] = (st.model, model, start)
        start += len(st.model.layers)
    return out


# each stage's model -> (itself, the whole model, its first layer's index): an engine grouping a hybrid's layers
# over the whole model (request_state.shared_pages) reads where a stage sits in it
_ORIGIN: dict[int, tuple[ModelSpec, ModelSpec, int]] = {}


def held_absent(st: Stage, mtp_layers: int, drafter_own_embedding: bool,
                tower_first_stage: tuple[str, ...] = ()) -> frozenset[str]:
    """The modules outside the layer stack a stage's ranks do not hold in memory: Stage.absent_modules, less the
    embedding on the last stage where MTP is on and the engine's drafter loads its own table there
    (FrameworkProfile.pp_drafter_own_embedding: vLLM shares the target's only without PP), plus, past the first
    stage, the towers whose wrapper the engine builds on the first stage only (`tower_first_stage`:
    FrameworkProfile.pp_tower_first_stage_model_types; EVERY_WRAPPER: all of them)."""
    out = st.absent_modules
    if drafter_own_embedding and st.last and mtp_layers > 0 and st.model.mtp_modules:
        out = out - {"embedding"}
    if not st.first:
        out = out | {e.name for e in st.model.encoders
                     if EVERY_WRAPPER in tower_first_stage or e.wrapper in tower_first_stage}
    return out


def stage_origin(model: ModelSpec) -> tuple[ModelSpec, int] | None:
    """(the whole model, the index of the stage's first layer) where `model` is a pipeline stage built by
    `stages`; None otherwise."""
    hit = _ORIGIN.get(id(model))
    return (hit[1], hit[2]) if hit is not None and hit[0] is model else None


_DISTINCT = IdentityMemo(1024)


def distinct_stages(model: ModelSpec, pp: int) -> tuple[Stage, ...]:
    """The stages that cost differently: stages holding the same blocks, the same modules outside the stack and
    the same MTP role cost the same, so one of each is costed."""
    return _distinct(model, pp)[0]


def stage_counts(model: ModelSpec, pp: int) -> tuple[int, ...]:
    """How many of the pp stages each of distinct_stages stands for (they sum to pp): a step sums every stage."""
    return _distinct(model, pp)[1]


def _distinct(model: ModelSpec, pp: int) -> tuple[tuple[Stage, ...], tuple[int, ...]]:
    def build() -> tuple[tuple[Stage, ...], tuple[int, ...]]:
        out: dict[tuple, list] = {}
        for st in stages(model, pp):
            sig = (tuple((id(b), n) for b, n in st.model.block_groups), st.absent_modules, st.last)
            if sig in out:
                out[sig][1] += 1
            else:
                out[sig] = [st, 1]
        return tuple(v[0] for v in out.values()), tuple(v[1] for v in out.values())

    return _DISTINCT.get((model,), pp, build)


def _build_stages(model: ModelSpec, pp: int) -> tuple[Stage, ...]:
    sizes = model_stage_sizes(model, pp)  # a command's own split where it carries one
    out, start = [], 0
    for i, n in enumerate(sizes):
        last = i == pp - 1
        sub = replace(model, layers=model.layers[start:start + n],
                      mtp_modules=model.mtp_modules if last else (), stage_layers=())
        out.append(Stage(i, sub, i == 0, last))
        start += n
    return tuple(out)


def microbatches(pp: int, sequences: float) -> int:
    """Microbatches in flight: one per stage, at most one per sequence."""
    return max(1, min(pp, math.floor(sequences))) if sequences >= 1 else 1


def slots(phase: str, pp: int, m: int) -> int:
    """Stage-time slots a step takes: fill + drain for prefill, the circulation period for decode."""
    return m + pp - 1 if phase == "prefill" else max(m, pp)


def paced(phase: str, m: int, stage_s: tuple[float, ...], counts: tuple[int, ...],
          send: float = 0.0) -> tuple[float, int]:
    """(stage seconds a step takes, hand-offs on its path) for distinct stages taking `stage_s` each on a
    microbatch, `counts` of each (stage_counts), `send` one hand-off: prefill sum + (m - 1) x max, its hand-offs
    `sends`; decode max(sum, m x max), each stage with its hand-off, so pp hand-offs where the sum paces the
    step and m where the slowest stage does. Equal stages: slots x t, `sends` hand-offs."""
    pp = sum(counts)
    # the planner asks this per summed share: map over the pairs, not a generator (the planner's hot path)
    total = sum(map(mul, stage_s, counts)) if pp != len(counts) else sum(stage_s)
    top = max(stage_s)
    if phase == "prefill":
        return total + (m - 1) * top, sends(phase, pp, m)
    if _sum_paces(total, top, pp, m, send):
        return total, pp
    return m * top, m


def _sum_paces(total: float, top: float, pp: int, m: int, send: float) -> bool:
    """Whether a decode step is a token's way through every stage (its pp hand-offs with it), not m rounds of the
    slowest stage (with m)."""
    return total + pp * send >= m * (top + send)


def stage_shares(phase: str, m: int, stage_s: tuple[float, ...], counts: tuple[int, ...],
                 send: float = 0.0) -> tuple[float, ...]:
    """How many times each distinct stage's microbatch time stands in a step `paced` times alike: sum_i share_i x
    t_i is its stage seconds. Prefill: every stage once per stage it stands for (the first microbatch's way
    through), the slowest m - 1 more (the drain); decode: each stage once per stage where the sum paces the step,
    else the slowest m times. The step's per-module records are every stage's so weighted (step.pipeline_step)."""
    top = stage_s.index(max(stage_s))
    if phase == "prefill":
        return tuple(float(c + (m - 1 if i == top else 0)) for i, c in enumerate(counts))
    if _sum_paces(sum(map(mul, stage_s, counts)), stage_s[top], sum(counts), m, send):
        return tuple(float(c) for c in counts)
    return tuple(float(m) if i == top else 0.0 for i in range(len(counts)))


def sends(phase: str, pp: int, m: int) -> int:
    """Hand-offs on a step's path: between a prefill's slots (every slot but the last ends with some stage handing
    a microbatch on; after the last the last stage forwards nothing), after each of a decode's (at every slot some
    stage hands its microbatch on)."""
    return slots(phase, pp, m) - 1 if phase == "prefill" else slots(phase, pp, m)


def prefill_traversal(pp: int, prompts: int, weights: tuple[float, ...] = (), counts: tuple[int, ...] = ()) -> float:
    """A prompt's way through a prefill step of `prompts` prompts, in prompt shares of the step (P_n / n): one
    prompt is one microbatch and crosses every stage, sum_i t_i, while the step's P_n (paced: sum_i t_i + (m - 1)
    x max_i t_i) spreads over the n prompts; a microbatch of n / m prompts taken as n / m microbatches of one (the
    compute-bound share P_n / n of an unpipelined step): m x sum / paced. `weights`: the distinct stages' relative
    times (engine_step.stage_layer_passes: their layer passes), `counts` of each; none, equal stages, where it is
    pp x m / (m + pp - 1). 1 without PP."""
    m = microbatches(pp, prompts)
    if not weights or len(set(weights)) == 1:
        return pp * m / slots("prefill", pp, m)
    span = paced("prefill", m, weights, counts)[0]
    return m * sum(map(mul, weights, counts)) / span if span > 0 else 1.0


def send_tier(hw, stage_world: int, pp: int, order: str = STAGE_MAJOR, engine: int = 0) -> str:
    """The tier between consecutive stages: each rank hands its activations to its peer in the next stage (the
    rank of the same place in it: vLLM's and SGLang's PP groups), and the slowest of those pairs' tiers sets the
    hand-off, each pair's the narrowest tier whose span holds both. Where the peers sit follows the engine's
    rank order (stage_ranks.global_rank; `engine`: the ranks of one attention group of a stage): stage-major
    stages of whole nodes talk across nodes, or over the scale-up fabric inside an NVL72 rack (144 GB200 at PP4,
    stages of 36: rank 36 hands off to 72, across the two racks); under vLLM's DP-major order TP4 x PP2 x DP2 on
    2 x 8 H100 keeps each engine's two stages in one node (rank 0 hands off to 4), inside the node."""
    return _TIERS.get((hw,), (stage_world, pp, order, engine), lambda: _send_tier(hw, stage_world, pp, order, engine))


_TIERS = IdentityMemo(65_536)


def _send_tier(hw, stage_world: int, pp: int, order: str, engine: int) -> str:
    tiers = sorted((t.span_ranks, name) for name, t in hw.tiers.items())
    engine = engine or stage_world
    worst = (0, tiers[0][1])
    for k in range(max(pp, 2) - 1):
        for r in range(stage_world):
            a = global_rank(order, pp, stage_world, engine, k, r)
            b = global_rank(order, pp, stage_world, engine, k + 1, r)
            tier = next(((span, name) for span, name in tiers if a // span == b // span), tiers[-1])
            worst = max(worst, tier)
            if worst == tiers[-1]:
                return worst[1]
    return worst[1]


def handoff_width(model: ModelSpec, f) -> int:
    """Values a token carries to the next stage: the residual streams (ModelSpec.residual_width), and where the
    engine hands on the residual beside a single stream's hidden state (Factors.pp_handoff_residual: vLLM 0.34.0
    model_executor/models/llama.py:443-448, deepseek_v2.py:1573-1576; sglang 0.5.23 layers/layer_boundary/residual/
    batch.py:269-291 to_pp) 2 x hidden, save for the model types whose code folds it in (pp_handoff_hidden_only)."""
    if f.pp_handoff_residual and model.residual_streams == 1 and model.model_type not in f.pp_handoff_hidden_only:
        return 2 * model.hidden_size
    return model.residual_width


_SENDS = IdentityMemo(65_536)  # send_s per device and hand-off: the planner's pipelines ask the same ones again


def send_s(hw, stage_world: int, pp: int, tokens: float, width: int, comm_eff: float, split: int = 1,
           order: str = STAGE_MAJOR, engine: int = 0) -> float:
    """One stage boundary's activation hand-off: tokens x width (hidden x residual streams:
    ModelSpec.residual_width) x bf16, over the slowest boundary's tier (send_tier, under the engine's rank
    `order`). The ranks of an attention TP
    group (`split`) hold the same rows, so each sends its 1/split slice to its peer in the next stage, in parallel,
    and the receiving group all-gathers them (vLLM 0.34.0 distributed/parallel_state.py send_tensor_dict with
    all_gather_group = the TP group, v1/worker/gpu_worker.py; sglang 0.5.23 managers/scheduler_pp_mixin.py,
    all_gather_group = the attention TP group; vllm-ascend 0.23.0 worker/worker.py): the slow boundary carries
    1/split of the tensor."""
    return _SENDS.get((hw,), (stage_world, pp, tokens, width, comm_eff, split, order, engine),
                      lambda: _send_s(hw, stage_world, pp, tokens * width * ACT_BYTES, comm_eff, split, order,
                                      engine))


def _send_s(hw, stage_world: int, pp: int, nbytes: float, comm_eff: float, split: int, order: str,
            engine: int) -> float:
    t = comm.send_recv_s(hw, nbytes / max(1, split), send_tier(hw, stage_world, pp, order, engine), comm_eff)
    return t + (comm.all_gather_s(hw, split, nbytes, comm_eff=comm_eff) if split > 1 else 0.0)


__all__ = ["Stage", "stages", "distinct_stages", "stage_counts", "microbatches", "slots", "paced", "sends",
           "prefill_traversal", "stage_shares", "send_s", "send_tier", "handoff_width", "held_absent", "replace"]
