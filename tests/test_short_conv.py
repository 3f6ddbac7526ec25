"""The gated short-convolution mixer (LFM2's conv layers, specs/layers/conv.py): parameters, per-request state,
FLOPs and collectives on a small hand-checkable config (the toy device of tests/test_layers.py)."""
from __future__ import annotations

import pytest

from conftest import toy_hardware  # noqa: E402
from solver.specs.dtypes import KV16, KVFormat
from solver.estimate.compute import Kit, Work, factors_for
from solver.estimate.request_state import state_of_layers
from solver.specs.layers import Layer, ShortConv
from solver.specs.config.read import parse_model_config
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

HW = toy_hardware()
H = 64


def _cfg(**over) -> dict:
    cfg = dict(model_type="lfm2", hidden_size=H, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
               intermediate_size=192, vocab_size=1000, conv_L_cache=3,
               layer_types=["conv", "full_attention", "conv", "full_attention"])
    cfg.update(over)
    return cfg


def _kit(world: int = 1, w: Work | None = None, **knobs) -> Kit:
    spec = parse_model_config(_cfg(), "toy")
    return Kit(HW, make_parallel_config(world, **knobs), resolve_precision(spec, HW), factors_for(HW),
               w or Work("decode", new_tokens=4, context=1000, sequences=4, logits_tokens=4))


def _op(ops: list, name: str):
    return next(o for o in ops if o.name == name)


def test_short_conv_params_in_proj_conv_out_proj() -> None:
    assert ShortConv(hidden=H, kernel=3).params == H * 3 * H + H * 3 + H * H
    assert ShortConv(hidden=H, kernel=3, bias=True).params == H * 3 * H + 3 * H + H * 3 + H + H * H + H


def test_short_conv_state_is_the_conv_tail_split_by_tp_only() -> None:
    c = ShortConv(hidden=H, kernel=3)
    st = c.state(KV16, 1)
    assert not st.grows and st.constant_bytes == 2 * H * 2  # (L - 1) x hidden in the activation dtype
    assert c.state(KVFormat(1), 2).constant_bytes == st.constant_bytes / 2  # attention TP splits the channels
    held = state_of_layers([(Layer((c,), H, 1), 3)], KV16, 1, 100_000)
    assert held.kv == 0 and held.constant == 3 * st.constant_bytes


def test_short_conv_decode_costs_projections_and_conv_not_context() -> None:
    c = ShortConv(hidden=H, kernel=3)
    for ctx in (1000, 100_000):
        ops = c.ops(_kit(w=Work("decode", new_tokens=4, context=ctx, sequences=4, logits_tokens=4)))
        assert _op(ops, "short_conv_proj").flops == pytest.approx(2 * 4 * 4 * H * H)
        assert _op(ops, "short_conv_conv").flops == pytest.approx(4 * H * (2 * 3 + 2))
        assert _op(ops, "short_conv_conv").bytes >= 2 * 4 * c.state(KV16, 1).constant_bytes  # read + write per sequence


def test_short_conv_under_tp_all_reduces_and_under_sp_gathers_tokens() -> None:
    c = ShortConv(hidden=H, kernel=3)
    assert {x.name for x in c.comms(_kit(world=2, attn_tp_size=2), 0.0)} == {"short_conv_tp_allreduce"}
    prefill = Work("prefill", new_tokens=1024, context=512.5, sequences=1, logits_tokens=1)
    assert {x.name for x in c.comms(_kit(world=2, w=prefill, attn_sp_size=2), 0.0)} == {"short_conv_token_gather"}


def test_a_conv_hybrid_reads_its_layers_and_kernel() -> None:
    spec = parse_model_config(_cfg(conv_L_cache=4), "toy")
    assert [layer.mixer.kind for layer in spec.layers] == ["ShortConv", "GQA", "ShortConv", "GQA"]
    assert spec.layers[0].mixer.kernel == 4 and spec.architecture == "hybrid-conv"
