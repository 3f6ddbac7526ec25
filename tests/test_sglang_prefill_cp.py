"""SGLang's prefill context parallel for non-DSA models (--attn-cp-size with --enable-prefill-cp, cp_size) as the
planner plans it: one test per rule.

Source: the sglang 0.5.23 wheel (PyPI; read, not installed): arg_groups/parallel_hook.py handle_context_parallelism
(tp % (attn_dp x attn_cp) == 0, --cp-strategy required, --dcp-size refused with it, Nemotron-H refused),
layers/cp/zigzag.py (each CP rank prefills 2 of 2P chunks, materialize_full_kv all-gathers the K/V and writes
the whole cache on every CP rank; extend batches only), layers/dp_attention.py dp_reduce_scatter_tensor (decode
holds the full DP slot on every CP rank), models/qwen3_moe.py against models/llama.py (heads over the
attention-TP group against the whole --tp-size). The profile says so as data (sglang.yaml: cp_size,
cp_replicates_kv_cache, cp_decode_repeats_batch, rules C.prefill_cp_*). Qwen3-30B-A3B's config.json: 48 layers,
hidden 2048, 32 query heads and 4 KV heads of head_dim 128, 128 experts (8 active).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from solver.cli.main import main
from solver.estimate.compute import Work, factors_for
from solver.estimate.memory import memory_per_rank
from solver.estimate.memory_options import MemoryOptions, engine_options
from solver.estimate.step import step_cost
from solver.specs.framework import FrameworkProfile, load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision
from deployment_files import deployment_file

H200 = load_hardware("h200_sxm")
Q3 = load_model("qwen3-30b-a3b")
SGLANG = load_framework("sglang")
# vLLM's PCP decode form on the same ranks: each request decoded by one owner CP rank
OWNERS = SGLANG.model_copy(update={"cp_decode_repeats_batch": False})
PREC = resolve_precision(Q3, H200)
S = 32768
# TP4 x CP2 (one attention replica: --tp-size 8 --attn-cp-size 2) against TP8
CP2 = {"attn_tp_size": 4, "cp_size": 2, "moe_tp_size": 1, "embed_tp_size": 8, "lmhead_tp_size": 8}
TP8 = {"attn_tp_size": 8, "moe_tp_size": 1, "embed_tp_size": 8, "lmhead_tp_size": 8}
PREFILL = Work("prefill", new_tokens=S, context=(S + 1) / 2, sequences=1, logits_tokens=1)
SEQS, CTX = 16, 8192
DECODE = Work("decode", new_tokens=SEQS, context=CTX, sequences=SEQS, logits_tokens=SEQS)


def _step(profile: FrameworkProfile, knobs: dict, w: Work):
    pc = make_parallel_config(8, **knobs)
    return step_cost(Q3, H200, pc, PREC, factors_for(H200, profile.efficiency_for(H200)), w)


def _flops(step, name: str) -> float:
    return sum(o.flops for o in step.ops if o.name == name)


def _comms(step, name: str) -> list:
    return [c for c in step.comms if c.name == name]


def _dep(tmp_path, model: str, pc: dict, phase: str = "prefill", hardware: str = "h200_sxm") -> str:
    return deployment_file(tmp_path, model=model, hardware=hardware, world_size=8, framework="sglang", phase=phase,
                           batch=1, seq_len=S, parallel_config=pc)


def _check(tmp_path, model: str, pc: dict, hardware: str = "h200_sxm") -> tuple[int, dict]:
    r = CliRunner().invoke(main, ["check", _dep(tmp_path, model, pc, hardware=hardware), "--format", "json"])
    return r.exit_code, json.loads(r.stdout)


def _violated(out: dict, rule: str) -> bool:
    return any(v.startswith(f"[{rule}]") for cls in out["violations"].values() for v in cls)


def test_sglang_prefill_cp_ranks_each_prefill_half_a_prompt_and_gather_its_kv() -> None:
    """TP4 x CP2 against TP8: the attention core does the same work per rank (8 heads over half the query
    tokens = 4 heads over all of them), the o_proj all-reduce carries S / 2 tokens over 4 ranks instead of S
    over 8, and the new K/V is all-gathered over the 2 CP ranks (TP8 gathers none)."""
    cp, tp = _step(SGLANG, CP2, PREFILL), _step(SGLANG, TP8, PREFILL)
    assert _flops(cp, "attention_core") == pytest.approx(_flops(tp, "attention_core"))
    (ar_cp,), (ar_tp,) = _comms(cp, "attn_tp_allreduce"), _comms(tp, "attn_tp_allreduce")
    assert (ar_cp.group, ar_tp.group) == (4, 8)
    assert ar_cp.bytes == pytest.approx(ar_tp.bytes / 2)  # per layer: S / 2 x 2048 x 2 B against S x 2048 x 2 B
    (gather,) = _comms(cp, "kv_allgather")
    assert (gather.primitive, gather.group) == ("all_gather", 2)
    assert not _comms(tp, "kv_allgather")


def test_sglang_prefill_cp_ranks_each_keep_the_whole_kv_cache() -> None:
    """Every CP rank writes the gathered K/V of the whole prompt: a CP rank holds what the same rank holds with
    the prompt unsplit (cp_replicates_kv_cache), twice what a CP that shards the tokens would."""
    assert SGLANG.cp_replicates_kv_cache
    pc = make_parallel_config(8, **CP2)
    whole = engine_options(MemoryOptions(), factors_for(H200, SGLANG.efficiency_for(H200)))
    sharded = engine_options(MemoryOptions(), factors_for(H200, SGLANG.model_copy(
        update={"cp_replicates_kv_cache": False, "cp_decode_repeats_batch": False}).efficiency_for(H200)))
    kv = memory_per_rank(Q3, H200, pc, PREC, 1, S, whole).kv_cache_bytes
    assert kv == pytest.approx(2 * memory_per_rank(Q3, H200, pc, PREC, 1, S, sharded).kv_cache_bytes)
    # 48 layers x 1 KV head per rank (4 over attention TP4) x 128 x (K, V) x 2 B per token
    assert kv == pytest.approx(S * 48 * 1 * 128 * 2 * 2)


def test_sglang_prefill_cp_ranks_each_decode_the_whole_batch() -> None:
    """Decode reaches every CP rank whole (cp_decode_repeats_batch): each runs the attention over all 16
    sequences, twice what an owner rank of vLLM's form runs, and gathers no K/V (each computed its own copy)."""
    rep, own = _step(SGLANG, CP2, DECODE), _step(OWNERS, CP2, DECODE)
    assert _flops(rep, "attention_core") == pytest.approx(2 * _flops(own, "attention_core"))
    assert not [c for c in rep.comms if c.name.startswith("cp_") and c.name.endswith("_allgather")]
    assert [c for c in own.comms if c.name.startswith("cp_") and c.name.endswith("_allgather")]


def test_sglang_prefill_cp_decode_moe_counts_each_token_once() -> None:
    """The MoE takes one CP rank's rows: the experts' FLOPs are the 16 sequences' whichever decode form."""
    assert _flops(_step(SGLANG, CP2, DECODE), "routed_experts") == pytest.approx(
        _flops(_step(OWNERS, CP2, DECODE), "routed_experts"))


def test_a_profile_repeating_the_decode_batch_over_cp_keeps_the_whole_cache() -> None:
    """Ranks that each decode the whole batch hold the whole cache: the flag without cp_replicates_kv_cache is
    refused, naming it."""
    with pytest.raises(ValidationError, match="cp_decode_repeats_batch"):
        FrameworkProfile.model_validate({**SGLANG.model_dump(), "cp_replicates_kv_cache": False})


def test_world_divisible_cp(tmp_path) -> None:
    """cp_size 3 on 8 ranks: class A, said once (the model check's line about cp_size stands for the rule's)."""
    code, out = _check(tmp_path, "qwen3-30b-a3b", {**CP2, "attn_tp_size": 1, "cp_size": 3, "embed_tp_size": 1})
    assert code == 1 and any("cp_size" in v for v in out["violations"]["A"])


def test_prefill_cp_group_fits(tmp_path) -> None:
    """attention TP8 x CP2 is 16 ranks of an 8-rank --tp-size."""
    code, out = _check(tmp_path, "qwen3-30b-a3b", {**CP2, "attn_tp_size": 8})
    assert code == 1 and _violated(out, "C.prefill_cp_group_fits")


def test_prefill_cp_not_dsa(tmp_path) -> None:
    pc = {**CP2, "dense_tp_size": 8, "o_proj_tp_size": 4}
    code, out = _check(tmp_path, "deepseek-v3.2", pc)
    assert code == 1 and _violated(out, "C.prefill_cp_not_dsa")


def test_prefill_cp_moe_only(tmp_path) -> None:
    """Llama's sglang file splits heads over the whole --tp-size: a dense model is not planned under CP."""
    code, out = _check(tmp_path, "llama-3.1-70b", {"attn_tp_size": 4, "cp_size": 2, "dense_tp_size": 4,
                                                    "embed_tp_size": 4, "lmhead_tp_size": 4})
    assert code == 1 and _violated(out, "C.prefill_cp_moe_only")


def test_prefill_cp_no_recurrent_mixer(tmp_path) -> None:
    """Nemotron-3-Nano (Mamba2 beside attention, MoE): refused, the message naming the mixer kind."""
    model = load_model("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    assert "Mamba2" in model.recurrent_mixers
    pc = {"attn_tp_size": 2, "cp_size": 4, "moe_tp_size": 8, "dense_tp_size": 8, "embed_tp_size": 8,
          "lmhead_tp_size": 8}
    code, out = _check(tmp_path, "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", pc)
    said = [v for v in out["violations"]["C"] if v.startswith("[C.prefill_cp_no_recurrent_mixer]")]
    assert code == 1 and said and "Mamba2" in said[0]
    assert not load_model("qwen3-30b-a3b").recurrent_mixers


def test_prefill_cp_without_dcp(tmp_path) -> None:
    pc = {"attn_tp_size": 2, "kvp_size": 2, "cp_size": 2, "moe_tp_size": 1, "dense_tp_size": 8,
          "embed_tp_size": 8, "lmhead_tp_size": 8}
    code, out = _check(tmp_path, "deepseek-v3", pc)
    assert code == 1 and _violated(out, "C.prefill_cp_without_dcp")


def test_prefill_cp_rocm_csa_only(tmp_path) -> None:
    """The wheel runs prefill CP on HIP for DeepSeek-V4 (compressed sparse attention) only: Qwen3-235B-A22B-FP8
    with CP2 is refused on an MI355X (ROCm), naming the rule, and runs on an H200 (CUDA)."""
    assert load_hardware("mi355x").platform == "rocm" and H200.platform == "cuda"
    pc = {"attn_tp_size": 4, "cp_size": 2, "moe_tp_size": 8, "embed_tp_size": 8, "lmhead_tp_size": 8}
    code, out = _check(tmp_path, "qwen3-235b-a22b-fp8", pc, hardware="mi355x")
    assert code == 1 and _violated(out, "C.prefill_cp_rocm_csa_only")
    code, out = _check(tmp_path, "qwen3-235b-a22b-fp8", pc)
    assert code == 0 and not _violated(out, "C.prefill_cp_rocm_csa_only"), out["violations"]


def test_a_device_stating_no_platform_says_the_platform_rules_were_not_applied(tmp_path) -> None:
    """The same MI355X without its `platform:` line (nor its capability, which names a platform) reads every
    on_<platform> flag false: the ROCm refusal above cannot fire, and check, launch and solve say so, naming the
    rule, instead of passing it silently."""
    text = (Path(__file__).parents[1] / "hardware" / "mi355x.yaml").read_text()
    assert "platform: rocm\n" in text
    device = tmp_path / "my_mi355x.yaml"
    kept = [ln for ln in text.replace("platform: rocm\n", "").splitlines(keepends=True)
            if not ln.lstrip().startswith("capability:")]
    device.write_text("".join(kept).replace("name: mi355x", "name: my_mi355x"))
    pc = {"attn_tp_size": 4, "cp_size": 2, "moe_tp_size": 8, "embed_tp_size": 8, "lmhead_tp_size": 8}
    code, out = _check(tmp_path, "qwen3-235b-a22b-fp8", pc, hardware=str(device))
    said = "my_mi355x states no platform"
    assert code == 0 and not _violated(out, "C.prefill_cp_rocm_csa_only")
    assert [n for n in out["notes"] if said in n and "C.prefill_cp_rocm_csa_only" in n]
    r = CliRunner().invoke(main, ["launch", _dep(tmp_path, "qwen3-235b-a22b-fp8", pc, hardware=str(device))])
    assert r.exit_code == 0 and said in r.stdout
    r = CliRunner().invoke(main, ["solve", "qwen3-30b-a3b", "--hardware", str(device), "--cards", "8",
                                  "--framework", "sglang", "--top", "1", "--format", "json"])
    assert r.exit_code == 0 and [n for n in json.loads(r.stdout)["input_notes"] if said in n]
    # a device that states its platform, or an engine without platform rules, has nothing to say
    code, out = _check(tmp_path, "qwen3-30b-a3b", CP2)
    assert not [n for n in out["notes"] if "states no platform" in n]


def test_a_valid_cp_configuration_checks_clean(tmp_path) -> None:
    code, out = _check(tmp_path, "qwen3-30b-a3b", CP2)
    assert code == 0, out["violations"]
    assert not any(out["violations"].values())


def _argv(tmp_path, pc: dict) -> list[str]:
    r = CliRunner().invoke(main, ["launch", _dep(tmp_path, "qwen3-30b-a3b", pc), "--format", "json"])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)["nodes"][0]["argv"]


def test_the_launch_spells_cp_inside_tp_size_with_zigzag(tmp_path) -> None:
    argv = _argv(tmp_path, CP2)
    assert argv[argv.index("--tp-size") + 1] == "8" and argv[argv.index("--attn-cp-size") + 1] == "2"
    assert "--enable-prefill-cp" in argv and argv[argv.index("--cp-strategy") + 1] == "zigzag"
    assert "--attn-dp-size" not in argv and "--dp-size" not in argv  # one attention group: 4 x 2 = 8
    assert argv.count("--enable-prefill-cp") == 1 and argv.count("--cp-strategy") == 1


def test_a_dsa_models_prefill_cp_is_attn_sp_with_interleave(tmp_path) -> None:
    """DeepSeek-V3.2 (DSA) on 8 H200, attention TP1 x SP8: sglang 0.5.23 has no --enable-nsa-prefill-context-parallel;
    a DSA model's prefill CP is --attn-cp-size 8 --enable-prefill-cp --cp-strategy interleave (DeepSeek-V3.2
    refuses zigzag: arg_groups/parallel_hook.py), each flag once."""
    pc = {"attn_tp_size": 1, "attn_sp_size": 8, "dense_tp_size": 1, "moe_tp_size": 1, "embed_tp_size": 8,
          "lmhead_tp_size": 8}
    r = CliRunner().invoke(main, ["launch", _dep(tmp_path, "deepseek-v3.2", pc), "--format", "json"])
    assert r.exit_code == 0, r.stderr
    argv = json.loads(r.stdout)["nodes"][0]["argv"]
    assert argv[argv.index("--attn-cp-size") + 1] == "8" and argv[argv.index("--cp-strategy") + 1] == "interleave"
    assert [argv.count(f) for f in ("--attn-cp-size", "--enable-prefill-cp", "--cp-strategy")] == [1, 1, 1]
    assert not [a for a in argv if "nsa" in a]


def test_the_launch_counts_dp_attention_beside_cp(tmp_path) -> None:
    """attention TP2 x CP2 on 8 ranks: --attn-dp-size 2 (tp = attn_tp x cp x attn_dp), no --dp-size replicas."""
    argv = _argv(tmp_path, {**CP2, "attn_tp_size": 2, "embed_tp_size": 1})
    assert argv[argv.index("--attn-dp-size") + 1] == "2" and "--dp-size" not in argv


def test_attn_dp_size_counts_the_cp_ranks_where_they_hold_one_replica(tmp_path) -> None:
    """SGLang's CP ranks decode one replica's batch, so its DP is world // (attn_tp x cp), the launch's --attn-dp-size:
    TP4 x CP2 on 8 ranks has none (was reported as attn_dp 2), TP2 x CP2 has 2. vLLM's PCP ranks each decode their
    own requests (separate replicas in decode): its attn_dp_size stays world // attn_tp."""
    assert "cp_size" in SGLANG.replica_knobs and "cp_size" not in load_framework("vllm").replica_knobs
    assert make_parallel_config(8, **CP2).attn_dp(SGLANG.replica_knobs) == 1
    assert make_parallel_config(8, **CP2).attn_dp(load_framework("vllm").replica_knobs) == 2
    two = {**CP2, "attn_tp_size": 2, "embed_tp_size": 1}
    assert make_parallel_config(8, **two).model_view(("attn_tp_size", "cp_size"), SGLANG.replica_knobs)[
        "attn_dp_size"] == 2
    argv = _argv(tmp_path, two)
    assert argv[argv.index("--attn-dp-size") + 1] == "2"


def test_the_planner_splits_a_long_prompt_over_cp_ranks() -> None:
    """A 32K prompt alone (prefill) on 8 H200: the planner's best layout splits it over CP ranks, and the
    launch carries the flags."""
    r = CliRunner().invoke(main, ["solve", "qwen3-30b-a3b", "--hardware", "h200_sxm", "--cards", "8",
                                  "--framework", "sglang", "--isl", str(S), "--phase", "prefill",
                                  "--scenario", "latency", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    best = json.loads(r.stdout)["candidates"][0]
    assert best["parallel_config"]["cp_size"] > 1


def test_the_recurrent_mixer_fact_reads_the_layer_kinds() -> None:
    """has_recurrent_mixer comes from the layer kinds (Block.scans_tokens), not a family name: a linear-attention
    hybrid (Qwen3-Next's GatedDeltaNet) has it, a softmax-attention MoE (Qwen3-30B-A3B) and an MLA model do not."""
    from solver.specs.rule_env import model_facts

    assert model_facts(load_model("Qwen/Qwen3-Next-80B-A3B-Instruct"))["has_recurrent_mixer"]
    assert load_model("Qwen/Qwen3-Next-80B-A3B-Instruct").recurrent_mixers == ("GatedDeltaNet",)
    assert not model_facts(Q3)["has_recurrent_mixer"]
    assert not model_facts(load_model("deepseek-v3"))["has_recurrent_mixer"]


def test_a_dsa_models_prefill_cp_stays_within_one_machine_on_gpus() -> None:
    """sglang 0.5.23 asserts --tp-size <= 8 for a DSA model's prefill CP on CUDA / ROCm (model_overrides/
    deepseek_v2.py): DeepSeek-V3.2 with attn_sp_size 2 over 16 H200 ranks in one stage is refused, over two
    stages of 8 (PP2) it runs; on Ascend (cann) the engine does not assert it."""
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.parallel import make_parallel_config
    from solver.specs.rule_env import device_facts, model_env

    fw, model = load_framework("sglang"), load_model("deepseek-v3.2")

    def broken(hw: str, pp: int) -> list[str]:
        pc = make_parallel_config(16, attn_tp_size=2, attn_sp_size=2, lmhead_tp_size=2, moe_tp_size=2, pp_size=pp)
        env = model_env(pc.settings(), model, **device_facts(load_hardware(hw)), world=16, batch=32)
        return [r.id for r in fw.violated(env)]

    assert "C.dsa_prefill_cp_one_machine" in broken("h200_sxm", 1)
    assert "C.dsa_prefill_cp_one_machine" not in broken("h200_sxm", 2)
    assert "C.dsa_prefill_cp_one_machine" not in broken("atlas_a3", 1)
