"""Read a Hugging Face `config.json` into a ModelSpec by convention (model.py's docstring): the text config out of
its wrapper, the family's defaults where the config leaves a field out (family_defaults.yaml), the layer pattern
(pattern.py), each layer's blocks (blocks.py), the MTP modules, the encoders (encoders.py), what sits outside the
stack (outside.py) and the checkpoint's formats (quant.py)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from solver.errors import InputError
from solver.specs.config.blocks import BlockReader
from solver.specs.config.decoder_only import headless_note, refuse_non_decoder
from solver.specs.config.default_notes import default_sources
from solver.specs.config.derived import derive_defaults, refuse_overwritten
from solver.specs.config.encoders import ENCODER_KEYS, TOWER_FACTS, read_encoders
from solver.specs.config.fields import MAX_LAYERS, Fields, ReadRecorder
from solver.specs.config.head_tie import head_tie
from solver.specs.config.module_names import model_modules
from solver.specs.config.outside import layernorm_bias, outside_stack
from solver.specs.config.mixer_pattern import one_block_pattern
from solver.specs.config.pattern import Slot, slots
from solver.specs.config.positions import position_encoding
from solver.specs.config.quant import read_quant
from solver.specs.config.tiled_towers import image_tokens
from solver.specs.context import read_rope_scalings
from solver.specs.config.unread import (check_unread, refuse_uncountable, refuse_unread_subconfigs,
                                         unread_mixer_field)
from solver.specs.layers import MLA, Attention, Layer
from solver.specs.layers.base import SharedRef
from solver.specs.config.passes import check_layer_count, lay_out, read_passes, unpair_layer_types
from solver.specs.model import ModelSpec
from solver.specs.validation import load_yaml


_DEFAULTS_PATH = Path(__file__).parent / "family_defaults.yaml"
# where the longest position the model was built for is written, first given wins
CONTEXT_FIELDS = ("max_position_embeddings", "n_positions", "seq_length", "max_seq_len", "max_context_length")
# wrapper keys whose values belong to the whole checkpoint, lifted into the text config when it lacks them; not
# tie_word_embeddings, the wrapper's own (config/head_tie.py weighs it against the language model's)
_LIFTED = ("architectures", "quantization_config", "torch_dtype", "dtype")
_KNOWN_TYPES_NOTE = "sizes read from the config's own fields by convention"


@lru_cache(maxsize=1)
def _family_defaults() -> dict[str, dict[str, Any]]:
    return load_yaml(_DEFAULTS_PATH, own=True) or {}


def _text_config(raw: dict[str, Any], origin: str) -> tuple[dict[str, Any], str]:
    """Multimodal wrappers keep the language model under text_config (or llm_config / language_config; VILA's
    llm_cfg, beside its vision_tower_cfg and mm_projector_cfg)."""
    for key in ("text_config", "llm_config", "language_config", "llm_cfg"):
        if key not in raw:
            continue
        text = raw[key]
        if not isinstance(text, dict):  # else the top level would be read in its place, and its error misnamed
            got = "null" if text is None else type(text).__name__
            raise InputError(origin, f"{key}: must be a JSON object (the language model's config), got {got}")
        if isinstance(text, dict) and text:
            merged = dict(text)
            for k in _LIFTED:
                if k in raw and k not in merged:
                    merged[k] = raw[k]
            merged.setdefault("model_type", raw.get("model_type", ""))
            return merged, f"{key}."
    built = (_family_defaults().get(str(raw.get("model_type") or "")) or {}).get("_text_config_type")
    if built:
        # no language model written: transformers builds the wrapper's default text config (SubConfigSpec's
        # model_type, its init_kwargs the wrapper's _text_config_defaults), not the wrapper's top level read as one
        merged = {k: raw[k] for k in _LIFTED if k in raw}
        merged["model_type"] = str(built)
        return merged, "text_config."
    return raw, ""


def _wrapper_fields_read_nested(raw: dict[str, Any], text: dict[str, Any], prefix: str, read: set,
                                origin: str, own: list[str] | None = None, notes: list[str] | None = None) -> None:
    """A field the parser reads from the nested language-model config, also given at the wrapper's top level
    with another value (or only there), would be dropped unread: the nested one (or its default) sizes the
    model. One error naming it (the wrapper's own fields, lifted where the nested config lacks them, excepted).
    `own` are fields the wrapper's config class keeps for itself (the family fact _wrapper_own_fields:
    PaliGemmaConfig.hidden_size, which sizes no module; Ultravox's, its projector's middle width, which the
    projector reads); they are named in `notes` where they differ."""
    for key in raw:
        # the wrapper's tie_word_embeddings is its own, weighed in config/head_tie.py
        if key in (*_LIFTED, "model_type", "tie_word_embeddings") or key == prefix.rstrip(".") or key not in read:
            continue
        if key in (own or ()):
            if notes is not None and raw[key] != text.get(key):
                notes.append(f"{key}: the wrapper's own field ({raw[key]!r}), not the language model's width; the language "
                             f"model's is {prefix}{key} ({text.get(key)!r})")
            continue
        if key not in text:
            raise InputError(origin, f"{key}: given at the top level ({raw[key]!r}) but the language model is read "
                                     f"from {prefix.rstrip('.')}, which lacks it; move it into {prefix.rstrip('.')}")
        if raw[key] != text[key]:
            raise InputError(origin, f"{key}: the top level says {raw[key]!r} and {prefix}{key} says {text[key]!r}; "
                                     f"the language model is read from {prefix.rstrip('.')}: drop or fix the top-level one")


def _default_text_config(wrapper: dict[str, Any], wrapper_type: str, text_type: str) -> dict[str, Any]:
    """The wrapper's default text config where it sizes the nested one: only a nested config of the default's
    class (or of none, which takes the wrapper's type). to_diff_dict leaves a nested field out where it equals the
    nested class's own default, so a Qwen2 text config in LLaVA leaving vocab_size out is Qwen2Config's 151936, not
    LlamaConfig's 32000; that class's line says it, or the field is named as missing."""
    defaults = wrapper.get("_text_config_defaults") or {}
    default_type = wrapper.get("_text_config_type") or defaults.get("model_type")
    return defaults if text_type in (default_type, wrapper_type) else {}


def _apply_defaults(cfg: dict[str, Any], wrapper_type: str, nested: bool = False,
                    taken: list[str] | None = None,
                    filled: dict[str, str] | None = None) -> tuple[dict[str, Any], bool]:
    """The family's defaults where the config leaves a field out. A language model nested in a wrapper takes
    the wrapper's default text config first where the nested config is of that class (its _text_config_defaults:
    LlamaConfig() for LLaVA; Voxtral's and GLM-ASR's init_kwargs, which the wrapper merges under a given one before
    the class reads it: GLM-ASR's 28 layers, not LlamaConfig's 32), then its own class's defaults (transformers
    builds a nested dict as TextClass(**text_config): Llava's Mistral text config leaving intermediate_size out is
    MistralConfig's 14336), then the wrapper's line. `taken` gets the fields the
    wrapper's default text config gave, `filled` the Hugging Face fields a family line gave (field -> its
    model_type)."""
    table = _family_defaults()
    known = False
    out = dict(cfg)
    text_type = str(cfg.get("model_type") or "")
    wrapper = (table.get(wrapper_type) or {}) if nested else {}
    for t in ("_text_config_defaults", text_type, wrapper_type):
        if t == "_text_config_defaults":
            for k, v in _default_text_config(wrapper, wrapper_type, text_type).items():
                if k not in out:
                    out[k] = v
                    if taken is not None:
                        taken.append(k)
            continue
        if t in table:
            known = True
            family = table[t] or {}
            # the class's attribute_map: a default yields to the field under another name the class reads it by
            # (Param2's original files write num_shared_experts for n_shared_experts)
            aliases = family.get("_aliases") or {}
            for k, v in family.items():
                # a field written as null keeps its null: the class reads it so (q_lora_rank null: no query
                # LoRA; sliding_window null: no window), not as its default
                if k in ("_text_config_defaults", "_aliases") or k in out:
                    continue
                if not any(cfg.get(a) is not None for a in aliases.get(k, ())):
                    out[k] = v
                    if filled is not None and not str(k).startswith("_"):
                        filled[k] = t
    return out, known


# PretrainedConfig's attributes about the config object itself (transformers configuration_utils.py: saving,
# outputs, fine-tuning labels), which a nested sub-config serialises with its own values
CONFIG_BOOKKEEPING = frozenset({"_name_or_path", "architectures", "transformers_version", "output_hidden_states",
                                "output_attentions", "return_dict", "dtype", "chunk_size_feed_forward",
                                "is_encoder_decoder", "id2label", "label2id", "problem_type"})


def _lift_nested(cfg: ReadRecorder, f: Fields, given: dict[str, Any]) -> None:
    """A family that writes sizes in nested blocks (_nested_configs: DBRX's attn_config / ffn_config, MPT's
    attn_config) has their keys read as the config's own, each named under its block in errors and notes. A key
    the top level also gives (`given`: the config as written) with another value would leave one of the two
    unread: one error naming both. A family default of the same key yields to the block, as to any given field."""
    blocks = f.cfg.get("_nested_configs") or []
    for block in blocks:
        inner = cfg.get(block)
        if inner is None:
            continue
        if not isinstance(inner, dict):
            raise f.err(block, f"must be a JSON object, got {type(inner).__name__}")
        for k, v in inner.items():
            # the block's own class name (DBRX writes "" there) and the bookkeeping every serialised sub-config
            # writes about itself (MPT's attn_config: architectures null), not the model's
            if k == "model_type" or k in CONFIG_BOOKKEEPING:
                continue
            if k in given and given[k] != v:
                raise f.err(block, f"{k} is {v!r} here and {given[k]!r} at the top level; one of them would be "
                                   "read and the other dropped")
            dict.__setitem__(cfg, k, v)
            cfg.nested[k] = f"{block}."


def _refuse_values(cfg: ReadRecorder, f: Fields, raw: dict[str, Any]) -> None:
    """_refused_when {FIELD: [VALUE, why]}: a value of a field under which the family builds weights the stack does
    not count (MPT without ALiBi: a learned position table that MptModel never builds; LLaVA-NeXT-Video's conv
    pooler, a field of the wrapper's own config). One line naming the field."""
    for field, rule in (f.cfg.get("_refused_when") or {}).items():
        value, why = rule
        given = cfg[field] if dict.__contains__(cfg, field) else raw.get(field)
        if given == value and type(given) is type(value):
            raise f.err(field, f"{value!r}: {why}")
    # _refused_if_written {FIELD: why}: a field the family's class reads at load to build weights the stack does not
    # count, whatever its value (MiniMax-M3's legacy sparse_attention_config places indexer layers)
    for field, why in (f.cfg.get("_refused_if_written") or {}).items():
        if dict.__contains__(cfg, field) or field in raw:
            raise f.err(field, f"written: {why}")
    # _read_instead {FIELD: OTHER}: a field the class never reads, reading OTHER (written, or the line's class default)
    # in its place (MambaConfig keeps n_layer as an extra attribute and builds num_hidden_layers layers)
    for field, other in (f.cfg.get("_read_instead") or {}).items():
        given, read = f.cfg.get(field), f.cfg.get(other)
        if given is not None and given != read:
            raise f.err(field, f"{given} differs from {other} = {read}, which the class reads in its place (its default "
                               f"where the config leaves it out), never {field}: write {other} {given}")
    refuse_overwritten(f)


_LAYER_COUNT_FIELDS = ("num_hidden_layers", "n_layer", "n_layers", "num_layers", "num_transformer_layers")


def _layer_count_field(f: Fields) -> str:
    return f.first(*_LAYER_COUNT_FIELDS) or "num_hidden_layers"


def _layer_count(f: Fields, supplied: set[str] | frozenset[str] = frozenset()) -> int:
    types = f.cfg.get("layer_types")
    if "num_hidden_layers" in supplied and isinstance(types, list) and types and "layer_types" not in supplied:
        # left out beside a written layer_types: the class takes its default (the family line's), and
        # validate_layer_type refuses a list of another length
        n = f.int("num_hidden_layers", maximum=MAX_LAYERS)
        if n != len(types):
            raise f.err("num_hidden_layers", f"missing beside layer_types' {len(types)} entries: the class's default "
                                             f"{n} is taken, and transformers refuses a layer_types list of another "
                                             "length; write num_hidden_layers")
    for key in _LAYER_COUNT_FIELDS:
        if f.has(key):
            return f.int(key, maximum=MAX_LAYERS)
    if isinstance(types, list) and types:
        # the class builds its own num_hidden_layers default and refuses a layer_types of another length
        # (PreTrainedConfig.validate_layer_type), so the list's length is no layer count for a config leaving it out
        raise f.err("num_hidden_layers", f"missing beside layer_types' {len(f.cfg['layer_types'])} entries: the "
                                         "class takes its default layer count, and transformers refuses a layer_types "
                                         "list of another length; write num_hidden_layers")
    for key in ("hybrid_override_pattern", "layers_block_type", "block_configs"):
        if isinstance(f.cfg.get(key), (list, str)) and f.cfg.get(key):
            return len(f.cfg[key])
    return f.int("num_hidden_layers", maximum=MAX_LAYERS)


# the config keys that give a model next-n (MTP) modules, as _mtp reads them
MTP_DEPTH_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules")


def no_mtp_layers(model_name: str) -> str:
    """Why an MTP depth N > 0 is refused on a model whose config gives no next-n modules: the keys that would. A
    catalog config is the published one (facts/model_configs/SOURCES.md): the refusal says the published config
    has none, so a config that sets them is the way to plan MTP (nothing else sizes the next-n layers)."""
    from solver.catalog import catalog_dir

    keys = " / ".join(MTP_DEPTH_KEYS)
    published = sorted(catalog_dir("models").glob(f"*--{model_name}.json"))
    if published:
        return (f"{model_name} has no MTP (next-n) layers in its published config (models/{published[0].name} sets "
                f"none of {keys}); pass a config.json that sets one to plan MTP")
    return f"{model_name} has no MTP (next-n) layers in its config ({keys} unset or 0)"


def _mtp(f: Fields, reader: BlockReader, stack: tuple[Layer, ...]) -> tuple[tuple[tuple[Layer, ...], ...], bool]:
    """Next-n modules: num_nextn_predict_layers (DeepSeek layout: copies of embedding and head in each),
    mtp_num_hidden_layers (Qwen3.5), num_mtp_modules x mtp_transformer_layers (MiniMax); the layers of one
    module follow mtp_hybrid_override_pattern / mtp_layers_block_type when given, else one decoder layer
    with the model's full attention and its FFN type (MoE when the model has one)."""
    n = f.int(MTP_DEPTH_KEYS[0], default=0, minimum=0, maximum=64)
    # the DeepSeek layout stores embed_tokens and the head again in each next-n layer; a family whose checkpoint
    # does not says so (_mtp_checkpoint_copies: false)
    copies = n > 0 and f.cfg.get("_mtp_checkpoint_copies", True) is not False
    per_module = 1
    if not n:
        n = f.int(MTP_DEPTH_KEYS[1], default=0, minimum=0, maximum=64)
    if not n and f.has(MTP_DEPTH_KEYS[2]) and f.cfg.get("use_mtp", True):
        n = f.int(MTP_DEPTH_KEYS[2], minimum=0, maximum=64)
        per_module = f.int("mtp_transformer_layers", default=1, maximum=64)
    if not n:
        return (), False
    pattern = None
    if f.has("mtp_hybrid_override_pattern"):
        sub = Fields({"hybrid_override_pattern": f.cfg["mtp_hybrid_override_pattern"]}, f.origin, f.prefix)
        pattern = one_block_pattern(sub)
    elif f.has("mtp_layers_block_type"):
        sub = Fields({"layers_block_type": f.cfg["mtp_layers_block_type"]}, f.origin, f.prefix)
        pattern = one_block_pattern(sub)
    if pattern is not None:
        layers = []
        for mixer, ffn in pattern[1]:
            slot = Slot(mixer, ffn, index=len(stack) - 1)
            layers.append(Layer(tuple(x for x in ((reader.mixer(slot),) + reader.ffns(slot)) if x is not None),
                                reader.h, 1))
        module = tuple(layers)
    else:
        slot = Slot("full", "moe" if reader.is_moe else "dense", index=len(stack) - 1)
        if f.has("compress_ratios"):
            slot = Slot("compressed", slot.ffn, index=len(stack))
        mixer = reader.mixer(slot) if slot.mixer == "compressed" else next((layer.mixer for layer in reversed(stack) if isinstance(layer.mixer, (Attention, MLA))
                      and not getattr(layer.mixer, "window", None) and getattr(layer.mixer, "caches_kv", True)),
                      None) or reader.mixer(slot)
        ffn = reader.ffns(slot)
        module = (Layer((mixer,) + ffn, reader.h, reader.norms, reader.hyper_params()),) * per_module  # type: ignore[operator]
    return tuple(module for _ in range(n)), copies


def _refuse_unread_modules_of_unknown_wrapper(raw: dict[str, Any], prefix: str, wrapper_type: str,
                                               origin: str) -> None:
    """Where the language model's size is missing under a wrapper of no family line, a sub-config beside it that no
    reader would look up (only the encoder keys are) is the refusal to give: the model could not be counted with
    it whatever the size (xGen-MM's vision_encoder_config beside a text_config written as its diff against
    Phi3Config's defaults), and `hidden_size: missing` alone would send the user after the wrong field."""
    if not prefix or wrapper_type in _family_defaults():
        return
    wrapper = ReadRecorder(raw)
    for key in ENCODER_KEYS:
        _ = key in wrapper  # looked up: the encoder readers' keys
    refuse_unread_subconfigs(wrapper, prefix.rstrip("."), origin)


def parse_model_config(raw: Any, name: str, origin: str | None = None) -> ModelSpec:
    """Parse a config.json dict into a ModelSpec. Raises InputError naming the offending field."""
    origin = origin or name
    if not isinstance(raw, dict):
        raise InputError(origin, f"config must be a JSON object, got {type(raw).__name__}")
    refuse_non_decoder(raw, origin)
    text, prefix = _text_config(raw, origin)
    if text is not raw:
        refuse_non_decoder(text, origin, prefix)
    wrapper_type = str(raw.get("model_type") or "")
    text_built = prefix == "text_config." and "text_config" not in raw
    from_wrapper: list[str] = []  # fields the nested config leaves to the wrapper's default text config
    filled: dict[str, str] = {}  # fields a family line gave the config: field -> the line's model_type
    defaulted, known = _apply_defaults(text, wrapper_type, nested=text is not raw, taken=from_wrapper, filled=filled)
    unread_alias = defaulted.get("_read_instead") or {}  # a name the class never reads (Mamba's n_layer)
    if filled.get("num_hidden_layers") and any(text.get(k) is not None and k not in unread_alias
                                               for k in _LAYER_COUNT_FIELDS):
        # a count written under another name (EXAONE-3's num_layers, an attribute_map alias) is the class's
        # num_hidden_layers: its default is not taken beside it
        del defaulted["num_hidden_layers"], filled["num_hidden_layers"]
    derive_defaults(defaulted)  # what the family's class derives from the other fields (its __post_init__)
    # what the family's line (or the wrapper's default text config) supplied, not the config: an unread one of them
    # drops nothing the user gave (Llama-4's shared-expert count in a dense Llama-Guard-4)
    supplied = {k for k, v in defaulted.items() if text.get(k) is None and v is not None}
    cfg = ReadRecorder(defaulted)
    f = Fields(cfg, origin, prefix)
    warnings: list[str] = []
    model_type = str(cfg.get("model_type") or "")
    if f.has("_refused"):  # a family whose layers the stack cannot express (family_defaults.yaml says why)
        lines = _family_defaults()
        if (prefix and model_type in lines and "_refused" not in lines[model_type]
                and "_refused" in lines.get(wrapper_type, {})):
            # the wrapper's line refuses a language model the stack counts: the wrapper is the cause (JEV's decision
            # head over a qwen3_5_text model); a text model of no line is named as before (Kosmos-2's decoder)
            raise InputError(origin, f"model_type: {wrapper_type!r}: {cfg['_refused']}")
        raise f.err("model_type", f"{model_type!r}: {cfg['_refused']}")
    _lift_nested(cfg, f, text)
    cfg.defaults_from = default_sources(filled, defaulted, cfg.nested, _family_defaults())
    _refuse_values(cfg, f, raw)
    refuse_uncountable(f)
    if prefix:  # the wrapper's own fields too (Emu3's vq_config beside its text_config)
        refuse_uncountable(Fields(raw, origin))
    headless = headless_note(raw)
    if headless:
        warnings.append(headless)
    if text_built:
        warnings.append(f"text_config: not written; read as {wrapper_type}'s default language model ({model_type!r} "
                        "with the class defaults), which transformers builds")
    if not known and model_type:
        warnings.append(f"model_type {model_type!r} is not in the family defaults; {_KNOWN_TYPES_NOTE}")
    elif not known:  # no family at all: no class default fills a field it leaves out, said as for an unknown one
        warnings.append(f"{prefix}model_type: absent, so no family's defaults apply; {_KNOWN_TYPES_NOTE}")
    if f.has("_masked_diffusion"):  # generated by denoising steps over masked tokens, not token by token
        field = str(cfg["_masked_diffusion"])
        warnings.append(f"{field}: a masked-diffusion language model (bidirectional attention, every position "
                        "re-computed at each denoising step): the parameters are counted, but the K/V cache, decode "
                        "and TPOT figures assume token-by-token autoregressive decoding, which it does not run")
    if f.has("_block_diffusion"):  # a causal encoder fills the K/V cache; a bidirectional decoder denoises blocks
        field = str(cfg["_block_diffusion"])
        warnings.append(f"{field}: a block-diffusion language model (the encoder caches the prompt's K/V; the decoder "
                        f"denoises each canvas ({field} tokens) over several bidirectional passes reading that cache, "
                        "through the same layers): the parameters and K/V cache are counted, but the decode and TPOT "
                        "figures assume token-by-token autoregressive decoding, which it does not run")

    unpair_layer_types(f)
    try:
        hidden = f.int("hidden_size", "d_model", "n_embd", "n_embed", "model_dim")  # OpenELM: model_dim
        # ChatGLM: the table holds the padded vocabulary; a config with neither is told the usual name
        # OLMo-1's layout: wte / ff_out hold embedding_size rows (vocab_size padded up; the family's fact names it)
        vocab = f.int(str(cfg.get("_padded_vocab_field") or "padded_vocab_size"), "vocab_size", missing="vocab_size")
        n_layers = _layer_count(f, supplied)
        passes = read_passes(f)  # a looped stack: the reader builds the stored layers, lay_out the passes
        if passes is not None:
            check_layer_count(f, passes, n_layers, _layer_count_field(f))
            n_layers = passes.stored
    except InputError:
        _refuse_unread_modules_of_unknown_wrapper(raw, prefix, wrapper_type, origin)
        raise
    images = image_tokens(raw, origin) if f.cfg.get("cross_attention_layers") else None
    try:
        reader = BlockReader(f, hidden, n_layers, images)
        layer_slots, source = slots(f, n_layers, reader.is_moe)
        if len(layer_slots) != n_layers:
            n_layers = len(layer_slots)
            reader = BlockReader(f, hidden, n_layers, images)
        norms = reader.norms
        norm_bias = layernorm_bias(f)
        stack: list[Layer] = []
        # learned hidden-size vectors on the residual stream a layer holds (the family's fact: Dory's nGPT rates)
        residual_gates = f.int("_residual_gates", default=0, minimum=0, maximum=8)
        parallel_ssm = f.bool("_parallel_mamba")  # Falcon-H1: attention and Mamba-2 side by side in every layer
        per_layer_input = reader.per_layer_input()  # the same gate and projection in every layer
        for slot in layer_slots:
            side = (reader.mamba(),) if parallel_ssm and slot.mixer in ("full", "sliding", "chunked") else ()
            mixer = reader.mixer(slot)
            altup = reader.altup()
            ends = reader.altup_projections(slot.index == 0, slot.index == len(layer_slots) - 1)
            blocks = tuple(b for b in ((mixer,) + side + reader.ffns(slot) + (per_layer_input,
                                                                              reader.block_residual(slot), altup)
                                       + ends)
                           if b is not None)
            per_layer_norms = norms if slot.mixer and slot.ffn else 1 if (slot.mixer or slot.ffn) else 0
            per_layer_norms += 1 if per_layer_input else 0  # post_per_layer_input_norm
            per_layer_norms += 1 if altup is not None else 0  # post_laurel_norm (built whatever laurel_rank)
            per_layer_norms += 1 if slot.residual_mlp and norms else 0  # the residual MLP's own norm (Arctic)
            # a norm on the MoE block's output, inside the block (A.X K1's post_mlp_layernorm): MoE layers only
            per_layer_norms += 1 if slot.ffn == "moe" and f.bool("_moe_output_norm") else 0
            if slot.index == 0 and slot.mixer and per_layer_norms and f.bool("_first_layer_no_mixer_norm"):
                per_layer_norms -= 1  # ModernBERT: layer 0's attn_norm is nn.Identity (the embedding is normed)
            shared = None
            if slot.shared is not None:  # a hybrid layer: the stored block first, its own projections, its mixer
                stored, own, widths = reader.shared_block(slot)
                blocks = stored + own + blocks
                shared = SharedRef(slot.shared, tuple(range(len(stored))), widths)
            stack.append(Layer(blocks, hidden, per_layer_norms, reader.hyper_params(), norm_bias, shared,
                               reader.modality_copies(blocks), residual_gates, _norm_gates(f, slot, hidden)))
    except InputError as e:  # a missing attention size where the config describes another mixer says that
        # only a size the attention reading found missing; a specific refusal (Zamba2's pattern) stands
        found = None if known or ": missing" not in str(e) else unread_mixer_field(cfg, supplied)
        if found is None:
            raise
        raise f.err(found[0], f"{found[1]}: describes a mixer other than attention in a field shardplan does not "
                              f"read for model_type {model_type!r}, and the layers read as attention lack a size "
                              f"({str(e).split(': ', 1)[-1]})") from None
    layers = tuple(stack) if passes is None else lay_out(stack, passes)
    if any(layer.modality_copies for layer in layers):
        experts = int(cfg["_modality_experts"]["count"])
        warnings.append(f"modality experts: every layer stores {experts} copies of its attention and MLP, routed by "
                        "the token's modality (no router); all are counted, a token runs one: the costs, the active "
                        "parameters and the K/V cache are one copy's (a prefill's image tokens read their copy's "
                        "weights too, not costed)")
    if images is not None:
        warnings.append(f"cross-attention layers ({sum(1 for s in layer_slots if s.mixer == 'cross')}) hold the K/V "
                        f"of one image per request: {images} tokens (vision_config.max_num_tiles x "
                        "((image_size / patch_size)^2 + 1)), a constant state per sequence")
    mtp, copies = _mtp(f, reader, layers)
    warnings += reader.notes
    facts = {k: v for k, v in defaulted.items() if str(k).startswith(TOWER_FACTS)}
    # a tower is of a known family when it or its wrapper has a line (the text model's line says nothing of it)
    # the text model's MLP width, which a connector may run through (Idefics2's modality projection)
    inter = defaulted.get("intermediate_size")
    text_inter = inter if isinstance(inter, int) and not isinstance(inter, bool) and inter > 0 else None
    wrapper = ReadRecorder(raw)  # what the encoders' readers look up of the wrapper, so the rest can be named
    encoders = tuple(read_encoders(wrapper, hidden, origin, warnings, facts, _family_defaults(),
                                   wrapper_type in _family_defaults(), text_inter))
    if not prefix:  # the language model's own reader looked up the top level's keys: they describe the stack
        wrapper.looked_up |= cfg.looked_up
        cfg.looked_up |= wrapper.looked_up  # and the encoders' readers some of them (LLaVA's mm_* fields)
    # a language model at the top level may sit beside sub-configs too (MiniCPM-o's tts_config)
    refuse_unread_subconfigs(wrapper, prefix.rstrip("."), origin)
    nonstandard = [e.name for e in encoders]
    for key in ("ngram_embedding", "engram"):
        if raw.get(key):
            nonstandard.append(key)
            warnings.append(f"{key}: not counted (no sizing convention for it); the totals exclude it")
    # the modules the quantization_config's lists are matched against: the stack's and the MTP layers' (numbered on)
    quant = read_quant(cfg, origin, warnings, lambda: model_modules(
        layers + tuple(x for module in mtp for x in module), (model_type, wrapper_type), bool(prefix)))
    tie = head_tie(f, raw, prefix, known, (_family_defaults().get(wrapper_type) or {}) if prefix else {}, vocab,
                   hidden, warnings)
    # the longest position the model was built for: GPT-2's lineage names it n_positions, ChatGLM seq_length,
    # OpenELM max_context_length
    context_field = f.first(*CONTEXT_FIELDS) or CONTEXT_FIELDS[0]
    max_pos = f.opt_int(*CONTEXT_FIELDS, maximum=2**40)
    outside = outside_stack(f, hidden)
    # a head pruned to the first output_vocab_size rows of the vocabulary (Apertus 1.5: the image and audio code rows
    # are embedded, never predicted): the head is that wide, the embedding keeps vocab_size rows
    head_rows = f.opt_int(str(f.cfg.get("_head_rows_field") or "output_vocab_size"), maximum=vocab)
    if head_rows is not None and head_rows != vocab:
        if tie:
            raise f.err("output_vocab_size", f"{head_rows:,} head rows under a head tied to the {vocab:,}-row "
                                             "embedding: a tied head is the embedding, untie it or drop the field")
        outside["embedding_extra_rows"] += vocab - head_rows
        vocab = head_rows
    positions = position_encoding(f, layers, outside["position_embeddings"], _family_defaults(),
                                  (model_type, wrapper_type))
    if prefix:  # before check_unread, which looks at every key left
        # a text config transformers builds from the class defaults holds those defaults: a top-level field agreeing
        # with one is read (Voxtral's hidden_size 3072), one differing is dropped unread and named
        _wrapper_fields_read_nested(raw, defaulted if text_built else text, prefix, set(cfg.looked_up), origin,
                                    defaulted.get("_wrapper_own_fields"), warnings)
    read = [k for k in from_wrapper if k in cfg.looked_up]
    if read:
        warnings.append(f"{prefix}{', '.join(read)}: not written; read as {wrapper_type}'s default text config "
                        "(a nested config is written as its difference from that default)")
    warnings += [f"{prefix}{k} absent from config.json: read at {where}"
                 for k, where in cfg.defaults_from.items() if k in cfg.looked_up]
    other_mixers = parallel_ssm or any(s.mixer in ("linear", "mamba", "conv", "rglru") for s in layer_slots)
    check_unread(f, cfg, model_type, known, warnings, other_mixers, supplied)
    return ModelSpec(
        name=name, model_type=model_type, hidden_size=hidden, vocab_size=vocab,
        tie_word_embeddings=tie, layers=layers, mtp_modules=mtp,
        mtp_checkpoint_copies=copies, encoders=encoders,
        max_position_embeddings=max_pos, context_field=context_field, rope_scalings=read_rope_scalings(f.cfg),
        pattern_source=source, kv_sources=_kv_sources(layer_slots, layers),
        # sub-layers sharing one MoE end with the one holding it (config.pattern: LongCat's blocks)
        stage_unit=next((s.index + 1 for s in layer_slots if s.extra_moe), 1), quant=quant, warnings=tuple(warnings), nonstandard_modules=tuple(nonstandard),
        norm_bias=norm_bias, remote_code=bool(raw.get("auto_map")), position_encoding=positions,
        per_layer_inputs=reader.per_layer_inputs(), self_conditioning=reader.self_conditioning(), **outside,
    )



def _kv_sources(layer_slots: list[Slot], layers: tuple[Layer, ...]) -> tuple[int, ...]:
    """Each layer's K/V source where kv_source_layers names one (ModelSpec.kv_sources), else ()."""
    if len(layer_slots) != len(layers) or all(s.kv_source is None for s in layer_slots):
        return ()
    return tuple(s.index if s.kv_source is None else s.kv_source for s in layer_slots)


GATED_NORM_PLACES = ("mixer", "moe", "mlp")


def _norm_gates(f: Fields, slot: Slot, hidden: int) -> int:
    """Weights of the low-rank sigmoid gate MLPs on a layer's norms (the family's _gated_norms: "mixer" the norm
    before the mixer, "moe" the norm before an MoE block, "mlp" the norm before a dense MLP; A.X-K2's
    AXK2GatedRMSNorm, fc1 hidden -> gated_norm_rank and fc2 back, bias-free; Voxtral-Realtime's ada_rms_norm)."""
    places = f.cfg.get("_gated_norms")
    if not places:
        return 0
    if not isinstance(places, list) or set(places) - set(GATED_NORM_PLACES):
        raise f.err("_gated_norms", f"must list places among {GATED_NORM_PLACES}, got {places!r}")
    rank = f.int("gated_norm_rank", minimum=1)
    gated = ("mixer" in places and slot.mixer is not None) + ("moe" in places and slot.ffn == "moe") \
        + ("mlp" in places and slot.ffn is not None and slot.ffn != "moe")
    return gated * 2 * hidden * rank
