"""One rule set for solve, check and launch (issue 14 item 6): every candidate `solve` prints passes `check`
under the same profile, and its launch argv, parsed back by a parser written here from engines.md (not from the
profiles), gives the same knobs.

The default suite draws a few examples; `-m slow` runs a larger budget."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from solver.api import run_solve
from solver.errors import InfeasibleError
from solver.estimate.serving import Workload
from solver.launch import LaunchInputs, emit_launch
from solver.plan.points import SolverParams
from solver.rank.review import review
from solver.report.candidates import result_dict
from solver.specs.framework import list_frameworks, load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import list_models, load_model
from solver.specs.parallel import ParallelConfig, model_knobs
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario

HARDWARE = ["h100_sxm", "h200_sxm", "b200_sxm", "l40s", "atlas_a3", "mi300x"]
WORLDS = [8, 16, 4, 2, 1]


def _flags(argv: list[str]) -> dict[str, str | bool]:
    """--flag value / -f value / bare --switch, as an engine's argparse would read them."""
    out: dict[str, str | bool] = {}
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok.startswith("-") and not tok.lstrip("-").isdigit():
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            if nxt is None or (nxt.startswith("-") and not nxt.lstrip("-").isdigit()):
                out[tok] = True
                i += 1
            else:
                out[tok] = nxt
                i += 2
        else:
            i += 1
    return out


def _vllm(flags: dict, model) -> dict[str, int]:
    tp = int(flags.get("--tensor-parallel-size", 1))  # absent: the engine's default (the profile's `default: 1`)
    dp = int(flags.get("--data-parallel-size", 1))
    kvp = int(flags.get("--decode-context-parallel-size", 1))
    extra = json.loads(flags.get("--additional-config", "{}"))
    fine = extra.get("finegrained_tp_config", {})
    sp = tp if extra.get("enable_dsa_cp") else 1
    pp = int(flags.get("--pipeline-parallel-size", 1))
    pcp = int(flags.get("--prefill-context-parallel-size", 1))  # a DP engine is TP x PCP ranks
    world = tp * pcp * dp
    attn = tp // kvp // sp
    return {"world": world * pp, "pp_size": pp, "attn_tp_size": attn, "kvp_size": kvp, "attn_sp_size": sp,
            "cp_size": pcp,
            "dense_tp_size": fine.get("mlp_tensor_parallel_size", tp),
            "embed_tp_size": fine.get("embedding_tensor_parallel_size", tp),
            "lmhead_tp_size": fine.get("lmhead_tensor_parallel_size", tp),
            "o_proj_shards": fine.get("oproj_tensor_parallel_size", tp),
            "moe_tp_size": 1 if flags.get("--enable-expert-parallel") else world,
            # vLLM 0.33.0: the count is a key of --eplb-config; vllm-ascend: of --additional-config's eplb_config
            "redundant_experts": json.loads(flags.get("--eplb-config", "{}")).get(
                "num_redundant_experts", extra.get("eplb_config", {}).get("num_redundant_experts", 0))}


def sglang_dp(flags: dict, model) -> tuple[int, int]:
    """(replicas, attention-DP size) of an SGLang command. sglang 0.5.23 spells attention DP --attn-dp-size
    (alias --attention-data-parallel-size) and --dp-size (--data-parallel-size) counts whole-engine replicas; the
    deprecated `--dp-size N --enable-dp-attention` resolves to attn_dp_size N, dp_size 1
    (arg_groups/parallel_hook.py handle_deprecated_dp_attention), as does `--dp-size N` alone under a DeepSeek
    MLA / DSA prefill-CP layout (arg_groups/model_override_base.py context_parallel_attn_dp_size)."""
    dp = int(flags.get("--dp-size", flags.get("--data-parallel-size", 1)))
    attn_dp = int(flags.get("--attn-dp-size", flags.get("--attention-data-parallel-size", 1)))
    deprecated = flags.get("--enable-dp-attention") or (flags.get("--enable-prefill-cp") and model.has_mla)
    if attn_dp == 1 and deprecated:
        return 1, dp
    return dp, attn_dp


def _sglang(flags: dict, model) -> dict[str, int]:
    tp = int(flags.get("--tp-size", 1))  # absent: the engine's default (the profile's `default: 1`)
    replicas, dp = sglang_dp(flags, model)
    # --attn-cp-size with --enable-prefill-cp is the DSA prefill CP of a DSA model (attn_sp_size; the engine tells
    # by the architecture) or the prefill CP of another (cp_size): the same ranks carved out of --tp-size either way
    cp_ranks = int(flags.get("--attn-cp-size", 1))
    sp, cp = (cp_ranks, 1) if model.has_dsa else (1, cp_ranks)
    pp = int(flags.get("--pp-size", 1))
    kvp = int(flags.get("--dcp-size", 1))  # engines.md: --dcp-size stripes the KV over the TP group
    if not model.is_moe:  # no DP attention: --tp-size is attention TP, --dp-size replicas
        return {"world": tp * replicas * pp, "pp_size": pp, "attn_tp_size": tp // kvp, "attn_sp_size": 1,
                "kvp_size": kvp, "dense_tp_size": tp, "embed_tp_size": tp, "lmhead_tp_size": tp, "o_proj_shards": tp}
    attn = tp // (dp * sp * cp * kvp)
    dpa = dp > 1
    return {"world": tp * replicas * pp, "pp_size": pp, "attn_tp_size": attn, "attn_sp_size": sp, "cp_size": cp,
            "kvp_size": kvp,
            "dense_tp_size": 1 if flags.get("--moe-dense-tp-size") == "1" else tp,
            "embed_tp_size": 1 if dpa else tp,
            "lmhead_tp_size": attn if flags.get("--enable-dp-lm-head") else tp,
            "o_proj_shards": attn * kvp, "moe_tp_size": tp // int(flags.get("--ep-size", 1)),
            "redundant_experts": int(flags.get("--ep-num-redundant-experts", 0))}


def _trtllm(flags: dict, files: dict, model) -> dict[str, int]:
    world = int(flags["--tp_size"])
    extra = yaml.safe_load(files.get(flags.get("--extra_llm_api_options", ""), "{}")) or {}
    pp = int(extra.get("pipeline_parallel_size", 1))  # engines.md PP row: the LLM API argument
    attn = 1 if extra.get("enable_attention_dp") else world
    return {"world": world * pp, "pp_size": pp, "attn_tp_size": attn, "attn_sp_size": 1, "kvp_size": 1,
            "dense_tp_size": attn,
            "embed_tp_size": attn, "lmhead_tp_size": world if extra.get("enable_lm_head_tp_in_adp") else attn,
            # engines.md: moe_tp x moe_ep == TP, so MoE TP left out is TP over --ep_size (1: no EP)
            "o_proj_shards": attn, "moe_tp_size": int(extra.get("moe_tensor_parallel_size",
                                                                world // int(flags.get("--ep_size", 1)))),
            "redundant_experts": (int(extra.get("moe_config", {}).get("load_balancer", {}).get("num_slots", 0))
                                  - model.num_experts) if "moe_config" in extra else 0}


def _atom(flags: dict, model) -> dict[str, int]:
    tp, dp, pp = int(flags["-tp"]), int(flags.get("-dp", 1)), int(flags.get("-pp", 1))
    kvp = int(flags.get("-dcp", 1))  # engines.md: -dcp reuses the TP ranks (tp % dcp == 0)
    return {"world": tp * dp * pp, "pp_size": pp, "attn_tp_size": tp // kvp, "attn_sp_size": 1, "kvp_size": kvp,
            "dense_tp_size": tp,
            "embed_tp_size": tp, "lmhead_tp_size": tp, "o_proj_shards": tp,
            "moe_tp_size": 1 if flags.get("--enable-expert-parallel") else tp * dp}


def _seed_file(files: dict) -> dict[str, int]:
    data = yaml.safe_load(next(iter(files.values())))
    pc = data["parallel_config"]
    attn = pc.get("attn_tp_size", 1)
    op = pc.get("o_proj_tp_size", 1)
    out = {"world": data["world_size"], **pc, "o_proj_shards": op if op > 1 else attn}
    out.pop("o_proj_tp_size", None)
    out.setdefault("redundant_experts", data.get("num_redundant_experts", 0))
    return out


def parse_launch(launch: dict, model) -> dict[str, int]:
    """The knobs an engine would run, read from the emitted command (node 0) and files."""
    argv = launch["nodes"][0]["argv"]
    engine = launch["engine"]
    if engine in ("generic", "cann-recipes"):
        return _seed_file(launch["files"])
    if "mpirun" in argv:
        argv = argv[argv.index("trtllm-serve"):]
    flags = _flags(argv)
    if engine in ("vllm", "vllm-ascend"):
        return _vllm(flags, model)
    if engine == "sglang":
        return _sglang(flags, model)
    if engine == "trtllm":
        return _trtllm(flags, launch["files"], model)
    if engine == "atom":
        return _atom(flags, model)
    raise AssertionError(f"no parser for {engine}")


def _expected(pc: ParallelConfig, model, kvp_in_tp: bool) -> dict[str, int]:
    own = model_knobs(model)
    out = {"world": pc.world_size, "o_proj_shards": pc.oproj_split(kvp_in_tp)}
    if model.is_moe:
        out["redundant_experts"] = pc.redundant_experts
    for k in ("attn_tp_size", "dense_tp_size", "moe_tp_size", "embed_tp_size", "lmhead_tp_size", "cp_size",
              "kvp_size", "attn_sp_size", "pp_size"):
        if k in own:
            out[k] = getattr(pc, k)
    return out


def check_roundtrip(framework: str, model_name: str, hardware: str, world: int, kind: str) -> bool:
    """Checks every printed candidate; False when nothing fits (nothing printed, nothing to check)."""
    scenario = Scenario(kind=kind, isl=2048, osl=256)
    try:
        result, cands = run_solve(model_name, hardware, world, scenario, framework, top=3, explain_binding=False,
                                  params=SolverParams(time_limit_s=5.0))
    except InfeasibleError:
        return False
    model, hw, fw = load_model(model_name), load_hardware(hardware), load_framework(framework)
    prec = resolve_precision(model, hw)
    printed = result_dict(result, cands)["candidates"]
    for c, d in zip(cands, printed):
        knobs = {k: v for k, v in d["parallel_config"].items() if k not in ("attn_dp_size", "moe_ep_size")}
        pc = ParallelConfig(world_size=world, **knobs)  # the config as printed, absent knobs left out
        wl = Workload("serving", isl=scenario.isl, osl=scenario.osl, concurrency=c.planned.batch)
        r = review(model, hw, fw, pc, prec, wl, scenario.mtp)
        assert r.valid, (framework, model_name, hardware, world, knobs, r.violations)
        launch = emit_launch(fw, model, hw, pc, LaunchInputs(batch=c.planned.batch,
                                                            max_model_len=scenario.max_seq_len))
        got = parse_launch(launch, model)
        want = _expected(pc, model, fw.kvp_splits_attention_weights)
        assert {k: got.get(k, 0 if k == "redundant_experts" else 1) for k in want} == want, (framework, model_name, hardware, world, launch)
    return True


def runs_on(framework: str, hardware: str) -> bool:
    """The engine runs on the device's vendor (FrameworkProfile.vendors)."""
    return load_framework(framework).runs_on(load_hardware(hardware).vendor)


def serves(framework: str, model_name: str) -> bool:
    """The engine has a model for the model's type (FrameworkProfile.unserved_model_types: a pairing every command
    refuses, so it has nothing printed to round-trip)."""
    return load_model(model_name).model_type not in load_framework(framework).unserved_model_types


CASES = st.tuples(st.sampled_from(list_frameworks()), st.sampled_from([aliases[0] for _, aliases in list_models()]), st.sampled_from(HARDWARE),
                  st.sampled_from(WORLDS), st.sampled_from(["latency", "throughput"])
                  ).filter(lambda c: runs_on(c[0], c[2]) and serves(c[0], c[1]))


# examples where nothing fits check nothing: they are rejected, so the budget counts solved deployments
SLOW_OK = [HealthCheck.too_slow, HealthCheck.filter_too_much]


@settings(max_examples=5, deadline=None, derandomize=True, suppress_health_check=SLOW_OK)  # 200 in the slow pass
@given(CASES)
@pytest.mark.slow  # every engine x shape round trip (~10 s)
def test_every_printed_candidate_passes_check_and_launches_as_printed(case):
    solved = check_roundtrip(*case)
    event("solved" if solved else "infeasible: nothing printed")
    assume(solved)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=SLOW_OK)
@given(CASES)
def test_every_printed_candidate_passes_check_and_launches_as_printed_many(case):
    solved = check_roundtrip(*case)
    event("solved" if solved else "infeasible: nothing printed")
    assume(solved)


# each engine's own devices for the issue's examples (an engine runs on its vendors' devices only)
DEVICES = {"nvidia": ("h100_sxm", "h200_sxm"), "amd": ("mi300x", "mi300x"), "huawei": ("atlas_a3", "atlas_a3")}


@pytest.mark.parametrize("framework", list_frameworks())
def test_dense_and_moe_examples_round_trip_under_every_profile(framework):
    # the examples: a dense model that needs TP (Llama-70B on 8 H100) and a MoE model on one node
    dense_hw, moe_hw = DEVICES[(load_framework(framework).vendors or ["nvidia"])[0]]
    assert check_roundtrip(framework, "llama-3.1-70b", dense_hw, 8, "latency")
    assert check_roundtrip(framework, "qwen3-30b-a3b", moe_hw, 8, "throughput")


def _limits(launch: dict, model) -> tuple[int | None, int | None]:
    """(longest sequence, concurrent requests) the engine would admit, by its own arithmetic (engines.md, batch /
    tokens row): vLLM and ATOM count --max-num-seqs per DP engine, SGLang --max-running-requests per server (each
    --dp-size replica is one), TensorRT-LLM max_batch_size per rank under attention DP."""
    argv = launch["nodes"][0]["argv"]
    if "trtllm-serve" in argv:
        argv = argv[argv.index("trtllm-serve"):]
    flags = _flags(argv)
    if "--max-model-len" in flags:
        dp = int(flags.get("--data-parallel-size", flags.get("-dp", 1)))
        return int(flags["--max-model-len"]), int(flags["--max-num-seqs"]) * dp
    if "--context-length" in flags:  # SGLang: per server, and each --dp-size replica is a server
        return int(flags["--context-length"]), int(flags["--max-running-requests"]) * sglang_dp(flags, model)[0]
    if "--max_seq_len" in flags:
        extra = yaml.safe_load(launch["files"].get(flags.get("--extra_llm_api_options", ""), "{}")) or {}
        ranks = int(flags["--tp_size"]) if extra.get("enable_attention_dp") else 1
        return int(flags["--max_seq_len"]), int(flags["--max_batch_size"]) * ranks
    doc = yaml.safe_load(next(iter(launch["files"].values())))
    return None, doc.get("batch_size")


SEMANTIC_CASES = [  # (engine, model, hardware, world, scenario fields)
    ("vllm", "deepseek-v3", "h200_sxm", 16, {"kind": "throughput", "mtp": 1}),
    ("vllm", "llama-3.1-70b", "h100_sxm", 16, {"kind": "throughput", "phase": "decode"}),
    ("sglang", "qwen3-235b-a22b", "h200_sxm", 16, {"kind": "balanced", "phase": "prefill", "isl": 16384}),
    ("trtllm", "deepseek-v3", "h200_sxm", 16, {"kind": "throughput"}),
    ("atom", "qwen3-30b-a3b", "mi355x", 8, {"kind": "throughput"}),
    ("vllm-ascend", "deepseek-r1", "atlas_a3", 32, {"kind": "throughput", "phase": "decode"}),
    ("cann-recipes", "qwen3-235b-a22b", "atlas_a3", 16, {"kind": "balanced"}),
]


@pytest.mark.parametrize("framework, model_name, hardware, world, fields", SEMANTIC_CASES)
def test_every_printed_launch_holds_the_planned_load_and_round_trips_through_the_shell(
        framework, model_name, hardware, world, fields) -> None:
    """What an engineer pasting candidate 1's command would check: the engine admits the planned concurrency and
    the longest sequence (a prefill-only deployment's one output token included), no flag is given twice, every
    inline JSON and options file parses, and the shell text splits back into exactly the argv (bash -n too)."""
    import shlex
    import subprocess

    from solver.launch import render_shell

    scenario = Scenario(**{"isl": 2048, "osl": 256, **fields})
    result, cands = run_solve(model_name, hardware, world, scenario, framework, top=1, explain_binding=False,
                              params=SolverParams(time_limit_s=5.0))
    from solver.launch.candidates import candidate_launch

    launch = candidate_launch(load_framework(framework), load_model(model_name), load_hardware(hardware), cands[0],
                              scenario)
    assert "error" not in launch, launch
    longest, admitted = _limits(launch, load_model(model_name))
    need = scenario.isl + (1 if scenario.phase == "prefill" else scenario.osl)
    assert longest is None or longest >= need, (longest, need)
    assert admitted >= cands[0].planned.batch, (admitted, cands[0].planned.batch)
    for node in launch["nodes"]:
        named = [t for t in node["argv"] if t.startswith("--")]
        assert len(named) == len(set(named)), named
        for i, t in enumerate(node["argv"][:-1]):
            if node["argv"][i + 1].startswith("{"):
                json.loads(node["argv"][i + 1])
    for name, text in launch["files"].items():
        assert isinstance(yaml.safe_load(text) if name.endswith(".yaml") else json.loads(text), dict)
    shell = render_shell(launch)
    assert subprocess.run(["bash", "-n"], input=shell, text=True).returncode == 0
    body, inside = [], False
    for line in shell.splitlines():
        if line.startswith("cat > "):
            inside = True
        elif inside:
            inside = line != "SHARDPLAN_EOF"
        elif line and not line.startswith("#"):
            body.append(shlex.split(line))
    # a node's environment rides as the line's NAME=value prefix (launch.shell.render_shell)
    assert body == [[*(f"{k}={v}" for k, v in n["env"].items()), *n["argv"]] for n in launch["nodes"] if n["argv"]]



# engines.md's MTP / speculative and KV dtype rows, as each engine spells MTP depth 1 and an fp8 KV cache
MTP1 = {"vllm": ['--speculative-config {"method":"mtp","num_speculative_tokens":1}'],
        "vllm-ascend": ['--speculative-config {"method":"mtp","num_speculative_tokens":1}'],
        "sglang": ["--speculative-algorithm NEXTN", "--speculative-num-steps 1"],
        "trtllm": ["decoding_type: MTP", "num_nextn_predict_layers: 1"],
        "atom": ["--method mtp --num-speculative-tokens 1"]}
KV_FP8 = {"vllm": ["--kv-cache-dtype fp8"], "sglang": ["--kv-cache-dtype fp8_e4m3"], "trtllm": ["dtype: fp8"],
          "atom": ["--kv_cache_dtype fp8"]}
ENGINE_EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "docs" / "examples" / "engines").glob("*.yaml"))
@pytest.mark.parametrize("path", ENGINE_EXAMPLES, ids=[p.stem for p in ENGINE_EXAMPLES])
def test_each_engines_every_knob_example_is_valid_and_launches_the_knobs_it_was_given(path) -> None:
    """docs/engine-conformance.md's launch cases: one file per engine layout with the knobs > 1 the engine takes
    together (TP, DCP, DP, EP, PP, fine-grained TP, DSA CP, redundant experts, MTP): `check` accepts it, and its
    `launch`, parsed back by engines.md's spellings (parse_launch), gives the file's knobs and world."""
    from click.testing import CliRunner

    from solver.cli.main import main

    data = yaml.safe_load(path.read_text())
    model = load_model(data["model"])
    pc = ParallelConfig(world_size=data["world_size"], **data["parallel_config"])
    assert sum(getattr(pc, k) > 1 for k in model_knobs(model)) >= 3, path.name
    checked = CliRunner().invoke(main, ["check", str(path), "--format", "json"])
    assert checked.exit_code == 0 and json.loads(checked.stdout)["valid"], (path.name, checked.stdout[-2000:])
    launched = CliRunner().invoke(main, ["launch", str(path), "--format", "json"])
    assert launched.exit_code == 0, (path.name, launched.stderr)
    got = parse_launch(json.loads(launched.stdout), model)
    want = _expected(pc, model, load_framework(data["framework"]).kvp_splits_attention_weights)
    assert {k: got.get(k, 0 if k == "redundant_experts" else 1) for k in want} == want, path.name
    launch = json.loads(launched.stdout)
    text = " ".join(launch["nodes"][0]["argv"]) + " " + " ".join(launch["files"].values())
    engine = data["framework"]
    wanted = (MTP1[engine] if data.get("mtp") == 1 else []) + \
        (KV_FP8[engine] if data.get("quant", {}).get("kv_cache") == "fp8" else [])
    assert [w for w in wanted if w not in text] == [], (path.name, text)
