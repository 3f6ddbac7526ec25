"""`shardplan check`: violations by class, the seed's common errors, weight handling, bad input."""
from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from conftest import REPO
from solver.cli.main import main

BASE = {"model": "deepseek-r1", "hardware": "atlas_a3", "framework": "cann-recipes", "world_size": 16,
        "workload": {"phase": "decode", "batch": 64, "seq_len": 356}, "quant": {"weights": "int8"}}


def _run(tmp_path, data, *extra):
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(data))
    return CliRunner().invoke(main, ["check", str(path), "--format", "json", *extra])


def test_verified_config_is_valid(tmp_path):
    r = _run(tmp_path, {**BASE, "parallel_config": {"embed_tp_size": 16, "lmhead_tp_size": 16}})
    assert r.exit_code == 0, r.stdout + r.stderr
    data = json.loads(r.stdout)
    assert data["valid"] and data["estimation"]["memory_feasible"]


def test_heads_not_divisible_is_a_class_a_violation(tmp_path):
    r = _run(tmp_path, {**BASE, "world_size": 24, "parallel_config": {"attn_tp_size": 3}})
    assert r.exit_code == 1
    assert any("num_attention_heads" in v for v in json.loads(r.stdout)["violations"]["A"])


def test_knob_not_dividing_world_is_a_class_a_violation(tmp_path):
    r = _run(tmp_path, {**BASE, "parallel_config": {"dense_tp_size": 3}})
    assert r.exit_code == 1
    assert json.loads(r.stdout)["violations"]["A"]


def test_framework_rule_is_a_class_c_violation(tmp_path):
    # cann-recipes: cp_size > 1 requires cp_size == world_size
    r = _run(tmp_path, {**BASE, "parallel_config": {"cp_size": 2, "embed_tp_size": 16, "lmhead_tp_size": 16}})
    assert r.exit_code == 1
    assert any("C.cp_full_world" in v for v in json.loads(r.stdout)["violations"]["C"])


def test_tp_across_nodes_is_a_class_b_violation_on_a_node_bound_fabric(tmp_path):
    data = {**BASE, "model": "qwen3-32b", "hardware": "h200_sxm", "framework": "generic", "quant": {},
            "parallel_config": {"attn_tp_size": 16, "dense_tp_size": 16}}
    r = _run(tmp_path, data)
    out = json.loads(r.stdout)
    assert r.exit_code == 1 and any("cross-node" in v for v in out["violations"]["B"])
    assert any("crosses nodes" in e for e in out["common_errors"])


def test_attention_tp_on_mla_is_flagged_where_the_analysis_prefers_attention_dp(tmp_path):
    # decode of 128 sequences at 8K: attention DP (attn_tp 1) beats TP4 in both figures by the estimate
    data = {**BASE, "workload": {"phase": "decode", "batch": 128, "seq_len": 8192},
            "parallel_config": {"attn_tp_size": 4, "dense_tp_size": 4, "embed_tp_size": 16, "lmhead_tp_size": 16}}
    errors = json.loads(_run(tmp_path, data).stdout)["common_errors"]
    mla = [e for e in errors if e.startswith("attention TP on an MLA model")]
    assert len(mla) == 1 and "finds Attn DP" in mla[0] and "request latency -" in mla[0]
    assert "fits in memory" in mla[0]  # TP4's replicated latent KV does not fit; the analysis' choice does


def test_attention_tp_on_mla_is_only_a_note_where_the_analysis_confirms_it(tmp_path):
    # decode of 64 short sequences: no attention-DP configuration is more than 3% better than TP4
    r = _run(tmp_path, {**BASE, "parallel_config": {"attn_tp_size": 4, "dense_tp_size": 4, "embed_tp_size": 16,
                                                    "lmhead_tp_size": 16}})
    out = json.loads(r.stdout)
    assert not any("MLA" in e for e in out["common_errors"])
    assert any(n.startswith("attention TP on an MLA model: weighed") for n in out["notes"])


def _solve_then_check(tmp_path, model, hardware, cards, framework, scenario, *extra):
    """solve -> candidate 1 written as a deployment file -> check: (candidate, check's output)."""
    solve = ["solve", model, "--hardware", hardware, "--cards", str(cards), "--scenario", scenario,
             "--framework", framework, "--format", "json", *extra]
    best = json.loads(CliRunner().invoke(main, solve).stdout)["candidates"][0]
    data = {"model": model, "hardware": hardware, "framework": framework, "world_size": cards,
            "parallel_config": {k: v for k, v in best["parallel_config"].items()
                                if k not in ("attn_dp_size", "moe_ep_size")},
            "workload": {"isl": 4096, "osl": 256, "concurrency": best["estimation"]["concurrency"]}}
    if extra:
        data["quant"] = {"weights": extra[1]}
    r = _run(tmp_path, data)
    assert r.exit_code == 0, r.stdout + r.stderr
    return best, json.loads(r.stdout)


def test_seed_process_errors_never_fire_on_solves_own_recommendation(tmp_path):
    # the seed's process errors (default all-TP, small-scale MoE with TP only, attention TP on MLA) are about
    # choosing without the comparison; solve's candidate 1 is the comparison's answer. Each deployment below
    # recommends the pattern, and check weighs it (a note) instead of flagging it
    cases = [(("llama-3.3-70b", "h100_sxm", 8, "vllm", "latency"), "default all-TP"),
             (("qwen3-30b-a3b", "h100_sxm", 8, "generic", "latency"), "small-scale MoE with only TP considered"),
             (("deepseek-v3.2", "atlas_a3", 64, "cann-recipes", "latency", "--weight-dtype", "int8"),
              "attention TP on an MLA model")]
    for args, error in cases:
        best, out = _solve_then_check(tmp_path, *args)
        assert out["valid"] and out["common_errors"] == [], (args, out["common_errors"])
        assert any(n.startswith(f"{error}: weighed against the planner's analysis") for n in out["notes"]), args
        assert out["estimation"]["tpot_ms"] == best["estimation"]["tpot_ms"]


def test_default_all_tp_is_flagged_where_the_analysis_beats_it(tmp_path):
    # all-TP8 of a small MoE at 256 requests: attention DP + EP wins both figures; both process errors say so,
    # each naming the configuration the analysis prefers and by how much
    data = {"model": "qwen3-30b-a3b", "hardware": "h100_sxm", "world_size": 8,
            "parallel_config": {"attn_tp_size": 8, "moe_tp_size": 8, "embed_tp_size": 8, "lmhead_tp_size": 8},
            "workload": {"isl": 4096, "osl": 256, "concurrency": 256}}
    out = json.loads(_run(tmp_path, data).stdout)
    names = [e.split(":")[0] for e in out["common_errors"]]
    assert names == ["default all-TP", "small-scale MoE with only TP considered"]
    assert all("finds Attn DP + MoE EP" in e and "output tokens/s per rank +" in e for e in out["common_errors"])


def _vocab_errors(out: dict) -> list[str]:
    return [e for e in out["common_errors"] if e.startswith("embed/lm_head")]


def test_large_vocab_with_neither_table_split_where_memory_binds_is_flagged(tmp_path):
    # 8K tokens per sequence: past the 64 GiB of an A3 die
    workload = {"phase": "decode", "batch": 64, "seq_len": 8192}
    out = json.loads(_run(tmp_path, {**BASE, "workload": workload, "parallel_config": {}}).stdout)
    assert not out["estimation"]["memory_feasible"]
    assert any("V = 129,280" in e and "3.71 GB on every rank" in e for e in _vocab_errors(out))


def test_large_vocab_with_neither_table_split_and_memory_to_spare_is_not_flagged(tmp_path):
    data = {**BASE, "model": "qwen3-30b-a3b", "hardware": "h200_sxm", "framework": "generic", "world_size": 8,
            "quant": {}, "parallel_config": {}, "workload": {"phase": "decode", "batch": 8, "seq_len": 4096}}
    out = json.loads(_run(tmp_path, data).stdout)
    assert out["valid"] and not out["warnings"]["B"] and not _vocab_errors(out)


def test_solves_recommendation_with_one_vocabulary_table_split_is_not_flagged(tmp_path):
    # the README's first example: candidate 1 keeps the embedding replicated on purpose, lm_head at TP16
    solve = ["solve", "deepseek-v3.2", "--hardware", "atlas_a3", "--cards", "64", "--scenario", "throughput",
             "--framework", "cann-recipes", "--weight-dtype", "int8", "--isl", "4096", "--osl", "256", "--format",
             "json"]
    best = json.loads(CliRunner().invoke(main, solve).stdout)["candidates"][0]
    pc = best["parallel_config"]
    assert pc["embed_tp_size"] == 1 and pc["lmhead_tp_size"] == 16
    data = {"model": "deepseek-v3.2", "hardware": "atlas_a3", "framework": "cann-recipes", "world_size": 64,
            "parallel_config": {k: v for k, v in pc.items() if k not in ("attn_dp_size", "moe_ep_size")},
            "workload": {"isl": 4096, "osl": 256, "concurrency": best["estimation"]["concurrency"]},
            "quant": {"weights": "int8"}}
    out = json.loads(_run(tmp_path, data).stdout)
    assert out["valid"] and not _vocab_errors(out)


def test_memory_violation_compares_the_figure_without_the_reserve_to_the_limit(tmp_path):
    llama = {"model": "llama-3.1-70b", "hardware": "h200_sxm", "world_size": 8,
             "parallel_config": {k: 8 for k in ("attn_tp_size", "dense_tp_size", "embed_tp_size", "lmhead_tp_size")}}
    fits = json.loads(_run(tmp_path, {**llama, "workload": {"phase": "decode", "batch": 93, "seq_len": 32768}}).stdout)
    est = fits["estimation"]
    assert fits["valid"] and est["memory_per_rank_gb"] == 143.377 <= est["memory_limit_gb"] == 143.828
    over = json.loads(_run(tmp_path, {**llama, "workload": {"phase": "decode", "batch": 95, "seq_len": 32768}}).stdout)
    assert over["violations"]["B"] == ["memory per rank 146.06 GB (the runtime reserve aside) exceeds the limit "
                                       "143.83 GB = min(0.95 x 151.40, 151.40 - 3.76 runtime reserve) (seed 3.4: "
                                       "increase the parallelism (more cards, or a KV split: kvp_size / cp_size) "
                                       "or reduce the batch)"]


def test_small_scale_moe_pure_tp_gets_an_ep_comparison(tmp_path):
    tp = {k: 16 for k in ("attn_tp_size", "dense_tp_size", "moe_tp_size", "embed_tp_size", "lmhead_tp_size")}
    out = json.loads(_run(tmp_path, {**BASE, "parallel_config": tp}).stdout)
    assert "moe_ep" in out["comparisons"] and out["comparisons"]["moe_ep"]["tpot_ms"] > 0


def test_changed_config_with_offline_split_weights_gets_the_weight_note(tmp_path):
    data = {**BASE, "parallel_config": {"embed_tp_size": 16, "lmhead_tp_size": 16},
            "previous_parallel_config": {"embed_tp_size": 8, "lmhead_tp_size": 16},
            "enable_online_split_weight": False}
    out = json.loads(_run(tmp_path, data).stdout)
    assert any("weight conversion" in n for n in out["notes"])


def test_cp_in_a_decode_deployment_gets_the_prefill_only_note(tmp_path):
    data = {**BASE, "parallel_config": {"embed_tp_size": 16, "lmhead_tp_size": 16, "cp_size": 16}}
    out = json.loads(_run(tmp_path, data).stdout)
    assert out["valid"] and any("cp_size 16 splits prompts" in n for n in out["notes"])
    plain = json.loads(_run(tmp_path, {**BASE, "parallel_config": {"embed_tp_size": 16, "lmhead_tp_size": 16}}).stdout)
    assert out["estimation"]["tpot_ms"] == plain["estimation"]["tpot_ms"]


def test_seed_top_level_keys_are_read(tmp_path):
    data = {**BASE, "embed_tp_size": 16, "lmhead_tp_size": 16}
    out = json.loads(_run(tmp_path, data).stdout)
    assert out["parallel_config"]["embed_tp_size"] == 16


def test_unknown_key_is_bad_input(tmp_path):
    r = _run(tmp_path, {**BASE, "parallel_config": {"attn_tpsize": 2}})
    assert r.exit_code == 2 and r.stderr.startswith("error:") and "attn_tpsize" in r.stderr


def test_missing_workload_is_bad_input(tmp_path):
    data = {k: v for k, v in BASE.items() if k != "workload"}
    r = _run(tmp_path, data)
    assert r.exit_code == 2 and "workload" in r.stderr


def test_calibrate_style_flat_file_is_read_by_check(tmp_path):
    data = {"world_size": 16, "embed_tp_size": 16, "lmhead_tp_size": 16, "phase": "decode", "batch": 64,
            "seq_len": 356, "weight_dtype": "int8", "description": "flat spelling"}
    r = _run(tmp_path, data, "--model", "deepseek-r1", "--hardware", "atlas_a3", "--framework", "cann-recipes")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["valid"]


def test_check_style_file_is_read_by_calibrate(tmp_path):
    from pathlib import Path

    data = {"model": "qwen3-30b-a3b", "hardware": "h200_sxm", "world_size": 8,
            "parallel_config": {"attn_tp_size": 4}, "workload": {"phase": "decode", "batch": 128, "seq_len": 4096}}
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump(data))
    traces = Path(__file__).resolve().parents[1] / "docs" / "examples" / "trace-decode"
    r = CliRunner().invoke(main, ["calibrate", str(traces), "--config", str(path), "--format", "json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["estimate_comparison"]


def test_decode_attention_tp_wider_than_needed_is_a_class_b_warning(tmp_path):
    # seed Step 4 [B]: "in the Decode phase, attn_tp is not greater than the necessary value". The docs example
    # (R1 all-TP16, 64 sequences of 356 tokens): attention TP8 fits and decodes no slower
    data = yaml.safe_load((REPO / "docs" / "examples" / "r1-16-tp.yaml").read_text())
    out = json.loads(_run(tmp_path, data).stdout)
    b = [w for w in out["warnings"]["B"] if "more than this decode needs" in w]
    assert len(b) == 1 and b[0].startswith("attn_tp_size 16 is more than this decode needs (seed Step 4 [B]): "
                                           "attn_tp_size 8 fits")
    # where the wider TP is what decodes fastest (solve's decode pick at 16 sequences), no warning
    solve = ["solve", "deepseek-r1", "--hardware", "atlas_a3", "--cards", "16", "--scenario", "latency", "--framework",
             "cann-recipes", "--weight-dtype", "int8", "--phase", "decode", "--isl", "4096", "--osl", "512",
             "--format", "json"]
    best = json.loads(CliRunner().invoke(main, solve).stdout)["candidates"][0]
    assert best["parallel_config"]["attn_tp_size"] == 16
    data = {**BASE, "parallel_config": {k: v for k, v in best["parallel_config"].items()
                                        if k not in ("attn_dp_size", "moe_ep_size")},
            "workload": {"phase": "decode", "batch": best["estimation"]["concurrency"], "seq_len": 4352}}
    out = json.loads(_run(tmp_path, data).stdout)
    assert not any("more than this decode needs" in w for w in out["warnings"]["B"])


def test_each_class_a_problem_is_reported_once_in_the_files_own_keys(tmp_path):
    # the model check and the profile's class-A rule said the same thing twice (experts over EP, o_proj width),
    # and a knob not dividing the world came a third time under its command-line flag (--attn-tp)
    experts = _run(tmp_path, {"model": "mixtral-8x7b", "hardware": "h100_sxm", "world_size": 16,
                              "parallel_config": {"moe_tp_size": 1},
                              "workload": {"isl": 1024, "osl": 128, "concurrency": 16}})
    # with the fewest redundant copies that would make the slots divide (the generic profile places them)
    assert json.loads(experts.stdout)["violations"]["A"] == [
        "num_experts 8 % moe_ep_size 16 != 0 (8 redundant experts make 16 slots, 1 per rank)"]
    oproj = json.loads(_run(tmp_path, {**BASE, "world_size": 48, "parallel_config": {"o_proj_tp_size": 48,
                                                                                     "moe_tp_size": 3}}).stdout)
    assert [v for v in oproj["violations"]["A"] if "o_proj" in v] == ["N_h * v_head_dim 16384 % o_proj_tp_size 48 != 0"]
    world = json.loads(_run(tmp_path, {**BASE, "parallel_config": {"attn_tp_size": 3}}).stdout)["violations"]["A"]
    assert world == ["world_size 16 % attn_tp_size = 3 != 0", "num_attention_heads 128 % attn_tp_size 3 != 0"]


def test_a_decode_over_isl_and_osl_holds_what_a_sequence_reaches(tmp_path):
    """A decode named by its prompt and output lengths is costed at the mean context ISL + OSL/2 and holds
    ISL + OSL in memory, as a decode solve judges it: the round trip solve -> file -> check shows the same
    TPOT and the same memory."""
    solve = ["solve", "deepseek-v3.2", "--hardware", "atlas_a3", "--cards", "32", "--phase", "decode",
             "--isl", "4096", "--osl", "1024", "--weight-dtype", "int8", "--format", "json"]
    best = json.loads(CliRunner().invoke(main, solve).stdout)["candidates"][0]
    pc = {k: v for k, v in best["parallel_config"].items() if k not in ("attn_dp_size", "moe_ep_size")}
    batch = best["estimation"]["concurrency"]
    base = {"model": "deepseek-v3.2", "hardware": "atlas_a3", "world_size": 32, "parallel_config": pc,
            "quant": {"weights": "int8"}}
    r = _run(tmp_path, {**base, "workload": {"phase": "decode", "batch": batch, "isl": 4096, "osl": 1024}})
    assert r.exit_code == 0, r.stdout + r.stderr
    got = json.loads(r.stdout)["estimation"]
    assert got["tpot_ms"] == best["estimation"]["tpot_ms"]
    assert got["memory_per_rank_gb"] == best["estimation"]["memory_per_rank_gb"]
    # the same step named by its mean context alone holds only that context
    mean = _run(tmp_path, {**base, "workload": {"phase": "decode", "batch": batch, "seq_len": 4096 + 512}})
    short = json.loads(mean.stdout)["estimation"]
    assert short["tpot_ms"] == got["tpot_ms"] and short["memory_per_rank_gb"] < got["memory_per_rank_gb"]


def test_a_decode_over_isl_and_osl_takes_neither_seq_len_nor_concurrency(tmp_path):
    for extra in ({"seq_len": 4096}, {"concurrency": 8}):
        r = _run(tmp_path, {**BASE, "workload": {"phase": "decode", "batch": 64, "isl": 4096, "osl": 256, **extra}})
        assert r.exit_code == 2 and "a decode reads batch and isl + osl" in r.stderr, r.stderr
    r = _run(tmp_path, {**BASE, "workload": {"phase": "decode", "batch": 64, "isl": 4096}})
    assert r.exit_code == 2 and "needs batch, isl and osl" in r.stderr, r.stderr


def test_check_given_a_launch_command_names_the_file_it_reads(tmp_path):
    """`solve --format launch` prints engine command lines, not a deployment file: check refuses them in one line
    that points to `solve --format yaml`, whose file it reads (the bare YAML error named nothing to give instead)."""
    path = tmp_path / "launch.sh"
    path.write_text("# candidate 1: Pure TP4 (vllm, concurrency 16)\n"
                    "vllm serve ${MODEL_PATH} --tensor-parallel-size 4 --max-num-seqs 16\n\n"
                    "# candidate 2: Attn DP (vllm, concurrency 32)\n"
                    "vllm serve ${MODEL_PATH} --tensor-parallel-size 1 --data-parallel-size 4\n")
    r = CliRunner().invoke(main, ["check", str(path)])
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: not valid YAML")
    assert "`shardplan solve --format yaml`" in lines[0] and "--format launch" in lines[0]


def test_check_keeps_a_deployment_files_own_field_error(tmp_path):
    """A deployment file with a bad field is a deployment file: its error names the field, with no pointer to
    another format."""
    r = _run(tmp_path, {"model": "qwen3-32b", "hardware": "h100_sxm", "world_size": 4,
                        "parallel_config": {"attn_tp_size": "four"}})
    assert r.exit_code == 2 and "--format yaml" not in r.output


def _check(tmp_path, text: str):
    path = tmp_path / "dep.yaml"
    path.write_text(text)
    return CliRunner().invoke(main, ["check", str(path)])


DEP = "model: llama-3.1-70b\nhardware: h100_sxm\nworld_size: 8\n"


def test_an_engines_ep_size_in_a_parallel_config_is_answered_with_the_knob_that_sets_it(tmp_path) -> None:
    """`ep_size: 8` (SGLang's --ep-size, TRT-LLM's moe_expert_parallel_size) is not a knob: EP is derived from
    moe_tp_size. The error named pp_size as the close spelling (difflib), which is another parallelism."""
    r = _check(tmp_path, DEP + "parallel_config: {attn_tp_size: 8, ep_size: 8}\n")
    assert r.exit_code == 2
    assert "ep_size: EP is derived (moe_ep_size = world_size // moe_tp_size): set moe_tp_size" in r.stderr
    assert "did you mean pp_size" not in r.stderr
    # a misspelt knob still gets its close match
    assert "did you mean cp_size?" in _check(tmp_path, DEP + "parallel_config: {cpsize: 2}\n").stderr


def test_an_engines_tp_size_at_the_top_level_names_the_seed_knobs_to_set(tmp_path) -> None:
    """`tp_size: 8` beside world_size (the seed's keys may sit at the top level): one line naming the field and
    the knobs that stand for it, not the validator's "Extra inputs are not permitted"."""
    r = _check(tmp_path, DEP + "tp_size: 8\n")
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "dep.yaml: tp_size: not a parallel_config key; an engine's TP size is not one knob here: set " \
           "attn_tp_size" in r.stderr
