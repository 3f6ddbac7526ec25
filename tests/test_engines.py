"""Engine profiles, launch commands and knob presence (issue 14): one test per rule."""
from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from solver.cli.main import main
from solver.launch.emit import LaunchInputs, emit_launch
from solver.rank.select import pattern_name
from solver.specs.framework import list_frameworks, load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig, model_knobs

ENGINES = [f for f in list_frameworks() if f != "generic"]


def _solve(*args: str):
    r = CliRunner().invoke(main, ["solve", *args, "--format", "json", "--top", "2"])
    return r, (json.loads(r.stdout) if r.exit_code == 0 else None)


def _deployment(tmp_path, pc: dict, model="deepseek-v3", hardware="h200_sxm", world=8, **extra) -> str:
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump({"model": model, "hardware": hardware, "world_size": world,
                                    "parallel_config": pc, "workload": {"isl": 4096, "osl": 256, "concurrency": 32},
                                    **extra}))
    return str(path)


def test_a_dense_model_has_no_moe_knob_and_a_gqa_model_no_o_proj_knob():
    assert "moe_tp_size" not in model_knobs(load_model("llama-3.1-70b"))
    assert "o_proj_tp_size" not in model_knobs(load_model("llama-3.1-70b"))
    assert "dense_tp_size" not in model_knobs(load_model("qwen3-235b-a22b"))  # no dense FFN, no shared experts
    assert {"moe_tp_size", "o_proj_tp_size", "dense_tp_size"} <= set(model_knobs(load_model("deepseek-v3")))


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_engines_run_llama_70b_as_tp8_on_8_h100(engine):
    r, data = _solve("llama-3.1-70b", "--hardware", "h100_sxm", "--cards", "8", "--framework", engine)
    assert r.exit_code == 0, r.stderr
    assert data["candidates"][0]["parallel_config"]["attn_tp_size"] == 8


@pytest.mark.parametrize("model", ["llama-3.1-70b", "qwen3-32b", "llama-3.1-8b"])
def test_a_latency_scenario_on_h200_is_tp8_for_dense_models_under_vllm(model):
    r, data = _solve(model, "--hardware", "h200_sxm", "--cards", "8", "--framework", "vllm", "--scenario", "latency")
    assert r.exit_code == 0, r.stderr
    assert data["candidates"][0]["parallel_config"]["attn_tp_size"] == 8


def test_a_dense_model_on_two_nodes_shows_no_moe_knob_and_no_cross_node_tp():
    r, data = _solve("llama-3.1-70b", "--hardware", "h100_sxm", "--cards", "16")
    assert r.exit_code == 0, r.stderr
    for c in data["candidates"]:
        assert not {"moe_tp_size", "moe_ep_size", "o_proj_tp_size"} & set(c["parallel_config"])
        assert c["estimation"]["cross_node_comm"] is False


def test_the_remedy_for_a_dense_model_speaks_of_its_own_modules():
    r = CliRunner().invoke(main, ["solve", "llama-3.1-405b", "--hardware", "h100_sxm", "--cards", "2"])
    assert r.exit_code == 1
    assert "MoE" not in r.stderr and "moe" not in r.stderr


def test_check_reports_a_knob_of_a_missing_module(tmp_path):
    dep = _deployment(tmp_path, {"attn_tp_size": 8, "dense_tp_size": 8, "moe_tp_size": 8, "embed_tp_size": 8,
                                 "lmhead_tp_size": 8}, model="llama-3.1-70b", hardware="h100_sxm")
    r = CliRunner().invoke(main, ["check", dep, "--format", "json"])
    assert r.exit_code == 1
    data = json.loads(r.stdout)
    assert any("moe_tp_size" in v and "no routed experts" in v for v in data["violations"]["A"])


def test_launch_refuses_moe_tp_2_with_ep_under_vllm_naming_the_knob(tmp_path):
    dep = _deployment(tmp_path, {"attn_tp_size": 8, "dense_tp_size": 8, "moe_tp_size": 2, "embed_tp_size": 8,
                                 "lmhead_tp_size": 8})
    r = CliRunner().invoke(main, ["launch", dep, "--engine", "vllm"])
    assert r.exit_code == 2
    assert "moe_tp_size 2" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_launch_refuses_an_unknown_engine(tmp_path):
    dep = _deployment(tmp_path, {"attn_tp_size": 8})
    r = CliRunner().invoke(main, ["launch", dep, "--engine", "nosuch"])
    assert r.exit_code == 2 and "--engine" in r.stderr and "known:" in r.stderr


def test_launch_refuses_a_knob_the_engine_lacks(tmp_path):
    # SGLang's prefill CP on a non-DSA model is not planned (vLLM's -pcp is: tests/test_vllm_prefill_cp.py)
    dep = _deployment(tmp_path, {"attn_tp_size": 1, "cp_size": 8, "embed_tp_size": 1, "lmhead_tp_size": 1})
    r = CliRunner().invoke(main, ["launch", dep, "--engine", "sglang"])
    assert r.exit_code == 2 and "cp_size" in r.stderr


def test_launch_refuses_a_dtype_the_engine_cannot_spell(tmp_path):
    dep = _deployment(tmp_path, {"attn_tp_size": 8, "dense_tp_size": 8, "moe_tp_size": 8, "embed_tp_size": 8,
                                 "lmhead_tp_size": 8, "o_proj_tp_size": 8}, quant={"kv_cache": "int8"})
    r = CliRunner().invoke(main, ["launch", dep, "--engine", "vllm"])
    assert r.exit_code == 2 and "int8" in r.stderr


def test_vllm_dp_across_nodes_has_per_node_ranks_and_headless_workers(tmp_path):
    dep = _deployment(tmp_path, {"attn_tp_size": 1, "moe_tp_size": 1, "embed_tp_size": 1, "lmhead_tp_size": 1},
                      world=16)
    r = CliRunner().invoke(main, ["launch", dep, "--engine", "vllm", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    nodes = json.loads(r.stdout)["nodes"]
    assert len(nodes) == 2
    head, worker = (n["argv"] for n in nodes)
    assert "--headless" not in head and "--headless" in worker
    assert worker[worker.index("--data-parallel-start-rank") + 1] == "8"
    assert head[head.index("--data-parallel-size") + 1] == "16" and "--enable-expert-parallel" in head


def test_trtllm_across_nodes_is_one_mpi_launch_with_its_options_file(tmp_path):
    dep = _deployment(tmp_path, {"attn_tp_size": 1, "moe_tp_size": 1, "embed_tp_size": 1, "lmhead_tp_size": 1},
                      world=16)
    r = CliRunner().invoke(main, ["launch", dep, "--engine", "trtllm", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    launch = json.loads(r.stdout)
    assert len(launch["nodes"]) == 1 and launch["nodes"][0]["argv"][0] == "mpirun"
    extra = yaml.safe_load(launch["files"]["extra_llm_api_options.yaml"])
    argv = launch["nodes"][0]["argv"]
    assert extra["enable_attention_dp"] is True and argv[argv.index("--ep_size") + 1] == "16"


def test_cann_recipes_launch_is_the_model_yaml_parallel_config_block(tmp_path):
    pc = {"attn_tp_size": 1, "dense_tp_size": 4, "moe_tp_size": 1, "embed_tp_size": 16, "lmhead_tp_size": 16,
          "o_proj_tp_size": 8}
    dep = _deployment(tmp_path, pc, model="deepseek-v3.2", hardware="atlas_a3", world=16)
    r = CliRunner().invoke(main, ["launch", dep, "--engine", "cann-recipes", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    block = yaml.safe_load(next(iter(json.loads(r.stdout)["files"].values())))
    assert block["world_size"] == 16 and block["parallel_config"] == pc


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_records_pipeline_parallel_and_redundant_experts_with_a_source(engine):
    fw = load_framework(engine)
    for feature in ("pipeline_parallel", "redundant_experts"):
        assert feature in fw.features and fw.features[feature].source
    assert fw.launch is not None


@pytest.mark.parametrize("engine", list_frameworks())
def test_every_profile_rule_cites_its_source(engine):
    fw = load_framework(engine)
    assert all(r.source for r in fw.rules)
    if engine not in ("generic", "cann-recipes"):
        assert all("engines.md" in r.source or "seed 003" in r.source for r in fw.rules), engine


def test_explain_under_atom_prices_the_generic_profiles_best():
    r = CliRunner().invoke(main, ["solve", "deepseek-v3.2", "--hardware", "mi300x", "--cards", "8", "--framework",
                                  "atom", "--scenario", "latency", "--isl", "65536", "--explain", "--format", "json",
                                  "--top", "1"])
    assert r.exit_code == 0, r.stderr
    lines = json.loads(r.stdout)["explain"]
    assert lines[0].startswith("score:") and lines[1].startswith("#1 ")  # the candidates' scores come first
    line = next(x for x in lines if x.startswith("generic profile's best"))
    assert "atom's profile rules it out" in line and "TTFT" in line


def _explain(*args: str) -> list[str]:
    r = CliRunner().invoke(main, ["solve", *args, "--explain", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)["explain"]


def test_explain_names_what_the_generic_profiles_best_changes_when_it_shares_the_engines_pattern_name():
    # vLLM's pick and the generic profile's are both "Pure TP8"; only the embedding split differs
    lines = _explain("llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "8", "--scenario", "latency",
                     "--framework", "vllm")
    line = next(x for x in lines if x.startswith("generic profile's best"))
    assert "Pure TP8" in line and "differs from vllm's pick in embed_tp_size 1 vs 8" in line


def test_explain_names_the_concurrency_when_the_generic_profiles_best_runs_at_another():
    lines = _explain("gpt-oss-120b", "--hardware", "b200_sxm", "--cards", "8", "--framework", "vllm")
    line = next(x for x in lines if x.startswith("generic profile's best"))
    assert "concurrency 64 vs 128" in line


def test_explain_prices_a_seed_pattern_with_the_vocabulary_degrees_the_engine_ties():
    # DP8 of a dense model is expressible in vLLM (--data-parallel-size 8) once the embedding follows attention
    # TP; explain said "violates C.embed_tp_is_tp" for the seed's DP8 with embed TP8. Now it prices it (and it
    # does not fit: 70B in BF16 per rank), at #1's concurrency, and a pattern also listed says so
    lines = _explain("llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "8", "--scenario", "latency",
                     "--framework", "vllm")
    dp = next(x for x in lines if x.startswith("DP8"))
    assert dp.startswith("DP8 (at #1's concurrency 4): does not fit") and "violates" not in dp
    atom = _explain("qwen3.5-122b-a10b", "--hardware", "mi355x", "--cards", "8", "--framework", "atom")
    assert not any("violates C.embed_tp_is_tp" in x for x in atom)
    trtllm = _explain("qwen3.5-122b-a10b", "--hardware", "b200_sxm", "--cards", "8", "--framework", "trtllm")
    listed = next(x for x in trtllm if x.startswith("Attn TP8 + MoE EP"))
    assert "(at #1's concurrency 128) [listed as #3 at its own concurrency]: score +" in listed


@pytest.mark.parametrize("name", ["l40s", "rtx_pro_6000_blackwell"])
def test_pcie_cards_without_nvlink_run_tp_over_pcie(name):
    hw = load_hardware(name)
    assert "scale_up" not in hw.tiers and hw.tiers["intra_node"].bandwidth_Bps <= 64e9
    assert all(hw.sources.get(k) for k in ("memory_bytes", "hbm_bandwidth_Bps", "peak_flops.bf16"))


def test_h20_has_more_bandwidth_than_compute_relative_to_h100():
    h20, h100 = load_hardware("h20"), load_hardware("h100_sxm")
    assert h20.hbm_bandwidth_Bps > h100.hbm_bandwidth_Bps and h20.flops("bf16") < h100.flops("bf16") / 5


def test_every_json_candidate_carries_its_launch():
    r, data = _solve("qwen3-30b-a3b", "--hardware", "h200_sxm", "--cards", "8", "--framework", "sglang")
    assert r.exit_code == 0, r.stderr
    for c in data["candidates"]:
        launch = c["launch"]
        assert launch["engine"] == "sglang" and "error" not in launch
        assert set(launch) == {"engine", "nodes", "files"} and launch["nodes"][0]["argv"][:3] == [
            "python3", "-m", "sglang.launch_server"]



def _facts_flags_table() -> str:
    """The "Flags" table of the facts' engines.md: the names each engine gives its parallelism knobs."""
    from conftest import FACTS

    body = (FACTS / "engines.md").read_text()
    start = body.index("## Flags")
    return body[start:body.index("\n## ", start + 1)]


@pytest.mark.parametrize("engine", list_frameworks())
def test_every_launch_flag_that_spells_a_parallel_knob_is_one_the_facts_give(engine):
    """A knob that reaches the engine as a command-line flag uses a flag engines.md's Flags table names: a
    spelling the facts do not give is unsourced (catalog sweep, stop 27: TensorRT-LLM's PP went out as
    --pp_size; the PP row gives the LLM API argument pipeline_parallel_size). Options-file keys are not held
    to this (the facts give some only in prose, as "moe_tp x moe_ep")."""
    from conftest import FACTS

    fw = load_framework(engine)
    if fw.launch is None or not (FACTS / "engines.md").is_file():
        pytest.skip("no launch spec, or no facts beside the checkout")
    table = _facts_flags_table()
    knobs = set(model_knobs(load_model("deepseek-v3"))) | {"pp_size"}
    for arg in fw.launch.args:
        if arg.knob in knobs and arg.flag:
            assert f"`{arg.flag}" in table, f"{engine}: {arg.knob} is spelled {arg.flag}, which engines.md does not name"


@pytest.mark.parametrize("engine", list_frameworks())
def test_a_launch_flag_with_its_own_source_is_one_the_facts_do_not_spell(engine):
    """A flag read from an engine's own code (LaunchArg.source: vLLM's --enable-eplb, which engines.md's redundant
    experts "with EPLB" need but it does not spell; LaunchDocument.source: vLLM's --eplb-config, where 0.33.0 takes
    the count engines.md spells --num-redundant-experts) says where; one the facts spell has its source there, not
    a second one beside it. The catalog sweep takes a sourced flag as the engine's, not a defect."""
    from conftest import FACTS

    fw = load_framework(engine)
    if fw.launch is None or not (FACTS / "engines.md").is_file():
        pytest.skip("no launch spec, or no facts beside the checkout")
    body = (FACTS / "engines.md").read_text()
    # an environment variable read from the engine's code (VLLM_ALLOW_LONG_MAX_MODEL_LEN) is named as a flag is
    for flag, source in [(a.flag or a.env, a.source) for a in fw.launch.args] + \
            [(d.flag, d.source) for d in fw.launch.documents.values()]:
        if source:
            assert flag and f"`{flag}" not in body and f" {flag}" not in body, (engine, flag)


def test_a_weight_format_without_a_flag_is_the_checkpoints_and_the_launch_says_so(tmp_path) -> None:
    """cann-recipes takes no weight-format flag: the W8A8 deployment is launched on a W8A8 checkpoint, and the
    command says so instead of refusing (the README's example printed '# error' for every candidate)."""
    pc = {"attn_tp_size": 1, "dense_tp_size": 1, "moe_tp_size": 1, "embed_tp_size": 1, "lmhead_tp_size": 16}
    dep = _deployment(tmp_path, pc, model="deepseek-v3.2", hardware="atlas_a3", world=16, quant={"weights": "int8"})
    r = CliRunner().invoke(main, ["launch", dep, "--engine", "cann-recipes"])
    assert r.exit_code == 0, r.stderr
    assert "# note: weight_dtype int8: cann-recipes takes no flag for it; serve a checkpoint stored in int8" in r.stdout
    doc = json.loads(CliRunner().invoke(main, ["launch", dep, "--engine", "cann-recipes", "--format", "json"]).stdout)
    assert any("int8" in n for n in doc["notes"])


def test_a_kv_format_without_a_flag_is_refused_unless_the_profile_says_where_it_is_set(tmp_path) -> None:
    """The KV-cache format is the engine's runtime choice: without a spelling the command could not ask for it
    (vLLM's --kv-cache-dtype spells int8 for its Triton backend only, which runs no MLA: refused on DeepSeek-V3.2). cann-recipes sets it with the model's
    quantization in the recipe's YAML (the verified W8A8C8 deployments), vllm-ascend from the C8 checkpoint's
    quant_model_description.json: a note says so (it refused, so the verified v32-p64-q could not be launched)."""
    pc = {"attn_tp_size": 1, "dense_tp_size": 1, "moe_tp_size": 1, "embed_tp_size": 1, "lmhead_tp_size": 16}
    dep = _deployment(tmp_path, pc, model="deepseek-v3.2", hardware="atlas_a3", world=16, quant={"kv_cache": "int8"})
    ep = {**pc, "lmhead_tp_size": 1}  # vLLM's LM head follows TP
    (tmp_path / "nv").mkdir()
    vllm_dep = _deployment(tmp_path / "nv", ep, model="deepseek-v3.2", hardware="h200_sxm", world=16, quant={"kv_cache": "int8"})
    r = CliRunner().invoke(main, ["launch", vllm_dep, "--engine", "vllm"])
    assert r.exit_code == 2 and "KV-cache dtype int8: vllm runs it on non-MLA attention" in r.stderr
    r = CliRunner().invoke(main, ["launch", dep, "--engine", "vllm-ascend"])
    assert r.exit_code == 0 and '"kv_cache_type": "C8"' in r.stdout, r.stderr
    r = CliRunner().invoke(main, ["launch", dep, "--engine", "cann-recipes"])
    assert r.exit_code == 0, r.stderr
    assert "# note: kv_dtype int8: cann-recipes takes no flag for it; cann-recipes-infer sets the KV-cache format" in r.stdout


def test_a_launch_the_memory_model_does_not_fit_says_so(tmp_path) -> None:
    """DeepSeek-V3 on 8 H100s does not fit: vLLM's command is printed (it is what was asked for) with the overflow
    as a note, as `estimate` words it; SGLang's has no --mem-fraction-static that holds it, so it is refused
    (tests/test_launch_memory_share.py); on 8 H200s it fits and nothing is said."""
    pc = {"attn_tp_size": 1, "dense_tp_size": 1, "moe_tp_size": 1, "embed_tp_size": 1, "lmhead_tp_size": 1}
    dep = _deployment(tmp_path, pc, framework="sglang")
    over = CliRunner().invoke(main, ["launch", dep, "--hardware", "h100_sxm", "--engine", "vllm"])
    assert over.exit_code == 0 and "# note: does not fit: " in over.stdout and "over the limit of 81.60 GB" in over.stdout
    fits = CliRunner().invoke(main, ["launch", dep])
    assert fits.exit_code == 0 and "does not fit" not in fits.stdout


@pytest.mark.parametrize("engine, device", [("trtllm", "atlas_a3"), ("atom", "h200_sxm"), ("cann-recipes", "h200_sxm"),
                                            ("vllm-ascend", "mi355x")])
def test_an_engine_runs_on_its_vendors_devices_only(engine, device) -> None:
    """A TensorRT-LLM command for an Ascend die is no command: solve refuses the pair, naming the vendors."""
    r = CliRunner().invoke(main, ["solve", "qwen3-30b-a3b", "--hardware", device, "--cards", "8", "--framework", engine])
    assert r.exit_code == 2 and f"--framework: {engine} runs on" in r.stderr and "devices;" in r.stderr


def test_every_engine_names_the_vendors_it_runs_on_and_generic_runs_anywhere() -> None:
    vendors = {load_hardware(h).vendor for h in ("h200_sxm", "mi355x", "atlas_a3")}
    for name in ENGINES:
        assert load_framework(name).vendors and set(load_framework(name).vendors) <= vendors, name
    assert load_framework("generic").vendors == []


def test_explain_does_not_price_a_seed_pattern_the_engine_cannot_express():
    # vllm-ascend plans PCP on GQA and MLA models, not on DSA ones (C.pcp_not_dsa: its DSA decode all-gathers each
    # request's cache, a form not costed): the seed's "Attn DP + CP32" for DeepSeek-V3.2 is refused by that rule,
    # not priced as if the engine ran it
    lines = _explain("deepseek-v3.2", "--hardware", "atlas_a3", "--cards", "32", "--framework", "vllm-ascend",
                     "--weight-dtype", "int8")
    cp = next(x for x in lines if x.startswith("Attn DP + CP32"))
    assert cp.startswith("Attn DP + CP32 + MoE EP: violates C.pcp_not_dsa")


def test_explain_says_why_candidate_1_stands_ahead_of_a_better_scoring_one():
    # Llama-3.1-8B on 2 H100, latency: #2 (Attn DP + CP2) scores 2% better than #1; the tie band and the distance
    # to a verified deployment put #1 first, and #1's line says so in one hop
    lines = _explain("llama-3.1-8b", "--hardware", "h100_sxm", "--cards", "2", "--scenario", "latency")
    first = next(x for x in lines if x.startswith("#1 "))
    assert "ahead of #2, which scores better, because the two are within the 3% tie band" in first
    # the distances: 2 (or 3) knobs + another model 2 + other hardware 1 = 5 (6)
    assert ("closer to a verified deployment: oss-20b (distance 5.00: 2 knobs differ (+2), GPT-OSS-20B (another "
            "model, +2), atlas_a2 (other hardware, +1)) vs oss-20b (distance 6.00: 3 knobs differ (+3)") in first
    assert not any("ahead of" in x for x in lines if x.startswith("#2 ") or x.startswith("#3 "))


def test_explain_says_when_what_the_engine_cannot_express_costs_nothing():
    # gpt-oss-120b on 8 B200 under vllm: the generic profile's best (attention DP + CP2, MoE TP8) is worse by
    # vllm's own factors than vllm's pick (attention DP + MoE EP); the line said only "would change ... +x%"
    lines = _explain("gpt-oss-120b", "--hardware", "b200_sxm", "--cards", "8", "--framework", "vllm")
    line = next(x for x in lines if x.startswith("generic profile's best"))
    assert "so what vllm cannot express costs nothing here: by its own factors its pick scores better (+" in line
    atom = _explain("qwen3.5-122b-a10b", "--hardware", "mi355x", "--cards", "8", "--framework", "atom")
    assert "costs nothing" not in next(x for x in atom if x.startswith("generic profile's best"))


def _launch_json(dep: str, *args: str):
    r = CliRunner().invoke(main, ["launch", dep, "--format", "json", *args])
    return r, (json.loads(r.stdout) if r.exit_code == 0 else None)


EP8 = {"attn_tp_size": 1, "dense_tp_size": 1, "moe_tp_size": 1, "embed_tp_size": 1, "lmhead_tp_size": 1}


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_routed_expert_format_alone_is_the_checkpoints(tmp_path, engine) -> None:
    """`--moe-weight-dtype nvfp4` alone: the launch said "weight dtype: weight_dtype is not set" (exit 2), as the
    quantization flag was switched on by the experts' format and filled with the (unset) weight format."""
    pc = {**EP8, "dense_tp_size": 8, "lmhead_tp_size": 8} if engine == "sglang" else {k: 8 for k in EP8} | {"moe_tp_size": 1}
    dep = _deployment(tmp_path, pc, model="deepseek-r1", hardware="b200_sxm", framework=engine,
                      quant={"moe_weights": "nvfp4"})
    r, launch = _launch_json(dep)
    assert r.exit_code == 0, r.stderr
    assert "--quantization" not in launch["nodes"][0]["argv"]
    assert any(n.startswith("moe_weight_dtype nvfp4:") and "serve a checkpoint stored in nvfp4" in n
               for n in launch["notes"])


@pytest.mark.parametrize("dtype, device", [("int8", "mi300x"), ("nvfp4", "b200_sxm")])
def test_a_weight_format_the_quantization_flag_does_not_take_is_the_checkpoints(tmp_path, dtype, device) -> None:
    """vLLM's --quantization is spelled for fp8 only: a W8A8 (or NVFP4) deployment was refused ("vllm has no
    spelling for it"), where the engine serves the checkpoint's own format. The command leaves the flag out and
    says so; a KV format without a spelling stays refused (test_launch_refuses_a_dtype_the_engine_cannot_spell)."""
    dep = _deployment(tmp_path, {k: 8 for k in EP8} | {"moe_tp_size": 1}, model="deepseek-r1", hardware=device,
                      framework="vllm", quant={"weights": dtype})
    r, launch = _launch_json(dep)
    assert r.exit_code == 0, r.stderr
    assert "--quantization" not in launch["nodes"][0]["argv"]
    assert f"weight_dtype {dtype}: vllm's --quantization takes fp8, not {dtype}; serve a checkpoint stored in " \
           f"{dtype} (the model path)" in launch["notes"]


def test_a_mixed_checkpoint_gets_no_single_quantization_flag(tmp_path) -> None:
    """FP8 weights with NVFP4 routed experts: `--quantization fp8` would name one method for the whole model and
    contradict the checkpoint's own (mixed) quantization config; both formats are the checkpoint's."""
    pc = {**EP8, "dense_tp_size": 8, "lmhead_tp_size": 8}
    dep = _deployment(tmp_path, pc, model="deepseek-r1", hardware="b200_sxm", framework="sglang",
                      quant={"weights": "fp8", "moe_weights": "nvfp4"})
    r, launch = _launch_json(dep)
    assert r.exit_code == 0, r.stderr
    assert "--quantization" not in launch["nodes"][0]["argv"]
    # (DeepSeek-R1's auto_map adds the trust-remote-code note: not this rule's)
    # (the FP8 of attention and dense is the checkpoint's own: nothing to say, test_checkpoint_formats.py)
    assert [n.split(":")[0] for n in launch["notes"] if "auto_map" not in n] == ["moe_weight_dtype nvfp4"]
    same = _deployment(tmp_path, {**EP8, "lmhead_tp_size": 8}, model="qwen3-30b-a3b", hardware="b200_sxm",
                       framework="sglang", quant={"weights": "fp8"})  # a 16-bit checkpoint quantized at load
    argv = _launch_json(same)[1]["nodes"][0]["argv"]
    assert argv[argv.index("--quantization") + 1] == "fp8"


@pytest.mark.parametrize("engine, flag", [("vllm", "--max-model-len"), ("sglang", "--context-length")])
def test_a_prefill_only_launch_has_room_for_its_one_output_token(tmp_path, engine, flag) -> None:
    """A prefill-only deployment of 32K prompts was launched with a maximum model length of 32,768: the engine
    refuses a 32K prompt that asks for the one token a prefill instance emits (prompt + max tokens > max length).
    The file's launch and solve's candidates both give prompt + 1."""
    dep = _deployment(tmp_path, EP8, framework=engine, world=8)
    data = yaml.safe_load(open(dep))
    data["workload"] = {"phase": "prefill", "batch": 8, "seq_len": 32768}
    open(dep, "w").write(yaml.safe_dump(data))
    r, launch = _launch_json(dep)
    assert r.exit_code == 0, r.stderr
    argv = launch["nodes"][0]["argv"]
    assert argv[argv.index(flag) + 1] == "32769"
    r, solved = _solve("deepseek-v3", "--hardware", "h200_sxm", "--cards", "8", "--framework", engine, "--phase",
                       "prefill", "--isl", "32768")
    assert r.exit_code == 0, r.stderr
    argv = solved["candidates"][0]["launch"]["nodes"][0]["argv"]
    assert argv[argv.index(flag) + 1] == "32769"
    r, served = _solve("deepseek-v3", "--hardware", "h200_sxm", "--cards", "8", "--framework", engine, "--isl", "4096",
                       "--osl", "256")
    argv = served["candidates"][0]["launch"]["nodes"][0]["argv"]
    assert argv[argv.index(flag) + 1] == "4352"  # serving: prompt + output, as before


def test_the_engines_memory_share_is_the_memory_models_limit() -> None:
    """Llama-3.1-70B on 2 H100, throughput, under vllm: the plan uses 77.5 GB of the 85.9 GB rank (the memory
    model's limit is min(0.95 x capacity, capacity - reserve) = 81.6 GB), above vLLM's default
    --gpu-memory-utilization of 0.9 (77.3 GB): the command must give the engine the share the plan fits in."""
    r, data = _solve("llama-3.1-70b", "--hardware", "h100_sxm", "--cards", "2", "--framework", "vllm", "--scenario",
                     "throughput")
    assert r.exit_code == 0, r.stderr
    cand = data["candidates"][0]
    argv = cand["launch"]["nodes"][0]["argv"]
    share = float(argv[argv.index("--gpu-memory-utilization") + 1])
    capacity = load_hardware("h100_sxm").memory_bytes / 1e9
    assert share == 0.95
    assert cand["estimation"]["memory_per_rank_gb"] <= cand["estimation"]["memory_limit_gb"] <= share * capacity + 0.01


@pytest.mark.parametrize("engine, device, share", [("vllm-ascend", "atlas_a3", "0.9453"), ("atom", "mi355x", "0.95"),
                                                   ("vllm", "l40s", "0.9222")])
def test_the_memory_share_is_the_limit_over_the_capacity_rounded_down(engine, device, share) -> None:
    """On Atlas A3 (64 GiB, 3.5 GiB runtime reserve) the limit is capacity - reserve = 60.5 / 64 = 0.9453125 of
    the rank: 0.9453 at four decimals, never rounded up past what the plan fits. vLLM (which runs on Ascend as
    vllm-ascend) on an L40S (46,068 MiB after ECC, the same reserve): 1 - 3,584 / 46,068 = 0.92220 -> 0.9222."""
    r, data = _solve("qwen3-30b-a3b", "--hardware", device, "--cards", "8", "--framework", engine)
    assert r.exit_code == 0, r.stderr
    argv = data["candidates"][0]["launch"]["nodes"][0]["argv"]
    assert argv[argv.index("--gpu-memory-utilization") + 1] == share


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_redundant_experts_need_expert_parallel(tmp_path, engine) -> None:
    """DeepSeek-V3 with MoE TP8 (no EP) and 8 redundant experts: vLLM got --enable-eplb with 8 redundant experts
    without --enable-expert-parallel (vLLM refuses EPLB without EP), SGLang --ep-num-redundant-experts with no
    --ep-size, TensorRT-LLM num_slots 264 with moe_expert_parallel_size 1. A copy is an expert placed on one more
    EP rank: refused, naming the knobs; with EP the same copies launch."""
    pc = {k: 8 for k in EP8} | {"redundant_experts": 8}
    r = CliRunner().invoke(main, ["launch", _deployment(tmp_path, pc, framework=engine)])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "moe_tp_size 8, redundant_experts 8: [C.redundant_experts_need_ep]" in r.stderr
    ep = {**EP8, "redundant_experts": 8}
    r, launch = _launch_json(_deployment(tmp_path, ep, framework=engine))
    assert r.exit_code == 0, r.stderr
    if engine == "vllm":
        assert {"--enable-expert-parallel", "--enable-eplb"} <= set(launch["nodes"][0]["argv"])


def test_sglang_dp_lm_head_needs_dp_attention(tmp_path) -> None:
    """DeepSeek-V3.2 on 8 H200 with attention CP8 (attention TP 1, no DP attention) and the LM head at attention
    TP: the launch printed --enable-dp-lm-head without attention DP, a flag whose group (the attention-TP group of
    DP attention) does not exist there. Refused, naming the knobs; under DP attention (--attn-dp-size) it launches."""
    pc = {"attn_tp_size": 1, "attn_sp_size": 8, "dense_tp_size": 8, "moe_tp_size": 1, "embed_tp_size": 8,
          "lmhead_tp_size": 1}
    r = CliRunner().invoke(main, ["launch", _deployment(tmp_path, pc, model="deepseek-v3.2", framework="sglang")])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "lmhead_tp_size 1, cp_size 1, attn_sp_size 8: [C.dp_lm_head_under_dp_attention]" in r.stderr
    dpa = {**pc, "attn_sp_size": 2, "embed_tp_size": 1}
    r, launch = _launch_json(_deployment(tmp_path, dpa, model="deepseek-v3.2", framework="sglang"))
    assert r.exit_code == 0, r.stderr
    assert {"--enable-dp-lm-head", "--attn-dp-size"} <= set(launch["nodes"][0]["argv"])


def test_sglang_dense_replicas_across_nodes_are_refused_under_pp(tmp_path) -> None:
    """C.dense_replicas_one_node read `world` (one pipeline stage): Llama-3.1-405B on 16 H100 as TP4 x DP2 x PP2
    passed and launched `--tp-size 4 --pp-size 2 --dp-size 2 --nnodes 2`, dense replicas across nodes the rule
    exists to refuse; solve recommended such configs (Qwen3-32B on 16 L40S, throughput: TP2 x DP4 x PP2 first)."""
    pc = {"attn_tp_size": 4, "dense_tp_size": 4, "embed_tp_size": 4, "lmhead_tp_size": 4, "pp_size": 2}
    dep = _deployment(tmp_path, pc, model="llama-3.1-405b", hardware="h100_sxm", world=16, framework="sglang")
    r = CliRunner().invoke(main, ["launch", dep])
    assert r.exit_code == 2 and "attn_tp_size 4, pp_size 2: [C.dense_replicas_one_node]" in r.stderr
    r, data = _solve("qwen3-32b", "--hardware", "l40s", "--cards", "16", "--framework", "sglang", "--scenario",
                     "throughput")
    assert r.exit_code == 0, r.stderr
    for c in data["candidates"]:
        argv = c["launch"]["nodes"][0]["argv"]
        assert "--dp-size" not in argv or "--nnodes" not in argv, argv


def _limits(engine: str, model: str, **knobs: int) -> list[str]:
    from solver.specs.rule_env import model_env

    return load_framework(engine).limits(model_env(knobs, load_model(model), 8, world=8))


def test_o_proj_at_attention_tp_is_the_engines_own_split() -> None:
    """o_proj follows attention TP in every engine; a file writing o_proj_tp_size equal to attn_tp_size asks for
    that same split, which an engine without its own o_proj knob expresses."""
    for engine in ("sglang", "trtllm", "atom"):
        assert _limits(engine, "deepseek-v3", attn_tp_size=8, o_proj_tp_size=8) == [], engine
        assert "o_proj_tp_size = 4 but" in _limits(engine, "deepseek-v3", attn_tp_size=8, o_proj_tp_size=4)[0]


def test_a_knob_the_engine_has_but_the_planner_does_not_model_says_so() -> None:
    """TRT-LLM has context parallel: a file setting cp_size is told the engine has it and shardplan does not
    model it, not that the engine lacks the knob; TRT-LLM's Helix is its decode context parallel (engines.md,
    decode CP row), so kvp_size is told the same; a knob no feature names (attention sequence parallel: '—' in
    TRT-LLM's column) keeps 'has no such knob'. (SGLang's prefill CP is planned: tests/test_sglang_prefill_cp.py)"""
    (trt,) = _limits("trtllm", "llama-3.1-70b", cp_size=2)
    assert "trtllm has it" in trt
    (helix,) = _limits("trtllm", "deepseek-v3", kvp_size=2)
    assert helix.startswith("kvp_size = 2: trtllm has it (context_parallel_size + cp_config.cp_type HELIX)")
    (sp,) = _limits("trtllm", "deepseek-v3.2", attn_sp_size=2)
    assert sp == "attn_sp_size = 2 but trtllm has no such knob (fixed at 1)"


def test_a_knob_the_engine_lacks_says_the_profiles_note_on_the_missing_feature() -> None:
    """ATOM has no attention sequence parallel for DeepSeek-V3.2 (the RFC, seed 000, asks for it): a file setting
    attn_sp_size is told so, with what the profile records instead (-pcp is DeepSeek-V4 only; which profiles set
    the knob), not only that the knob is fixed at 1; the note speaks of the attention kind, not of one model."""
    (atom,) = _limits("atom", "deepseek-v3.2", attn_sp_size=8)
    assert atom.startswith("attn_sp_size = 8 but atom has no such knob (fixed at 1): ")
    assert "-pcp runs on compressed sparse attention only" in atom and "sglang" in atom


def test_a_feature_names_a_knob_of_the_vocabulary() -> None:
    from pydantic import ValidationError

    from solver.specs.framework import FrameworkProfile

    data = load_framework("sglang").model_dump()
    data["features"]["prefill_context_parallel"]["knob"] = "context_size"
    with pytest.raises(ValidationError, match="features.prefill_context_parallel.knob: 'context_size' is not a knob"):
        FrameworkProfile.model_validate(data)


def test_a_stage_of_one_rank_is_a_single_rank_pattern():
    """One rank per stage splits and replicates nothing: its pattern is 'Single rank' (the verified oss-20b's
    name), not 'Attn DP' or 'MoE EP' of one rank."""
    from solver.rank.select import pattern_name
    from solver.specs.parallel import ParallelConfig

    assert pattern_name(ParallelConfig(world_size=1), load_model("gpt-oss-20b")) == "Single rank"
    assert pattern_name(ParallelConfig(world_size=16, pp_size=16), load_model("llama-3.1-405b")) == "Single rank x PP16"
    assert pattern_name(ParallelConfig(world_size=2), load_model("gpt-oss-20b")) == "Attn DP + MoE EP"


def test_a_pattern_name_counts_attention_dp_after_the_cp_kvp_and_sp_ranks():
    """Attention DP is the replicas left once TP and its add-ons take their ranks: vLLM / ATOM `-tp 2 -pcp 4` on 8
    ranks is one replica ("Attn TP2 + CP4", it was named "Attn TP2 x DP4 + CP4", world / attention TP), and TP2 x
    SP2 on 8 is two ("Attn TP2 x DP2 + SP2")."""
    from solver.rank.select import pattern_name
    from solver.specs.parallel import ParallelConfig

    v4 = load_model("deepseek-v4-pro")
    pcp = ParallelConfig(world_size=8, attn_tp_size=2, cp_size=4, dense_tp_size=2, moe_tp_size=1, embed_tp_size=2,
                         lmhead_tp_size=2)
    assert pattern_name(pcp, v4).startswith("Attn TP2 + CP4 + ")
    sp = ParallelConfig(world_size=8, attn_tp_size=2, attn_sp_size=2, moe_tp_size=1)
    assert pattern_name(sp, load_model("deepseek-v3.2")).startswith("Attn TP2 x DP2 + SP2 + ")
    assert pattern_name(ParallelConfig(world_size=8, attn_tp_size=2, moe_tp_size=1), v4).startswith("Attn TP2 x DP4 ")


def _tp8_extra(max_model_len: int) -> dict:
    """TRT-LLM's extra LLM-API document for Llama-3.3-70B, TP8 on 8 H100, 16 requests (the launch sizes the KV
    pool from the plan's memory, so the plan must fit: 16 x 33,280 tokens x 40,960 B per rank = 21.8 GB of KV
    beside 17.6 GB of weights)."""
    pc = ParallelConfig(world_size=8, attn_tp_size=8, dense_tp_size=8, moe_tp_size=1, embed_tp_size=8,
                        lmhead_tp_size=8)
    out = emit_launch(load_framework("trtllm"), load_model("llama-3.3-70b"), load_hardware("h100_sxm"), pc,
                      LaunchInputs(batch=16, max_model_len=max_model_len))
    assert "--max_num_tokens" in out["nodes"][0]["argv"]
    return yaml.safe_load(out["files"]["extra_llm_api_options.yaml"])


def test_trtllm_chunks_a_prompt_longer_than_max_num_tokens():
    """32K/512: max_seq_len 32,768 + 512 = 33,280 > max_num_tokens 8,192, so a prompt can exceed the step budget;
    the estimate prices it as ceil(32,768 / 8,192) = 4 chunks, which TRT-LLM runs only with chunked prefill on."""
    assert _tp8_extra(33280).get("enable_chunked_prefill") is True


def test_trtllm_leaves_chunked_prefill_alone_where_no_prompt_can_exceed_the_budget():
    """1K/1K: max_seq_len 1,024 + 1,024 = 2,048 <= 8,192: every prompt fits one step, nothing to chunk."""
    assert "enable_chunked_prefill" not in _tp8_extra(2048)


def test_trtllm_trusts_a_checkpoint_with_code_of_its_own():
    """Llama-3.3-Nemotron-Super-49B's config names an auto_map (DeciLM code): TRT-LLM's command says
    trust_remote_code: true in its LLM-API document, and no note is left asking the user to add a switch;
    Llama-3.3-70B has no auto_map: no key."""
    pc = ParallelConfig(world_size=8, attn_tp_size=8, dense_tp_size=8, moe_tp_size=1, embed_tp_size=8,
                        lmhead_tp_size=8)
    fw, hw = load_framework("trtllm"), load_hardware("h100_sxm")
    nemotron = load_model("nvidia/Llama-3_3-Nemotron-Super-49B-v1")
    assert nemotron.remote_code
    out = emit_launch(fw, nemotron, hw, pc, LaunchInputs(batch=8, max_model_len=2048))
    assert yaml.safe_load(out["files"]["extra_llm_api_options.yaml"])["trust_remote_code"] is True
    assert not any("auto_map" in n for n in out.get("notes", ()))
    assert "trust_remote_code" not in _tp8_extra(2048)


def _pc(**knobs: int) -> ParallelConfig:
    return ParallelConfig(world_size=8, embed_tp_size=8, lmhead_tp_size=8, **knobs)


def test_a_pattern_name_counts_shared_experts_as_the_dense_tp_module() -> None:
    """Qwen3-Next has shared experts and no dense layer: dense_tp_size runs the shared experts, so attention TP8 +
    MoE EP with shared experts TP8 and with them replicated were both named "Attn TP8 + MoE EP" (two rows alike in
    one solve table, 8 x B200, SGLang, ISL 262,000); the TP8 one is "+ Dense TP8" as on a model with dense layers."""
    model = load_model("qwen3-next-80b-a3b")
    split, replicated = _pc(attn_tp_size=8, dense_tp_size=8), _pc(attn_tp_size=8)
    assert pattern_name(split, model) == "Attn TP8 + Dense TP8 + MoE EP"
    assert pattern_name(replicated, model) == "Attn TP8 + MoE EP"


def test_a_model_whose_shared_experts_are_replicated_is_not_pure_tp() -> None:
    """Every module TP8 but the shared experts (dense_tp_size 1: replicated on each rank) is not "Pure TP8"."""
    model = load_model("qwen3-next-80b-a3b")
    assert pattern_name(_pc(attn_tp_size=8, moe_tp_size=8), model) == "Attn TP8 + MoE TP8"
    assert pattern_name(_pc(attn_tp_size=8, moe_tp_size=8, dense_tp_size=8), model) == "Pure TP8"


def test_a_configuration_the_engine_refuses_for_several_rules_names_every_rule() -> None:
    """The generic profile's best for DeepSeek-V3.2 on 8 x MI355X (balanced) is attention DP with CP4 and the LM
    head TP8. ATOM refuses it three ways: the LM head must follow TP 1 (C.lmhead_tp_is_tp), -pcp is DeepSeek-V4's
    only (C.pcp_csa_only), and -pcp needs attn_tp x cp = world (1 x 4 != 8: C.pcp_one_tp_group). The --explain
    line named the first alone, as if splitting the LM head were all ATOM lacked."""
    from solver.rank.explain import ruled_out
    from solver.specs.rule_env import device_facts, model_env

    model, hw, fw = load_model("deepseek-v3.2"), load_hardware("mi355x"), load_framework("atom")
    pc = ParallelConfig(world_size=8, lmhead_tp_size=8, cp_size=4)
    blocked = fw.check(model_env(pc.settings(), model, **device_facts(hw), world=8, batch=32), severity="error")
    text = ruled_out("atom", blocked)
    for rule in ("C.lmhead_tp_is_tp", "C.pcp_csa_only", "C.pcp_one_tp_group"):
        assert rule in text
    assert text.startswith("atom's profile rules it out ([C.lmhead_tp_is_tp] ATOM shards the LM head")
