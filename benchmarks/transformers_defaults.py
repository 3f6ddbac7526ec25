"""transformers' class-default configs as configs the project has never seen: write each, count it on the meta device.

For every model_type transformers 5.25.0 maps to a configuration class, the model class it builds for text
generation: MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING's entry (the whole multimodal model, what a released multimodal
config names), else MODEL_FOR_CAUSAL_LM_MAPPING's; a model_type in neither is skipped (an encoder, a vision or audio
model, a sub-config). Its default config (`ConfigClass()`) is a valid model of the architecture; it is written as
save_pretrained writes a config.json (`architectures` = [the class], `to_json_string(use_diff=True)`) to
`<out>/<model_type>.json`, and that file is counted by transformers_oracle.one (the one home of the count: the file
is read back, the model built on the meta device from it), one TSV row each in transformers_oracle's format, so
benchmarks/oracle_compare.py reads it beside the reader's counts.

It must not import solver. Run it with the torch venv (see transformers_oracle.py):
  /tmp/tfvenv/bin/python benchmarks/transformers_defaults.py --out /tmp/defaults_cfg > /tmp/defaults.tsv
  PYTHONPATH=. python benchmarks/oracle_compare.py /tmp/defaults.tsv --summary
"""
from __future__ import annotations

import argparse
import contextlib
import io
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
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import transformers_oracle as oracle  # noqa: E402


def model_class(model_type: str) -> str | None:
    """The class a released config of this model_type names for generation, or None (not a generation model)."""
    return MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES.get(model_type) or MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(model_type)


def write_default(model_type: str, cls_name: str, out: Path, timeout: int) -> Path:
    """The class-default config as save_pretrained writes it; raises what the config class raises."""
    signal.alarm(timeout)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            config = CONFIG_MAPPING[model_type]()
            config.architectures = [cls_name]
            text = config.to_json_string(use_diff=True)
    finally:
        signal.alarm(0)
    path = out / f"{model_type}.json"
    path.write_text(text)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="folder for the <model_type>.json files")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per config (building it, then the model)")
    ap.add_argument("types", nargs="*", help="model_types (default: every one in CONFIG_MAPPING)")
    args = ap.parse_args()
    signal.signal(signal.SIGALRM, oracle._alarm)
    torch.set_grad_enabled(False)
    args.out.mkdir(parents=True, exist_ok=True)
    types = args.types or list(CONFIG_MAPPING.keys())
    skipped = [t for t in types if model_class(t) is None]
    print(f"# transformers {transformers.__version__}, torch {torch.__version__}, meta device, class defaults")
    print(f"# {len(types)} model_types, {len(skipped)} skipped (no causal-LM or image-text-to-text class): "
          + " ".join(skipped))
    print("file\tmodel_class\tparameters\tbuffers\tbuffer_names\terror\tparts")
    for model_type in types:
        cls_name = model_class(model_type)
        if cls_name is None:
            continue
        try:
            path = write_default(model_type, cls_name, args.out, args.timeout)
        except Exception as e:  # noqa: BLE001 - a class default that fails is a finding, recorded as such
            row = [cls_name, "", "", "", f"default config: {type(e).__name__}: {oracle._one_line(e)}", ""]
            print("\t".join([str((args.out / f"{model_type}.json").resolve()), *row]), flush=True)
            continue
        print("\t".join([str(path.resolve()), *oracle.one(path, args.timeout)]), flush=True)


if __name__ == "__main__":
    main()
