"""The planner's sums path (estimate.step_sums: SumsKit records, the per-kit sums store, the collective memo, the
blocks' memoised parts) gives exactly (==) what the full records give."""
from __future__ import annotations

import copy
import itertools
import dataclasses

import pytest

from solver.specs.dtypes import KV16, KVFormat
from solver.estimate import comm, step_parts, step_sums
from solver.estimate.params import count_params
from solver.estimate.compute import Kit, SumsKit, Work, collective, collective_s, factors_for, head_ops, kit_head_ops
from solver.estimate.step_parts import _head_colls, _records, head_comms, kit_head_comms
from solver.estimate.step_sums import _light_module_sums, _light_sums, block_sums, module_sums
from solver.plan import group_cost
from solver.plan.groups import module_groups
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import list_models, load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision

HW = {"atlas": load_hardware("atlas_a3"), "h200": load_hardware("h200_sxm")}
WORKS = [Work("prefill", 4096, 2048.5, 1, 1), Work("prefill", 3 * 4096, 3000.0, 3, 3, 2.0),
         Work("decode", 64, 4224.0, 64, 64), Work("decode", 1, 4224.0, 1, 1, 1.0)]


def _configs(m) -> list[ParallelConfig]:
    moe = 2 if m.is_moe else 1
    dense = 4 if (m.has_dense_ffn or m.num_shared_experts) else 1
    oproj = 8 if m.has_mla else 1
    return [ParallelConfig(world_size=16),
            ParallelConfig(world_size=16, attn_tp_size=2, moe_tp_size=moe, dense_tp_size=dense, o_proj_tp_size=oproj,
                           embed_tp_size=4, lmhead_tp_size=16),
            ParallelConfig(world_size=32, attn_tp_size=1, cp_size=2, kvp_size=2, moe_tp_size=moe, dense_tp_size=dense,
                           lmhead_tp_size=2),
            ParallelConfig(world_size=16, attn_tp_size=16, moe_tp_size=1, dense_tp_size=dense, attn_sp_size=1)]


@pytest.mark.parametrize("name", [names[0] for _, names in list_models()])
def test_the_sums_kit_records_add_up_to_the_records_sums(name: str) -> None:
    """Every block of every catalog model, and its embedding / LM head, on configs and works that take each
    branch (TP, CP + KVP, EP, reshards, vocab-parallel head; prefill and decode): the SumsKit's tuples sum to
    exactly the module sums of the OpCost / CommCost records."""
    m = load_model(name)
    h = HW["atlas"] if "deepseek" in name else HW["h200"]
    prec = resolve_precision(m, h, weight_dtype="int8" if h.name.startswith("atlas") else None)
    f = factors_for(h)
    blocks = [b for b, _ in m.block_groups] + [b for layer in (m.mtp_modules[0] if m.mtp_modules else ())
                                               for b in layer.blocks]
    for pc in _configs(m):
        for w in WORKS:
            kit, skit = Kit(h, pc, prec, f, w), SumsKit(h, pc, prec, f, w)
            for b in blocks:
                assert _light_sums(b, skit) == module_sums(*_records(b, kit)), (name, pc.key(), w, b.kind)
            assert _light_module_sums(kit_head_ops(m, skit), kit_head_comms(m, skit)) == module_sums(
                head_ops(m, h, pc, prec, f, w), head_comms(m, h, pc, f, w))


def test_the_head_collectives_are_the_primitives_own() -> None:
    """head_comms made through the kit's collective maker: each record is the primitive's own time and tier."""
    m, h = load_model("deepseek-v3.2"), HW["atlas"]
    f = factors_for(h)
    pc = ParallelConfig(world_size=32, embed_tp_size=16, lmhead_tp_size=32)
    w = Work("decode", 64, 4096.0, 64, 64)
    got = {c.name: c for c in head_comms(m, h, pc, f, w)}
    assert set(got) == {"embed_allreduce", "lmhead_gather", "logits_gather"}
    e = got["embed_allreduce"]
    assert e.time_s == e.exposed_s == comm.all_reduce_s(h, 16, e.bytes, 1, f.comm, comm.CustomAllReduce.of(f))
    assert got["lmhead_gather"].time_s == comm.all_gather_s(h, 32, got["lmhead_gather"].bytes, 1, f.comm)
    assert got["logits_gather"].time_s == comm.all_gather_s(h, 32, got["logits_gather"].bytes, 1, f.comm)
    assert all(c.tier == comm.crosses(h, c.group) for c in got.values())
    assert _head_colls(m, pc, w, lambda *a: collective(h, f, *a), f.logits_exchange) == list(got.values())


def test_the_collective_memo_tells_its_arguments_apart() -> None:
    """collective_s is remembered per (hardware, factors, primitive, ranks, bytes, stride): every argument
    changes the answer somewhere, and each answer is the primitive's own, asked first or again."""
    f = factors_for(HW["h200"])
    slow = dataclasses.replace(f, comm=f.comm / 2)
    cases = [("all_reduce", 8, 1e6, 1), ("all_reduce", 8, 1e9, 1), ("all_gather", 8, 1e6, 1),
             ("reduce_scatter", 16, 1e6, 1), ("all_to_all", 16, 1e6, 2), ("all_to_all", 16, 1e6, 8),
             ("ep_all_to_all", 16, 1e6, 1)]

    def direct(hw, fac, prim, n, nbytes, stride):
        if prim == "all_reduce":
            return comm.all_reduce_s(hw, n, nbytes, stride, fac.comm, comm.CustomAllReduce.of(fac))
        return {"all_gather": comm.all_gather_s, "reduce_scatter": comm.reduce_scatter_s,
                "all_to_all": comm.all_to_all_s, "ep_all_to_all": comm.ep_all_to_all_s}[prim](hw, n, nbytes, stride,
                                                                                              fac.comm)

    for _ in range(2):
        for hw in HW.values():
            for fac in (f, slow):
                for case in cases:
                    assert collective_s(hw, fac, *case) == direct(hw, fac, *case), (hw.name, fac.comm, case)
    # the cases would tell a memo that dropped an argument apart: each argument changes the time here
    h2 = HW["h200"]
    assert all(direct(h2, f, *c) != direct(h2, slow, *c) for c in cases)
    assert all(direct(HW["atlas"], f, *c) != direct(h2, f, *c) for c in cases)
    assert len({direct(h2, f, *c) for c in cases}) == len(cases)


def test_a_blocks_parts_are_built_once_and_stay_its_own() -> None:
    """proj_parts / the indexer's parts are memoised per block object: the same tuple again, equal to a fresh
    build, and an equal copy or another block gets its own answer."""
    m = load_model("deepseek-v3.2")
    mla = m._attention
    first = mla.proj_parts()
    assert mla.proj_parts() is first
    fresh = type(mla).proj_parts.__wrapped__(mla)
    assert fresh == first and fresh is not first
    twin = copy.deepcopy(mla)
    assert twin.proj_parts() == first
    other = dataclasses.replace(mla, q_lora_rank=None)
    assert other.proj_parts() != first and other.proj_parts() == type(mla).proj_parts.__wrapped__(other)
    ix = mla.indexer
    assert ix.parts(mla.hidden, mla.q_lora_rank) is ix.parts(mla.hidden, mla.q_lora_rank)
    assert ix.parts(mla.hidden, None) == type(ix).parts.__wrapped__(ix, mla.hidden, None)
    assert ix.parts(mla.hidden, None) != ix.parts(mla.hidden, mla.q_lora_rank)


@pytest.mark.parametrize("name", ["deepseek-v3.2", "qwen3-30b-a3b", "gpt-oss-20b"])
def test_a_blocks_state_is_remembered_per_arguments(name: str) -> None:
    """state(kv, attn_tp) is memoised per block and arguments: each answer is a fresh build's, another
    argument gets its own, and a keyword call is answered too (not remembered)."""
    m = load_model(name)
    for b in {b for b, _ in m.block_groups if b.role == "mixer"}:
        build = getattr(type(b).state, "__wrapped__", None)
        assert build is not None, type(b).__name__
        for args in [(KVFormat(1), 1), (KV16, 1), (KV16, 8), (KVFormat(1), 64)]:
            assert b.state(*args) == build(b, *args)
            assert b.state(*args) is b.state(*args)
        assert b.state(kv=KV16, attn_tp=8) == build(b, KV16, 8)


def test_block_sums_are_kept_per_kit() -> None:
    """The sums store is one per kit: the same block under another config or work gets its own sums."""
    m, h = load_model("deepseek-v3.2"), HW["atlas"]
    prec, f = resolve_precision(m, h, weight_dtype="int8"), factors_for(h)
    b = m._moe
    got = set()
    for pc in _configs(m):
        for w in WORKS:
            kit = Kit(h, pc, prec, f, w)
            s = block_sums(b, kit)
            assert s == module_sums(*_records(b, kit))
            got.add(s)
    assert len(got) == len(_configs(m)) * len(WORKS)



def _fresh_shares(*args):
    """group_cost.shares with every sums cache emptied first (nothing remembered)."""
    step_sums._KITS.clear()
    step_parts._DECODE_LAYOUTS.clear()
    step_parts._DP_LAYOUTS.clear()
    return group_cost.shares(*args)


def test_shares_kept_per_kit_are_each_configs_own() -> None:
    """shares keeps its answer in the kit's store per recipe (stages, groups, want, question): a CP config's
    decode step and the DP config it decodes as (one kit) get the answer each gets alone, from nothing
    cached; another want, question or group map under the same kit gets its own."""
    m, h = load_model("deepseek-v3.2"), HW["atlas"]
    prec, f = resolve_precision(m, h, weight_dtype="int8"), factors_for(h)
    groups = module_groups(count_params(m))
    other = {k: ("moe" if v == "dense" else v) for k, v in groups.items()}  # shared experts under the MoE group
    cp = ParallelConfig(world_size=16, cp_size=4, moe_tp_size=2, dense_tp_size=2)
    w = Work("decode", 2.0, 4224.0, 2.0, 2.0)  # two sequences on a CP4 group: two ranks decode one each
    dp, dp_w = step_parts.decode_layout(cp, w)
    assert dp.key() != cp.key() and dp_w != w
    asks = [(0, groups, ("attn",), True), (1, groups, ("moe",), False), (1, groups, ("dense",), False),
            (1, other, ("moe",), False), (1, groups, ("dense", "moe"), False), (0, groups, ("lmhead",), False)]
    alone = [_fresh_shares(m, h, dp, prec, f, dp_w, *a) for a in asks]
    _fresh_shares(m, h, cp, prec, f, w, *asks[0])
    for a, expect in zip(asks, alone):  # under the kit the first ask made: each recipe its own answer
        assert group_cost.shares(m, h, cp, prec, f, w, *a) == expect, a
        assert group_cost.shares(m, h, dp, prec, f, dp_w, *a) == expect, a
    assert alone[1] != alone[3] and alone[1]["moe"] != alone[2]["dense"]


@pytest.mark.parametrize("name", ["deepseek-v3.2", "qwen3-30b-a3b", "llama-3.1-70b", "qwen3.5-35b-a3b"])
def test_module_sums_add_as_the_step_cost_adds(name: str) -> None:
    """module_sums (the SumsKit's additions, their one home) gives each module's seconds exactly as
    StepCost.by_module adds the same records (ops first, then collectives, each in order), and its kernel
    overhead as the running sum of the ops' overhead_s."""
    from solver.estimate.step import StepCost

    m = load_model(name)
    h = HW["atlas"] if "deepseek" in name else HW["h200"]
    prec = resolve_precision(m, h, weight_dtype="int8" if h.name.startswith("atlas") else None)
    f = factors_for(h)
    for pc in _configs(m):
        for w in WORKS:
            kit = Kit(h, pc, prec, f, w)
            records = [_records(b, kit) for b, _ in m.block_groups]
            records.append((head_ops(m, h, pc, prec, f, w), head_comms(m, h, pc, f, w)))
            for ops, comms in records:
                got = module_sums(ops, comms)
                rows = StepCost(list(ops), list(comms)).by_module()
                assert [mod for mod, _, _ in got] == list(rows)
                for mod, t, k in got:
                    assert t == rows[mod]["time_s"], (name, mod)
                    ref = 0.0
                    for o in ops:
                        if o.module == mod:
                            ref += o.overhead_s
                    assert k == ref, (name, mod)


def _mixer_configs() -> list[ParallelConfig]:
    """Configs over two world sizes and stage counts (stage worlds 8 and 16 twice each), every attention layout
    of powers of two with o_proj TP up to the stage, and the other knobs varied with the layout."""
    out = []
    for world, pp in ((8, 1), (16, 1), (16, 2), (32, 2)):
        stage = world // pp
        twos = [d for d in (1, 2, 4, 8, 16) if stage % d == 0]
        for tp, cp, kvp, sp, op in itertools.product(twos, repeat=5):
            if stage % (tp * cp * kvp * sp) or (cp > 1) + (kvp > 1) + (sp > 1) > 1 or (tp > 1 and op not in (1, tp)):
                continue
            other = twos[(tp + op + world) % len(twos)]
            try:
                out.append(ParallelConfig(world_size=world, pp_size=pp, attn_tp_size=tp, cp_size=cp, kvp_size=kvp,
                                          attn_sp_size=sp, o_proj_tp_size=op, moe_tp_size=other,
                                          dense_tp_size=other, embed_tp_size=other, lmhead_tp_size=other))
            except ValueError:
                continue
    return out


@pytest.mark.parametrize("name", [names[0] for _, names in list_models()])
def test_mixer_sums_read_only_the_mixer_key(name: str) -> None:
    """The mixers' kit is shared by configs with one step_sums.mixer_key (group_cost.shares, attention only): every
    mixer block of every catalog model (its MTP layers' too) sums to exactly the same under configs that
    differ only in what the key leaves out (world size, stage count, the other groups' knobs), on prefill and
    decode works with and without busy replicas. Some keys hold configs of two world sizes, some configs whose
    o_proj group is wider than the attention group (where the replicas are read)."""
    m = load_model(name)
    h = HW["atlas"] if "deepseek" in name else HW["h200"]
    prec = resolve_precision(m, h, weight_dtype="int8" if h.name.startswith("atlas") else None)
    f = factors_for(h)
    mixers = {b for b, _ in m.block_groups if b.role == "mixer"}
    mixers |= {b for layer in (m.mtp_modules[0] if m.mtp_modules else ()) for b in layer.blocks if b.role == "mixer"}
    by_key: dict[tuple, list[ParallelConfig]] = {}
    for pc in _mixer_configs():
        by_key.setdefault(step_sums.mixer_key(pc.stage() if pc.pp_size > 1 else pc), []).append(
            pc.stage() if pc.pp_size > 1 else pc)
    assert any(len({pc.world_size for pc in pcs}) > 1 for pcs in by_key.values())
    assert any(len({pc.key() for pc in pcs}) > 1 and pcs[0].oproj_shards > pcs[0].attn_group_size
               for pcs in by_key.values())
    for pcs in by_key.values():
        for w in WORKS:
            for b in mixers:
                first = _light_sums(b, SumsKit(h, pcs[0], prec, f, w))
                for pc in pcs[1:]:
                    assert _light_sums(b, SumsKit(h, pc, prec, f, w)) == first, (name, b.kind, pcs[0].key(), pc.key(), w)


def test_tables_keep_one_object_per_equal_precision_and_factors() -> None:
    """build_tables' inputs as one object per value (table_build._one_of: the memos keyed by identity then serve
    another plan of the deployment): an equal precision (unhashable) or factors object is the first one met,
    an unequal one stays its own."""
    from solver.plan.table_build import _one_of

    m, h = load_model("deepseek-v3.2"), HW["atlas"]
    p1, p2 = resolve_precision(m, h, weight_dtype="int8"), resolve_precision(m, h, weight_dtype="int8")
    f1, f2 = factors_for(h), factors_for(h)
    assert p1 is not p2 and f1 is not f2
    assert _one_of(p1) is _one_of(p2) is _one_of(p1)
    assert _one_of(f2) is _one_of(f1)
    other = dataclasses.replace(f1, gemm=f1.gemm / 2)
    assert _one_of(other) == other and _one_of(other) is not _one_of(f1)
    bf16 = resolve_precision(m, h)
    assert bf16 != p1 and _one_of(bf16) == bf16 and _one_of(bf16) is not _one_of(p1)


def _head_configs() -> list[ParallelConfig]:
    """Stage configs over two world sizes and stage counts (stage worlds 8 and 16 twice each): embedding and
    LM head TP, the attention group's size and split, and the other knobs varied."""
    out = []
    for world, pp in ((8, 1), (16, 1), (16, 2), (32, 2)):
        stage = world // pp
        twos = [d for d in (1, 2, 4, 8, 16) if stage % d == 0]
        for e, lt, tp, cp in itertools.product(twos, twos, twos, (1, 2)):
            if stage % (tp * cp):
                continue
            other = twos[(e + tp + world) % len(twos)]
            pc = ParallelConfig(world_size=world, pp_size=pp, attn_tp_size=tp, cp_size=cp, embed_tp_size=e,
                                lmhead_tp_size=lt, moe_tp_size=other, dense_tp_size=other)
            out.append(pc.stage() if pp > 1 else pc)
    return out


@pytest.mark.parametrize("name", [names[0] for _, names in list_models()])
def test_head_sums_read_only_the_head_key(name: str) -> None:
    """The embedding and LM head alone are costed under a kit per step_sums.head_key (group_cost.shares, a recipe
    of no block): every catalog model's head sums and MTP draft pass sums are exactly the same under configs
    that differ only in what the key leaves out; some keys hold configs of two world sizes, some a TP degree
    wider than the attention group (where the replicas are read)."""
    m = load_model(name)
    h = HW["atlas"] if "deepseek" in name else HW["h200"]
    prec = resolve_precision(m, h, weight_dtype="int8" if h.name.startswith("atlas") else None)
    f = factors_for(h)
    by_key: dict[tuple, list[ParallelConfig]] = {}
    for pc in _head_configs():
        by_key.setdefault(step_sums.head_key(pc), []).append(pc)
    assert any(len({pc.world_size for pc in pcs}) > 1 for pcs in by_key.values())
    assert any(len({pc.key() for pc in pcs}) > 1 and max(pcs[0].embed_tp_size, pcs[0].lmhead_tp_size)
               > pcs[0].attn_group_size for pcs in by_key.values())

    def sums(pc: ParallelConfig, w: Work) -> tuple:
        skit = SumsKit(h, pc, prec, f, w)
        return (_light_module_sums(kit_head_ops(m, skit), kit_head_comms(m, skit)),
                module_sums(*step_parts.draft_records(m, h, pc, prec, f, w)))

    for pcs in by_key.values():
        for w in WORKS:
            first = sums(pcs[0], w)
            for pc in pcs[1:]:
                assert sums(pc, w) == first, (name, pcs[0].key(), pc.key(), w)
