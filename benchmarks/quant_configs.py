"""Checkpoint formats and weight bytes of every config under tests/data/configs_quant/, one line each, for diffing
two checkouts: run it with PYTHONPATH pointing at each (the configs are read from this file's checkout).

Per config: the format of each module group (attention / dense / experts / lm_head), the activations the GEMMs
take and the GEMM dtype of the dense and expert groups on H100 and B200, and the weights of the whole model on one
rank (GB, 1e9 bytes; memory's weights line at --cards 1). A refused config prints its one line.

Run: PYTHONPATH=<checkout> python benchmarks/quant_configs.py
"""
from __future__ import annotations

import json
from pathlib import Path

from solver.errors import InputError
from solver.estimate.memory_options import MemoryOptions
from solver.estimate.weights import weights_per_rank
from solver.specs.config.read import parse_model_config
from solver.specs.hardware_catalog import load_hardware
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "configs_quant"


def line(path: Path) -> str:
    try:
        model = parse_model_config(json.loads(path.read_text()), path.stem)
    except InputError as e:
        return f"refused: {str(e).split(': ', 1)[-1][:150]}"
    q = model.quant
    out = [f"{q.method}", f"attn {q.attention}, dense {q.dense}, experts {q.experts}, lm_head {q.lm_head}"]
    for hw_name in ("h100_sxm", "b200_sxm"):
        prec = resolve_precision(model, load_hardware(hw_name))
        gemm = prec.gemm_dtype("experts" if model.is_moe else "dense")
        out.append(f"{hw_name}: act {prec.activation}, GEMM {gemm}")
    prec = resolve_precision(model, load_hardware("h100_sxm"))
    gb = sum(weights_per_rank(model, ParallelConfig(world_size=1), prec, MemoryOptions()).values()) / 1e9
    out.append(f"weights {gb:.2f} GB")
    return " | ".join(out)


def main() -> None:
    for path in sorted(DATA.rglob("*.json")):
        print(f"{str(path.relative_to(DATA))[:-5]}\t{line(path)}")


if __name__ == "__main__":
    main()
