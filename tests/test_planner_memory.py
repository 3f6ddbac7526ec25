"""The planner's memory constraint is the memory model's: the tables' entries plus each layout's terms, stage by
stage (layout_memory.StageMemory), give the bytes memory_per_rank gives the busiest replica's sequences at the longest
context (layout_memory.assumed_memory), so they admit exactly the configurations that fit, and the CP-SAT view model
admits exactly what `Tables.fits` admits."""
from __future__ import annotations

import random

import pytest
from ortools.sat.python import cp_model

from solver.estimate.compute import factors_for
from solver.estimate.activations import activation_peak, activation_peak_of, activation_peak_terms
from solver.estimate.memory_options import MemoryOptions
from solver.estimate.params import count_params
from solver.plan import view_model
from solver.plan.memory_rows import group_memory
from solver.plan.groups import GROUPS, module_groups
from solver.plan.layout_memory import assumed_memory
from solver.plan.table_build import build_tables
from solver.space.domains import build_space
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import list_models, load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario

# MoE TP under attention DP (the expert transient grows with MoE TP), the logits under LM-head TP, EP staging
# under CP, dense and hybrid models
CASES = [("deepseek-v3.2", "atlas_a3", "cann-recipes", 16, "serving", 32768),
         ("qwen3-235b-a22b", "h100_sxm", "vllm", 8, "decode", 32768),
         ("qwen3-30b-a3b", "h100_sxm", "generic", 2, "serving", 32768),
         ("llama-3.1-70b", "h100_sxm", "sglang", 8, "serving", 32768),
         ("qwen3.5-35b-a3b", "h100_sxm", "generic", 2, "decode", 32768),
         # decode context parallel reusing the TP ranks: the attention weights split over TP x DCP
         ("deepseek-v3", "h200_sxm", "vllm", 8, "decode", 32768)]


def _tables(model, hw, fw, world, phase, isl, mtp=0):
    m, h, f = load_model(model), load_hardware(hw), load_framework(fw)
    prec = resolve_precision(m, h, weight_dtype="int8" if h.name.startswith("atlas") else None)
    sc = Scenario(isl=isl, osl=256, max_concurrency=512, phase=phase, mtp=mtp)
    fac = factors_for(h, f.efficiency_for(h))
    return m, h, prec, sc, build_tables(m, h, prec, fac, f, build_space(m, h, f, world, sc), sc)


def _picks(t, rng, n):
    """Random configurations, each with one stage count for every group."""
    stage_counts = sorted({c[-1] for c in t.choices["attn"]})
    for _ in range(n):
        pp = rng.choice(stage_counts)
        picks = {g: rng.choice([i for i, c in enumerate(opts) if c[-1] == pp]) for g, opts in t.choices.items()}
        yield rng.choice(t.batches), picks


def test_activation_peak_is_the_largest_of_its_terms() -> None:
    m = load_model("deepseek-v3.2")
    pc = ParallelConfig(world_size=16, attn_tp_size=1, moe_tp_size=16, lmhead_tp_size=4)
    terms = activation_peak_terms(m, pc, MemoryOptions(), 32768, 4.0)
    assert set(terms) == {"attn_tp_size", "dense_tp_size", "moe_tp_size", "lmhead_tp_size"}
    assert activation_peak(m, pc, MemoryOptions(), 32768, 4.0) == max(terms.values())


# the catalog: every kind of attention block (MLA + DSA, GQA, sliding window, linear, Mamba, compressed)
MODELS = [names[0] for _, names in list_models()]
KNOB_SETS = [GROUPS["attn"], ("dense_tp_size",), ("moe_tp_size", "redundant_experts"), ("lmhead_tp_size",),
             ("embed_tp_size",), ("attn_tp_size", "lmhead_tp_size")]


@pytest.mark.parametrize("name", MODELS)
def test_the_peak_of_some_knobs_is_the_largest_of_their_terms(name: str) -> None:
    """activation_peak_of (what the planner's memory rows ask) is the largest of activation_peak_terms' terms of
    those knobs, exactly, and None when no term is theirs."""
    m = load_model(name)
    for pc in (ParallelConfig(world_size=16), ParallelConfig(world_size=16, attn_tp_size=2, cp_size=2, moe_tp_size=4,
                                                             dense_tp_size=8, lmhead_tp_size=4),
               ParallelConfig(world_size=32, attn_tp_size=4, attn_sp_size=2, lmhead_tp_size=16, pp_size=2).stage()):
        for seq_len, seqs in ((32768, 4.0), (4096, 1.0), (1024, 37.5)):
            terms = activation_peak_terms(m, pc, MemoryOptions(), seq_len, seqs)
            for knobs in KNOB_SETS:
                mine = [v for k, v in terms.items() if k in knobs]
                got = activation_peak_of(m, pc, MemoryOptions(), seq_len, seqs, knobs)
                assert got == (max(mine) if mine else None), (name, pc.key(), knobs)


@pytest.mark.parametrize("name", MODELS)
def test_the_attention_entrys_growing_part_reads_no_o_proj_tp(name: str) -> None:
    """build_tables computes an attention choice's growing memory (caches, its activation term) once per layout
    and lends it to the layout's other o_proj TP values: that needs the figure not to read o_proj TP."""
    m = load_model(name)
    prec = resolve_precision(m, load_hardware("h100_sxm"))
    params = count_params(m)
    groups = module_groups(params)
    for tp, cp, kvp, sp, pp in ((1, 1, 1, 1, 1), (2, 1, 1, 1, 1), (1, 2, 1, 1, 1), (1, 1, 4, 1, 1), (2, 1, 1, 2, 2)):
        got = {group_memory("attn", m, ParallelConfig(world_size=16, attn_tp_size=tp, cp_size=cp, kvp_size=kvp,
                                                       attn_sp_size=sp, pp_size=pp, o_proj_tp_size=op),
                            prec, MemoryOptions(), params, groups, held, 32768, 1, part="batch")
               for op in (1, 2, 4, 8) for held in (8,)}
        assert len(got) == 1, (name, tp, cp, kvp, sp, pp, got)


PP_CASES = [("deepseek-v3", "h200_sxm", "generic", 16, "serving", 4096, 1),  # PP, MTP on the last stage
            ("llama-3.1-70b", "h100_sxm", "generic", 8, "serving", 32768),
            ("gemma-3-27b", "a100_sxm", "generic", 4, "decode", 32768)]


@pytest.mark.parametrize("case", CASES + PP_CASES, ids=[c[0] + "-" + c[2] for c in CASES + PP_CASES])
def test_the_tables_give_the_memory_models_bytes(case) -> None:
    """Weights (MTP layers with their groups), caches, the largest transient term, the EP staging and the
    communicator buffers once: the same bytes as memory_per_rank, configuration by configuration."""
    m, h, prec, sc, t = _tables(*case)
    rng = random.Random(2)
    for b, picks in _picks(t, rng, 60):
        pc = ParallelConfig(world_size=t.world, **t.config(picks))
        report = assumed_memory(m, h, pc, prec, sc, b, t.mem_opts)  # the engine's layout
        assert t.memory_of(b, picks) == pytest.approx(report.total - report.reserved_bytes, rel=1e-9), t.config(picks)


@pytest.mark.parametrize("case", CASES, ids=[c[0] + "-" + c[2] for c in CASES])
def test_tables_fit_exactly_what_the_memory_model_fits(case) -> None:
    m, h, prec, sc, t = _tables(*case)
    rng = random.Random(0)
    seen = {True: 0, False: 0}
    for b, picks in _picks(t, rng, 150):
        pc = ParallelConfig(world_size=t.world, **t.config(picks))
        report = assumed_memory(m, h, pc, prec, sc, b, t.mem_opts)  # the engine's layout
        margin = abs(report.total - report.reserved_bytes - report.limit_bytes)
        if margin < 1e6:  # within a megabyte of the cap: rounding decides, not the model
            continue
        assert t.fits(b, picks) == report.feasible, (b, t.config(picks))
        seen[report.feasible] += 1
    assert seen[True] and seen[False]  # both sides of the cap were exercised


@pytest.mark.parametrize("case", CASES[:3], ids=[c[0] + "-" + c[2] for c in CASES[:3]])
def test_cp_sat_memory_constraints_admit_what_tables_fit_admits(case) -> None:
    m, h, prec, sc, t = _tables(*case)
    rng = random.Random(1)
    seen = set()
    # at least 80 draws, and on until both a fitting and an overflowing configuration were checked
    for n, (b, picks) in enumerate(_picks(t, rng, 1000)):
        if n >= 80 and seen == {True, False}:
            break
        key = t.layout_key(t.choices["attn"][picks["attn"]])
        model = cp_model.CpModel()
        x = {g: {i: model.new_bool_var(f"{g}{i}") for i, c in enumerate(t.choices[g]) if c[-1] == key[4]
                 and (g != "attn" or i in t.layouts()[key])} for g in GROUPS}
        for g, bools in x.items():
            for i, v in bools.items():
                model.add(v == (1 if picks[g] == i else 0))
        lit = model.new_bool_var("memory")
        model.add(lit == 1)
        view_model._memory_constraints(model, t, b, key, x, lit)
        status = cp_model.CpSolver().solve(model)
        assert (status in (cp_model.OPTIMAL, cp_model.FEASIBLE)) == t.fits(b, picks), (b, t.config(picks))
        seen.add(t.fits(b, picks))
    assert seen == {True, False}
