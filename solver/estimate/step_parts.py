"""The parts a forward step is costed from, shared by the step-cost model (step.py) and the planner's cached
module sums (step_sums.py): where a decode step runs (decode_layout), which blocks a step costs (selected_blocks,
block_modules, canonical_block), each block's ops and collectives memoised per kit (block_cost), and the
embedding's, LM head's and MTP draft passes' collectives (head_comms, draft_records), and the one-token work of the
draft passes after the first (draft_work).
"""
from __future__ import annotations

from dataclasses import replace

from solver.estimate.compute import CommCost, Factors, Kit, OpCost, Work, collective, group_tokens, head_ops
from solver.memo import IdentityMemo
from solver.specs.hardware import Hardware
from solver.specs.layers.base import ACT_BYTES, block_counts
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision

# ops a KV gather on the second stream can hide behind (the attention core of the same layer)
HIDING_OPS = ("attention_core", "indexer_score")


def hiding_s(name: str, compute_s: float, memory_s: float) -> float:
    """Seconds a KV gather on the second stream runs beside op `name`: a hiding op's whole kernel, its compute
    or its memory traffic, whichever it waits for (a decode's attention core reads the KV far longer than it
    computes); 0 for any other op. Its FLOP time alone would let faster FLOPs lengthen a memory-bound step: the
    op stays as long, the cover shrinks."""
    return max(compute_s, memory_s) if name in HIDING_OPS else 0.0


def head_comms(model: ModelSpec, hw: Hardware, pc: ParallelConfig, f: Factors, w: Work) -> list[CommCost]:
    return _head_colls(model, pc, w, lambda *a: collective(hw, f, *a), f.logits_exchange)


def kit_head_comms(model: ModelSpec, kit: Kit) -> list:
    """head_comms as `kit`'s records."""
    return _head_colls(model, kit.pc, kit.w, kit.coll, kit.f.logits_exchange)


def _head_colls(model: ModelSpec, pc: ParallelConfig, w: Work, coll, logits_exchange: str) -> list:
    """The embedding's and LM head's collectives, made by `coll` (a Kit's record maker); the rows the embedding
    returns and the hidden states the head reads are the embedding's width (narrower than the stack's in OPT-350m)."""
    h, v = model.embed_width, model.vocab_size
    out = []
    e = pc.embed_tp_size
    lt = pc.lmhead_tp_size
    u_logit = group_tokens(pc, w, lt, w.logits_tokens) / lt
    if e > 1:  # vocab-parallel lookup: partial rows summed over the group
        out.append(coll("embed_allreduce", "embedding", "all_reduce", e, group_tokens(pc, w, e) * h * ACT_BYTES))
    if w.cp_copies > 1:
        # CP ranks keeping whole copies (Work.cp_copies): before sampling, each step all-gathers the last hidden
        # states of every rank's decoded tokens (padded to the busiest rank's) over the CP group, whose ranks
        # sit one attention group apart (vLLM 0.34.0 v1/worker/gpu/pcp_manager.py restore_hidden_states: the
        # PCP group's all_gather, on the step's stream, before the LM head)
        out.append(coll("cp_hidden_allgather", "lm_head", "all_gather", w.cp_copies,
                        w.cp_copies * w.new_tokens * h * ACT_BYTES, pc.attn_group_size))
    if lt > 1:
        # the vocab-parallel head computes every row of the group for its 1/lt of the vocabulary, then either
        # all-gathers the logits in the head's output dtype, so every rank holds the group's rows x the whole
        # vocabulary (logits_exchange all_gather: vLLM 0.34.0 model_executor/layers/logits_processor.py
        # _gather_logits: tensor_model_parallel_all_gather, use_all_gather True on every platform; sglang 0.5.23
        # layers/logits_processor.py _get_logits: do_tensor_parallel_all_gather), or sends each rank its own rows'
        # slices (all_to_all: vllm-ascend 0.23.0 ops/vocab_parallel_embedding.py _get_logits_lmheadtp), each
        # rank then holding its rows x the whole vocabulary. Its hidden rows are gathered
        # first (sglang's _gather_dp_attn_hidden_states under attention DP; SP and CP ranks hold their own rows
        # too); on attention TP x KVP ranks, which share them after the o_proj all-reduce, that gather is not run
        # and is charged all the same: the planner's tables cost the head beside the layout's group size, where
        # KVP and SP read alike (plan.table_inputs.outside), and it is h / V of the logits' gather
        out.append(coll("lmhead_gather", "lm_head", "all_gather", lt, lt * u_logit * h * ACT_BYTES))
        if logits_exchange == "all_to_all":
            out.append(coll("logits_exchange", "lm_head", "all_to_all", lt, u_logit * v * ACT_BYTES))
        else:
            out.append(coll("logits_gather", "lm_head", "all_gather", lt, lt * u_logit * v * ACT_BYTES))
    return out


def decode_layout(pc: ParallelConfig, w: Work, copies: bool = False, repeats: bool = False,
                  cp_repeats: bool = False, cp_shards: bool = False) -> tuple[ParallelConfig, Work]:
    """Where a decode step runs under CP. CP splits the tokens of a prompt (prefill); once prompts are in the
    cache, the CP group's ranks decode as attention-DP replicas, each request on one rank with its whole KV
    (the seed: CP is the prefill add-on, KVP the decode-time KV split, and `kvp_size` is its own knob). The CP
    group's sequences spread over its ranks, so the busiest rank decodes max(1, sequences / cp) of them.
    Evidence: the cann-recipes V3.2 decode config (cp_size = W = 128, batch 256 at 64K, MTP3) publishes TPOT
    19.84 ms (references/v32-d128-q.yaml), i.e. a step of 29-48 ms for 1.44-2.44 tokens per step. Splitting
    every request's KV over the 128 ranks would all-gather the queries of all 1024 tokens (128 heads x 576
    bf16 values, 151 MB per layer, 9.2 GB over 61 layers) to every rank: ~57 ms at A3's 161 GB/s effective UB
    rate, more than the whole step. `copies`: the engine's CP ranks each keep every request's whole cache
    (Factors.cp_replicates_kv_cache, vLLM's prefill context parallel), so each step they all-gather what they
    decoded: the work carries the group (Work.cp_copies: the layers' K/V gather, the hidden-state gather before
    sampling) and every rank computes the logits of the whole replica's tokens (vLLM 0.34.0
    v1/worker/gpu/pcp_manager.py: restore_for_sampling gathers the hidden states back to the global batch on
    every PCP rank). `repeats`: the engine's SP ranks each decode the replica's whole batch
    (Factors.sp_decode_repeats_batch: SGLang's attention CP, whose decode "holds the full DP slot on every CP
    rank", sglang 0.5.23 layers/dp_attention.py dp_reduce_scatter_tensor): the SP ranks are laid out as
    replicas that repeat one batch (repeat_layout). `cp_repeats`: the engine's CP ranks do the same
    (Factors.cp_decode_repeats_batch: SGLang's --attn-cp-size with --enable-prefill-cp, the same decode as its
    DSA form above), so its CP ranks are laid out as repeating replicas too, not as owners. `cp_shards`: the
    engine's CP ranks each keep 1/cp of every request's cache (Factors.cp_decode_shards_kv, vllm-ascend's PCP)
    and each run the whole batch: laid out as repeating replicas whose attention reads 1/cp of the keys
    (Work.kv_shards) and merges the partial outputs over the group. Per-replica work in, per-rank work and the
    DP layout out; prefill, and cp 1 without repeating SP ranks, pass through."""
    knobs = tuple(k for k, on in (("attn_sp_size", repeats), ("cp_size", cp_repeats or cp_shards))
                  if on and getattr(pc, k) > 1)
    if w.phase != "decode" or (pc.cp_size == 1 and not knobs):
        return pc, w
    key = (pc.key(), w, copies, knobs, cp_shards)
    hit = _DECODE_LAYOUTS.get(key)
    if hit is not None:
        return hit
    if len(_DECODE_LAYOUTS) >= BLOCK_CACHE_MAX:
        _DECODE_LAYOUTS.clear()
        _DP_LAYOUTS.clear()
        _DECODE_WORKS.clear()
    if knobs:
        shards = pc.cp_size if cp_shards else 1
        pc, w = repeat_layout(pc, w, knobs)
        if shards > 1:
            w = replace(w, kv_shards=shards)
    hit = _DECODE_LAYOUTS[key] = _decode_layout(pc, w, copies) if pc.cp_size > 1 else (pc, w)
    return hit


def engine_decode_layout(pc: ParallelConfig, w: Work, f: Factors) -> tuple[ParallelConfig, Work]:
    """decode_layout in the framework's CP / SP decode forms (its Factors): the one place that maps them."""
    return decode_layout(pc, w, f.cp_replicates_kv_cache, f.sp_decode_repeats_batch, f.cp_decode_repeats_batch,
                         f.cp_decode_shards_kv)


def repeat_layout(pc: ParallelConfig, w: Work, knobs: tuple[str, ...] = ("attn_sp_size",)
                  ) -> tuple[ParallelConfig, Work]:
    """A decode step whose SP (or CP: `knobs`) ranks each run the attention replica's whole batch (decode_layout's
    `repeats`, `cp_repeats`). In
    sglang 0.5.23 the CP strategies shard only extend batches (layers/cp/zigzag.py and interleave.py can_apply:
    forward_mode.is_context_parallel_extend; DSA: layers/attention/dsa/utils.py dsa_use_prefill_cp), so a decode
    batch reaches every CP rank whole, and each runs the attention with its weights whole
    (layers/cp/cp_decode_attn_tp.py: head slicing over CP only under the opt-in --enable-cp-decode-attn-tp, for
    DeepSeek-V4 and GLM-5); the MoE gather takes one CP rank's rows (layers/dp_attention.py
    _dp_gather_via_all_reduce), and the combine hands every CP rank the whole slot back
    (dp_reduce_scatter_tensor). So each SP rank is laid out as an attention replica (sp 1: no token split, no
    K/V gather) with the same work, and the groups spanning replicas see the distinct replicas' tokens only
    (Work.busy_replicas: the MoE counts a token once)."""
    busy = w.busy_replicas if w.busy_replicas > 0 else float(pc.attn_replicas)
    return pc.model_copy(update=dict.fromkeys(knobs, 1)), replace(w, busy_replicas=busy)


def _decode_layout(pc: ParallelConfig, w: Work, copies: bool) -> tuple[ParallelConfig, Work]:
    dp = _DP_LAYOUTS.get(pc.key())
    if dp is None:
        dp = _DP_LAYOUTS[pc.key()] = pc.model_copy(update={"cp_size": 1})
    return dp, _decode_work(pc.cp_size, pc.attn_replicas, w, copies)


def _decode_work(cp: int, replicas: int, w: Work, copies: bool = False) -> Work:
    """The busiest rank's work of a decode step of `w` under CP `cp` with `replicas` attention replicas (what
    the decode layout reads of the config; `copies`: decode_layout's), memoised: the configs of every group
    choice beside one layout (under PP, where the tables cost each stage at its own layout) ask for the same
    one."""
    key = (cp, replicas, w, copies)
    hit = _DECODE_WORKS.get(key)
    if hit is not None:
        return hit
    spread = min(float(cp), max(1.0, w.sequences))  # ranks of the group that hold a sequence
    busy = (w.busy_replicas if w.busy_replicas > 0 else replicas) * spread
    # ranks keeping whole copies sample the whole replica's tokens; ranks sharding the cache their own only
    logits, cp_copies = (w.logits_tokens, cp) if copies else (w.logits_tokens / spread, 1)
    hit = _DECODE_WORKS[key] = replace(w, new_tokens=w.new_tokens / spread, sequences=w.sequences / spread,
                                       logits_tokens=logits, cp_copies=cp_copies,
                                       busy_replicas=busy if spread < cp or w.busy_replicas > 0 else 0.0)
    return hit


# decode_layout per (config, work): the planner's tables ask for the same one for every block and group (both
# frozen, so the pair handed out is shared)
_DECODE_LAYOUTS: dict[tuple, tuple[ParallelConfig, Work]] = {}
_DP_LAYOUTS: dict[tuple, ParallelConfig] = {}  # config key -> the config with cp 1 (far fewer than the pairs)
_DECODE_WORKS: dict[tuple, Work] = {}  # _decode_work

# One block's ops and collectives for one (hardware, parallel config, precision, factors, work): the planner's
# tables and pipeline stages ask for the same block under the same kit many times (every stage of a pipeline
# holds the same layer objects; a stage count repeats each). Keyed by identity of the block and the kit's
# objects, which the entry keeps alive so an id is never reused while its entry exists.
_BLOCK_CACHE: dict[tuple, tuple] = {}
BLOCK_CACHE_MAX = 200_000


def _pc_key(pc: ParallelConfig) -> tuple:
    return pc.key()


# Equal blocks cost the same (a block is frozen data; its ops read only its fields and the kit), and the model
# already adds equal blocks up (base.block_counts). A pipeline stage's stack holds other, equal layer objects
# than the whole model's (its first layer of each kind), so the caches below key a block by the first equal
# one met: an id is looked up once per object, the value hash only then.
_CANON = IdentityMemo(65_536)  # block object -> the canonical equal block
_BY_VALUE: dict[object, object] = {}


def canonical_block(block):
    """The first block met that equals `block` (the caches' key: equal blocks share their records)."""
    def first_equal():
        if len(_BY_VALUE) >= 65_536:
            _BY_VALUE.clear()
        return _BY_VALUE.setdefault(block, block)

    return _CANON.get((block,), None, first_equal)


def _records(block, kit: Kit) -> tuple[list[OpCost], list[CommCost]]:
    ops = block.ops(kit)
    hide = sum(hiding_s(o.name, o.compute_s, o.memory_s) for o in ops)
    return ops, block.comms(kit, hide)


def _kit_key(block, kit: Kit, pc_key: tuple | None) -> tuple:
    return (id(block), id(kit.hw), id(kit.prec), id(kit.f), pc_key or _pc_key(kit.pc), kit.w)


def block_cost(block, kit: Kit, pc_key: tuple | None = None) -> tuple[list[OpCost], list[CommCost]]:
    """(ops, collectives) of one instance of `block`; its KV gather hides behind its own attention core.
    `pc_key`: kit.pc.key() when the caller has it already."""
    block = canonical_block(block)
    key = _kit_key(block, kit, pc_key)
    hit = _BLOCK_CACHE.get(key)
    if hit is not None and hit[0] is block and hit[1] is kit.hw and hit[2] is kit.prec and hit[3] is kit.f:
        return hit[4], hit[5]
    ops, comms = _records(block, kit)
    if len(_BLOCK_CACHE) >= BLOCK_CACHE_MAX:
        _BLOCK_CACHE.clear()
    _BLOCK_CACHE[key] = (block, kit.hw, kit.prec, kit.f, ops, comms)
    return ops, comms


_MODULES: dict[int, tuple[object, frozenset[str]]] = {}


def block_modules(block) -> frozenset[str]:
    """The modules a block's parameters declare (cached per block object)."""
    hit = _MODULES.get(id(block))
    if hit is not None and hit[0] is block:
        return hit[1]
    out = frozenset(sh.module for sh in block.shares())
    _MODULES[id(block)] = (block, out)
    return out


_SELECTED: dict[tuple, tuple] = {}


def selected_blocks(model: ModelSpec, mtp_layers: int, attention_only: bool, modules: frozenset[str] | None, phase: str
              ) -> tuple[list[tuple[object, float]], bool, bool, list[tuple[object, float]]]:
    """What a step costs: the (block, count) pairs at the step's tokens, whether the embedding / LM head,
    whether the MTP draft heads, and the (block, count) pairs of the MTP draft passes that run one token per
    sequence (draft_work; cached per model and question)."""
    key = (id(model), mtp_layers, attention_only, modules, phase)
    hit = _SELECTED.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]

    def wanted(pairs: list) -> list[tuple[object, float]]:
        return [(block, n) for block, n in pairs
                if not (attention_only and block.role != "mixer")
                and not (modules is not None and not (block_modules(block) & modules))]

    blocks = model.block_groups
    one_token: list = []
    if mtp_layers and model.mtp_modules:
        # N draft passes through the MTP module: the first runs over the tokens the step verified (the draft
        # model's extend over the accepted ones, padded to all N + 1 per sequence), the other N - 1 over the one
        # token each sequence drafted last (SGLang eagle_worker_v2: _draft_extend_for_decode over
        # num_draft_tokens per request, then draft_forward's num_steps - 1 forwards of one token per request)
        blocks = blocks + block_counts([(layer, 1) for layer in model.mtp_modules[0]])
        if phase == "decode" and mtp_layers > 1:
            one_token = wanted(block_counts([(layer, mtp_layers - 1) for layer in model.mtp_modules[0]]))
    chosen = wanted(blocks)
    head = not attention_only and (modules is None or bool(modules & {"embedding", "lm_head"}))
    # each of the `mtp_layers` sequential draft passes ends in the shared lm_head over one token per
    # sequence: its weights are read again every pass (~0.5 ms per pass for DeepSeek's 1.85 GB bf16 head
    # on one H200 rank)
    draft = (not attention_only and bool(mtp_layers) and phase == "decode"
             and (modules is None or "lm_head" in modules))
    out = (chosen, head, draft, one_token)
    if len(_SELECTED) >= 4096:
        _SELECTED.clear()
    _SELECTED[key] = (model, out)
    return out


def draft_work(w: Work) -> Work:
    """The work of an MTP draft pass after the first: one token per sequence of decode step `w` (its layout, its
    context), sampled where the step samples its tokens: one logit per sequence, on each of the CP ranks keeping
    whole copies (Work.cp_copies: decode_layout's `copies`). Non-decreasing in what the step reads (the planner's
    floors rely on it): not the step's logits per new token, which falls as its tokens grow."""
    return replace(w, new_tokens=w.sequences, logits_tokens=w.sequences * max(1, w.cp_copies))


# the head ops a draft pass runs: each MTP module collapses its hyper-connection streams with its own head
# (params.py: SGLang's DeepseekV4ModelNextN hc_head) before the shared LM head
DRAFT_HEAD_OPS = ("hc_head", "lm_head")


def draft_records(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work
                   ) -> tuple[list[OpCost], list[CommCost]]:
    """One MTP draft pass's LM head: one token per sequence, through the MTP module's own hyper-connection head
    first where the model has one (DRAFT_HEAD_OPS)."""
    dw = draft_work(w)
    return ([o for o in head_ops(model, hw, pc, prec, f, dw) if o.name in DRAFT_HEAD_OPS],
            [c for c in head_comms(model, hw, pc, f, dw) if c.module == "lm_head"])
