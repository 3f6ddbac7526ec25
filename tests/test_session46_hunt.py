"""Rules found by trying this session's features as a user: attention-FFN disaggregation (estimate.afd, specs.afd,
check's review of an AFD file, the API), the disaggregated pools' remedies and the SGLang rank order."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import solver
from solver.catalog import catalog_dir
from solver.cli.main import main
from solver.errors import InputError
from solver.estimate.afd import afd_estimate, copies_per_token
from solver.estimate.factors import factors_for
from solver.estimate.serving import Workload
from solver.space.placement import as_launched
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision

LC_AFD = str(catalog_dir("references") / "lc-afd.yaml")
LC_KNOBS = dict(attn_tp_size=1, dense_tp_size=8, moe_tp_size=1, embed_tp_size=1, lmhead_tp_size=16,
                o_proj_tp_size=8)


def test_afd_sends_each_token_to_the_shared_experts_too():
    """DeepSeek-R1 (hidden 7168; 3 dense FFN layers, 58 MoE layers of top 8 with a shared expert), W8A8, MoE TP 1:
    to the FFN side 58 x 8 x 7168 x 1 B (routed copies, 8-bit) + 3 x 7168 x 2 B (dense) + 58 x 7168 x 2 B (the
    shared expert's copy, bf16) = 3,325,952 + 43,008 + 831,488 = 4,200,448 B a token; back 58 x 8 x 7168 x 2 +
    43,008 + 831,488 = 6,651,904 + 874,496 = 7,526,400 B. The shared experts run on the FFN side, so their input
    crosses the link as a dense block's does."""
    m = load_model("deepseek-r1")
    assert copies_per_token(m, ParallelConfig(world_size=32), True) == (4_200_448, 7_526_400)


def test_afd_a_moe_without_shared_experts_sends_routed_and_dense_copies_only():
    """LongCat-Flash (hidden 6144; 28 MoE layers of 12 of 768 slots, 512 real: 8 real copies; 56 dense FFN, no
    shared expert), 8-bit: 28 x 8 x 6144 x 1 + 56 x 6144 x 2 = 1,376,256 + 688,128 = 2,064,384 B out; back
    28 x 8 x 6144 x 2 + 688,128 = 2,752,512 + 688,128 = 3,440,640 B."""
    m = load_model("longcat-flash")
    assert copies_per_token(m, ParallelConfig(world_size=64), True) == (2_064_384, 3_440_640)


def _lc_afd_estimate():
    model, fw = load_model("longcat-flash"), load_framework("cann-recipes")
    hw = as_launched(load_hardware("atlas_a3"), fw, 128)
    prec = resolve_precision(model, hw, "int8")
    f = factors_for(hw, fw.efficiency_for(hw))
    return afd_estimate(model, hw, ParallelConfig(world_size=128, **LC_KNOBS), prec, f,
                        Workload.decode_of(256, 4608, 128))


def test_afd_split_is_the_pacing_side_and_adds_up_to_the_step():
    """Both sides run at once, so the step by kind is the pacing side's (lc-afd: the FFN side, busy 18.9 ms of the
    19.1 ms step against the attention side's 13.4 ms): its ops and exposed collectives are its busy time, and
    with the exposed AFD transfer, the overhead and the wait on the attention side they make the step."""
    d = _lc_afd_estimate().decode
    assert d.pacing_side == "ffn" and d.side_busy_s["ffn"] > d.side_busy_s["attention"]
    s = d.split()
    own = s["compute_s"] + s["memory_s"] + s["communication_s"] - d.exposed_transfer_s
    assert own == pytest.approx(d.side_busy_s["ffn"], rel=1e-9)
    assert sum(s.values()) == pytest.approx(d.step_s, rel=1e-9) and s["waiting_s"] >= 0


def test_afd_is_refused_for_a_model_without_routed_experts():
    """Qwen3-32B is dense: the facts verify AFD on a MoE only (lc-afd), so --afd is refused, naming the flag."""
    r = CliRunner().invoke(main, ["estimate", "qwen3-32b", "--hardware", "atlas_a3", "--cards", "16", "--afd",
                                  "--framework", "cann-recipes", "--phase", "decode", "--batch", "64",
                                  "--seq-len", "4096"])
    assert r.exit_code == 2
    assert "--afd: Qwen3-32B has no routed experts" in r.stderr


def _check_json(tmp_path, **knobs) -> dict:
    from solver.specs.reference import Reference, deployment_data

    dep = deployment_data(Reference(**yaml.safe_load(open(LC_AFD))))
    dep = {**dep, "parallel_config": {**dep["parallel_config"], **knobs}}
    path = tmp_path / "afd.yaml"
    path.write_text(yaml.safe_dump(dep))
    r = CliRunner().invoke(main, ["check", str(path), "--format", "json"])
    assert r.exit_code in (0, 1), r.stderr
    return json.loads(r.stdout)


def test_an_afd_check_prices_the_smaller_attention_tp_it_suggests_disaggregated(tmp_path):
    """lc-afd at attn_tp 8 (embed_tp 8, which cann-recipes wants a multiple of it): the seed's [B] warning names
    attn_tp 1, and its figures are the AFD check of that file (lc-afd with embed_tp 8: 13.70 GB on the binding FFN
    side, TPOT 19.2 ms), not a plain 64-rank deployment's."""
    own = _check_json(tmp_path, embed_tp_size=8)["estimation"]
    d = _check_json(tmp_path, attn_tp_size=8, embed_tp_size=8)
    (w,) = [x for x in d["warnings"]["B"] if x.startswith("attn_tp_size 8 is more than this decode needs")]
    assert f"attn_tp_size 1 fits ({own['memory_per_rank_gb']:.2f} of " in w
    assert f"(TPOT {own['tpot_ms']:.3g} vs " in w


def test_an_afd_check_weighs_the_planners_configuration_disaggregated(tmp_path):
    """The common error's planner analysis names a configuration and its change against this one; under AFD that
    change is the named knobs' AFD estimate against this AFD estimate: writing them into the AFD file and checking
    it gives the same per-rank throughput change (rounded to the percent)."""
    d = _check_json(tmp_path, attn_tp_size=8, embed_tp_size=8)
    (line,) = [x for x in d["common_errors"] if "The planner's analysis" in x]
    knobs = dict(kv.split("=") for kv in line.split(" (", 2)[2].split(")")[0].split())
    named = {f"{k}_size": int(v) for k, v in knobs.items()}
    mine = d["estimation"]["output_tokens_per_s_per_rank"]
    theirs = _check_json(tmp_path, **{**LC_KNOBS, **named})["estimation"]["output_tokens_per_s_per_rank"]
    pct = round((theirs / mine - 1) * 100)
    assert f"output tokens/s per rank {pct:+d}%" in line, (line, theirs, mine)


def test_sglang_rank_order_is_stage_major():
    """SGLang numbers PP outermost (parallel_state.py:2951-2959); its dense --dp-size replicas stay inside one node,
    whose tiers hold them all, so the order prices them as the controller places them."""
    assert load_framework("sglang").rank_order == "stage_major"
    assert all(min(t.span_ranks for t in load_hardware(h).tiers.values()) >= load_hardware(h).ranks_per_node
               for h in ("h100_sxm", "gb200", "mi300x", "l40s"))


API_LC = dict(phase="decode", batch=256, isl=4608, osl=128, framework="cann-recipes", dense_tp_size=8,
              lmhead_tp_size=16, o_proj_tp_size=8, weight_dtype="int8", kv_dtype="bf16")


def test_api_estimate_and_check_take_afd_as_the_command_line_does():
    """api.estimate(afd=True) is `estimate --afd`, api.check(afd=True) a file's `afd: true`: lc-afd's knobs and
    workload give check's TPOT of references/lc-afd.yaml."""
    from solver import api

    want = api.check(config=LC_AFD).review.estimate.tpot_s
    assert api.estimate("longcat-flash", "atlas_a3", 128, afd=True, **API_LC).estimate.tpot_s == pytest.approx(want)
    assert api.check("longcat-flash", "atlas_a3", 128, afd=True, **API_LC).review.estimate.tpot_s == \
        pytest.approx(want)


def test_api_check_names_a_knob_an_afd_rule_refuses_by_its_keyword():
    """lmhead_tp_size 128 does not divide a half (64): the refusal names the keyword, as the flag on the CLI."""
    from solver import api

    with pytest.raises(InputError) as exc:
        api.check("longcat-flash", "atlas_a3", 128, afd=True, **{**API_LC, "lmhead_tp_size": 128})
    assert str(exc.value).startswith("lmhead_tp_size: [C.afd_tp_divides_half_world]")


def test_api_afd_is_a_boolean_and_a_files_own_with_config():
    from solver import api

    with pytest.raises(InputError, match="afd: must be True or False"):
        api.estimate("longcat-flash", "atlas_a3", 128, afd="yes", **API_LC)
    with pytest.raises(InputError, match="afd: given by the file"):
        api.check(config=LC_AFD, afd=True)


@pytest.mark.slow  # a whole plan of several cluster sizes (~2.5 s)
def test_a_disagg_remedy_plans_the_worker_under_its_pools_rules():
    """Llama-3.1-405B (811.7 GB of bf16 weights) on 64 H100 under vLLM, disaggregated: vLLM's NIXL consumer runs no
    decode PP, so a decode worker splits the weights at most TP 8 ways inside a node: 811.7 / 8 = 101.5 GB a rank
    > 81.6 GB, at any worker size. The remedies are what frees it (cross-node TP, smaller weights), not a shorter
    prompt or more cards, which a worker planned without the pool's rule (TP8 x PP4: 25 GB a rank) would offer."""
    r = CliRunner().invoke(main, ["solve", "llama-3.1-405b", "--hardware", "h100_sxm", "--cards", "64",
                                  "--framework", "vllm", "--serving", "disagg"])
    assert r.exit_code == 1
    err = " ".join(r.stderr.split())
    assert "no decode worker of at most 32 ranks is feasible" in err
    assert "--isl" not in err and "cards in total" not in err
    assert "with --allow-cross-node" in err and "smaller weights (--weight-dtype fp8" in err


def test_a_decode_workers_rules_are_its_kv_transfers():
    """phase_framework: the decode worker holds vLLM's NIXL consumer rule (no decode PP); the prefill worker the
    profile's rules and its transfer's prefill rules, without the batch rule a pool's step adds."""
    from solver.plan.disagg_pools import FILLS_REPLICAS, decode_framework, phase_framework

    fw = load_framework("vllm")
    assert phase_framework(fw, "decode") is decode_framework(fw)
    extra = {r.id for r in phase_framework(fw, "decode").rules} - {r.id for r in fw.rules}
    assert "C.nixl_decode_no_pp" in extra
    pre = {r.id for r in phase_framework(fw, "prefill").rules}
    assert FILLS_REPLICAS.id not in pre and {r.id for r in fw.rules} <= pre


def test_afd_under_cp_decode_sends_each_ranks_own_tokens():
    """cann-recipes decodes a CP group as attention DP (its decode layout), so with cp_size 64 over a 64-rank half
    each attention rank still holds 256 / 64 = 4 sequences, 2 a micro-batch, and sends those: the AFD send is the
    cp_size 1 deployment's, not the whole group's 128 tokens (64 times the bytes)."""
    model, fw = load_model("longcat-flash"), load_framework("cann-recipes")
    hw = as_launched(load_hardware("atlas_a3"), fw, 128)
    prec = resolve_precision(model, hw, "int8")
    f = factors_for(hw, fw.efficiency_for(hw))
    wl = Workload.decode_of(256, 4608, 128)

    def sent(cp: int):
        d = afd_estimate(model, hw, ParallelConfig(world_size=128, **{**LC_KNOBS, "cp_size": cp}), prec, f, wl).decode
        return d.sides.to_ffn_s, next(c.bytes for c in d.comms if c.name == "afd_send")

    one, group = sent(1), sent(64)
    assert group == pytest.approx(one)
    # 2 micro-batches x 2 tokens x 2,064,384 B (copies_per_token, 8-bit) = 8,257,536 B a step
    assert one[1] == pytest.approx(2 * 2 * 2_064_384)


def test_afd_with_pipeline_stages_is_refused_naming_the_knob(tmp_path):
    """A bring-your-own profile may offer both AFD and PP (cann-recipes' with pp_size a knob): the AFD step has no
    pipeline stages, so pp_size 2 is refused, named by its flag, instead of an estimate that mixes the two."""
    src = (Path(solver.__file__).parent / "frameworks" / "cann-recipes.yaml").read_text()
    prof = yaml.safe_load(src)
    prof["name"] = "afd-and-pp"
    prof["knobs"] = [*prof["knobs"], "pp_size"]
    prof["features"]["pipeline_parallel"] = {"supported": True, "flag": "pp", "source": "test"}
    path = tmp_path / "afd-and-pp.yaml"
    path.write_text(yaml.safe_dump(prof))
    r = CliRunner().invoke(main, ["estimate", "longcat-flash", "--hardware", "atlas_a3", "--cards", "128", "--afd",
                                  "--framework", str(path), "--phase", "decode", "--batch", "256", "--seq-len",
                                  "4672", "--pp", "2"])
    assert r.exit_code == 2
    assert "--pp: the attention-FFN disaggregated step has no pipeline stages" in r.stderr


def test_an_afd_group_that_does_not_divide_a_half_is_named_as_the_half_whatever_the_profile_rules() -> None:
    """A profile with AFD but without cann-recipes' half-world rule: attn_tp 16 on 16 cards runs within one half of
    8 ranks, so the line names --attn-tp and the half's 8 (not 'the world size 8', which the user never typed)."""
    from solver.specs.afd import check_afd
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model

    fw = load_framework("cann-recipes")
    fw = fw.model_copy(update={"rules": [r for r in fw.rules if r.id != "C.afd_tp_divides_half_world"]})
    with pytest.raises(InputError) as err:
        check_afd(fw, load_model("qwen3-30b-a3b"), load_hardware("atlas_a3"), {"attn_tp_size": 16}, 16, "decode",
                  64, 0, lambda k: k)
    assert err.value.field == "parallel_config.attn_tp_size"
    assert "attn_tp_size 16 does not divide one half's 8 ranks" in str(err.value)


def test_one_afd_micro_batch_is_said_in_the_singular() -> None:
    """lc-afd's knobs at 64 sequences over 64 attention ranks: one sequence a rank, so one micro-batch."""
    r = CliRunner().invoke(main, ["estimate", "longcat-flash", "--hardware", "atlas_a3", "--cards", "128",
                                  "--framework", "cann-recipes", "--afd", "--dense-tp", "8", "--lmhead-tp", "16",
                                  "--oproj-tp", "8", "--phase", "decode", "--batch", "64", "--isl", "4608", "--osl",
                                  "128", "--weight-dtype", "int8"])
    assert r.exit_code == 0, r.output
    assert "1 micro-batch over" in r.output and "1 micro-batches" not in r.output
