"""What each request keeps on a rank: the KV cache, the DSA indexer keys and the constant (linear-attention, SSM)
state, per layer, per request and for the sequences a rank holds."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from solver.specs.dtypes import KV16, KVFormat
from solver.memo import IdentityMemo
from solver.specs.layers.base import heads_split
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision

if TYPE_CHECKING:
    from solver.specs.profile_facts import HybridStateLayout, KVBlocks


def _primary(model: ModelSpec):
    return model._attention


def kv_bytes_per_token_layer(model: ModelSpec, kv: KVFormat, attn_tp: int = 1) -> float:
    """KV-cache bytes one token adds in one layer of the primary (full) attention type on one rank.

    GQA: K and V for this rank's KV heads. MLA: the compressed latent plus the rope key, one shared 'head'
    that attention TP does not shard. Per-layer figures for every layer type: `state_of_layers`.
    """
    a = _primary(model)
    return a.state(kv, attn_tp).per_token_bytes if a is not None else 0.0


def indexer_bytes_per_token_layer(model: ModelSpec, unquantised: bool = False) -> float:
    """DSA indexer key cache: index_head_dim FP8 values + one FP32 scale (132 B for V3.2); `unquantised` (the
    engine's CacheLayout.index_unquantised): the values in the activation dtype, no scale (256 B)."""
    a = _primary(model)
    return a.state(KV16, 1).index_bytes(unquantised) if a is not None else 0.0


@dataclass(frozen=True)
class CacheLayout:
    """How the engine lays each request's cache out on its ranks (its profile's layout fields, carried by
    MemoryOptions.cache_layout): the memory side's view of what the step costs read from Factors."""

    # every CP rank keeps each request's whole KV (FrameworkProfile.cp_replicates_kv_cache): CP does not divide it
    cp_replicates_kv: bool = False
    # indexer keys cached in the activation dtype without a scale (FrameworkProfile.indexer_keys_unquantised)
    index_unquantised: bool = False
    # every KVP rank keeps every token's indexer key (FrameworkProfile.kvp_replicates_indexer_keys)
    kvp_replicates_index: bool = False
    # a hybrid model's state in the KV pages of one pool (FrameworkProfile.hybrid_state.block_alignment): the
    # attention block raised to a multiple of this many tokens whose page holds one layer's state
    block_alignment: int | None = None
    # the same where the attention layers cache a latent (MLA), if larger (hybrid_state.latent_block_alignment)
    latent_block_alignment: int | None = None
    # a hybrid model's state in a pool of its own with this share of the cache memory (hybrid_state.
    # state_pool_share), the KV pool the rest
    state_pool_share: float | None = None
    # state pages / pool slots a running request holds per state layer (hybrid_state.state_pages, and
    # pages_per_draft for each draft token it verifies)
    state_pages: int = 1
    # state-pool slots a rank keeps beyond its requests', their draft states counted (hybrid_state.spare_slots)
    spare_slots: int = 0
    # the block's K half holds the SSM state, every page K + V + the conv state (hybrid_state.key_page_holds_ssm)
    key_page_holds_ssm: bool = False
    # requests verify draft tokens: the MTP layers are in the model the engine groups its pages over, on every
    # pipeline stage (block_alignment)
    drafting: bool = False
    # the KV block of tokens (FrameworkProfile.kv_blocks.tokens): each rank's share of a request's tokens in a
    # layer rounded up to whole blocks; and the blocks the pool keeps no request holds (kv_blocks.reserved)
    kv_block: int = 1
    reserved_blocks: int = 0


def hybrid_fields(hybrid: "HybridStateLayout | None", drafts: int = 0) -> dict:
    """CacheLayout's fields from the engine's HybridStateLayout (None: the seed's) for requests verifying `drafts`
    draft tokens a step."""
    if hybrid is None:
        return {}
    draft_pages = drafts * hybrid.pages_per_draft + (hybrid.pages_when_drafting if drafts else 0)
    return {"block_alignment": hybrid.block_alignment, "latent_block_alignment": hybrid.latent_block_alignment,
            "state_pool_share": hybrid.state_pool_share, "state_pages": hybrid.state_pages + draft_pages,
            # a spare slot keeps a request's draft states beside it (SGLang's intermediate pool: capped_reqs + 1)
            "spare_slots": hybrid.spare_slots * (1 + draft_pages),
            "key_page_holds_ssm": hybrid.key_page_holds_ssm, "drafting": drafts > 0}


def block_fields(blocks: "KVBlocks | None") -> dict:
    """CacheLayout's fields from the engine's KVBlocks (None: exact tokens, none reserved)."""
    return {} if blocks is None else {"kv_block": blocks.tokens, "reserved_blocks": blocks.reserved}


SEED_LAYOUT = CacheLayout()  # the seed's: CP and KVP shard every growing cache, indexer keys in the layer's format


@dataclass(frozen=True)
class StateBytes:
    """One request's state summed over layers, on one rank before CP / KVP token sharding."""

    kv: float  # growing KV (capped at the window for sliding / chunked layers)
    index: float  # DSA indexer keys
    constant: float  # per-request state that does not grow: linear-attention / SSM state, conv tails, image K/V


def state_of_layers(layers: list, kv_fmt: KVFormat, attn_tp: int, seq_len: float,
                    group: int | None = None, index_unquantised: bool = False, kv_block: int = 1,
                    shards: int = 1, index_shards: int = 1) -> StateBytes:
    """Per-request state of (layer, count) pairs holding `seq_len` tokens; `group`: the attention-TP group
    (ParallelConfig.attn_tp_group; None: attention TP), which splits the heads of the blocks KVP does not split;
    `index_unquantised`: the engine caches indexer keys in the activation dtype (State.index_bytes); `kv_block`:
    each of the `shards` (`index_shards` for the indexer keys) ranks splitting a layer's tokens holds its share
    in whole blocks of this many (the caller divides by the shards)."""
    group = group or attn_tp
    kv = idx = const = 0.0
    for layer, n in layers:
        for block in layer.blocks:
            st = block.state(kv_fmt, heads_split(block, attn_tp, group))
            held = st.tokens_held(seq_len)
            kv += n * st.per_token_bytes * in_blocks(held, shards, kv_block)
            idx += n * st.index_bytes(index_unquantised) * in_blocks(held, index_shards, kv_block)
            const += n * st.constant_bytes
    return StateBytes(kv, idx, const)


def in_blocks(tokens: float, shards: int, block: int) -> float:
    """`tokens` split over `shards` ranks, each share rounded up to whole blocks of `block` tokens, times the
    shards (block 1: the tokens as they are)."""
    return tokens if block == 1 else block * math.ceil(tokens / (shards * block)) * shards


def cached_tokens_per_layer_sum(model: ModelSpec, seq_len: int) -> float:
    """Sum over layers with a growing cache of the tokens each holds (windowed layers keep their window)."""
    total = 0.0
    for layer, n in model.layer_groups:
        for block in layer.blocks:
            st = block.state(KV16, 1)
            if st.grows:
                total += n * st.tokens_held(seq_len)
    return total


def _mtp_layers(model: ModelSpec, mtp_layers: int) -> list:
    """The MTP modules' layers (their caches count only when MTP is on)."""
    if not mtp_layers:
        return []
    return [(layer, 1) for module in model.mtp_modules[:mtp_layers] for layer in module]


# request_state per (model, attention TP, its group, token shards, KV bytes, length, MTP): the planner's memory
# tables ask for it per attention choice and sequences held, and it reads neither the batch nor the other knobs
_REQUEST_STATE = IdentityMemo(65_536)


def request_state(model: ModelSpec, pc: ParallelConfig, prec: Precision, seq_len: int,
                  mtp_layers: int = 0, kvp_splits_weights: bool = False,
                  layout: CacheLayout = SEED_LAYOUT) -> StateBytes:
    """One request's state on one rank: growing parts split by CP x KVP, constant parts by the attention-TP group
    only (attention TP, or TP x KVP where KVP reuses the TP ranks: `kvp_splits_weights`, the engine's layout).
    `layout`: the engine's cache layout: CP ranks each keeping the whole cache (only KVP splits it), indexer keys
    unquantised, or kept whole on every KVP rank (KVP does not split them)."""
    cp = 1 if layout.cp_replicates_kv else pc.cp_size
    shards, index_shards = cp * pc.kvp_size, cp * (1 if layout.kvp_replicates_index else pc.kvp_size)
    group = pc.attn_tp_group(kvp_splits_weights)

    def build() -> StateBytes:
        st = state_of_layers(model.layer_groups + _mtp_layers(model, mtp_layers), prec.kv_format, pc.attn_tp_size,
                             seq_len, group, layout.index_unquantised, layout.kv_block, shards, index_shards)
        return StateBytes(st.kv / shards, st.index / index_shards, st.constant)

    def engine() -> StateBytes:
        st = build()
        if layout.block_alignment is not None:
            ordered, held = _engine_layers(model, mtp_layers, layout.drafting)
            paged = shared_pages(ordered, prec.kv_format, pc.attn_tp_size, group, seq_len / shards,
                                 layout.block_alignment, layout.state_pages, layout.latent_block_alignment,
                                 layout.key_page_holds_ssm, held)
            return st if paged is None else StateBytes(paged.kv, st.index, paged.constant)
        if layout.state_pool_share is not None and st.kv > 0 and st.constant > 0:
            return state_pool(st, layout.state_pool_share, layout.state_pages)
        return st

    key = (pc.attn_tp_size, group, shards, index_shards, layout.index_unquantised, prec.kv_format, seq_len, mtp_layers,
           layout.block_alignment, layout.latent_block_alignment, layout.state_pool_share, layout.state_pages,
           layout.key_page_holds_ssm, layout.drafting, layout.kv_block)
    return _REQUEST_STATE.get((model,), key, engine)


def reserved_blocks(model: ModelSpec, pc: ParallelConfig, prec: Precision, mtp_layers: int = 0,
                    kvp_splits_weights: bool = False, layout: CacheLayout = SEED_LAYOUT) -> StateBytes:
    """The blocks a rank's KV pool keeps that no request holds (layout.reserved_blocks, vLLM's null block): each a
    block of tokens in every layer's KV and indexer keys on the rank. Not counted where a hybrid's state shares
    the pages (layout.block_alignment): its block and pages are shared_pages' own, of which one page a tensor
    would be the reserve (left out: under 1% of a request's pages at the hybrids' blocks of 1,000+ tokens)."""
    if not layout.reserved_blocks:
        return StateBytes(0.0, 0.0, 0.0)
    st = state_of_layers(model.layer_groups + _mtp_layers(model, mtp_layers), prec.kv_format, pc.attn_tp_size,
                         layout.kv_block, pc.attn_tp_group(kvp_splits_weights), layout.index_unquantised)
    if layout.block_alignment is not None and st.constant > 0:
        return StateBytes(0.0, 0.0, 0.0)
    return StateBytes(layout.reserved_blocks * st.kv, layout.reserved_blocks * st.index, 0.0)


def _engine_layers(model: ModelSpec, mtp_layers: int, drafting: bool) -> tuple[list, range]:
    """The whole model's layers in order, its MTP modules' after them (where `mtp_layers` or the requests draft),
    and the indices of those this rank holds: a pipeline stage's (pipeline.stage_origin) and, on the stage
    holding them, the MTP layers; all of them without PP."""
    from solver.estimate.pipeline import stage_origin
    origin = stage_origin(model)
    whole, start = origin if origin is not None else (model, 0)
    mtp = [layer for layer, _ in _mtp_layers(whole, mtp_layers or (whole.num_mtp_layers if drafting else 0))]
    ordered = list(whole.layers) + mtp
    return ordered, range(start, start + len(model.layers) + (len(mtp) if mtp_layers else 0))


def shared_pages(layers: list, kv_fmt: KVFormat, attn_tp: int, group: int, tokens: float, alignment: int,
                 state_pages: int, latent_alignment: int | None = None, key_page_holds_ssm: bool = False,
                 held: range | None = None) -> StateBytes | None:
    """One request's KV and state on a rank where both live in pages of one pool (vLLM 0.34.0's hybrid KV cache
    manager); None where the layers are not hybrid (no state, or no growing cache). `layers`: the whole model's
    layers in order; `held`: the indices of those on this rank (a pipeline stage's; None: all).

    The attention block is the least multiple of `alignment` tokens whose page (block x the KV one token adds
    to one layer) holds the largest layer state (platforms/interface.py _align_hybrid_block_size: block =
    a x ceil(state / (a x kv_token))); every state layer's page is padded to it. The engine groups the whole
    model's layers (every pipeline stage's specs merged: v1/core/kv_cache_planning.py get_global_kv_cache_groups)
    by type, full attention (the MTP layers' too) and state, into groups of the smallest type's layer count, or
    the largest's where it is under 1.5 x the smallest, a type's i-th group its layers[i::groups]
    (_get_kv_cache_groups_uniform_page_size). A request holds ceil(tokens / block) blocks in each attention
    group (the window's tokens for a windowed layer) and `state_pages` in each state group
    (MambaSpec.max_memory_usage_bytes), and a block is one page in each of the rank's tensors: as many as the
    most layers of one group the rank holds (the groups projected on a stage: _project_kv_cache_groups_to_worker,
    _get_kv_cache_bytes_per_block). Attention layers caching a latent (a kv_lora_rank: MLA) align to
    `latent_alignment` where it is larger (the MLA decode kernels' block multiple).

    `key_page_holds_ssm` (vllm-ascend 0.23.0.post1 patch/platform/patch_mamba_config.py): the block is the least
    multiple of `alignment` whose K half (block x one token's K: half a GQA token's K + V, an MLA token's latent
    without the rope key) holds the larger state part (the SSM state; a conv-only layer's conv state), and every
    page is block x the token's K + V plus the smaller part (the conv state; none for a state without one):
    worker/model_runner_v1.py lays a state page out as [conv | SSM | padding] over an attention page's
    [padding | K | V]. The engine asserts K x block equals the SSM state exactly."""
    grow, const = [], []  # (index, per-token bytes, tokens held) / (index, constant bytes, larger part, conv part)
    latent = False
    key_page = 0.0  # one token's K in one layer (key_page_holds_ssm)
    for i, layer in enumerate(layers):
        for block in layer.blocks:
            st = block.state(kv_fmt, heads_split(block, attn_tp, group))
            if st.grows and st.per_token_bytes > 0:
                grow.append((i, st.per_token_bytes, st.tokens_held(tokens)))
                rank = getattr(block, "kv_lora_rank", 0)
                latent = latent or rank > 0
                key_page = max(key_page, rank * kv_fmt.element_bytes if rank else st.per_token_bytes / 2)
            if st.constant_bytes > 0:
                parts = [p for p in (st.ssm_bytes, st.conv_bytes) if p > 0]
                const.append((i, st.constant_bytes, max(parts), min(parts) if st.conv_bytes > 0 else 0.0))
    held = range(len(layers)) if held is None else held
    if not grow or not const or not any(g[0] in held for g in grow + const):
        return None
    token_page = max(g[1] for g in grow)
    if latent and latent_alignment:
        alignment = max(alignment, latent_alignment)
    if key_page_holds_ssm:
        block = alignment * math.ceil(max(c[2] for c in const) / (alignment * key_page))
        page = block * token_page + max(c[3] for c in const)
    else:
        block = alignment * math.ceil(max(c[1] for c in const) / (alignment * token_page))
        page = block * token_page
    size = min(len(grow), len(const))
    if max(len(grow), len(const)) < 1.5 * size:
        size = max(len(grow), len(const))
    grow_groups, const_groups = _strided(grow, size), _strided(const, size)
    tensors = max(sum(1 for m in g if m[0] in held) for g in grow_groups + const_groups)
    kv_blocks = sum(max(math.ceil(m[2] / block) for m in g) for g in grow_groups)
    return StateBytes(kv_blocks * tensors * page, 0.0, len(const_groups) * state_pages * tensors * page)


def _strided(layers: list, size: int) -> list[list]:
    """A type's layers in groups of `size`, the i-th of n groups its layers[i::n] (the last short ones padded)."""
    n = math.ceil(len(layers) / size)
    return [layers[i::n] for i in range(n)]


def state_pool(st: StateBytes, share: float, slots: int) -> StateBytes:
    """One request's share of a KV pool and a state pool of fixed sizes (SGLang 0.5.23's HybridReqToTokenPool:
    the state pool `share` of the cache memory, `slots` state slots a running request): the pools a batch needs
    are those that fit both, so a request costs its KV over the KV pool's share or its slots over the state
    pool's, whichever is more, split between the pools at the engine's ratio."""
    need = max(st.kv / (1 - share), slots * st.constant / share)
    return StateBytes(need * (1 - share), st.index, need * share)


def unpooled_state(model: ModelSpec, pc: ParallelConfig, prec: Precision, seq_len: int, mtp_layers: int = 0,
                   kvp_splits_weights: bool = False, layout: CacheLayout = SEED_LAYOUT) -> StateBytes:
    """One request's KV and state before the engine's hybrid pools (no page alignment, no state pool): what the
    pools are sized from, and what `memory` shows beside what they hold."""
    return request_state(model, pc, prec, seq_len, mtp_layers, kvp_splits_weights,
                         replace(layout, block_alignment=None, state_pool_share=None))


def _bare(model: ModelSpec, pc: ParallelConfig, prec: Precision, seq_len: int, mtp_layers: int,
          kvp_splits_weights: bool, layout: CacheLayout) -> StateBytes | None:
    """unpooled_state where the engine keeps a state pool of its own for this model; None where it does not (no
    hybrid of growing KV and constant state, or shared pages)."""
    if layout.state_pool_share is None:
        return None
    bare = unpooled_state(model, pc, prec, seq_len, mtp_layers, kvp_splits_weights, layout)
    return bare if bare.kv > 0 and bare.constant > 0 else None


def spare_pool(model: ModelSpec, pc: ParallelConfig, prec: Precision, seqs: int, seq_len: int,
               mtp_layers: int = 0, kvp_splits_weights: bool = False,
               layout: CacheLayout = SEED_LAYOUT) -> float:
    """Bytes the two pools of a rank holding `seqs` requests take beyond `seqs` x state_pool's figure, for the
    state pool's spare slots (layout.spare_slots; SGLang 0.5.23 kv_cache_configurator.py _handle_max_mamba_cache:
    max_mamba_cache_size = (budget - per_slot) // per_slot, the pool's padding slot): the pools need the larger
    of the requests' KV over the KV share and their slots plus the spare over the state share, so the spare
    costs where the state pool binds, or comes within a spare of binding, and nothing where the KV pool does."""
    bare = _bare(model, pc, prec, seq_len, mtp_layers, kvp_splits_weights, layout) if layout.spare_slots else None
    if bare is None:
        return 0.0
    share = layout.state_pool_share
    kv_need = seqs * bare.kv / (1 - share)
    state_need = seqs * layout.state_pages * bare.constant / share
    spare = layout.spare_slots * bare.constant / share
    return max(kv_need, state_need + spare) - max(kv_need, state_need)


def state_pool_binds(model: ModelSpec, pc: ParallelConfig, prec: Precision, seq_len: int, mtp_layers: int = 0,
                     kvp_splits_weights: bool = False, layout: CacheLayout = SEED_LAYOUT) -> bool | None:
    """Whether the engine's state pool, not its KV pool, bounds the requests a rank holds at `seq_len` tokens
    (state_pool: slots x state over the state share against the KV over the rest); None where the engine keeps
    no state pool of its own for this model (no hybrid of growing KV and constant state, or shared pages)."""
    bare = _bare(model, pc, prec, seq_len, mtp_layers, kvp_splits_weights, layout)
    if bare is None:
        return None
    share = layout.state_pool_share
    return layout.state_pages * bare.constant / share >= bare.kv / (1 - share)


def held_per_replica(batch: float, pc: ParallelConfig) -> int:
    """Sequences the busiest attention replica holds: a request is not split across replicas, so a batch below
    the replica count still leaves one whole sequence on a rank."""
    return math.ceil(batch / pc.attn_replicas)


def cache_per_rank(model: ModelSpec, pc: ParallelConfig, prec: Precision, batch: float, seq_len: int,
                   mtp_layers: int = 0, layout: CacheLayout = SEED_LAYOUT,
                   kvp_splits_weights: bool = False) -> tuple[float, float, float]:
    """(KV bytes, indexer bytes, sequences per rank). CP and KVP shard tokens (CP not where the engine's CP ranks
    each keep the whole cache, KVP not the indexer keys where its ranks each keep them all: `layout`); TP shards
    GQA heads only; the KV pool's share of a state pool's spare slots (spare_pool) and the blocks it reserves
    (reserved_blocks). Constant per-request state (linear / SSM layers): `state_per_rank`."""
    seqs = held_per_replica(batch, pc)
    st = request_state(model, pc, prec, seq_len, mtp_layers, kvp_splits_weights, layout)
    spare = spare_pool(model, pc, prec, seqs, seq_len, mtp_layers, kvp_splits_weights, layout)
    null = reserved_blocks(model, pc, prec, mtp_layers, kvp_splits_weights, layout)
    return (seqs * st.kv + spare * (1 - (layout.state_pool_share or 0.0)) + null.kv, seqs * st.index + null.index,
            seqs)


def state_per_rank(model: ModelSpec, pc: ParallelConfig, prec: Precision, batch: float, seq_len: int,
                   mtp_layers: int = 0, kvp_splits_weights: bool = False, layout: CacheLayout = SEED_LAYOUT) -> float:
    """Constant per-request state (linear attention, SSM) of the sequences a rank holds, under the engine's KVP
    layout (`kvp_splits_weights`: MemoryOptions.kvp_splits_attention_weights) and its hybrid state allocation
    (`layout`), with the state pool's share of its spare slots (spare_pool)."""
    seqs = held_per_replica(batch, pc)
    spare = spare_pool(model, pc, prec, seqs, seq_len, mtp_layers, kvp_splits_weights, layout)
    return (seqs * request_state(model, pc, prec, seq_len, mtp_layers, kvp_splits_weights, layout).constant
            + spare * (layout.state_pool_share or 0.0))
