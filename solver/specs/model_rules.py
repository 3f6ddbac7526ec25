"""The model's own rules on a parallel_config (the seed's class A): what `check` reports under A and what the
single-config commands refuse before they estimate."""
from __future__ import annotations

from solver.errors import InputError
from solver.specs.framework import FrameworkProfile
from solver.specs.model import ModelSpec
from solver.specs.knobs import neutral
from solver.specs.parallel import ParallelConfig, absent_knob_problems, smallest_redundant
from solver.specs.profile_facts import PPSplit


def stage_sizes(num_layers: int, pp: int, unit: int = 1, remainder: str = "first") -> tuple[int, ...]:
    """Layers per pipeline stage, balanced in whole units of `unit` layers (ModelSpec.stage_unit: the engines'
    decoder layers), the (num_layers / unit) % pp remaining units one more on the stages `remainder` names
    (PPSplit): "first", the first ones (estimate.pipeline's default; the launch names this split where the engines'
    own would differ: launch.emit pp_layer_partition); "last", the last ones (SGLang); "before_last", from the
    second-last stage backward (vLLM's get_pp_indices)."""
    if num_layers % unit:  # the reader builds whole blocks (config.read): a remainder would drop layers unpriced
        raise ValueError(f"{num_layers} layers are not whole blocks of {unit} (ModelSpec.stage_unit)")
    base, extra = divmod(num_layers // unit, pp)
    out = [base] * pp
    order = {"first": range(pp), "last": range(pp - 1, -1, -1), "before_last": range(pp - 2, -2, -1)}[remainder]
    for i in list(order)[:extra]:
        out[i] += 1
    return tuple(n * unit for n in out)


def stage_split(layers: list[int], model: ModelSpec, pp: int, field: str, said: str | None = None,
                split: PPSplit | None = None) -> tuple[int, ...]:
    """A pipeline split as the engines take one (vLLM 0.34.0 / SGLang 0.5.23 distributed/utils.py get_pp_indices
    refuse a count of stages other than pp or a sum other than the layers): a stage per pp rank, the model's decoder
    layers in all, none negative (vLLM's "Negative layer count"). A stage of no layers is accepted as both engines
    accept it (vLLM 0.34.0 distributed/utils.py:227-238 refuses a negative count only, SGLang 0.5.23 :123-135 no
    count): it holds what sits outside the layer stack on its place (the embedding first, the LM head last) and
    hands the hidden states on. `said`: the split as given. `split`: the engine's (FrameworkProfile.pp_default_split),
    whose `negative` says its check of a negative count: refused (also where the profile has none), or unchecked,
    where the stages it would build are named (refused here all the same: a stage would start before its first
    layer or end before it starts)."""
    negative = split.negative if split is not None else "refused"
    total = len(model.layers) // model.stage_unit
    said = said or ",".join(map(str, layers))
    if len(layers) != pp:
        raise InputError(field, f"{said}: {len(layers)} stages, while pp_size is {pp}; the engine refuses it")
    if sum(layers) != total:
        raise InputError(field, f"{said}: {sum(layers)} layers in all, while {model.name} has {total}; the engine "
                                "refuses it")
    if min(layers) < 0:
        if negative == "refused":
            raise InputError(field, f"{said}: a negative layer count; the engine refuses it")
        starts = [sum(layers[:i]) for i in range(pp)]
        spans = ", ".join(f"[{a}, {a + n})" for a, n in zip(starts, layers))
        raise InputError(field, f"{said}: a negative layer count, which the engine does not check: it would build "
                                f"the stages the running sums give, layers {spans} (start, end), a stage ending "
                                "before it starts or starting from a negative layer; refused here, as no split runs "
                                "it")
    return tuple(layers)


def model_stage_sizes(model: ModelSpec, pp: int) -> tuple[int, ...]:
    """Layers per pipeline stage of `model`: the split a command runs (ModelSpec.stage_layers) where it has `pp`
    stages, else the balanced one (stage_sizes)."""
    if len(model.stage_layers) == pp and sum(model.stage_layers) == len(model.layers):
        return model.stage_layers
    return stage_sizes(len(model.layers), pp, model.stage_unit)


# the TP knobs that split an FFN's width (A.ffn_width_divisible_tp)
FFN_TP_KNOBS = ("moe_tp_size", "dense_tp_size")


def ffn_widths(model: ModelSpec, knob: str) -> list[tuple[str, int]]:
    """(name, width) of each FFN width `knob` splits, for A.ffn_width_divisible_tp: a TP linear holds width / tp
    columns, and the engines' ColumnParallelLinear divide() and FusedMoE (`assert intermediate_size % moe_tp_size
    == 0`, SGLang) refuse a remainder. moe_tp_size splits the routed experts'; dense_tp_size the dense FFN's and
    the shared experts' alike. Powers of two divide the 2^k widths; a rack's TP 12 / 24 / 36 / 72 do not
    (DeepSeek's 2048-wide experts)."""
    if knob == "moe_tp_size":
        return [("moe_intermediate_size", model.moe_intermediate_size)] if model.is_moe else []
    if knob == "dense_tp_size":
        shared = model.shared_expert_intermediate_size or 0
        return ([("intermediate_size", model.intermediate_size)] if model.has_dense_ffn else []) + \
            ([("shared experts' width", shared)] if shared else [])
    return []


def kv_sharing_split(model: ModelSpec, pp: int) -> tuple[int, int] | None:
    """(layer, source) of the first layer attending with K/V that another pipeline stage caches, or None: a
    layer that borrows an earlier layer's K/V (use_cla, num_kv_shared_layers, kv_source_layers) reads that layer's
    cache, which lives on the source's stage, so a stage boundary between them leaves it nothing to attend to. The
    source is the one kv_source_layers names (ModelSpec.kv_sources), else the nearest earlier layer of the same
    attention kind (and RoPE kind, under MLA) that caches its own K/V (the group's first under CLA, the last such
    layer before the shared ones under num_kv_shared_layers)."""
    if pp <= 1:
        return None
    stage_of = [i for i, n in enumerate(model_stage_sizes(model, pp)) for _ in range(n)]
    mixers = [layer.mixer for layer in model.layers]
    for i, m in enumerate(mixers):
        if not getattr(m, "kv_shared", False):
            continue
        src = model.kv_sources[i] if model.kv_sources else next(
                   (j for j in range(i - 1, -1, -1) if type(mixers[j]) is type(m)
                    and getattr(mixers[j], "window", None) == getattr(m, "window", None)
                    # MLA's RoPE layers read the last RoPE latent, NoPE the last NoPE (kv_source_layers)
                    and getattr(mixers[j], "qk_rope_head_dim", None) == getattr(m, "qk_rope_head_dim", None)
                    and not getattr(mixers[j], "kv_shared", False)), None)
        if src is not None and stage_of[src] != stage_of[i]:
            return i, src
    return None


def _kv_keeping_pp_sizes(model: ModelSpec, world: int) -> str:
    """The remedy for a stage boundary inside a K/V-sharing group: the pp sizes of this world whose boundaries
    all fall between the groups, or that none does (Kolibri-1.1: layer 49 reads layer 4, so every split breaks
    one) where naming "another pp_size" would send the user after a layout that cannot exist."""
    keep = [p for p in range(2, min(world, model.num_layers) + 1)
            if world % p == 0 and kv_sharing_split(model, p) is None]
    if keep:
        verb = "keeps" if len(keep) == 1 else "keep"
        return f"pp_size {', '.join(map(str, keep))} {verb} every K/V reader on its source's stage on {world} cards"
    return f"no pp_size above 1 on {world} cards keeps every K/V reader on its source's stage: use pp_size 1"


def model_problems(model: ModelSpec, pc: ParallelConfig, fw: FrameworkProfile) -> list[str]:
    """One line per class-A (model) rule the config breaks: knobs of modules the model lacks, sizes that do not
    divide the world, heads, KV heads (where the framework splits them), expert slots or the MLA o_proj width, more
    stages than layers, stage sizes the knobs do not divide. `check` reports them; the single-config commands
    (estimate, memory) refuse them as bad input."""
    W = pc.world_size
    out = absent_knob_problems(model, pc.knobs())
    out += [f"world_size {W} % {k} = {v} != 0" for k, v in pc.knobs().items() if W % v]
    group = pc.attn_tp_group(fw.kvp_splits_attention_weights)  # where KVP reuses the TP ranks, TP x KVP splits heads
    if model.num_attention_heads % group:
        # the number is the gcd over every mixer's head groups (ModelSpec.num_attention_heads): a stack without
        # attention (Mamba-2: heads and n_groups) is told what it is, not "attention heads"
        # a hybrid's other mixers (Mamba groups, linear-attention heads) may set it below attention's own heads
        heads = ("num_attention_heads" if model.num_attention_heads == model.attention_heads_gcd
                 else "the mixers' head groups (gcd of attention heads and the other mixers' heads and groups)"
                 if model.attention_heads_gcd else "the mixer's head groups (gcd of its heads and groups)")
        split = f"attn_tp_size {pc.attn_tp_size}" + (f" x kvp_size {pc.kvp_size}" if group != pc.attn_tp_size else "")
        # where the gcd is not one mixer's own count, the counts that do not divide (the kernel's own rule)
        binding = [f"{kind} {name} {n}" for kind, name, n in model.tp_units if n % group]
        named = f" ({', '.join(binding)})" if heads != "num_attention_heads" and binding else ""
        out.append(f"{heads} {model.num_attention_heads} % {split} != 0{named}")
    if fw.splits_kv_heads and model.num_key_value_heads % pc.attn_tp_size:
        out.append(f"num_key_value_heads {model.num_key_value_heads} % attn_tp_size {pc.attn_tp_size} != 0 "
                   f"({fw.name} splits KV heads)")
    # an MoE TP past the stage's ranks leaves no EP group (moe_ep_size 0): the knob's own divisibility says so
    if model.is_moe and pc.moe_ep_size >= 1 and pc.expert_slots(model.num_experts) % pc.moe_ep_size:
        r = pc.redundant_experts
        slots = f"num_experts {model.num_experts}" + (f" + redundant_experts {r}" if r else "")
        # the fewest copies that make the slots divide, where the engine places redundant experts and the copies
        # are not fixed
        need = smallest_redundant(model.num_experts, pc.moe_ep_size)
        hint = (f" ({need} redundant experts make {model.num_experts + need} slots, "
                f"{(model.num_experts + need) // pc.moe_ep_size} per rank)"
                if fw.copies_experts(model.model_type) and fw.fixed_redundant_experts is None and need != r
                and need <= model.num_experts else "")  # at most one copy of each expert
        out.append(f"{slots} % moe_ep_size {pc.moe_ep_size} != 0{hint}")
    units = model.num_layers // model.stage_unit  # the decoder layers the engines split (LongCat: its blocks)
    for knob, value in pc.settings().items():
        # a knob is set above 1, a setting (redundant experts) above 0
        feature = fw.refusing_feature(knob, model.model_type) if value > neutral(knob) else None
        if feature:
            out.append(f"{knob} {value}: {fw.name} runs no {feature.replace('_', ' ')} for model type "
                       f"{model.model_type} (features.{feature}.refused_model_types): use {knob} "
                       f"{neutral(knob)}")
    if pc.pp_size > units:
        out.append(f"pp_size {pc.pp_size} > num_layers {units}: a stage would hold no layer"
                   + (f" (blocks of {model.stage_unit} sub-layers)" if model.stage_unit > 1 else ""))
    split = kv_sharing_split(model, pc.pp_size) if pc.pp_size <= units else None
    if split:
        out.append(f"pp_size {pc.pp_size}: layer {split[0]} attends with the K/V of layer {split[1]}, which "
                   "another stage caches (use_cla / num_kv_shared_layers / kv_source_layers); "
                   + _kv_keeping_pp_sizes(model, W))
    if pc.pp_size > 1 and W % pc.pp_size == 0:
        S = pc.stage_world
        out += [f"stage size {S} (world {W} / pp {pc.pp_size}) % {k} = {v} != 0"
                for k, v in pc.knobs().items() if k != "pp_size" and W % v == 0 and S % v]
    if model.has_mla and model.o_proj_dim % pc.o_proj_tp_size:
        out.append(f"N_h * v_head_dim {model.o_proj_dim} % o_proj_tp_size {pc.o_proj_tp_size} != 0")
    out += [f"{name} {width} % {knob} {getattr(pc, knob)} != 0"
            for knob in FFN_TP_KNOBS for name, width in ffn_widths(model, knob) if width % getattr(pc, knob)]
    return out
