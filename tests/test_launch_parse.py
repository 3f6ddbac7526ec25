"""Every command `launch` prints parses under its engine's own command-line parser (solver/launch/engine_flags.yaml,
read from vLLM 0.34.0's and SGLang 0.5.23's parser objects, and for vllm-ascend 0.23.0.post1 the parser of vLLM
0.23.0, which it is released against, and the plugin's --additional-config reads, by
docs/engine_flags_from_wheels.py): each flag exists, a switch carries no value, a value has the flag's type and
is among its choices, and a JSON value's keys are fields of the engine's config class."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from solver.cli.main import main
from solver.launch import LaunchInputs, emit_launch
from solver.launch.engine_flags import argv_problems, engine_flags, env_problems
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig

ROOT = Path(__file__).resolve().parents[1]


def _pc(world: int, **sizes: int) -> ParallelConfig:
    return ParallelConfig(world_size=world, **sizes)


TP8 = dict(attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)
# attention DP over every rank, the experts EP over them (MoE)
DPEP = dict(attn_tp_size=1, moe_tp_size=1, embed_tp_size=1, lmhead_tp_size=1, dense_tp_size=1, o_proj_tp_size=1)

# (engine, model, hardware, parallel_config, inputs, role): the deployments whose commands are parsed
AGG = [
    ("dense TP", "llama-3.1-70b", "h100_sxm", _pc(8, **TP8), LaunchInputs(batch=32, max_model_len=4352)),
    ("dense TP x PP", "llama-3.1-70b", "h100_sxm", _pc(16, **TP8, pp_size=2), LaunchInputs(batch=32, max_model_len=4352)),
    ("dense replicas", "llama-3.1-70b", "h100_sxm",
     _pc(8, attn_tp_size=4, dense_tp_size=4, embed_tp_size=4, lmhead_tp_size=4), LaunchInputs(batch=32, max_model_len=4352)),
    ("attention DP + EP", "qwen3-30b-a3b", "h100_sxm", _pc(8, **DPEP), LaunchInputs(batch=64, max_model_len=4352)),
    ("MoE TP + EP, fp8 KV", "deepseek-v3", "h200_sxm", _pc(8, **TP8, moe_tp_size=1),
     LaunchInputs(batch=32, max_model_len=4352, kv_dtype="fp8")),
    ("MTP", "deepseek-v3", "h200_sxm", _pc(8, **TP8, moe_tp_size=1), LaunchInputs(batch=32, max_model_len=4352, mtp=2)),
    ("multi-node DP + EP", "deepseek-v3", "h200_sxm", _pc(16, **DPEP), LaunchInputs(batch=128, max_model_len=4352)),
    ("multi-node TP", "deepseek-v3", "h100_sxm", _pc(16, attn_tp_size=16, dense_tp_size=16, embed_tp_size=16,
                                                      lmhead_tp_size=16, moe_tp_size=1), LaunchInputs(batch=32, max_model_len=4352)),
    ("decode CP (DCP)", "deepseek-r1", "h200_sxm",
     _pc(8, attn_tp_size=1, kvp_size=8, moe_tp_size=1, embed_tp_size=8, lmhead_tp_size=8, dense_tp_size=8, o_proj_tp_size=1),
     LaunchInputs(batch=8, max_model_len=9216)),
    # past the config's 131,072 positions: the engines' override env var beside the length flag
    ("long context", "llama-3.1-8b", "h100_sxm", _pc(1), LaunchInputs(batch=1, max_model_len=262144)),
    # 4096 requests over 16 DP ranks: 256 a rank, past DeepEP's default dispatch cap (SGLang's env var raises it)
    ("DeepEP dispatch cap", "deepseek-v3", "h200_sxm", _pc(16, **DPEP), LaunchInputs(batch=4096, max_model_len=2048)),
    ("redundant experts", "deepseek-v3", "h200_sxm", _pc(16, **DPEP, redundant_experts=16),
     LaunchInputs(batch=128, max_model_len=4352)),
]
ENGINES = {"vllm": None, "sglang": None, "vllm-ascend": "atlas_a3"}


def _cases():
    for engine, device in ENGINES.items():
        for name, model, hw, pc, inputs in AGG:
            yield pytest.param(engine, model, device or hw, pc, inputs, None, id=f"{engine}-{name}")
        # a prefill pool with context parallel (each engine's own form of it: vLLM PCP over the ranks; SGLang's
        # --attn-cp-size and vllm-ascend's PCP beside TP-8 dense layers), and a decode pool, of a disaggregated
        # deployment
        yield pytest.param(engine, "deepseek-r1", device or "h200_sxm", PREFILL_CP[engine],
                           LaunchInputs(batch=8, max_model_len=9217), "prefill", id=f"{engine}-prefill pool CP")
        yield pytest.param(engine, "deepseek-v3", device or "h200_sxm", _pc(16, **DPEP),
                           LaunchInputs(batch=128, max_model_len=9216), "decode", id=f"{engine}-decode pool")
        if engine in DSA_CP:  # DSA attention context parallel (vLLM has none: engines.md)
            yield pytest.param(engine, "deepseek-v3.2", device or "h200_sxm", DSA_CP[engine],
                               LaunchInputs(batch=8, max_model_len=9216), None, id=f"{engine}-DSA attention CP")


PREFILL_CP = {
    "vllm": _pc(16, attn_tp_size=1, cp_size=16, moe_tp_size=1, embed_tp_size=1, lmhead_tp_size=1, dense_tp_size=1,
                o_proj_tp_size=1),
    "sglang": _pc(8, attn_tp_size=1, cp_size=8, moe_tp_size=1, embed_tp_size=8, lmhead_tp_size=8, dense_tp_size=8,
                  o_proj_tp_size=1),
}
PREFILL_CP["vllm-ascend"] = PREFILL_CP["sglang"]
# SGLang's --attn-cp-size over TP 8; vllm-ascend's enable_dsa_cp (--additional-config), o_proj following TP x SP
DSA_CP = {
    "sglang": _pc(8, attn_tp_size=1, attn_sp_size=8, moe_tp_size=1, embed_tp_size=8, lmhead_tp_size=8,
                  dense_tp_size=8, o_proj_tp_size=1),
    "vllm-ascend": _pc(8, attn_tp_size=1, attn_sp_size=8, moe_tp_size=1, embed_tp_size=8, lmhead_tp_size=8,
                       dense_tp_size=8, o_proj_tp_size=8),
}


def _emit(engine, model, hw, pc, inputs, role):
    pools = {"prefill": pc, "decode": pc} if role else None
    return emit_launch(load_framework(engine), load_model(model), load_hardware(hw), pc, inputs, role=role, pools=pools)


@pytest.mark.parametrize("engine, model, hw, pc, inputs, role", list(_cases()))
def test_every_printed_command_parses_under_the_engines_own_parser(engine, model, hw, pc, inputs, role) -> None:
    for node in _emit(engine, model, hw, pc, inputs, role)["nodes"]:
        assert argv_problems(engine, node["argv"]) == [], (node["node_rank"], node["argv"])
        assert env_problems(engine, node["env"]) == [], node["env"]


@pytest.mark.parametrize("engine, variable", [("vllm", "VLLM_ALLOW_LONG_MAX_MODEL_LEN"),
                                              ("vllm-ascend", "VLLM_ALLOW_LONG_MAX_MODEL_LEN"),
                                              ("sglang", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN")])
def test_a_length_past_the_configs_context_sets_the_engines_override(engine, variable) -> None:
    """Llama-3.1-8B at 262,144 tokens, past its config's 131,072: each engine refuses that --max-model-len /
    --context-length unless its override variable is set (vLLM 0.23.0 and 0.34.0 config/model.py
    _get_and_verify_max_len; SGLang 0.5.23 _derive_context_length), so the command sets it."""
    device = ENGINES[engine] or "h100_sxm"
    launch = _emit(engine, "llama-3.1-8b", device, _pc(1), LaunchInputs(batch=1, max_model_len=262144), None)
    assert launch["nodes"][0]["env"].get(variable) == "1"


def test_an_environment_variable_the_engine_does_not_read_is_refused() -> None:
    """VLLM_ALLOW_LONG_MAX_MODEL_LEN is vLLM's (envs.py); SGLang spells its override SGLANG_ALLOW_OVERWRITE_LONGER_
    CONTEXT_LEN; DYNAMIC_EPLB is vllm-ascend's own (vllm_ascend/envs.py), not vLLM's."""
    assert env_problems("vllm", {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}) == []
    assert env_problems("sglang", {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}) == \
        ["VLLM_ALLOW_LONG_MAX_MODEL_LEN: sglang 0.5.23 reads no such environment variable"]
    assert env_problems("vllm-ascend", {"DYNAMIC_EPLB": "true"}) == []
    assert env_problems("vllm", {"DYNAMIC_EPLB": "true"}) != []


def test_solve_format_launch_prints_commands_that_parse() -> None:
    """`solve --format launch` (the planner's pick, with a prefix hit and MTP): every `vllm serve` line of the
    printed script parses under vLLM's parser."""
    r = CliRunner().invoke(main, ["solve", "qwen3-30b-a3b", "--hardware", "h100_sxm", "--cards", "8",
                                  "--framework", "vllm", "--concurrency", "32", "--prefix-hit", "0.5",
                                  "--format", "launch"])
    assert r.exit_code == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if "vllm serve" in ln]
    assert lines
    for line in lines:
        argv = shlex.split(line[line.index("vllm serve"):].replace("\\", ""))
        assert argv_problems("vllm", argv) == [], line


# the checker's rules, each on a hand-written argv (the flags as vLLM 0.34.0's / SGLang 0.5.23's parsers define them)

def test_a_flag_the_engine_lacks_is_refused() -> None:
    assert argv_problems("vllm", ["vllm", "serve", "m", "--num-redundant-experts", "16"]) == \
        ["--num-redundant-experts: vllm 0.34.0 has no such flag"]


def test_a_switch_given_a_value_is_refused() -> None:
    """--enable-expert-parallel is a BooleanOptionalAction: `--enable-expert-parallel true` leaves `true` a stray
    positional; --disable-expert-parallel is its negation, a flag of its own."""
    assert argv_problems("vllm", ["vllm", "serve", "m", "--enable-expert-parallel", "true"]) == \
        ["--enable-expert-parallel: a switch, given a value (true)"]
    assert argv_problems("vllm", ["vllm", "serve", "m", "--disable-expert-parallel"]) == []


def test_a_switch_given_an_empty_inline_value_is_refused_as_that_value() -> None:
    """`--enable-expert-parallel=` gives the switch the empty value: the line names it, not the next token (and
    the check does not fail when the switch is the last token)."""
    assert argv_problems("vllm", ["vllm", "serve", "m", "--enable-expert-parallel="]) == \
        ["--enable-expert-parallel: a switch, given a value ()"]
    assert argv_problems("vllm", ["vllm", "serve", "m", "--enable-expert-parallel=", "-tp", "8"]) == \
        ["--enable-expert-parallel: a switch, given a value ()"]


def test_a_value_of_the_wrong_type_is_refused() -> None:
    assert argv_problems("sglang", ["python3", "-m", "sglang.launch_server", "--tp-size", "8.5"]) == \
        ["--tp-size: 8.5 is not of type int"]
    assert argv_problems("sglang", ["python3", "-m", "sglang.launch_server", "--mem-fraction-static", "0.9"]) == []


def test_a_value_outside_the_choices_is_refused() -> None:
    """SGLang's --kv-cache-dtype takes fp8_e4m3, not vLLM's `fp8`; vLLM's takes `fp8` among its config's values."""
    assert argv_problems("sglang", ["python3", "-m", "sglang.launch_server", "--kv-cache-dtype", "fp8"])[0].startswith(
        "--kv-cache-dtype: fp8 is not one of")
    assert argv_problems("vllm", ["vllm", "serve", "m", "--kv-cache-dtype", "fp8"]) == []
    assert argv_problems("vllm", ["vllm", "serve", "m", "--kv-cache-dtype", "fp8_e4m3fn"])[0].startswith(
        "--kv-cache-dtype: fp8_e4m3fn is none of the values vllm's config knows")


def test_a_flag_given_twice_is_refused() -> None:
    """-tp and --tensor-parallel-size are one destination: the parser keeps the last."""
    assert argv_problems("vllm", ["vllm", "serve", "m", "--tensor-parallel-size", "8", "-tp", "4"]) == \
        ["-tp: given twice (the parser keeps the last)"]


def test_a_json_value_names_only_fields_of_the_engines_config() -> None:
    """--speculative-config parses into SpeculativeConfig (method, num_speculative_tokens are fields; `depth` is
    not); vllm-ascend's --additional-config reads eplb_config.num_redundant_experts, not eplb_config.redundant."""
    ok = '{"method":"mtp","num_speculative_tokens":2}'
    assert argv_problems("vllm", ["vllm", "serve", "m", "--speculative-config", ok]) == []
    assert argv_problems("vllm", ["vllm", "serve", "m", "--speculative-config", '{"depth":2}']) == \
        ["--speculative-config: key depth is not a field the engine reads"]
    assert argv_problems("vllm", ["vllm", "serve", "m", "--speculative-config", "{depth:2}"]) == \
        ["--speculative-config: {depth:2} is not of type json"]
    assert argv_problems("vllm-ascend", ["vllm", "serve", "m", "--additional-config",
                                         '{"eplb_config":{"redundant":16}}']) == \
        ["--additional-config: key eplb_config.redundant is not a field the engine reads"]


def test_the_flag_data_names_the_engine_versions_it_was_read_from() -> None:
    """vllm-ascend 0.23.0.post1 is released against vLLM 0.23.0 (its versioning_policy.md): its flags are that
    vLLM's, not 0.34.0's."""
    data = engine_flags()
    assert (data["vllm"]["version"], data["sglang"]["version"], data["vllm-ascend"]["version"],
            data["vllm-ascend"]["vllm"]) == ("0.34.0", "0.5.23", "0.23.0.post1", "0.23.0")


def _named_in_engines_md() -> set[str]:
    """Every flag or key the facts' engines.md spells (its backticked names, dashes and YAML braces stripped)."""
    text = (ROOT.parent / "shared" / "facts" / "engines.md").read_text() if (ROOT.parent / "shared").exists() else ""
    text = text or Path("/work/shared/facts/engines.md").read_text()
    names = set()
    for quoted in re.findall(r"`([^`]+)`", text):
        for part in re.split(r"[\s/,]+", quoted):
            names.add(part.strip("-{}:'\"").strip())
    return names - {""}


@pytest.mark.parametrize("engine", ["trtllm", "atom"])
def test_a_flag_or_key_the_facts_do_not_name_is_marked_unverified(engine) -> None:
    """TRT-LLM's and ATOM's parsers are not read here (TRT-LLM's PyPI sdist is a stub): every flag and extra-YAML
    key their commands carry is one engines.md names (the whole dotted key, or its last part: `num_slots` for
    moe_config.load_balancer.num_slots), or the argument names the source it was read from (`source`: mpirun's
    -n / -H), or it says it is unverified (`unsourced`, printed as a note)."""
    named = _named_in_engines_md()
    spec = load_framework(engine).launch
    args = spec.args + (spec.disagg.args if spec.disagg is not None else [])
    unnamed = []
    for a in args:
        name = a.key or (a.flag or "").lstrip("-")
        if not name or a.unsourced is not None or a.source:
            continue
        if name not in named and name.rsplit(".", 1)[-1] not in named:
            unnamed.append(a.key or a.flag)
    assert unnamed == []
