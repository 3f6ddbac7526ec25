"""Layers that share or borrow K/V (specs/layers/attention.py, cross.py; config/pattern.py kv_sharing and
cross_attention): cross-layer attention (Hunyuan's use_cla), KV-shared last layers (Gemma-3n's
num_kv_shared_layers) and cross-attention to image tokens (Mllama's cross_attention_layers). One test per rule:
parameters, per-request state, FLOPs and collectives on small hand-checkable configs (the toy device of
tests/test_layers.py), the readers' refusals, and the KV cache of the three unseen configs by hand."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import toy_hardware  # noqa: E402
from solver.specs.dtypes import KV16, KVFormat
from solver.errors import InputError
from solver.estimate.compute import Kit, Work, factors_for
from solver.estimate.memory import memory_per_rank
from solver.estimate.memory_options import MemoryOptions
from solver.estimate.request_state import cache_per_rank, kv_bytes_per_token_layer, state_of_layers, state_per_rank
from solver.estimate.params import count_params
from solver.specs.hardware_catalog import load_hardware
from solver.specs.layers import Attention, CrossAttention, Layer
from solver.specs.config.read import parse_model_config
from solver.specs.parallel import make_parallel_config
from solver.specs.framework import load_framework
from solver.specs.model_rules import kv_sharing_split, model_problems
from solver.space.domains import build_space
from solver.specs.scenario import Scenario
from solver.specs.precision import resolve_precision

HW = toy_hardware()
H = 64
DATA = Path(__file__).parent / "data" / "configs_unseen"
CATALOG = Path(__file__).parent.parent / "models"


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _toy(**over) -> dict:
    cfg = dict(model_type="llama", hidden_size=H, num_hidden_layers=4, num_attention_heads=4,
               num_key_value_heads=2, head_dim=16, intermediate_size=128, vocab_size=1000)
    cfg.update(over)
    return cfg


def _kit(world: int = 1, w: Work | None = None, **knobs) -> Kit:
    spec = parse_model_config(_toy(), "toy")
    return Kit(HW, make_parallel_config(world, **knobs), resolve_precision(spec, HW), factors_for(HW),
               w or Work("decode", new_tokens=4, context=1000, sequences=4, logits_tokens=4))


def _op(ops: list, name: str):
    return next(o for o in ops if o.name == name)


def _attn(**over) -> Attention:
    return Attention(**{**dict(hidden=H, heads=4, kv_heads=2, head_dim=16, v_head_dim=16, qk_norm="head"), **over})


Q, KV, O = H * 64, H * 2 * 32, 64 * H  # q_proj (4 x 16), k / v_proj (2 x 16 each), o_proj


# -------------------------------------------------------------------------- a layer borrowing its K/V


def test_a_cla_layer_has_no_kv_projection_and_only_a_q_norm() -> None:
    assert _attn().params == Q + KV + 2 * 16 + O
    assert _attn(kv_shared=True, kv_weights=False).params == Q + 16 + O


def test_a_kv_shared_layer_keeps_its_stored_kv_weights() -> None:
    assert _attn(kv_shared=True).params == _attn().params  # Gemma-3n: k_proj / v_proj / k_norm built, not run


def test_a_layer_borrowing_kv_holds_no_cache() -> None:
    for borrowing in (_attn(kv_shared=True, kv_weights=False), _attn(kv_shared=True)):
        st = borrowing.state(KV16, 1)
        assert st.per_token_bytes == 0 and st.constant_bytes == 0 and not st.grows
    held = state_of_layers([(Layer((_attn(),), H), 2), (Layer((_attn(kv_shared=True, kv_weights=False),), H), 2)],
                           KV16, 1, 1000)
    assert held.kv == 2 * 1000 * 2 * 32 * 2  # two caching layers x 1000 tokens x 2 KV heads x (K + V) 16 x 2 B


def test_a_layer_borrowing_kv_computes_no_kv_and_attends_as_a_full_layer() -> None:
    own, cla, shared = _attn(), _attn(kv_shared=True, kv_weights=False), _attn(kv_shared=True)
    for w in (Work("decode", new_tokens=4, context=1000, sequences=4, logits_tokens=4),
              Work("prefill", new_tokens=1024, context=512.5, sequences=1, logits_tokens=1)):
        kit = _kit(w=w)
        T = w.new_tokens
        assert _op(own.ops(kit), "qkv_proj").flops == pytest.approx(2 * T * (Q + KV + 2 * 16))
        for borrowing in (cla, shared):
            ops = borrowing.ops(kit)
            assert _op(ops, "qkv_proj").flops == pytest.approx(2 * T * (Q + 16))  # q and its norm only
            core, own_core = _op(ops, "attention_core"), _op(own.ops(kit), "attention_core")
            assert (core.flops, core.bytes) == (own_core.flops, own_core.bytes)  # reads the shared cache


def test_a_layer_borrowing_kv_gathers_no_kv_under_sequence_parallel() -> None:
    prefill = Work("prefill", new_tokens=1024, context=512.5, sequences=1, logits_tokens=1)
    own = {c.name for c in _attn().comms(_kit(world=2, w=prefill, attn_sp_size=2), 0.0)}
    cla = {c.name for c in _attn(kv_shared=True, kv_weights=False).comms(_kit(world=2, w=prefill, attn_sp_size=2),
                                                                           0.0)}
    assert "kv_allgather" in own and cla == own - {"kv_allgather"}


# ----------------------------------------------------------------------------------- reading use_cla


def test_use_cla_shares_kv_in_groups_of_cla_share_factor() -> None:
    spec = parse_model_config(_toy(num_hidden_layers=6, use_cla=True, cla_share_factor=3), "toy")
    assert [layer.mixer.kv_shared for layer in spec.layers] == [False, True, True, False, True, True]
    assert not any(layer.mixer.kv_weights for layer in spec.layers if layer.mixer.kv_shared)
    plain = parse_model_config(_toy(num_hidden_layers=6), "toy")
    assert count_params(plain).total - count_params(spec).total == 4 * KV
    assert state_of_layers(spec.layer_groups, KV16, 1, 1).kv == 2 * 2 * 32 * 2  # layers 0 and 3 cache


def test_use_cla_off_or_factor_one_shares_nothing() -> None:
    for over in (dict(use_cla=False, cla_share_factor=2), dict(use_cla=True, cla_share_factor=1)):
        spec = parse_model_config(_toy(**over), "toy")
        assert not any(layer.mixer.kv_shared for layer in spec.layers)


def test_hunyuan_a13b_without_cla_counts_as_before_and_with_it_drops_half_the_kv() -> None:
    cfg = _load(CATALOG / "tencent--Hunyuan-A13B-Instruct.json")
    off = parse_model_config(cfg, "a13b")
    assert cfg["use_cla"] is False and not any(layer.mixer.kv_shared for layer in off.layers)
    assert count_params(off).total == 80_393_183_232  # the catalog's count (model_catalog_table.py)
    assert kv_bytes_per_token_layer(off, KV16) == 8 * 128 * 2 * 2
    on = parse_model_config({**cfg, "use_cla": True}, "a13b-cla")
    # 16 of 32 layers lose k_proj / v_proj (4096 -> 8 x 128 each) and key_layernorm (128)
    assert count_params(off).total - count_params(on).total == 16 * (2 * 4096 * 1024 + 128)
    assert (state_of_layers(on.layer_groups, KV16, 1, 1).kv * 2 == state_of_layers(off.layer_groups, KV16, 1, 1).kv
            == 32 * 8 * 128 * 2 * 2)


def test_cla_over_a_non_attention_layer_is_refused() -> None:
    cfg = _toy(use_cla=True, cla_share_factor=2, layer_types=["full_attention", "mamba", "full_attention",
                                                               "full_attention"],
               mamba_d_state=16)
    with pytest.raises(InputError, match="cla_share_factor: 2: layer 1 .*only attention layers of one kind"):
        parse_model_config(cfg, "toy")


def test_cla_over_mla_is_refused() -> None:
    cfg = _toy(use_cla=True, cla_share_factor=2, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8,
               v_head_dim=16)
    with pytest.raises(InputError, match="use_cla: MLA layers sharing"):
        parse_model_config(cfg, "toy")


def test_both_kv_sharing_schemes_together_are_refused() -> None:
    with pytest.raises(InputError, match="num_kv_shared_layers: 1 together with use_cla"):
        parse_model_config(_toy(use_cla=True, cla_share_factor=2, num_kv_shared_layers=1), "toy")


# ------------------------------------------------------------------------------ num_kv_shared_layers

# a small Gemma-3-like text model: sliding / full layers, the last three attending with earlier layers' K/V
LAYER_TYPES = ["sliding_attention", "full_attention"] * 3


def _shared(**over) -> dict:
    return _toy(**{**dict(model_type="gemma3_text", num_hidden_layers=6, layer_types=LAYER_TYPES, sliding_window=128,
                          num_kv_shared_layers=3), **over})


def test_a_kv_source_across_rope_kinds_is_refused_naming_each_sides_rope_kind() -> None:
    # layer 1 (NoPE) reads layer 0 (RoPE): both "full", so the line names the RoPE kind that differs
    cfg = _toy(kv_source_layers=[0, 0, 2, 3], no_rope_layers=[1, 0, 1, 1])
    with pytest.raises(InputError, match=r"kv_source_layers: layer 1 \(full, NoPE\) reads the K/V of layer 0 "
                                         r"\(full, RoPE\); only attention layers of one kind, both RoPE or both NoPE"):
        parse_model_config(cfg, "toy")


def test_num_kv_shared_layers_marks_the_last_layers_and_keeps_their_weights() -> None:
    spec = parse_model_config(_shared(), "toy")
    assert [layer.mixer.kv_shared for layer in spec.layers] == [False] * 3 + [True] * 3
    assert all(layer.mixer.kv_weights for layer in spec.layers)
    plain = parse_model_config(_shared(num_kv_shared_layers=0), "toy")
    assert count_params(spec).total == count_params(plain).total


def test_kv_shared_layers_drop_their_cache_window_by_window() -> None:
    spec = parse_model_config(_shared(), "toy")
    # layers 0 (sliding, 128), 1 (full), 2 (sliding) cache; 3, 4, 5 read layers 2 and 1
    per_token = 2 * 32 * 2
    assert state_of_layers(spec.layer_groups, KV16, 1, 10_000).kv == (10_000 + 2 * 128) * per_token
    plain = parse_model_config(_shared(num_kv_shared_layers=0), "toy")
    assert state_of_layers(plain.layer_groups, KV16, 1, 10_000).kv == (3 * 10_000 + 3 * 128) * per_token


def test_num_kv_shared_layers_leaving_no_source_layer_is_refused() -> None:
    with pytest.raises(InputError, match="num_kv_shared_layers: 6 leaves no layer of the 6"):
        parse_model_config(_shared(num_kv_shared_layers=6), "toy")
    types = ["sliding_attention"] * 4 + ["full_attention"] * 2
    with pytest.raises(InputError, match=r"num_kv_shared_layers: 2: layer 4 \(full\) has no earlier full layer"):
        parse_model_config(_shared(layer_types=types, num_kv_shared_layers=2), "toy")


def test_a_pipeline_stage_boundary_inside_a_kv_sharing_group_breaks_a_model_rule() -> None:
    # CLA groups (0, 1), (2, 3), (4, 5): pp 2 (layers 0-2 | 3-5) leaves layer 3 without layer 2's cache; pp 3
    # (2 + 2 + 2) keeps every group; pp 6 splits each
    cla = parse_model_config(_toy(num_hidden_layers=6, use_cla=True, cla_share_factor=2), "toy")
    assert [kv_sharing_split(cla, pp) for pp in (1, 2, 3, 6)] == [None, (3, 2), None, (1, 0)]
    # the last three layers read layers 2 (sliding) and 1 (full): any boundary after layer 1 leaves layer 3
    # (full) on another stage than layer 1
    shared = parse_model_config(_shared(), "toy")
    assert [kv_sharing_split(shared, pp) for pp in (2, 3)] == [(3, 1), (3, 1)]
    fw = load_framework("generic")
    problems = model_problems(cla, make_parallel_config(6, pp_size=6), fw)
    assert any(p.startswith("pp_size 6: layer 1 attends with the K/V of layer 0") for p in problems)
    assert not model_problems(cla, make_parallel_config(6, pp_size=3), fw)


def test_a_split_kv_sharing_group_names_the_pipeline_sizes_that_keep_it_or_that_none_does() -> None:
    # CLA pairs over 6 layers on 6 cards: pp 3 keeps them, pp 2 and 6 split one; the Gemma-3n-like stack's last
    # layers read layer 1, so every boundary after it breaks one: the remedy says no pp_size does
    fw = load_framework("generic")
    cla = parse_model_config(_toy(num_hidden_layers=6, use_cla=True, cla_share_factor=2), "toy")
    [line] = [p for p in model_problems(cla, make_parallel_config(6, pp_size=2), fw) if p.startswith("pp_size 2")]
    assert line.endswith("pp_size 3 keeps every K/V reader on its source's stage on 6 cards")
    shared = parse_model_config(_shared(), "toy")
    [line] = [p for p in model_problems(shared, make_parallel_config(2, pp_size=2), fw) if p.startswith("pp_size 2")]
    assert line.endswith("no pp_size above 1 on 2 cards keeps every K/V reader on its source's stage: use pp_size 1")


def test_the_space_drops_pipeline_sizes_that_split_a_kv_sharing_group() -> None:
    cla = parse_model_config(_toy(num_hidden_layers=6, use_cla=True, cla_share_factor=2), "toy")
    space = build_space(cla, load_hardware("h100_sxm"), load_framework("generic"), 6,
                        Scenario(kind="balanced", isl=1024, osl=128))
    assert 3 in space.domains["pp_size"] and 2 not in space.domains["pp_size"]
    assert 6 not in space.domains["pp_size"]
    assert {(p.value, p.rule) for p in space.pruned if p.knob == "pp_size"} >= {
        (2, "A.pp_keeps_kv_sharing_groups"), (6, "A.pp_keeps_kv_sharing_groups")}


# -------------------------------------------------------------------------------- cross-attention

IMG = 100  # image tokens per request


def _cross(**over) -> CrossAttention:
    return CrossAttention(**{**dict(hidden=H, heads=4, kv_heads=2, head_dim=16, v_head_dim=16, qk_norm="head",
                                    kv_tokens=IMG, gates=2), **over})


def test_a_cross_attention_layer_has_qkvo_qk_norms_and_two_gates() -> None:
    assert _cross().params == Q + KV + 2 * 16 + O + 2
    assert {s.module for s in _cross().shares()} == {"attention", "o_proj"}


def test_a_cross_attention_layers_kv_is_a_constant_per_sequence() -> None:
    c = _cross()
    st = c.state(KV16, 1)
    assert st.per_token_bytes == 0 and not st.grows
    assert st.constant_bytes == IMG * 2 * 32 * 2  # image tokens x 2 KV heads x (K + V) 16 x 2 B
    assert c.state(KV16, 2).constant_bytes == st.constant_bytes / 2  # attention TP splits the KV heads
    assert c.state(KVFormat(1), 8).constant_bytes == IMG * 1 * 32 * 1  # one head per rank, replicated
    held = state_of_layers([(Layer((c,), H), 3)], KV16, 1, 100_000)
    assert held.kv == 0 and held.constant == 3 * st.constant_bytes


def test_a_cross_attention_decode_step_attends_to_the_image_whatever_the_context() -> None:
    c = _cross()
    for ctx in (1000, 100_000):
        ops = c.ops(_kit(w=Work("decode", new_tokens=4, context=ctx, sequences=4, logits_tokens=4)))
        assert _op(ops, "qkv_proj").flops == pytest.approx(2 * 4 * (Q + 16))  # q and its norm
        assert not any(o.name == "cross_kv_proj" for o in ops)  # the image K/V is in the cache
        core = _op(ops, "attention_core")
        assert core.flops == pytest.approx(2 * 4 * 4 * IMG * 32)  # 4 heads x 4 tokens x IMG keys x (16 + 16)
        assert core.bytes == pytest.approx(4 * IMG * 2 * 32 * 2 + 4 * H * 2)  # every sequence's image K/V


def test_a_cross_attention_prefill_projects_each_requests_image_once() -> None:
    ops = _cross().ops(_kit(w=Work("prefill", new_tokens=1024, context=512.5, sequences=2, logits_tokens=2)))
    kv = _op(ops, "cross_kv_proj")
    assert kv.flops == pytest.approx(2 * 2 * IMG * (KV + 16))  # 2 requests x IMG tokens x (k / v_proj + k_norm)
    assert _op(ops, "attention_core").flops == pytest.approx(2 * 4 * 1024 * IMG * 32)


def test_a_cross_attention_layer_gathers_no_kv_and_merges_nothing_under_kvp() -> None:
    prefill = Work("prefill", new_tokens=1024, context=512.5, sequences=1, logits_tokens=1)
    assert not {c.name for c in _cross().comms(_kit(world=2, w=prefill, attn_sp_size=2), 0.0)} & {"kv_allgather"}
    names = {c.name for c in _cross().comms(_kit(world=2, kvp_size=2), 0.0)}
    assert "lse_merge" not in names and "lse_merge" in {c.name for c in _attn().comms(_kit(world=2, kvp_size=2), 0.0)}
    assert {c.name for c in _cross().comms(_kit(world=2, attn_tp_size=2), 0.0)} == {"attn_tp_allreduce"}


def test_cross_attention_layers_are_read_from_their_list_with_the_image_tokens_of_the_tower() -> None:
    spec = parse_model_config(_load(DATA / "meta-llama--Llama-3.2-11B-Vision-Instruct.json"), "11b")
    kinds = [layer.mixer.kind for layer in spec.layers]
    assert [i for i, k in enumerate(kinds) if k == "CrossAttn"] == [3, 8, 13, 18, 23, 28, 33, 38]
    assert all(layer.ffn is not None and layer.ffn.inter == 14336 for layer in spec.layers)
    cross = spec.layers[3].mixer
    assert cross.kv_tokens == 4 * ((560 // 14) ** 2 + 1) == 6404 and cross.gates == 2 and cross.qk_norm == "head"
    assert spec.layers[0].mixer.qk_norm == ""  # the self-attention layers have no q / k norms
    assert spec._attention is spec.layers[0].mixer  # the primary attention caches per token
    assert any("6404 tokens" in w for w in spec.warnings)


def test_the_mllama_embedding_holds_eight_rows_beyond_the_vocabulary() -> None:
    rep = count_params(parse_model_config(_load(DATA / "meta-llama--Llama-3.2-11B-Vision-Instruct.json"), "11b"))
    assert rep.by_name()["embedding"] == (128256 + 8) * 4096 and rep.by_name()["lm_head"] == 128256 * 4096


def test_a_tiled_vision_tower_counts_its_tile_tables_gates_and_projector() -> None:
    spec = parse_model_config(_load(DATA / "meta-llama--Llama-3.2-11B-Vision-Instruct.json"), "11b")
    (enc,) = spec.encoders
    h, patches = 1280, 1601
    layer = 4 * h * h + h * 5120 + 5120 + 5120 * h + h + 4 * h
    tower = (3 * 14 * 14 * h + h + (1 + patches * h + 9 * 4 * patches * h) + 2 * (9 * 4 * h + 1) + 4 * h
             + 32 * layer + 8 * (layer + 2))
    assert (enc.params, enc.layers, enc.hidden) == (tower + 7680 * 4096 + 4096, 40, 1280)


# ------------------------------------------------------------------------- the KV cache of the configs


def test_hunyuan_large_kv_cache_per_token_by_hand() -> None:
    spec = parse_model_config(_load(DATA / "tencent--Tencent-Hunyuan-Large.json"), "hy")
    assert sum(layer.mixer.kv_shared for layer in spec.layers) == 32
    # 32 caching layers x 8 KV heads x (K + V) 80 x 2 B; attention TP 8 holds one KV head per rank
    assert state_of_layers(spec.layer_groups, KV16, 1, 1).kv == 32 * 8 * 80 * 2 * 2 == 81_920
    assert state_of_layers(spec.layer_groups, KV16, 8, 1).kv == 32 * 1 * 80 * 2 * 2
    hw = load_hardware("h200_sxm")
    pc = make_parallel_config(8, attn_tp_size=8, dense_tp_size=8, moe_tp_size=8, lmhead_tp_size=8)
    kv, _, seqs = cache_per_rank(spec, pc, resolve_precision(spec, hw), 16, 32768)
    assert seqs == 16 and kv == 16 * 32768 * 32 * 1 * 80 * 2 * 2


@pytest.mark.parametrize("name,layers,cross", [("meta-llama--Llama-3.2-11B-Vision-Instruct", 40, 8),
                                               ("meta-llama--Llama-3.2-90B-Vision-Instruct", 100, 20)])
def test_llama_vision_kv_per_token_and_per_sequence_by_hand(name: str, layers: int, cross: int) -> None:
    spec = parse_model_config(_load(DATA / f"{name}.json"), name)
    per_token = 8 * 128 * 2 * 2  # 8 KV heads x (K + V) 128 x 2 B
    held = state_of_layers(spec.layer_groups, KV16, 1, 1)
    assert held.kv == (layers - cross) * per_token  # 131,072 B (11B), 327,680 B (90B)
    assert held.constant == cross * 6404 * per_token  # 209,846,272 B (11B), 524,615,680 B (90B)
    hw = load_hardware("h100_sxm")
    pc = make_parallel_config(4, attn_tp_size=4, dense_tp_size=4, lmhead_tp_size=4)
    prec = resolve_precision(spec, hw)
    kv, _, _ = cache_per_rank(spec, pc, prec, 8, 8192)
    assert kv == 8 * 8192 * (layers - cross) * per_token / 4
    assert state_per_rank(spec, pc, prec, 8, 8192) == 8 * cross * 6404 * per_token / 4
    rep = memory_per_rank(spec, hw, pc, prec, 8, 8192, MemoryOptions())
    assert rep.state_bytes == 8 * cross * 6404 * per_token / 4 and rep.kv_cache_bytes == kv
