"""Modules outside the decoder stack that a multimodal config declares: vision / audio encoders and their
projectors into the text width.

Each part is counted in its own module: the ViT towers (vit_towers.py), their projectors (projectors.py,
attention_projectors.py), the tiled towers (tiled_towers.py) and the audio towers (audio_towers.py), each module
documenting its conventions and the family facts it reads.
Facts of a tower's modeling code that its config does not write are read from family_defaults.yaml under the
tower's own model_type (vision_config.model_type: clip_vision_model, intern_vit_6b), the wrapper's facts (its
model_type and the text model's) on top; those this module reads:
  _vision_config_defaults   the wrapper's default vision config (LlavaConfig's CLIP ViT-L/14-336, PaliGemmaConfig's
                            SigLIP), read where the vision_config leaves a field out, in a note: transformers writes
                            a nested config as its diff against that default (Pixtral-12B's writes no hidden_size)
  _vision_patch_linear      no tower: one biased linear of the wrapper's patch_size^2 x num_channels into the text
                            width (Fuyu's vision_embed_tokens)
  _vision_refused           why the family's tower is not counted: the config is refused, naming the encoder
                            key (DeepSeek-VL2), rather than miscounted by the convention
  _vision_norm_when_text    FIELD: a LayerNorm (h) on the tower's output where the language model's FIELD is non-zero
                            (Nemotron-Omni's vision_final_layernorm under num_nextn_predict_layers)
Placement is the engine's, by the wrapper (FrameworkProfile.encoder_split_model_types: vLLM and SGLang split most
ViTs over the attention TP group unless asked to replicate them; the seed's generic profile holds them whole).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from solver.specs.config.audio_towers import (conformer_audio, conv_pyramid_audio, convnext_audio, sanm_audio,
                                               wav2vec_audio, whisper_audio)
from solver.specs.config.fields import Fields, ReadRecorder
from solver.specs.config.projectors import projector
from solver.specs.config.tiled_towers import tiled_vit
from solver.specs.config.vit_towers import check_heads, size_pair, tower_heads, vit_tower

ENCODER_KEYS = ("vision_config", "audio_config", "vision_tower")
TOWER_FACTS = ("_vision_", "_audio_")  # the prefixes of the family facts a tower or its projector reads


@dataclass(frozen=True)
class Encoder:
    name: str  # vision | audio
    params: int
    layers: int
    hidden: int
    # the multimodal wrapper's model_type (config.json's top level: qwen3_vl_moe, gemma3): an engine's tower code
    # is the wrapper's model class, whose layout its profile names (FrameworkProfile.encoder_split_model_types)
    wrapper: str = ""
    heads: int = 0  # the tower's attention heads where its config writes them (0: none written or no attention)
    # whole on every rank whatever the engine's layout for the wrapper: the command asks it to replicate the tower
    # (FrameworkProfile.tower_flags, towers: whole; ModelSpec.towers_as)
    replicated: bool = False


def _vit(f: Fields, wrapper: Fields, text_hidden: int, notes: list[str],
         facts: dict[str, Any], text_inter: int | None = None) -> tuple[int, int, int]:
    """(params, layers, width) of one tower and its projector; `wrapper` is the multimodal config around it,
    where some families write the projector's fields (Mistral3: spatial_merge_size, multimodal_projector_bias)."""
    tower, layers, h, norm = vit_tower(f, notes, facts)
    switched = facts.get("_vision_norm_when_text")
    if switched:
        # a LayerNorm on the tower's output that the wrapper builds only where the language model's FIELD is
        # non-zero (Nemotron-Omni's vision_final_layernorm, under the text config's num_nextn_predict_layers)
        text = Fields(wrapper.cfg.get("text_config") or wrapper.cfg, wrapper.origin, "text_config.")
        if text.int(str(switched), default=0, minimum=0):
            tower += 2 * h
    return tower + projector(f, wrapper, h, norm, text_hidden, facts, notes, text_inter), layers, h


def _shown_value(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def read_encoders(raw: dict[str, Any], text_hidden: int, origin: str, notes: list[str] | None = None,
                  facts: dict[str, Any] | None = None,
                  families: dict[str, dict[str, Any]] | None = None, known: bool = True,
                  text_inter: int | None = None) -> list[Encoder]:
    """The encoders a multimodal config declares; sizes read by convention are said in `notes`; `facts` are the
    wrapper family's _vision_* facts and `families` the family_defaults table, where a tower's own model_type
    finds the facts of its modeling code (the module docstring). `known`: the wrapper has a family line; without
    it or a line for the tower's own model_type, the tower's unread structural fields are named in a note
    (config/unread.py check_unread_tower)."""
    from solver.specs.config.embedders import encoder_free_vision, frame_linear_audio
    from solver.specs.config.named_towers import read_named_tower
    from solver.specs.config.unread import check_unread_tower

    notes = notes if notes is not None else []
    wrapper_facts = facts or {}
    families = families or {}
    out = []
    named = read_named_tower(raw, text_hidden, origin, notes, families)  # LLaVA's mm_vision_tower
    if named is not None:
        out.append(named)
    if wrapper_facts.get("_vision_patch_linear"):
        # no tower: the image's patches enter the text stack through one biased linear of patch_size^2 x
        # num_channels into the text width (Fuyu's vision_embed_tokens), sized by the wrapper's own fields
        w = Fields(raw, origin)
        patch_h, patch_w = size_pair(w, "patch_size", 0)
        if not patch_h:
            raise w.err("patch_size", "missing (required to size the patch embedding into the text width)")
        channels = w.int("num_channels", default=3, maximum=64)
        out.append(Encoder("vision", channels * patch_h * patch_w * text_hidden + text_hidden, 0, text_hidden))
    # the key of the audio tower's config: audio_config, or the wrapper's _audio_config_key (Granite-Speech's
    # encoder_config)
    # (a list: one tower each, VibeVoice-ASR's acoustic and semantic tokenizer encoders)
    named_keys = wrapper_facts.get("_audio_config_key") or "audio_config"
    audio_keys = tuple(str(k) for k in (named_keys if isinstance(named_keys, list) else [named_keys]))
    for key in tuple(k for e in ENCODER_KEYS for k in (audio_keys if e == "audio_config" else (e,))):
        audio = key in audio_keys
        sub = raw.get(key)
        if sub is None and audio and len(audio_keys) > 1:
            # each is built from its class defaults where not written, which no family line holds here
            raise Fields(raw, origin).err(key, f"not written: transformers builds {raw.get('model_type')}'s default "
                                               "for it, whose sizes shardplan does not hold; write it out")
        if sub is None and key == "vision_config" and wrapper_facts.get("_vision_config_defaults") and named is None:
            # transformers builds the wrapper's default tower where none is written (SubConfigSpec's init_kwargs);
            # the language model alone is sized here, and said
            notes.append(f"{key}: not written; the language model alone is sized (transformers would build "
                         f"{raw.get('model_type')}'s default tower)")
        if sub is None and audio and wrapper_facts.get("_audio_config_type"):
            # transformers builds the wrapper's default audio tower where none is written (SubConfigSpec's
            # model_type): counted from that tower's class defaults (its _audio_config_defaults), and said
            sub = {"model_type": wrapper_facts["_audio_config_type"]}
            if not (families.get(sub["model_type"]) or {}).get("_audio_config_defaults"):
                raise Fields(raw, origin).err(key, f"not written: transformers builds {raw.get('model_type')}'s "
                                                   f"default audio tower ({sub['model_type']}), which has no counting "
                                                   "convention here; not counted rather than the language model "
                                                   "alone sized as the whole")
            notes.append(f"{key}: not written; read as {raw.get('model_type')}'s default audio tower "
                         f"({sub['model_type']}), which transformers builds")
        if sub is None or sub == "" or sub == []:
            continue
        if not isinstance(sub, dict):
            raise Fields(raw, origin).err(key, "must be an object")
        if "cls" in sub and isinstance(sub.get("params"), dict):
            # DeepSeek-VL / Janus: a tower class and its constructor's arguments (a timm model's name), not its sizes
            raise Fields(raw, origin).err(key, f"names a tower class ({_shown_value(sub['cls'])}) and its arguments "
                                               "(params) rather than the tower's sizes; not counted rather than "
                                               "miscounted (drop it to size the language model alone)")
        if isinstance(sub.get("architecture"), str):
            # transformers' TimmWrapperConfig: the tower is timm.create_model(architecture, **model_args); its
            # sizes are timm's registry entry, which no field here holds (FastVLM's fastvit_mci3, PerceptionLM's PE)
            raise Fields(raw, origin).err(f"{key}.architecture", f"{_shown_value(sub['architecture'])}: a timm "
                                          "model's name, whose sizes are timm's rather than the config's; not "
                                          "counted rather than miscounted (drop it to size the language model "
                                          "alone)")
        # a tower written empty is the wrapper's default one, of the model_type its default vision config names
        tower_type = str(sub.get("model_type") or ((wrapper_facts.get("_vision_config_defaults") or {})
                                                   .get("model_type") if key == "vision_config" else "") or "")
        own = families.get(tower_type) or {}
        facts = {**{k: v for k, v in own.items() if str(k).startswith(TOWER_FACTS)}, **wrapper_facts}
        # a written vision_config is built by its tower class (transformers passes the dict to it), so a field it
        # leaves out is that class's default (SiglipVisionConfig's image_size 224): the hub files are its diff
        # against them (PaliGemma's and LLaVA-OneVision's write vision_use_head false, which their wrappers'
        # default vision configs hold). The wrapper's default vision config (LlavaConfig's CLIP) only fills what
        # no class default of the tower is known for
        own_defaults = (own.get("_vision_config_defaults") or {}) if key == "vision_config" else \
            (own.get("_audio_config_defaults") or {}) if audio else {}
        wrapper_defaults = (wrapper_facts.get("_vision_config_defaults") or {}) if key == "vision_config" else {}
        defaults = {**wrapper_defaults, **own_defaults}
        taken = [k for k in defaults if k not in sub]
        # every key the tower reader looks up is recorded, so that what it never read can be named
        if facts.get("_vision_refused"):  # a tower the conventions cannot express and no fact yet describes
            raise Fields(raw, origin).err(key, f"{facts['_vision_refused']}; not counted rather than miscounted "
                                               "(drop it to size the language model alone)")
        if not set(sub) - {"model_type"} and not defaults and not facts.get("_audio_frame_linear"):
            # written empty (transformers' diff against the class's defaults): the tower is a default one whose
            # sizes no family line holds; read by convention it would fail on the first size it looks for
            raise Fields(raw, origin).err(key, f"written empty: the tower is {raw.get('model_type')!r}'s default "
                                               f"{tower_type or 'vision'} config, whose sizes shardplan does not hold; "
                                               "write them out")
        sub = ReadRecorder({**sub, **{k: defaults[k] for k in taken}})
        f = Fields(sub, origin, prefix=f"{key}.")
        if facts.get("_vision_encoder_free") and key == "vision_config":  # no tower (config/embedders.py)
            params, layers, h = encoder_free_vision(f, text_hidden, facts["_vision_encoder_free"])
        elif facts.get("_audio_frame_linear") and audio:
            params, layers, h = frame_linear_audio(f, text_hidden, facts["_audio_frame_linear"])
        elif facts.get("_audio_conv_pyramid") and audio:
            params, layers, h = conv_pyramid_audio(f)
        elif facts.get("_audio_sanm") and audio:
            params, layers, h = sanm_audio(f, Fields(raw, origin), text_hidden, facts)
        elif facts.get("_audio_conformer") and audio:
            params, layers, h = conformer_audio(f, Fields(raw, origin), text_hidden, facts)
        elif facts.get("_audio_convnext") and audio:
            params, layers, h = convnext_audio(f, Fields(raw, origin), text_hidden, facts)
        elif facts.get("_audio_wav2vec") and audio:
            params, layers, h = wav2vec_audio(f, Fields(raw, origin), text_hidden, facts)
        elif audio:
            # an audio tower is counted only by its family's convention: the ViT conventions below would size a
            # Whisper encoder as patches and a position grid (Voxtral's, silently) or refuse it on image_size
            if not facts.get("_audio_whisper"):
                raise Fields(raw, origin).err(key, f"an audio encoder of model_type {tower_type or '(none)'!r} has no "
                                                   "counting convention here; not counted rather than miscounted "
                                                   "(drop it to size the language model alone)")
            params, layers, h = whisper_audio(f, Fields(raw, origin), text_hidden, facts)
        elif sub.get("max_num_tiles") is not None:
            params, layers, h = tiled_vit(f, text_hidden)
        else:
            params, layers, h = _vit(f, Fields(raw, origin), text_hidden, notes, facts, text_inter)
            check_heads(f, h, set(sub) - set(taken))
            if not known and not any(str(k).startswith("_vision_projector") for k in facts):
                # a wrapper without a family line: its projector is the convention's, which its own may not be
                notes.append(f"{key}: the projector into the text width is read as the convention's one linear and "
                             f"a norm ({raw.get('model_type')!r} has no family facts: its own projector may differ)")
        for source, table in ((f"the {tower_type} tower's class defaults", own_defaults),
                              (f"{raw.get('model_type')}'s default vision config", wrapper_defaults)):
            read = [k for k in taken if k in sub.looked_up and k in table and (table is own_defaults
                                                                                or k not in own_defaults)]
            if read:
                notes.append(f"{key}.{', '.join(read)}: not written; read as {source} (a nested config is written "
                             "as its difference from that default)")
        check_unread_tower(f, sub, known or tower_type in families, notes, taken)
        out.append(Encoder("audio" if audio else "vision", params, layers, h, heads=tower_heads(f)))
    return [replace(e, wrapper=str(raw.get("model_type") or "")) for e in out]
