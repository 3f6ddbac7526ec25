"""A forward step as the engine runs it: the step-cost model's GPU time plus what the engine's serving loop
adds outside the kernels (FrameworkServing; `step_time`):

    decode runs the batch padded to the next captured CUDA-graph size (the GPU work of the padded batch); past
    the largest graph, and for every prefill, the step runs eagerly: it takes at least kernels x eager_launch_s
    (the host issuing each kernel); every step also costs seq_overhead_s per sequence in it (scheduling,
    sampling, detokenizing) on top of the fixed step_overhead_s, and seq_layer_s per sequence per layer it
    runs (step_layers: the stack, MTP draft passes, under PP the stages as the step paces them): the
    per-sequence work inside each layer's kernels that the FLOP and byte counts miss (the decode attention
    kernel's per-sequence setup, page-table walk and split-KV reduction), so a 61-layer MoE pays it about
    twice as often as a 32-layer dense
    model. One per-step constant per (engine, hardware) took the model's layer count from whichever models the
    pair was fitted on (leave-one-model-out TPOT 15.9%); per kernel launched 13.8% with group regressions
    (sglang, TP + EP, Qwen3-235B); per layer 14.0% without them (benchmarks/accuracy.py). The kernels are the
    engine's, so seq_layer_s is fitted once per engine over every hardware: per (engine, hardware) it took the
    size of whichever models a pair held (held out 13.5%, h200 23.0%), per engine 12.6% (h200 15.4%). The layer
    count is fixed by the model and the layout, so a layout's figures depend on its step times alone (the
    planner's Pareto argument, figures.py).

The serving formulas (closed_loop.py) take the prefill and decode steps as `step_time` makes them.
"""
from __future__ import annotations

from solver.estimate import pipeline
from solver.estimate.compute import Factors
from solver.estimate.step import StepCost
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.profile_serving import GraphCap, graph_cap_at, graph_cap_env
from solver.specs.rule_env import DEVICE_FLAGS


def graph_batch(running: int, sizes: tuple[int, ...]) -> tuple[int, bool]:
    """(batch a decode step of `running` sequences runs, whether it runs eagerly). With captured sizes the
    batch is padded to the smallest size that holds it; past the largest it runs eagerly at its own size. No
    sizes (an engine profile without graphs): its own size, not flagged eager."""
    if not sizes:
        return running, False
    for b in sizes:  # ascending
        if b >= running:
            return b, False
    return running, True


def graph_sizes_at(f: Factors, pc: ParallelConfig, n_routed_experts: int, planned: int,
                   mtp: int = 0) -> tuple[int, ...]:
    """The decode batches the engine captures at `pc` (with `mtp` > 0: its list with speculative decoding on,
    f.graph_sizes_mtp): f.graph_sizes cut at its default cap there (the first
    serving.graph_max_batch entry holding at profile_serving.graph_cap_env's names), the cap itself captured, as
    the engine appends it. Where the command lifts the cap (graph_max_batch_lift) and the plan's per-rank batch
    `planned` exceeds it, the cap is that batch, and the open range (f.graph_open) fills the sizes below it as the
    engine's list does: a batch past the listed sizes pads to the next of these, not to the lifted cap. No entry
    holding: every listed size."""
    sizes, open_ = (f.graph_sizes_mtp, f.graph_open_mtp) if mtp and f.graph_sizes_mtp else \
        (f.graph_sizes, f.graph_open)
    if not f.graph_caps or not sizes:
        return sizes
    env = graph_cap_env(pc, f.memory_gib, {k: k in f.device_flags for k in DEVICE_FLAGS}, n_routed_experts)
    cap = graph_cap_at([GraphCap(when=w, value=v) for w, v in f.graph_caps], env)
    if cap is None:
        return sizes
    if f.graph_cap_lift:
        cap = max(cap, planned)
    past = range(open_[0], cap, open_[1]) if open_ else ()
    return tuple(b for b in sizes if b < cap) + tuple(b for b in past if b > max(sizes)) + (cap,)


def kernels_launched(step: StepCost, f: Factors) -> float:
    """Kernels one step launches: the step-cost model charges kernel_overhead_s per kernel (a pipeline step
    carries its stages' counts as the pipeline combines them: StepCost.kernels)."""
    if step.kernels is not None:
        return step.kernels
    if f.kernel_overhead_s <= 0:
        return 0.0
    return sum(o.overhead_s for o in step.ops) / f.kernel_overhead_s


def step_layers(model: ModelSpec, pc: ParallelConfig, phase: str, sequences: float, draft_passes: int = 0) -> float:
    """Layer passes one sequence of a `phase` step of `sequences` sequences makes on the step's critical path: the stack's layers plus
    `draft_passes` MTP passes through the MTP module's layers, as step_cost runs them (a decode step's draft
    passes; a prefill step's pass over its prompts, workload.prompt_draft_passes).
    Under PP the stages' layers (MTP on the last stage) combined as a step combines the stages' times
    (pipeline.paced: prefill sum + (m - 1) x busiest, decode max(sum, m x busiest)), per microbatch of the m
    (pipeline.microbatches, each holding 1/m of the sequences): one sequence alone crosses every stage's
    layers, 11 + 50 on an 11 / 50 split. A count from the model and the layout, never from step costs
    (figures.step_plan holds it)."""
    if pc.pp_size <= 1:
        return float(model.num_layers + _mtp_passes(model, draft_passes))
    layers, counts = stage_layer_passes(model, pc.pp_size, draft_passes)
    m = pipeline.microbatches(pc.pp_size, sequences)
    return pipeline.paced(phase, m, layers, counts)[0] / m


def _mtp_passes(model: ModelSpec, draft_passes: int) -> int:
    return draft_passes * len(model.mtp_modules[0]) if draft_passes and model.mtp_modules else 0


def stage_layer_passes(model: ModelSpec, pp: int, draft_passes: int = 0) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """(layer passes of each of pipeline.distinct_stages, how many stages each stands for): the stage's layers,
    the last with `draft_passes` passes through the MTP module's; the stages' weights in a step (step_layers) and
    in a prompt's way through one (pipeline.prefill_traversal). A count from the model and the layout."""
    mtp = _mtp_passes(model, draft_passes)
    return (tuple(float(len(st.model.layers) + (mtp if st.last else 0)) for st in pipeline.distinct_stages(model, pp)),
            pipeline.stage_counts(model, pp))


def step_time(gpu_s: float, kernels: float, sequences: float, eager: bool, f: Factors, *, layers: float) -> float:
    """A forward step as the engine runs it [s]: the GPU time, floored by the host's kernel launches when it
    runs eagerly (kernels x eager_launch_s), plus seq_overhead_s per sequence in the step and seq_layer_s per
    sequence per layer it runs (`layers`: step_layers; the per-sequence work inside each layer's kernels that
    the FLOP and byte counts miss: module docstring). Non-decreasing in gpu_s, kernels and sequences."""
    return launch_floor_s(gpu_s, kernels, eager, f) + sequence_cost_s(sequences, f, layers=layers)


def launch_floor_s(gpu_s: float, kernels: float, eager: bool, f: Factors) -> float:
    """`step_time`'s first term [s]: the GPU time, floored by the host's kernel launches when the step runs eagerly."""
    return max(gpu_s, kernels * f.eager_launch_s) if eager else gpu_s


def sequence_cost_s(sequences: float, f: Factors, *, layers: float) -> float:
    """`step_time`'s second term [s]: the serving loop's cost of the sequences in the step, fixed by the step's
    shape (figures.figures takes it once per step plan)."""
    return (f.seq_overhead_s + f.seq_layer_s * layers) * sequences
