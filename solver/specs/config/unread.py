"""What a config says that the parser never read.

A config of a family the parser has no defaults for is read by field convention (read.py), so a family that
spells a size in its own words (Step-3's moe_layers_enum, a cross-layer KV share; ERNIE-4.5's moe_num_experts
until it was read)
would otherwise be sized without it, as if the field were not there. Three rules:

- an expert count in a field the parser does not read is refused: the model would be counted as dense, its
  memory and step times wrong by the experts' share (one line, naming the field and the fields read);
- for a family without defaults, every other unread field whose name speaks of the model's structure and whose
  value is set is named in a note, so the user sees what the totals leave out;
- whatever the family, a switch of a feature the layer stack does not model (_UNMODELLED) is named when it is on;
- whatever the family, an unread field that describes a mixer other than attention or where such mixers sit
  (_MIXER: mamba_*, ssm_*, conv, RG-LRU, RWKV, linear attention, layer / block pattern lists) is refused when
  every layer was read as attention: the model would be counted as plain attention layers (Bamba with its
  attention indices renamed: 8.0B for 9.8B, under its own model_type too), which is no smaller a fault than a
  dropped expert count. An unread list that places the mixers (_PLACEMENT) is refused even where other mixers were
  read: the stack was laid out by another convention than the one the config meant.
Nested vision configs follow the same discipline (check_unread_tower): a set field whose weights the tower reader
certainly leaves out is refused, and for a tower of no known family the unread structural fields are named.

Families with defaults are checked against their published totals (models/SOURCES, tests/test_params.py), so
their other unread fields (a Qwen3-MoE's unused dense intermediate_size, DeepSeek's routing groups) are not
listed.
"""
from __future__ import annotations

import re
from typing import Any

from solver.errors import quoted
from solver.specs.config.ffns import EXPERT_COUNT_FIELDS
from solver.specs.config.fields import Fields, ReadRecorder
from solver.specs.config.passes import pass_fields

# names that speak of sizes, counts or the placement of layers and blocks
_STRUCTURE = re.compile(r"expert|moe|mamba|ssm|linear|lora|cla|kv|head|layer|window|intermediate|mlp|ffn|hidden|"
                        r"dim|rank|state|conv|nextn|mtp|dense|interval|period|offset|enum|pattern|sparse|index|"
                        r"latent|compress|group|share|block|attention|attn|vocab|embed|quer|resampl|adapter|projector|merger|"
                        r"connector|tower|encoder")
# among those, names that size nothing: training losses and noise, dropout, norms' epsilons, initialisation,
# position encodings and limits (original_max_position_embeddings), activations, kernels' tile sizes, the
# router's scoring (groups, scaling, renormalising) and special tokens' ids (a multimodal image_token_index);
# numerics and scales of the forward (softmax in fp32, QKV clipping, muP multipliers and MiniCPM's width base,
# query-key layer scaling), the attention kernel's name and the router's capacity and gate kind; training switches
# (LLaVA's unfreeze_vision_tower, tune_mm_mlp_adapter, mm_projector_lr)
_SIZES_NOTHING = re.compile(r"dropout|pdrop|eps(ilon)?$|init|rope|rotary|act(ivation)?(_func)?$|loss|coef|jitter|"
                            r"softcap|scalar|chunk_size|kernels|logits|topk_prob|^n_group$|topk_group|expert_group|"
                            r"grouped_topk|group_limited|routed_scaling|scoring|renormalize|drop_tokens|"
                            r"dropped_token|overlap|token_id|token_index|_ids?$|max_position|softmax|scale_attn|"
                            r"attn_implementation|layer_scaling|multiplier|dim_model_base|clip|norm_min|capacity|"
                            r"moe_gate$|norm_head$|freeze|^tune_|_lr$")


# names of fields that describe a mixer other than attention (Mamba, SSM, short / causal convolutions, RG-LRU,
# RWKV's time / channel mix, linear attention, retention, xLSTM) or where such mixers sit (hybrid and block /
# layer pattern lists): unread, the layers they describe would be counted as attention. flash-linear-attention's
# configs (GLA, RetNet, HGRN, DeltaNet, RWKV-6 / 7) name their kernel attn_mode, widen keys and values by expand_k /
# expand_v and size RWKV's data-dependent decay, a, v and gate by *_low_rank_dim; SambaY (Phi-4-mini-flash) places
# its Mamba layers by mb_per_layer; RWKV-4 halves its hidden state every rescale_every layers (no other family writes it)
_MIXER = re.compile(r"mamba|ssm|conv|^lru_|rwkv|time_mix|channel_mix|linear_attn|^linear_(num|key|value)|hybrid|"
                    r"block_types?$|layer_types?$|layers_block|(layer|block)s?_pattern|attn_layer|attention_layer|"
                    r"mixer|recurrent|retention|xlstm|d_state|state_size|dt_rank|time_step|kda|delta_?net|"
                    r"^attn_mode$|^expand_[kv]$|low_rank_dim|^mb_per_layer$|^rescale_every$")

# among those, the lists that say where the mixers sit: unread, the layers were placed by another convention (a
# family default: Bamba without attn_layer_indices is every layer Mamba) than the one the config meant
_PLACEMENT = re.compile(r"^(attn|attention)_layers?(_ids|_indices|_idxs)?$|^layer_types$|^block_types$|"
                        r"^layers_block_type$|(layer|block)s?_pattern$")


# features of known families that the layer stack does not model, named in a note when on. Empty since the stack
# models cross-layer attention (Hunyuan's use_cla) and KV-shared last layers (Gemma's num_kv_shared_layers):
# config/pattern.py reads both
_UNMODELLED: tuple[str, ...] = ()
# features whose weights the stack cannot count, refused when on (the Omni models, Phi-4-multimodal; AltUp / LAuReL
# outside a family whose _altup fact reads them): the model would be sized without them, and their share is not small
_REFUSED = {
    "altup_num_inputs": "AltUp (several predicted copies of the hidden state with their router and coefficients)",
    "laurel_rank": "LAuReL low-rank residual blocks",
    # an omni model's language model sits in its thinker (counted alone: its model_type's own config), and a talker
    # (its own transformer stack) and a token-to-wave model speak (Qwen2.5-Omni, Qwen3-Omni): not counted here
    "thinker_config": "the talker (its own transformer stack) and token2wav speech models of a thinker-talker model",
    # Phi-4-multimodal: a LoRA adapter set per modality on the text model's linears, and a conformer audio encoder
    "vision_lora": "LoRA adapters per modality (rank r on the text model's linears a name pattern selects)",
    "speech_lora": "LoRA adapters per modality (rank r on the text model's linears a name pattern selects)",
    "audio_processor": "a conformer audio encoder (convolution subsampling, conformer blocks, relative-position bias)",
    "qk_ln": "MPT's q / k LayerNorms (attn_config.qk_ln)",
    # Yuan2: LocalizedFiltering before q / k in every layer (two (2, 1) Conv2d over the sequence, h -> h/2 -> h,
    # biased, and an RMSNorm): a causal convolution inside attention, which no layer kind expresses
    "use_lfa": "localized filtering attention (two convolutions over the sequence and a norm before q / k in every "
               "layer)",
    # Sesame CSM: a depth decoder (its own small transformer, codebook embeddings and per-codebook heads) that
    # predicts the audio codebooks beside the backbone, and a neural audio codec (Mimi) held in the same model
    "depth_decoder_config": "a depth decoder over the audio codebooks (its own transformer, codebook embeddings and "
                            "per-codebook heads)",
    "codec_config": "a neural audio codec (convolutional encoder / decoder, quantizers) held in the model",
    # Chameleon, Emu3, Janus: the model holds its image tokenizer (a convolutional VQ-VAE encoder, its codebook and
    # quant convs, sized by vq_config's channels and multipliers), which no counting convention here expresses
    "vq_config": "a VQ-VAE image tokenizer (a convolutional encoder, a codebook and quant convs)",
    # Phi-3-vision / Phi-3.5-vision: the image tower is named by a checkpoint (img_processor.model_name), not sized,
    # and its projector (embd_layer: an HD transform with learned separators) has no counting convention
    "img_processor": "an image tower named by a checkpoint rather than sized in the config and its projector "
                     "(embd_layer)",
    # Qwen-VL: the ViT and its cross-attention resampler are sized under `visual` in the language model's own config
    "visual": "an image tower and a cross-attention resampler sized under `visual` (no tower reader reads that layout)",
    # Dory (nGPT): a section of layers run n_recurrent_loops times a token (compute and, per_loop, K/V per pass) and
    # nGPT's per-channel scales on q / k, the MLP, the residual and the logits: refused where the family's line gives
    # no pass order (_passes, config/passes.py; the dory line gives one)
    "n_recurrent_loops": "a recurrent section whose layers run several times a token (compute and K/V per pass) and "
                         "nGPT's per-channel scales",
    # Qwen4-Exp: per-layer n-gram embeddings (PLE: hashed n-gram tables, key / value projections, three grouped norms
    # and a dilated conv in the layers ple_layer_ids names), which no layer fact sizes
    "ple_layer_ids": "per-layer n-gram embeddings (hashed n-gram tables, projections and a conv in the layers named)",
}


def refuse_uncountable(f: Fields) -> None:
    """One line naming the first set field of a feature whose weights the stack cannot count."""
    read = pass_fields(f.cfg.get("_passes"))  # a looped stack's fields are read by its family's pass order
    altup = f.cfg.get("_altup")  # the family's AltUp / LAuReL fields (config/blocks.py altup)
    read = set(read) | (set(str(v) for v in altup.values()) if isinstance(altup, dict) else set())
    for key, what in _REFUSED.items():
        if key in read:
            continue
        value = f.cfg.get(key)
        if _set(value) and not (key == "altup_num_inputs" and value == 1):
            shown = "given" if isinstance(value, (dict, list)) else repr(value)  # one line, not a nested config
            raise f.err(key, f"{shown}: {what} are not modelled; the model would be sized without them")


# sub-configs that build no module: the checkpoint's format (read by quant.py), MPT's init_config (how weights are
# initialized for training: init_std, init_div_is_residual, ...), MiniCPM-V's slice_config (how the processor cuts
# an image: max_slice_nums, scale_resolution)
_INERT_SUBCONFIGS = ("quantization_config", "init_config", "slice_config")


def refuse_unread_subconfigs(wrapper: ReadRecorder, text_key: str, origin: str) -> None:
    """A wrapper's own sub-config (an object named *_config or *_cfg beside its text config) that no reader looked up
    describes a module the count would leave out without a word (granite-speech's conformer encoder_config and
    Q-Former projector_config; BLIP-2's qformer_config before its projector was read; MiniCPM-o's tts_config beside
    a language model written at the top level, `text_key` empty): one line naming it."""
    beside = f"({text_key})" if text_key else "(the top level's fields)"
    for key in wrapper.unread():
        value = dict.__getitem__(wrapper, key)
        if key == text_key or key in _INERT_SUBCONFIGS or not str(key).endswith(("_config", "_cfg")):
            continue
        if isinstance(value, dict) and value:
            kind = value.get("model_type")
            what = f" (model_type {kind!r})" if kind else ""
            raise Fields(wrapper, origin).err(key, f"given{what}: a module beside the language model {beside} "
                                                   "that shardplan does not read for model_type "
                                                   f"{dict.get(wrapper, 'model_type')!r}; the model would be sized "
                                                   "without it")


def _set(value: Any) -> bool:
    return value is not None and value is not False and value != 0 and value != "" and value != [] and value != {}


def unread_mixer_field(cfg: ReadRecorder, supplied: set[str] | frozenset[str] = frozenset()) -> tuple[str, str] | None:
    """The first set field (and its value in one short line), not read and not the family's default, that describes
    a mixer other than attention (_MIXER): where an attention size is missing, it says the layers are not attention
    layers (RWKV-4 under another model_type writes no head count)."""
    key = next((str(k) for k in cfg.unread() if not str(k).startswith("_") and k not in supplied and _set(cfg[k])
                and _MIXER.search(str(k))), None)
    return None if key is None else (key, _shown(cfg[key]))


def check_unread(f: Fields, cfg: ReadRecorder, model_type: str, known_family: bool, warnings: list[str],
                 other_mixers: bool = False, supplied: set[str] | frozenset[str] = frozenset()) -> None:
    """Refuse an unread expert count, and an unread mixer field when every layer was read as attention (`other_mixers`: the stack holds a Mamba, conv, linear or RG-LRU mixer, so the fields that
    describe it were read and what is left of them, such as a kernel's chunk size, sizes nothing); note the unread
    switches of unmodelled features, and for a family without defaults every unread structural field. `supplied`:
    keys the family's defaults filled in, not the config (left unread, they drop nothing the user gave)."""
    # the family's _sizes_nothing: fields its class reads that weigh nothing here (a switch of a feature the family
    # line refuses when on: LLaDA's attention_layer_norm_with_affine under attention_layer_norm false)
    idle = set(dict.get(cfg, "_sizes_nothing") or ())
    unread = [k for k in cfg.unread() if not str(k).startswith("_") and k not in supplied and k not in idle
              and _set(cfg[k])]
    for key in unread:
        value = cfg[key]
        if str(key).endswith("experts") and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            raise f.err(key, f"{value} experts in a field shardplan does not read for model_type {model_type!r} "
                             f"(it reads {', '.join(EXPERT_COUNT_FIELDS)}): the model would be sized without them")
    for key in unread:
        if _MIXER.search(str(key)) and (not other_mixers or _PLACEMENT.search(str(key))):
            raise f.err(key, f"{_shown(cfg[key])}: describes a mixer other than attention (or where one sits) "
                             f"in a field shardplan does not read for model_type {model_type!r}: the model would "
                             + ("be counted as plain attention layers without it" if not other_mixers else
                                "have its mixers placed without it"))
    # after the mixer rule: a family's own field one edit from a common one (Hymba's layer_type) is the mixer's
    _refuse_misspelled(f, cfg, unread, supplied)
    named = [k for k in unread if k in _UNMODELLED or not known_family and _STRUCTURE.search(str(k))
             and not _SIZES_NOTHING.search(str(k))]
    if named:
        warnings.append(f"fields not read (the model is sized without them): "
                        + ", ".join(f"{f.path(k)}={quoted(repr(cfg[k]))}" for k in named))


def _refuse_misspelled(f: Fields, cfg: ReadRecorder, unread: list[Any],
                       supplied: set[str] | frozenset[str] = frozenset()) -> None:
    """An unread structural field one edit away from a field the parser looked for and the config does not write
    (absent, or filled by the family's class defaults: `supplied`) is that field misspelled (num_key_value_head,
    num_expert): read as written, the model would be sized with the default in its place (every head its own KV
    head, the class's expert count) and the given value dropped."""
    wanted = sorted(k for k in cfg.looked_up if isinstance(k, str) and not k.startswith("_")
                    and (k not in cfg or k in supplied))
    for key in unread:
        name = str(key)
        if not _STRUCTURE.search(name) or _SIZES_NOTHING.search(name):
            continue
        meant = next((w for w in wanted if _one_edit(name, w)), None)
        if meant is not None:
            given = _shown(cfg[key])
            raise f.err(name, f"not a field shardplan reads; did you mean {meant}? (the model would be sized "
                              f"without the {'value' if given == 'given' else given} given here)")


def _one_edit(a: str, b: str) -> bool:
    """Whether `a` becomes `b` by one insertion, deletion, substitution or swap of two neighbours."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), len(a))
    if len(a) < len(b):
        return a[i:] == b[i + 1:]
    return a[i + 1:] == b[i + 1:] or (a[i + 2:] == b[i + 2:] and a[i:i + 2] == b[i:i + 2][::-1])


def _shown(value: Any) -> str:
    """A value in one short line: a nested object or list is said to be given, a long string is cut."""
    if isinstance(value, (dict, list)):
        return "given"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# fields of a vision tower whose set value adds weights the tower reader (config/vit_towers.py) does not count,
# with what they are: refused whatever the family, as an unread expert count is
_TOWER_REFUSED = {
    "num_register_tokens": "register tokens (learned rows appended to the patch sequence)",
    "use_swiglu_ffn": "a SwiGLU MLP (the tower reader sizes the MLP by its activation)",
    # SAM's ViTDet (GOT-OCR2's tower): rel_pos_h / rel_pos_w in every layer, sized by window_size in the windowed
    # layers and the patch grid in the global ones, beside a convolutional neck and projector
    "use_rel_pos": "relative position tables per layer (rel_pos_h / rel_pos_w, sized by the window and the global "
                   "layers)",
}


def check_unread_tower(f: Fields, sub: ReadRecorder, known_family: bool, notes: list[str],
                       defaulted: list[str]) -> None:
    """The unread-field discipline of check_unread, for a nested vision config: refuse a set field whose weights
    are certainly left out (_TOWER_REFUSED, an expert count); for a tower of no known family, name its unread
    structural fields in a note. `defaulted` are keys taken from a default vision config, not written."""
    unread = [k for k in sub.unread() if not str(k).startswith("_") and k not in defaulted and _set(sub[k])]
    for key in unread:
        value = sub[key]
        what = _TOWER_REFUSED.get(key)
        if what:
            raise f.err(key, f"{_shown(value)}: {what} are not counted; the tower would be sized without them")
        if str(key).endswith("experts") and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            raise f.err(key, f"{value} experts in a vision tower: the tower would be sized without them")
    named = [k for k in unread if not known_family and _STRUCTURE.search(str(k)) and not _SIZES_NOTHING.search(str(k))]
    if named:
        notes.append(f"vision tower fields not read (the tower is sized without them): "
                     + ", ".join(f"{f.path(k)}={quoted(repr(sub[k]))}" for k in named))
