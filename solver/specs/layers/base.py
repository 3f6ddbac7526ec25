"""What every layer block answers, and the records it answers with.

A model is an ordered stack of `Layer`s; a layer is a tuple of blocks (a mixer, an FFN, or both; LongCat's
shortcut layers carry a dense FFN and an MoE beside one mixer). Each block type lives in its own module and
answers the same questions:

  shares()          its parameters, per module, with the rule that splits each part ("tp", "kv_heads", "none")
                    and the parallel knob that sets the split degree
  state(kv, split)
                    what one request keeps between steps: bytes per token that grow with the sequence
                    (capped by a window for sliding / chunked layers) and constant bytes (linear / SSM state, conv
                    tails, a cross-attention layer's image K/V); `split`: the ranks splitting its heads (heads_split)
  ops(cx)           FLOPs and bytes per phase, as OpCost records made by the estimator's kit `cx`
  comms(cx, hide_s) its collectives, as CommCost records made by `cx`
  activation(pc, tokens, split)
                    the largest transient it holds in a forward over `tokens` tokens (`split` as for state)

The estimator passes the kit (hardware, parallel config, precision, factors, work, and the record makers), so
the formulas live here and the timing lives in estimate/: specs never import estimate (data flows one way).
"""
from __future__ import annotations

from abc import ABC, abstractmethod

from dataclasses import dataclass
from functools import wraps
from typing import TYPE_CHECKING, Any, Callable, Protocol, TypeVar

from solver.specs.dtypes import KVFormat
from solver.memo import IdentityMemo
from solver.specs.knobs import SPLIT_KNOBS

if TYPE_CHECKING:
    from solver.specs.layers.hyper import HyperConnections

ACT_BYTES = 2  # bf16 activations between kernels

# Knobs a module's "tp" parts follow. "moe_tp_size" splits routed experts over the whole world (E/EP experts
# per rank, each split moe_tp ways); "shared_experts_tp" is the framework's choice for shared experts
# (MemoryOptions.shared_experts_knob, dense_tp by default); None = replicated.
KNOB_NAMES = SPLIT_KNOBS

R = TypeVar("R")


def per_object(method: Callable[..., R]) -> Callable[..., R]:
    """A method of a frozen spec object, computed once per (object, positional arguments): a block's parts and
    per-request state follow from its fields and the arguments alone, and the estimator and the memory model
    ask for them on every costing (an IdentityMemo per method: keyed by the object's identity)."""
    store = IdentityMemo(4096)

    @wraps(method)
    def once(self: object, *args: Any, **kwargs: Any) -> R:
        if kwargs:  # keyword calls are not remembered (none of the estimator's)
            return method(self, *args, **kwargs)
        return store.get((self,), args, lambda: method(self, *args))

    return once


@dataclass(frozen=True)
class Part:
    name: str
    params: int
    split: str = "tp"  # "tp" | "kv_heads" | "none"
    heads: int = 0  # for "kv_heads": the group splits up to this many heads, then replicates them
    dtype: str | None = None  # a format the engine holds it in whatever its group's (fp32 maps); None: the group's

    def degree(self, n: int) -> int:
        if self.split == "tp":
            return n
        if self.split == "kv_heads":
            return max(1, min(n, self.heads))
        return 1


@dataclass(frozen=True)
class Share:
    """One module's parameters inside one block."""

    module: str  # report / planner module name: attention, o_proj, linear_attention, ssm, dense_ffn, ...
    group: str  # precision group: attention | dense | experts | embedding | lm_head | norm
    knob: str | None  # the knob whose size splits the "tp" parts (KNOB_NAMES), None = replicated
    parts: tuple[Part, ...]
    active: float | None = None  # parameters one token touches (None = all of them)

    @property
    def params(self) -> int:
        return sum(p.params for p in self.parts)

    @property
    def active_params(self) -> float:
        return float(self.params) if self.active is None else self.active


@dataclass(frozen=True)
class State:
    """Per-request state one block keeps, on one rank before CP/KVP token sharding."""

    per_token_bytes: float = 0.0  # KV bytes per cached token
    window: int | None = None  # tokens kept at most (sliding / chunked); None = the whole sequence
    index_per_token_bytes: float = 0.0  # DSA indexer keys per cached token, in the layer's own format
    constant_bytes: float = 0.0  # recurrent / conv state, independent of the sequence length
    # of constant_bytes, the convolution tail (the rest: the recurrent / SSM state), for engines that page the two
    # apart (HybridStateLayout.key_page_holds_ssm)
    conv_bytes: float = 0.0
    # the index keys per cached token where an engine caches them unquantised (dsa.Indexer.cached_bytes); None:
    # the layer's own format under every engine
    index_unquantised_per_token_bytes: float | None = None

    @property
    def ssm_bytes(self) -> float:
        """The recurrent / SSM part of constant_bytes (the seed counts the parts' sum)."""
        return self.constant_bytes - self.conv_bytes

    def index_bytes(self, unquantised: bool) -> float:
        """Index key bytes per cached token as the engine caches them (`unquantised`:
        FrameworkProfile.indexer_keys_unquantised)."""
        if unquantised and self.index_unquantised_per_token_bytes is not None:
            return self.index_unquantised_per_token_bytes
        return self.index_per_token_bytes

    @property
    def grows(self) -> bool:
        return self.per_token_bytes > 0 or self.index_per_token_bytes > 0

    def tokens_held(self, seq_len: float) -> float:
        return min(seq_len, self.window) if self.window else seq_len


NO_STATE = State()


def prior_tokens(w: Any) -> float:
    """Mean tokens each sequence of a prefill step held before the step's own (its earlier chunks): the step's
    n new tokens per sequence sit at positions prior + 1 .. prior + n, `context` their mean."""
    if w.sequences <= 0:
        return 0.0
    n = max(1.0, w.new_tokens / w.sequences)
    return max(0.0, max(w.context, 1.0) - (n + 1) / 2)


def prefill_read_tokens(w: Any, window: float | None = None, chunked: bool = False) -> float:
    """Tokens whose cached entries a prefill step's attention reads from HBM, counted per layer: its new tokens'
    (each K/V tile read once as the kernel walks it) and each sequence's prior ones (prior_tokens: a prefix found
    in the prefix cache), read once per sequence; a sliding `window` reads the last `window` of them, a chunked
    one those of the first new token's chunk (prior mod chunk). Multiply by the cache's bytes per token per rank
    for bytes. The prior count is whole tokens (Workload.prompt_tokens floors it), so it is rounded: a fresh
    prompt adds exactly 0."""
    prior = float(round(prior_tokens(w)))
    if window:
        prior = prior % window if chunked else min(prior, float(window))
    return w.new_tokens + w.sequences * prior


def heads_split(block: "Block", attn_tp: int, group: int) -> int:
    """Ranks splitting `block`'s heads, its per-request state and its transients: attention TP for a block whose
    keys KVP splits (Block.kvp_splits_keys; KVP splits its cache by tokens instead), else `group`, the ranks
    splitting the attention weights (ParallelConfig.attn_tp_group): attention TP under the seed's KVP, whose
    ranks repeat such a block; TP x KVP where the engine builds the model at TP = attn_tp x kvp and its KVP only
    stripes the KV of the layers it splits (vLLM -dcp: linear attention, SSM and conv mixers run at TP)."""
    return attn_tp if block.kvp_splits_keys else group


class CostKit(Protocol):
    """What the estimator hands a block to cost itself (estimate.compute.Kit implements it)."""

    hw: Any
    pc: Any
    prec: Any
    f: Any
    w: Any

    @property
    def attn_tp_group(self) -> int:
        """Ranks splitting the attention weights and projections (ParallelConfig.attn_tp_group under the
        framework's KVP layout)."""
        ...

    @property
    def oproj_shards(self) -> int:
        """Ranks splitting o_proj (ParallelConfig.oproj_split under the framework's KVP layout)."""
        ...

    def op(self, name: str, module: str, flops: float, nbytes: float, peak: float, eff: float, kernels: float,
           shape_eff: float = 1.0) -> Any: ...

    def op_seconds(self, flops: float, nbytes: float, peak: float, eff: float) -> float:
        """The time `op` would give FLOPs and bytes, less its kernels' fixed cost: to compare two forms of one op."""
        ...

    def coll(self, name: str, module: str, primitive: str, n: int, nbytes: float, stride: int = 1,
             hide_s: float | None = None) -> Any: ...

    def tp_module(self, name: str, module: str, d: int, nbytes: float, reshard: bool) -> list[Any]: ...

    def group_tokens(self, degree: int, tokens: float | None = None) -> float: ...

    def mean_keys_capped(self, cap: float) -> float: ...

    def mean_keys_chunked(self, chunk: float) -> float: ...

    def shape_efficiency(self, width: float) -> float: ...

    def gemm(self, group: str) -> tuple[float, float]:
        """(peak FLOP/s, achieved fraction) of a GEMM over the precision group's weights (estimate.compute.gemm_rate)."""
        ...

    def busy_replicas(self) -> float: ...


class Block(ABC):
    """Base of every block type (frozen dataclasses subclass it)."""

    role = "mixer"  # "mixer" | "ffn"
    # KVP splits this block's keys (softmax attention, MLA, compressed: a cache growing with the sequence), so its
    # core keeps heads / attention TP on every KVP rank; a block whose state KVP does not split runs its heads
    # over the whole attention-TP group instead (heads_split)
    kvp_splits_keys = False
    # a mixer carrying a state from token to token (SSM, linear attention, short convolution, RG-LRU): it needs
    # every earlier token of a sequence, so a token split must gather them (recurrent.recurrent_comms) or the
    # engine must refuse it (ModelSpec.recurrent_mixers)
    scans_tokens = False
    activation_knob = "attn_tp_size"  # the knob whose group sizes the block's intermediate (activations.activation_terms)
    kind = "block"  # short type name used in reports (GQA, MLA, GatedDeltaNet, Mamba2, FFN, MoE, ...)
    # the keys a query attends to never fall as its position grows (false: chunked attention, whose keys restart
    # at every chunk): the planner's attention floors take a step at a longer context to cost at least as much
    keys_monotone = True

    @abstractmethod
    def shares(self) -> tuple[Share, ...]:
        """The block's parameters, each with the knob that splits it."""

    def state(self, kv: KVFormat, split: int) -> State:
        return NO_STATE

    def label(self) -> str:
        return self.kind

    @abstractmethod
    def ops(self, cx: CostKit) -> list[Any]:
        """FLOPs and bytes of one instance of the block in the step `cx` describes."""

    def comms(self, cx: CostKit, hide_s: float) -> list[Any]:
        return []

    def activation(self, pc: Any, tokens: float, split: int) -> float:
        return 0.0

    def hot_rank_activation(self, pc: Any, tokens: float) -> float:
        """Transient bytes beside `activation` on the rank the engine sends a routed expert's extra work to (the
        zero-expert picks run as expert 0: MoE); none for most blocks."""
        return 0.0

    def scratch(self, pc: Any, tokens: float, keys: float, logits_max_bytes: float | None) -> float:
        """Transient bytes beside `activation` that grow with the `keys` each of the forward's queries scores (a
        sparse-attention indexer's logits, dsa.Indexer.logits_scratch), bounded by the engine's
        `logits_max_bytes`; none for most blocks."""
        return 0.0

    @property
    def params(self) -> int:
        return sum(s.params for s in self.shares())

    @property
    def active_params(self) -> float:
        return sum(s.active_params for s in self.shares())


@dataclass(frozen=True)
class SharedRef:
    """The blocks of a layer that run a block the model stores once and runs at several depths (Zamba's shared
    attention + MLP block; Zamba2's num_mem_blocks of them, the hybrid layers using them in turn). Their weights
    belong to the model, counted once in a stack (a pipeline stage holding any use holds them), by `index`; their
    compute, collectives and cache are the blocks' own at every use (the blocks are ordinary blocks).

    `whole`: the layer itself is the stored one, its norms and residual vectors too, run in several passes a token
    (a looped stack: HRM-Text's cycled stacks, Dory's recurrent section; config/passes.py)."""

    index: int  # which stored block
    blocks: tuple[int, ...]  # positions in Layer.blocks that run it
    norm_widths: tuple[int, ...] = ()  # its norms' weight vectors (Zamba: 2 x hidden before attention, hidden before the MLP)
    whole: bool = False  # the whole layer is stored once (its norm_share() too), not some of its blocks


@dataclass(frozen=True)
class Layer:
    """One decoder layer: its blocks in order, and the hidden-size norm vectors it carries."""

    blocks: tuple[Block, ...]
    hidden: int
    norms: int = 2  # RMSNorm/LayerNorm weight vectors of size hidden (pre-mixer, pre-FFN; Gemma has 4)
    # hyper-connections (DeepSeek-V4 hc_mult; Qwen4-Exp's low-rank gated residuals, which hold the layer's norms):
    # a block (layers/hyper.py) costed with the layer's blocks (block_counts), its weights replicated in the norm share
    hyper: HyperConnections | None = None
    norm_bias: bool = False  # LayerNorms with a bias: one more vector of size hidden per norm
    shared: SharedRef | None = None  # blocks run from a block stored once in the model (weights not this layer's)
    # modality experts (CogVLM's visual experts): copies of blocks this layer stores beside `blocks` for the tokens
    # of another modality, routed by the token's modality with no router. Counted here; not costed: a text token
    # runs `blocks` alone (an image token its copy, of the same FLOPs), so they are no active parameters, add
    # nothing to the cache (an image token's K/V take its slot in the one cache) and run no collective of their own
    modality_copies: tuple[Block, ...] = ()
    # learned per-channel vectors of size hidden on the residual stream (Dory's nGPT rates lambda_1 / lambda_2; Ergo's
    # attention / feedforward residual gates), replicated like the norms
    residual_gates: int = 0
    # weights of the low-rank sigmoid gate MLPs some of its norms carry (A.X-K2's gated RMSNorms: fc1 hidden -> rank,
    # fc2 rank -> hidden each), replicated like the norms; their FLOPs (4 x hidden x rank a token each) not costed
    norm_gates: int = 0

    @property
    def mixer(self) -> Block | None:
        return next((b for b in self.blocks if b.role == "mixer"), None)

    @property
    def ffns(self) -> tuple[Block, ...]:
        return tuple(b for b in self.blocks if b.role == "ffn")

    @property
    def ffn(self) -> Block | None:
        return self.ffns[0] if self.ffns else None

    def norm_share(self) -> Share:
        parts = (Part("layernorms", self.norms * self.hidden, "none"),)
        if self.norm_bias:
            parts += (Part("layernorm_biases", self.norms * self.hidden, "none"),)
        if self.hyper:
            parts += (self.hyper.part(),)
        if self.residual_gates:
            parts += (Part("residual_gates", self.residual_gates * self.hidden, "none"),)
        if self.norm_gates:
            parts += (Part("norm_gates", self.norm_gates, "none"),)
        return Share("norms", "norm", None, tuple(p for p in parts if p.params))

    def own_shares(self) -> tuple[Share, ...]:
        """The weights this layer holds itself: its blocks' (less those of a shared block) and its norms'."""
        if self.shared is not None and self.shared.whole:
            return ()
        used = self.shared.blocks if self.shared else ()
        out = tuple(s for i, b in enumerate(self.blocks) if i not in used for s in b.shares())
        out += self._copy_shares()
        return out + ((self.norm_share(),) if self._has_norm_share() else ())

    def _copy_shares(self) -> tuple[Share, ...]:
        return tuple(Share(s.module, s.group, s.knob, s.parts, active=0.0)
                     for b in self.modality_copies for s in b.shares())

    def _has_norm_share(self) -> bool:
        return bool(self.norms or self.hyper or self.residual_gates or self.norm_gates)

    def stored_shares(self) -> tuple[Share, ...]:
        """The weights of the shared block this layer runs (counted once per stack: layer_shares)."""
        if self.shared is None:
            return ()
        out = tuple(s for i in self.shared.blocks for s in self.blocks[i].shares())
        if self.shared.whole:
            return out + self._copy_shares() + ((self.norm_share(),) if self._has_norm_share() else ())
        if self.shared.norm_widths:
            out += (Share("norms", "norm", None, (Part("shared_block_norms", sum(self.shared.norm_widths), "none"),)),)
        return out

    def label(self) -> str:
        used = self.shared.blocks if self.shared else ()
        text = " + ".join(f"Shared#{self.shared.index} {b.label()}" if self.shared and i in used else b.label()
                          for i, b in enumerate(self.blocks)) or "identity"
        experts = 1 + len(self.modality_copies) // max(1, len(self.blocks))
        return text + (f" (x{experts} by modality)" if self.modality_copies else "")


def layer_shares(layers: list[tuple[Layer, int]]) -> list[tuple[Share, int]]:
    """Every weight share of (layer, count) pairs with the times it is stored: a layer's own shares per layer, a
    shared block's once, at its first use in the stack (SharedRef)."""
    out: list[tuple[Share, int]] = []
    seen: set[int] = set()
    for layer, n in layers:
        out += [(s, n) for s in layer.own_shares()]
        if layer.shared is not None and layer.shared.index not in seen:
            seen.add(layer.shared.index)
            out += [(s, 1) for s in layer.stored_shares()]
    return out


def grouped(layers: tuple[Layer, ...]) -> list[tuple[Layer, int]]:
    """Distinct layers with their counts, in order of first appearance (costs are computed once per type)."""
    counts: dict[Layer, int] = {}
    for layer in layers:
        counts[layer] = counts.get(layer, 0) + 1
    return list(counts.items())


def runs(layers: tuple[Layer, ...]) -> list[tuple[Layer, int]]:
    """Consecutive runs of equal layers (for the compact stack label)."""
    out: list[tuple[Layer, int]] = []
    for layer in layers:
        if out and out[-1][0] == layer:
            out[-1] = (layer, out[-1][1] + 1)
        else:
            out.append((layer, 1))
    return out


def block_counts(layers: list[tuple[Layer, int]]) -> list[tuple[Block, int]]:
    """Distinct blocks of (layer, count) pairs with their counts, in order of first appearance; a layer's
    hyper-connections (Layer.hyper) count as one of its blocks."""
    counts: dict[Block, int] = {}
    for layer, n in layers:
        for block in layer.blocks + ((layer.hyper,) if layer.hyper else ()):
            counts[block] = counts.get(block, 0) + n
    return list(counts.items())


def compact(layers: tuple[Layer, ...]) -> str:
    """The stack as runs, with repeating groups of runs folded: `10 x (5 x [SWA ...] + 1 x [GQA ...])`."""
    seq = runs(layers)
    parts: list[str] = []
    i = 0
    while i < len(seq):
        best = (1, 1)  # (period in runs, repetitions)
        for p in range(1, (len(seq) - i) // 2 + 1):
            k = 1
            while seq[i + k * p:i + (k + 1) * p] == seq[i:i + p]:
                k += 1
            if k > 1 and p * k > best[0] * best[1]:
                best = (p, k)
        p, k = best
        group = " + ".join(f"{n} x [{layer.label()}]" for layer, n in seq[i:i + p])
        parts.append(f"{k} x ({group})" if k > 1 else group)
        i += p * k
    return ", ".join(parts)
