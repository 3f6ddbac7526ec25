"""transformers itself as the oracle of parameter counts: build each config.json's model on the meta device and count.

For each config file: the config class from the dict (AutoConfig.for_model(model_type, **fields)), the model class
its `architectures` names (else AutoModelForCausalLM, then AutoModelForImageTextToText, then AutoModel), built under
`with torch.device("meta")` (no memory, no weights), weights tied as the class ties them; then
  parameters = sum(p.numel() for p in model.parameters())  (a tied tensor once: parameters() drops duplicates)
  buffers    = the persistent buffers (what state_dict holds besides parameters: a checkpoint may store them),
               in all and by their own name (buffer_names)
  parts      = parameters by the top two levels of the module path (model.visual, model.language_model, lm_head, ...)
or the error it raised (unknown model_type, a config the class refuses, a model that fails to build), one TSV row each.

It must not import solver (the project keeps no torch dependency). Run it with a separate venv:
  python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install torch==2.13.0 transformers==5.25.0
  /tmp/tfvenv/bin/python benchmarks/transformers_oracle.py > /tmp/oracle.tsv
benchmarks/oracle_compare.py reads that TSV beside the reader's counts.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import signal
import sys
import warnings
from collections import Counter
from pathlib import Path

import torch
import transformers
from transformers import AutoConfig, PretrainedConfig
from transformers.models.auto.configuration_auto import CONFIG_MAPPING

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_GLOBS = ("models/*.json", "tests/data/configs_unseen/**/*.json", "tests/data/configs_quant/*.json")
FALLBACKS = ("AutoModelForCausalLM", "AutoModelForImageTextToText", "AutoModel")
# Fields of a released config.json that are not the architecture's (the reader ignores them too); dropping them keeps
# AutoConfig from trying to apply a quantizer or remote code.
DROP = ("quantization_config", "auto_map", "_name_or_path", "transformers_version")


class Timeout(Exception):
    pass


def _alarm(signum, frame):  # noqa: ARG001
    raise Timeout("timed out")


def default_files() -> list[Path]:
    out: list[Path] = []
    for pattern in DEFAULT_GLOBS:
        out += sorted(p for p in ROOT.glob(pattern) if p.is_file())
    return out


def build_config(raw: dict):
    fields = {k: v for k, v in raw.items() if k not in DROP}
    model_type = fields.pop("model_type", None)
    if model_type is None:
        raise ValueError("no model_type")
    if model_type not in CONFIG_MAPPING:  # a remote-code family: transformers has no class for it
        raise ValueError(f"model_type {model_type!r} is not in transformers (remote code)")
    return AutoConfig.for_model(model_type, **fields)


def model_classes(raw: dict) -> list[str]:
    named = [a for a in raw.get("architectures") or [] if hasattr(transformers, a)]
    return named + list(FALLBACKS)


def build_model(config, names: list[str]):
    errors: list[str] = []
    for name in names:
        cls = getattr(transformers, name)
        try:
            with torch.device("meta"):
                if name.startswith("Auto"):
                    model = cls.from_config(config)
                else:
                    model = cls(config)
            return name if not name.startswith("Auto") else f"{name}->{type(model).__name__}", model
        except Timeout:
            raise
        except Exception as e:  # noqa: BLE001 - every refusal is a finding, recorded with its class
            errors.append(f"{name}: {type(e).__name__}: {e}")
    raise RuntimeError(" | ".join(errors))


def count(model) -> tuple[int, dict[str, int], dict[str, int]]:
    with contextlib.suppress(Exception):
        model.tie_weights()
    parts: Counter[str] = Counter()
    buffers: Counter[str] = Counter()  # persistent buffers by their own name (e_score_correction_bias, ...)
    total = 0
    for name, p in model.named_parameters():  # remove_duplicate=True: a tied tensor once
        total += p.numel()
        parts[".".join(name.split(".")[:2])] += p.numel()
    seen: set[int] = set()
    for module in model.modules():
        for bname, b in module._buffers.items():
            if b is None or bname in module._non_persistent_buffers_set or id(b) in seen:
                continue
            seen.add(id(b))
            buffers[bname] += b.numel()
    return total, dict(buffers), dict(parts)


def one(path: Path, timeout: int) -> list[str]:
    raw = PretrainedConfig._dict_from_json_file(path)  # as from_pretrained reads it: {"__float__": "Infinity"} is inf
    signal.alarm(timeout)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            try:
                config = build_config(raw)
            except Timeout:
                raise
            except Exception as e:  # noqa: BLE001
                return ["", "", "", "", f"config: {type(e).__name__}: {_one_line(e)}", ""]
            try:
                cls, model = build_model(config, model_classes(raw))
            except Timeout:
                raise
            except Exception as e:  # noqa: BLE001
                return ["", "", "", "", f"model: {_one_line(e)}", ""]
            total, buffers, parts = count(model)
            del model
            return [cls, str(total), str(sum(buffers.values())), _compact(buffers), "", _compact(parts)]
    except Timeout:
        return ["", "", "", "", f"timeout: over {timeout} s", ""]
    finally:
        signal.alarm(0)


def _compact(d: dict[str, int]) -> str:
    return json.dumps(d, separators=(",", ":")) if d else ""


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split())[:400]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path, help="config.json files (default: the catalog, unseen, quant)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per config")
    args = ap.parse_args()
    signal.signal(signal.SIGALRM, _alarm)
    torch.set_grad_enabled(False)
    files = args.files or default_files()
    print(f"# transformers {transformers.__version__}, torch {torch.__version__}, meta device")
    print("file\tmodel_class\tparameters\tbuffers\tbuffer_names\terror\tparts")
    for path in files:
        path = path.resolve()
        rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        print("\t".join([str(rel), *one(path, args.timeout)]), flush=True)


if __name__ == "__main__":
    main()
