"""The prefill form of a top-k selection's attention (dsa.Indexer.prefill_forms): each query gathering its own
selected entries, or the dense attention masked by the selection; the cheaper where the layer kind's kernels serve
both. 64K prompt, one sequence, attention TP8 on h100_sxm (bf16 989 TFLOP/s x attention 0.75; HBM 3.35 TB/s x 0.8)."""
from __future__ import annotations

import dataclasses

import pytest

from solver.estimate.compute import Kit, Work, factors_for
from solver.specs.hardware_catalog import load_hardware
from solver.specs.layers import Indexer
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

ISL, TP = 65536, 8
CONTEXT = (ISL + 1) / 2  # the mean keys a prompt's query sees densely
KOLIBRI = "tests/data/configs_unseen/round29/Aleph-Alpha--Kolibri-1.1.json"


def _mean_selected(cap: int) -> float:
    """Mean over positions 1..ISL of min(position, cap)."""
    return (cap * (cap + 1) / 2 + (ISL - cap) * cap) / ISL


def _core(spec, layer: int, mixer=None) -> tuple[float, float]:
    hw = load_hardware("h100_sxm")
    kit = Kit(hw, make_parallel_config(TP, attn_tp_size=TP), resolve_precision(spec, hw), factors_for(hw),
              Work("prefill", new_tokens=ISL, context=CONTEXT, sequences=1, logits_tokens=1))
    op = next(o for o in (mixer or spec.layers[layer].mixer).ops(kit) if o.name == "attention_core")
    return op.flops, op.bytes


def _seconds(flops: float, nbytes: float) -> float:
    return max(flops / (989e12 * 0.75), nbytes / (3.35e12 * 0.8))


def test_kolibri_prefill_costs_the_dense_masked_form_where_it_is_cheaper() -> None:
    """Kolibri-1.1 layer 4 (48 heads x 128, 4 K/V heads; 6 heads and 1 K/V head a rank = 512 B a token; hidden
    2560 read in bf16). Gathered, 2,147.6 mean keys (min(position, 2,184)): 2 x 6 x 65,536 x 256 x 2,147.6 =
    0.43 TFLOP; each query reading its own entries: 65,536 x 2,147.6 x 512 B = 72.0 GB, 26.9 ms at HBM. Dense masked: 2 x 6 x 65,536 x 256 x
    32,768.5 = 6.60 TFLOP, 8.9 ms; 33.5 MB. Both served (the reference masks dense attention): dense is costed."""
    sel = _mean_selected(2048 + 8 + 128)
    pair = 2 * 6 * ISL * (128 + 128)
    act = ISL * 2560 * 2
    gathered = (pair * sel, ISL * sel * 512)
    dense = (pair * CONTEXT, ISL * 512)
    assert _seconds(*dense) < _seconds(*gathered)
    assert _core(load_model(KOLIBRI), 4) == pytest.approx((dense[0], dense[1] + act))
    assert dense[0] == 6_597_170_429_952


def test_dsa_prefill_costs_the_gathered_form_its_engines_serve() -> None:
    """DeepSeek-V3.2 layer 0 (128 heads, bf16 latent cache 1,152 B a token). Gathered, absorbed MQA, heads padded
    to 64 a rank, 2,016.0 mean keys: 2 x 64 x 65,536 x 2,016.0 x (576 + 512) = 18.4 TFLOP, 24.8 ms;
    65,536 x 2,016.0 x 1,152 B = 152.2 GB, 56.8 ms. Dense masked (non-absorbed MHA, 16 heads a rank): 2 x 16 x
    65,536 x 32,768.5 x (192 + 128) = 22.0 TFLOP, 29.6 ms. The dense form would cost less here, but the engines
    serve the gathered form above 2,048 keys on Hopper (SGLang 0.5.23, vLLM 0.34.0), so the gathered is costed."""
    spec = load_model("deepseek-v3.2")
    sel = _mean_selected(2048)
    act = ISL * 7168 * 2  # hidden 7168 in bf16
    gathered = (2 * 64 * ISL * sel * (576 + 512), ISL * sel * 1152)
    dense = (2 * 16 * ISL * CONTEXT * (192 + 128), ISL * 1152)
    assert _seconds(*dense) < _seconds(*gathered)
    assert _core(spec, 0) == pytest.approx((gathered[0], gathered[1] + act))
    # the same layer with both forms served is costed in the dense one: the rule is the indexer's data
    mla = spec.layers[0].mixer
    both = dataclasses.replace(mla, indexer=dataclasses.replace(mla.indexer, prefill_forms=("gathered", "dense")))
    assert _core(spec, 0, both) == pytest.approx((dense[0], dense[1] + act))


def test_an_indexer_naming_an_unknown_prefill_form_is_refused() -> None:
    with pytest.raises(ValueError, match="prefill_forms"):
        Indexer(64, 128, 2048, prefill_forms=("masked",))
