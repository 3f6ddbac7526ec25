"""Whether lm_head is the token embedding (tied) or a tensor of its own: the one home of the rule.

A checkpoint stores lm_head exactly when the transformers version that saved it built the head untied, and the
config records that version (transformers_version). Where a wrapper nests the language model, the versions tie by
different configs:
  transformers 4.x  by the language model's config (PreTrainedModel.tie_weights read
                    config.get_text_config(decoder=True).tie_word_embeddings)
  transformers 5.x  by each PreTrainedModel's own config (get_expanded_tied_weights_keys:
                    getattr(self.config, "tie_word_embeddings", False)); the ForConditionalGeneration holding lm_head
                    is built from the wrapper's config, so the wrapper's flag, else its class's default (the family
                    fact _wrapper_tie), decides. PaddleOCRVLConfig forwards a pre-v5 text_config flag to its top level
                    for that reason.
from_pretrained keeps both tensors where a checkpoint stores both, whatever the flag, so a 4.x checkpoint read by 5.x
keeps the head the 4.x rule gave it. A config naming no version, or a wrapper of no known class default, is read by
the language model's flag where it writes one (what the 4.x rule and the engines' language-model classes read), else
by the wrapper's written flag over the language model's class default; a wrapper flag that disagrees with the one
read is named in a note with the parameters at stake.
"""
from __future__ import annotations

from typing import Any

from solver.specs.config.fields import Fields

# the field names a language model's tie is written under, first given wins: LFM2's config class reads tie_embedding
# in place of tie_word_embeddings when both are given; OpenELM's model builds no head under share_input_output_layers,
# whatever tie_word_embeddings says; MobileLLM's model makes lm_head the embedding under share_embedding; OLMo-1's
# layout writes weight_tying
TIE_FIELDS = ("share_input_output_layers", "tie_embedding", "share_embedding", "tie_word_embeddings", "weight_tying")


def saved_by_major(raw: dict[str, Any]) -> int | None:
    """The major version of the transformers that wrote the config (transformers_version "4.50.0.dev0" -> 4), or
    None where it is not written or not a version."""
    version = raw.get("transformers_version")
    head = str(version).split(".", 1)[0] if isinstance(version, str) else ""
    return int(head) if head.isdigit() else None


def head_tie(f: Fields, raw: dict[str, Any], prefix: str, known: bool, wrapper_line: dict[str, Any],
             vocab: int, hidden: int, warnings: list[str]) -> bool:
    """Whether the head is tied (the module docstring's rule); notes go to `warnings`. `f` reads the language
    model's config, `raw` is the file, `prefix` where the language model sits in it ("" for a flat config),
    `known` whether its family has a line, `wrapper_line` the wrapper family's line (family_defaults.yaml)."""
    tie_field = f.first(*TIE_FIELDS)
    tie = f.bool(tie_field or "tie_word_embeddings")
    written = raw.get("tie_word_embeddings") if prefix else None
    nested = raw.get(prefix.rstrip(".")) if prefix else None
    text_written = isinstance(nested, dict) and nested.get("tie_word_embeddings") is not None
    if (isinstance(written, bool) and not text_written and tie_field in (None, "tie_word_embeddings")
            and saved_by_major(raw) != 4):
        # only the wrapper writes it: 5.x's rule, and in a file naming no version a written value over the
        # language model's class default (4.x read that default: below)
        return written
    if tie_field is None and not known:
        # a family without a line has no class default to fall back on: PretrainedConfig's is True, and
        # save_pretrained leaves the field out only when it equals that (a class defaulting to False writes it
        # either way), as JAIS, BTLM, Falcon's RefinedWeb and Yuan2 leave it out of tied heads
        tie = True
        warnings.append(f"{f.path('tie_word_embeddings')}: not written; the head is read as tied to the embedding "
                        f"(PretrainedConfig's default, which a saved config leaves out); an untied head would add "
                        f"{vocab:,} x {hidden:,} parameters")
    if not prefix or tie_field not in (None, "tie_word_embeddings"):
        return tie
    wrapper_tie = written if isinstance(written, bool) else wrapper_line.get("_wrapper_tie")
    if not isinstance(wrapper_tie, bool) or wrapper_tie == tie:
        return tie
    source = "wrapper's" if isinstance(written, bool) else "wrapper class's default"
    at_stake = f"{vocab:,} x {hidden:,} parameters"
    if (saved_by_major(raw) or 0) >= 5:
        warnings.append(f"tie_word_embeddings: the {source} {str(wrapper_tie).lower()} ties the head, not "
                        f"{prefix}tie_word_embeddings {str(tie).lower()}: transformers 5.x (which wrote this config) "
                        f"ties by the config of the model holding lm_head, the wrapper's ({at_stake} "
                        f"{'fewer' if wrapper_tie else 'more'} than the language model's reading)")
        return wrapper_tie
    saved = "no transformers_version" if saved_by_major(raw) is None else f"transformers {raw['transformers_version']}"
    warnings.append(f"tie_word_embeddings: the {source} {str(wrapper_tie).lower()} disagrees with {prefix}"
                    f"tie_word_embeddings {str(tie).lower()}; read as the language model's ({saved}: transformers "
                    f"4.x tied by it, and engines build the head from it), the head {'tied' if tie else 'untied'} "
                    f"(transformers 5.x builds this file {'untied' if tie else 'tied'}, {at_stake} "
                    f"{'more' if tie else 'fewer'}, and keeps both tensors where the checkpoint stores both)")
    return tie
