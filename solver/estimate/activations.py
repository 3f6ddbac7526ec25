"""Transient activation bytes per rank: the peak of one forward by the knob that sizes each term, at a prefill
chunk and at a decode step."""
from __future__ import annotations

import math

from solver.estimate.closed_loop import synced_ranks
from solver.estimate.memory_options import MemoryOptions
from solver.specs.expr import compile_expr
from solver.specs.layers.base import heads_split
from solver.specs.rule_env import DEVICE_FLAGS
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig


def activation_terms(model: ModelSpec, pc: ParallelConfig, tokens: float, sequences: float,
                     kvp_splits_weights: bool = False, keys: float | None = None,
                     logits_max_bytes: float | None = None, zero_picks: bool = False) -> dict[str, float]:
    """Peak transient bytes of one forward over `tokens` tokens of one attention replica, by the knob that sizes
    each part (Block.activation_knob; the logits: lmhead_tp_size): the residual stream plus the largest
    intermediate of those blocks. Layers run one after another, so the peak is the largest term
    (activation_per_rank); the planner constrains each term on its own (plan.layout_memory.StageMemory).
    `kvp_splits_weights`: the engine's KVP layout (the heads of the mixers KVP does not split: base.heads_split).
    `keys`: the keys each query scores on this rank in a block's scratch (Block.scratch: an indexer's logits; None:
    the forward's own tokens), its logits bounded by the engine's `logits_max_bytes`
    (MemoryOptions.indexer_logits_max_bytes). `zero_picks`: the engine runs zero-expert picks as expert 0
    (MemoryOptions.zero_expert_picks_computed), whose rank holds their activations (Block.hot_rank_activation)."""
    return _terms(model, pc, tokens, sequences, None, kvp_splits_weights,
                  tokens if keys is None else keys, logits_max_bytes, zero_picks)


def _terms(model: ModelSpec, pc: ParallelConfig, tokens: float, sequences: float,
           knobs: frozenset[str] | tuple[str, ...] | None, kvp_splits_weights: bool, keys: float,
           logits_max_bytes: float | None, zero_picks: bool = False) -> dict[str, float]:
    """activation_terms, only the terms of `knobs` (None: all): the same blocks in the same order, the others
    not evaluated (the planner's memory rows ask for one group's terms per choice)."""
    a, group = pc.attn_tp_size, pc.attn_tp_group(kvp_splits_weights)
    h = model.hidden_size
    act_b = 2  # activations held in bf16 between kernels
    t = tokens / pc.token_shards  # tokens a rank computes attention for
    # the residual (its streams under hyper-connections: layers/hyper.py), the normed input, the module output
    residual = (model.residual_streams + 2) * t * h * act_b
    largest: dict[str, float] = {}
    for layer, _ in model.layer_groups:
        for b in layer.blocks:
            k = b.activation_knob
            if knobs is None or k in knobs:
                held = b.activation(pc, tokens, heads_split(b, a, group)) + b.scratch(pc, tokens, keys,
                                                                                       logits_max_bytes)
                if zero_picks:  # the busiest rank's: the one holding expert 0 (the step costs pace it too)
                    held += b.hot_rank_activation(pc, tokens)
                largest[k] = max(largest.get(k, 0.0), held)
    if knobs is None or "lmhead_tp_size" in knobs:
        logits = max(sequences, 1.0) * model.vocab_size / pc.lmhead_tp_size * 4
        largest["lmhead_tp_size"] = max(largest.get("lmhead_tp_size", 0.0), logits)
    return {k: residual + v for k, v in largest.items()}


def activation_per_rank(model: ModelSpec, pc: ParallelConfig, tokens: float,
                        sequences: float, kvp_splits_weights: bool = False) -> float:
    """Peak transient bytes of one forward over `tokens` tokens of one attention replica."""
    return max(activation_terms(model, pc, tokens, sequences, kvp_splits_weights).values())


def prefill_chunk(opts: MemoryOptions, seq_len: int, seqs: float, synced: int = 1) -> float:
    """Tokens of one prefill forward: the chunk (MemoryOptions.chunk_tokens: the step budget the engine's command
    sets for the replica's `seqs` requests, a share of it over `synced` attention-DP ranks where the engine divides
    it), or all the prompts a rank holds when they are fewer (a prompt: MemoryOptions.prompt_of, the request's
    tokens less its output)."""
    return min(opts.chunk_tokens(synced, math.ceil(seqs)), max(opts.prompt_of(seq_len), 1) * max(seqs, 1))


def activation_peak_terms(model: ModelSpec, pc: ParallelConfig, opts: MemoryOptions, seq_len: int,
                          seqs: float) -> dict[str, float]:
    """activation_terms at the larger of a prefill chunk and a decode step of `seqs` sequences, term by term
    (the max over phases of the max over terms is the max over terms of the max over phases)."""
    return _peak_terms(model, pc, opts, seq_len, seqs, None)


def activation_peak_of(model: ModelSpec, pc: ParallelConfig, opts: MemoryOptions, seq_len: int, seqs: float,
                       knobs: frozenset[str] | tuple[str, ...]) -> float | None:
    """The largest of activation_peak_terms' terms sized by one of `knobs` (None: no block's term is), without
    evaluating the other terms."""
    return max(_peak_terms(model, pc, opts, seq_len, seqs, knobs).values(), default=None)


def _peak_terms(model: ModelSpec, pc: ParallelConfig, opts: MemoryOptions, seq_len: int, seqs: float,
                knobs: frozenset[str] | tuple[str, ...] | None) -> dict[str, float]:
    chunk = prefill_chunk(opts, seq_len, seqs, synced_ranks(model, pc))
    prompt = max(opts.prompt_of(seq_len), 1)
    cap, kvp_layout = opts.indexer_logits_max_bytes, opts.kvp_splits_attention_weights
    # a rank scores the indexer keys it holds: KVP splits them as the cache does, unless the engine keeps every
    # key on each KVP rank (CacheLayout.kvp_replicates_index)
    key_shards = 1 if opts.cache_layout.kvp_replicates_index else pc.kvp_size
    # the keys a query scores: at prefill the chunk's gathered keys, its prompt up to the chunk's end (the last
    # chunk's: the whole prompt) or, where the chunk packs several prompts, theirs together (one ragged matrix);
    # at decode each sequence's own context
    zero = opts.zero_expert_picks_computed
    pre = _terms(model, pc, chunk, max(1.0, chunk / prompt), knobs, kvp_layout, max(prompt, chunk) / key_shards,
                 cap, zero)
    # a decode step runs each sequence's token and its draft tokens (MTP: 1 + drafts rows, each scored and
    # given logits; a lookup's tree: all its tokens, MemoryOptions.decode_rows); the engine's prefill bound may
    # not hold there (MemoryOptions.indexer_decode_logits_unbounded)
    rows = seqs * (opts.decode_rows or 1 + opts.decode_drafts)
    dec = _terms(model, pc, rows, rows, knobs, kvp_layout, max(seq_len, 1) / key_shards,
                 decode_logits_bound(model, pc, opts), zero)
    return {k: max(pre.get(k, 0.0), dec.get(k, 0.0)) for k in pre.keys() | dec.keys()}


def decode_logits_bound(model: ModelSpec, pc: ParallelConfig, opts: MemoryOptions) -> float | None:
    """The bound on a decode step's indexer logits piece at `pc` (None: the whole matrix): the prefill's
    (indexer_logits_max_bytes), unless the engine holds the decode's whole (indexer_decode_logits_unbounded); then
    its decode bound where that bound's condition holds at every indexer's top-k, on this rank's KVP and CP sizes
    and the device's flags (MemoryOptions.device_flags)."""
    if not opts.indexer_decode_logits_unbounded:
        return opts.indexer_logits_max_bytes
    bound = opts.indexer_decode_logits_bound
    if bound is None:
        return None
    topks = {b.indexer.topk for layer, _ in model.layer_groups for b in layer.blocks
             if getattr(b, "indexer", None) is not None}
    expr = compile_expr(bound.when)
    env = {"kvp_size": pc.kvp_size, "cp_size": pc.cp_size, **{f: f in opts.device_flags for f in DEVICE_FLAGS}}
    if topks and all(expr.evaluate({**env, "index_topk": k}) for k in topks):
        return bound.max_bytes
    return None


def activation_peak(model: ModelSpec, pc: ParallelConfig, opts: MemoryOptions, seq_len: int, seqs: float) -> float:
    """The larger transient of a prefill chunk and of a decode step of `seqs` sequences."""
    return max(activation_peak_terms(model, pc, opts, seq_len, seqs).values())
