"""transformers' class-default configs as configs the project has never seen: write each, count it on the meta device.

For every model_type transformers 5.25.0 maps to a configuration class, the model class it builds for text
generation: MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING's entry (the whole multimodal model, what a released multimodal
config names), else MODEL_FOR_CAUSAL_LM_MAPPING's, else MODEL_FOR_MULTIMODAL_LM_MAPPING's (audio / video inputs), else
a decoder-only entry of the two sequence-to-sequence mappings (GENERATION, SEQ_TO_SEQ below); any other model_type is
skipped (an encoder, an encoder-decoder, a vision or audio model, a sub-config). Its default config
(`ConfigClass()`) is a valid model of the architecture; it is written as save_pretrained writes a config.json
(`architectures` = [the class], `to_json_string(use_diff=True)`) to `<out>/<model_type>.json`, and that file is counted by transformers_oracle.one (the one home of the count: the file
is read back, the model built on the meta device from it), one TSV row each in transformers_oracle's format, so
benchmarks/oracle_compare.py reads it beside the reader's counts.

It must not import solver. Run it with the torch venv (see transformers_oracle.py):
  /tmp/tfvenv/bin/python benchmarks/transformers_defaults.py [--fill] --out /tmp/defaults_cfg > /tmp/defaults.tsv
  PYTHONPATH=. python benchmarks/oracle_compare.py /tmp/defaults.tsv --summary
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import signal
import sys
import warnings
from pathlib import Path

import torch
import transformers
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
from transformers.models.auto.modeling_auto import (
    MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
    MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
    MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES,
    MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
    MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import transformers_oracle as oracle  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# Where a family's published config may give a field the class leaves None (--fill).
FAMILY_GLOBS = ("models/*.json", "tests/data/configs_unseen/**/*.json")
# Bookkeeping a PretrainedConfig leaves None that sizes nothing: never filled.
NOT_SIZES = ("token_id", "id2label", "label2id", "architectures", "problem_type", "finetuning_task",
             "tokenizer_class", "prefix", "task_specific_params", "dtype", "_name_or_path",
             "quantization_config", "decoder_start_token_id", "sep_token_id", "output_", "return_dict", "is_decoder",
             "add_cross_attention", "cross_attention_hidden_size", "tie_encoder_decoder", "chunk_size_feed_forward",
             "pruned_heads", "torchscript")


# Text generation from text and other inputs, first match wins: the whole image-text model, the causal LM, then the
# multimodal LM (audio / video / any-to-any inputs: a superset of image-text-to-text). The two sequence-to-sequence
# mappings also hold decoder-only LLMs behind an audio encoder (AudioFlamingo3, VibeVoice): those are taken where the
# class default is not an encoder-decoder (`is_encoder_decoder`); the encoder-decoders are skipped.
GENERATION = (MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES, MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
              MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES)
SEQ_TO_SEQ = (MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES, MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES)


def model_class(model_type: str) -> str | None:
    """The class a released config of this model_type names for text generation, or None (not a decoder LM)."""
    for mapping in GENERATION:
        if model_type in mapping:
            return mapping[model_type]
    for mapping in SEQ_TO_SEQ:
        if model_type in mapping and not _encoder_decoder(model_type):
            return mapping[model_type]
    return None


def _encoder_decoder(model_type: str) -> bool:
    """The class default's is_encoder_decoder; a default that cannot be built is taken as one (skipped, not guessed)."""
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            return bool(CONFIG_MAPPING[model_type]().is_encoder_decoder)
    except Exception:  # noqa: BLE001
        return True


def write_default(model_type: str, cls_name: str, out: Path, timeout: int,
                  fills: dict[tuple[str, ...], object] | None = None) -> Path:
    """The class-default config as save_pretrained writes it, with `fills` (path -> value) set first; raises what
    the config class raises."""
    signal.alarm(timeout)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            config = CONFIG_MAPPING[model_type]()
            for path, value in (fills or {}).items():
                _set(config, path, value)
            config.architectures = [cls_name]
            text = config.to_json_string(use_diff=True)
    finally:
        signal.alarm(0)
    path = out / f"{model_type}.json"
    path.write_text(text)
    return path


def _set(config, path: tuple[str, ...], value: object) -> None:
    holder = config
    for key in path[:-1]:
        holder = holder[key] if isinstance(holder, dict) else getattr(holder, key)
    if isinstance(holder, dict):
        holder[path[-1]] = value
    else:
        setattr(holder, path[-1], value)


# --fill: the class default leaves a size-bearing field None and transformers cannot build it. A None field is set to
# the family's published scalar value (the first file under FAMILY_GLOBS, in path order, whose config -- or nested sub-config
# -- has this model_type and the field), else to a generic value where the modeling code itself derives one when the
# field is absent: head_dim = hidden_size // num_attention_heads (LlamaAttention and most attention classes),
# num_key_value_heads = num_attention_heads (multi-head attention, LlamaConfig's own fallback), rope_theta 10000.0
# (RoFormer's base, the default of the rope init). A class that builds a module whatever its switch says gets the
# module's sizes: a QSA indexer (Qwen4ExpTextAttention builds Qwen4ExpTextQSAIndexer on every indexed_attention layer,
# though its config calls the null fields "QSA off") is sized as the attention it indexes (num_attention_heads query
# heads of head_dim: the validator requires its head to hold the attention's rotary dims, and one key head, the only
# count it takes), its token budget and block size (no weights) DeepSeek-V3.2's index_topk 2048 and DeepSeek-V4's
# compress ratio 4; an always-MoE block whose expert sizes the class leaves None (DiffusionGemma's) takes
# MixtralConfig's class defaults, 8 experts, top 2, each of the dense intermediate_size. Anything else stays None;
# where the filled config still cannot be built, the class default is written back and its row keeps transformers'
# error.
GENERIC = {
    "head_dim": lambda d: d["hidden_size"] // d["num_attention_heads"],
    "num_key_value_heads": lambda d: d["num_attention_heads"],
    "rope_theta": lambda d: 10000.0,
    "indexer_n_heads": lambda d: d["num_attention_heads"],
    "indexer_kv_heads": lambda d: 1,
    "indexer_head_dim": lambda d: d["head_dim"],
    "indexer_budget": lambda d: 2048,
    "indexer_compress_ratio": lambda d: 4,
    "num_experts": lambda d: 8,
    "top_k_experts": lambda d: 2,
    "moe_intermediate_size": lambda d: d["intermediate_size"],
}


def family_index() -> dict[tuple[str, str], tuple[object, str]]:
    """(model_type of a config or sub-config, field) -> (its value, the file), from the project's published configs."""
    index: dict[tuple[str, str], tuple[object, str]] = {}

    def walk(d: dict, names: tuple[str, ...], rel: str) -> None:
        for key, value in d.items():
            if isinstance(value, dict):  # a sub-config: by its own model_type and by parent.key
                walk(value, _names(value, names, key), rel)
            elif isinstance(value, (int, float, str)):  # a list (layer_types) is sized to its own depth: not lent
                for name in names:
                    index.setdefault((name, key), (value, rel))

    for pattern in FAMILY_GLOBS:
        for path in sorted(ROOT.glob(pattern)):
            try:
                raw = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(raw, dict) and raw.get("model_type"):
                walk(raw, (raw["model_type"],), str(path.relative_to(ROOT)))
    return index


def fills_for(model_type: str, index: dict[tuple[str, str], tuple[object, str]]) -> dict[tuple[str, ...], tuple]:
    """path -> (value, source) for each None field of the class default that a family file or GENERIC can give."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        top = CONFIG_MAPPING[model_type]().to_dict()
    out: dict[tuple[str, ...], tuple] = {}

    def walk(d: dict, names: tuple[str, ...], path: tuple[str, ...]) -> None:
        for key, value in d.items():
            if isinstance(value, dict):
                walk(value, _names(value, names, key), (*path, key))
            elif value is None and not any(n in key for n in NOT_SIZES):
                found = next((index[(n, key)] for n in names if (n, key) in index), None)
                if found is not None:
                    out[(*path, key)] = found
                elif key in GENERIC:
                    with contextlib.suppress(KeyError, TypeError, ZeroDivisionError):
                        out[(*path, key)] = (GENERIC[key](d), "generic")

    walk(top, (model_type,), ())
    return out


def _names(sub: dict, parent: tuple[str, ...], key: str) -> tuple[str, ...]:
    """A sub-config's names: its own model_type where written, and `<parent model_type>.<key>`."""
    own = (sub["model_type"],) if sub.get("model_type") else ()
    return own + tuple(f"{p}.{key}" for p in parent[-1:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="folder for the <model_type>.json files")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per config (building it, then the model)")
    ap.add_argument("--fill", action="store_true",
                    help="where the class default cannot be built, fill its None sizes (family file, else generic) "
                         "into the written config and count that; the `filled` column names them")
    ap.add_argument("types", nargs="*", help="model_types (default: every one in CONFIG_MAPPING)")
    args = ap.parse_args()
    signal.signal(signal.SIGALRM, oracle._alarm)
    torch.set_grad_enabled(False)
    args.out.mkdir(parents=True, exist_ok=True)
    types = args.types or list(CONFIG_MAPPING.keys())
    skipped = [t for t in types if model_class(t) is None]
    index = family_index() if args.fill else {}
    print(f"# transformers {transformers.__version__}, torch {torch.__version__}, meta device, class defaults"
          + (", None sizes filled where the default cannot be built (column filled)" if args.fill else ""))
    print(f"# {len(types)} model_types, {len(skipped)} skipped (no decoder text-generation class): "
          + " ".join(skipped))
    print("file\tmodel_class\tparameters\tbuffers\tbuffer_names\terror\tparts" + ("\tfilled" if args.fill else ""))
    for model_type in types:
        cls_name = model_class(model_type)
        if cls_name is None:
            continue
        try:
            path = write_default(model_type, cls_name, args.out, args.timeout)
        except Exception as e:  # noqa: BLE001 - a class default that fails is a finding, recorded as such
            row = [cls_name, "", "", "", f"default config: {type(e).__name__}: {oracle._one_line(e)}", ""]
            row += [""] if args.fill else []
            print("\t".join([str((args.out / f"{model_type}.json").resolve()), *row]), flush=True)
            continue
        row = oracle.one(path, args.timeout)
        filled = ""
        if args.fill and row[4]:  # transformers cannot build the class default
            fills = fills_for(model_type, index)
            if fills:
                write_default(model_type, cls_name, args.out, args.timeout, {p: v for p, (v, _s) in fills.items()})
                filled_row = oracle.one(path, args.timeout)
                if filled_row[4]:  # the None sizes were not what stopped it: keep the class default and its error
                    write_default(model_type, cls_name, args.out, args.timeout)
                else:
                    row = filled_row
                    filled = json.dumps({".".join(p): f"{v!r} ({src})" for p, (v, src) in fills.items()},
                                        separators=(",", ":"))
        print("\t".join([str(path.resolve()), *row] + ([filled] if args.fill else [])), flush=True)


if __name__ == "__main__":
    main()
