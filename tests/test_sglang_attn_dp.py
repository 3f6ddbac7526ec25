"""SGLang's attention DP as sglang 0.5.23 spells it (PyPI wheel, read, not installed): `--attn-dp-size N`
(arg_groups/fields/parallel.py attn_dp_size), `--enable-dp-attention` deprecated (server_args.py, removed after
2026-12-31; arg_groups/parallel_hook.py handle_deprecated_dp_attention resolves `--dp-size N
--enable-dp-attention` to attn_dp_size N, dp_size 1), `--dp-size` whole-engine replicas. One test per rule."""
from __future__ import annotations

import json

import yaml
from click.testing import CliRunner
from test_engine_roundtrip import _flags, parse_launch, sglang_dp

from solver.cli.main import main
from solver.estimate.factors import factors_for
from solver.estimate.closed_loop import synced_ranks
from solver.estimate.workload import Workload, token_budget
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig

# DeepSeek-V3.2 with attention TP1 over all ranks (DP attention), experts EP, dense / embedding / LM head as DP
# attention runs them (dense 1, embedding replicated, LM head over the attention-TP group of 1)
DPA = {"attn_tp_size": 1, "dense_tp_size": 1, "moe_tp_size": 1, "embed_tp_size": 1, "lmhead_tp_size": 1}
TP4 = {"attn_tp_size": 4, "dense_tp_size": 4, "embed_tp_size": 4, "lmhead_tp_size": 4}


def _launch(tmp_path, pc: dict, model: str, hardware: str, world: int) -> dict:
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump({"model": model, "hardware": hardware, "world_size": world, "framework": "sglang",
                                    "parallel_config": pc,
                                    "workload": {"isl": 4096, "osl": 256, "concurrency": 32}}))
    r = CliRunner().invoke(main, ["launch", str(path), "--format", "json"])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def _value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_a_moe_models_attention_dp_is_attn_dp_size_inside_the_tp_group(tmp_path) -> None:
    """DeepSeek-V3.2 on 16 H200, attention DP16 + EP16: one server over the world, `--tp-size 16 --attn-dp-size
    16` (attention TP = 16 // 16 = 1) on every node, and neither the deprecated --enable-dp-attention nor --dp-size
    (which would now ask for 16 replicas of a 16-rank engine)."""
    launch = _launch(tmp_path, DPA, "deepseek-v3.2", "h200_sxm", 16)
    assert len(launch["nodes"]) == 2
    for node in launch["nodes"]:
        argv = node["argv"]
        assert (_value(argv, "--tp-size"), _value(argv, "--attn-dp-size"), _value(argv, "--ep-size")) == \
            ("16", "16", "16")
        assert "--enable-dp-attention" not in argv and "--dp-size" not in argv


def test_a_moe_model_without_attention_dp_prints_no_dp_flag(tmp_path) -> None:
    """DeepSeek-V3.2 on 8 H200 at attention TP8: the attention group is the world (8 // 8 = 1 group), so no
    --attn-dp-size (its default is 1) and no --dp-size."""
    tp8 = {"attn_tp_size": 8, "dense_tp_size": 8, "moe_tp_size": 1, "embed_tp_size": 8, "lmhead_tp_size": 8}
    argv = _launch(tmp_path, tp8, "deepseek-v3.2", "h200_sxm", 8)["nodes"][0]["argv"]
    assert not {"--attn-dp-size", "--dp-size", "--enable-dp-attention"} & set(argv)


def test_a_dense_models_replicas_are_dp_size(tmp_path) -> None:
    """Llama-3.1-70B on 8 H100 at TP4: 8 // 4 = 2 whole-engine replicas, `--tp-size 4 --dp-size 2` (sglang
    0.5.23's dp_size: "the number of data-parallel replicas of the model"; a dense model has no attention DP)."""
    argv = _launch(tmp_path, TP4, "llama-3.1-70b", "h100_sxm", 8)["nodes"][0]["argv"]
    assert (_value(argv, "--tp-size"), _value(argv, "--dp-size")) == ("4", "2")
    assert "--attn-dp-size" not in argv and "--enable-dp-attention" not in argv


def test_attention_dp_is_given_the_whole_chunk_budget_which_the_engine_divides(tmp_path) -> None:
    """H200 (< 160 GiB): the profile's budget is 8192. handle_data_parallelism divides --chunked-prefill-size by
    attn_dp_size, so DeepSeek-V3.2 at attention DP8 is given 8192 and each DP rank runs 8192 // 8 = 1024: the
    budget the estimator plans for one attention replica."""
    argv = _launch(tmp_path, DPA, "deepseek-v3.2", "h200_sxm", 8)["nodes"][0]["argv"]
    assert _value(argv, "--chunked-prefill-size") == "8192"
    planned = token_budget(Workload("serving", isl=4096, osl=256, concurrency=32),
                           factors_for(load_hardware("h200_sxm"), load_framework("sglang").efficiency_for("h200_sxm")),
                           synced_ranks(load_model("deepseek-v3.2"), ParallelConfig(world_size=8, **DPA)))
    assert planned == 8192 // 8 == 1024


def test_a_dense_replica_keeps_the_whole_chunk_budget(tmp_path) -> None:
    """Llama-3.1-70B on 8 H100 at TP4 x DP2: each --dp-size replica is an engine of its own (attn_dp_size 1: no
    division) with SGLang's default 8192 below 160 GiB, and the estimator plans the whole 8192 per replica, so the
    launch gives 8192 (not a share of it)."""
    argv = _launch(tmp_path, TP4, "llama-3.1-70b", "h100_sxm", 8)["nodes"][0]["argv"]
    assert _value(argv, "--chunked-prefill-size") == "8192"
    model = load_model("llama-3.1-70b")
    pc = ParallelConfig(world_size=8, **TP4)
    planned = token_budget(Workload("serving", isl=4096, osl=256, concurrency=32),
                           factors_for(load_hardware("h100_sxm"), load_framework("sglang").efficiency_for("h100_sxm")),
                           synced_ranks(model, pc))
    assert planned == 8192


def test_the_round_trip_reads_the_new_spelling_back_to_the_knobs(tmp_path) -> None:
    """The emitted `--tp-size 16 --attn-dp-size 16 --ep-size 16` parses back to world 16, attention TP 16 // 16 =
    1, MoE TP 16 // 16 = 1, embedding replicated (1); the dense `--tp-size 4 --dp-size 2` to world 4 x 2 = 8,
    attention TP 4."""
    got = parse_launch(_launch(tmp_path, DPA, "deepseek-v3.2", "h200_sxm", 16), load_model("deepseek-v3.2"))
    assert (got["world"], got["attn_tp_size"], got["moe_tp_size"], got["embed_tp_size"]) == (16, 1, 1, 1)
    dense = parse_launch(_launch(tmp_path, TP4, "llama-3.1-70b", "h100_sxm", 8), load_model("llama-3.1-70b"))
    assert (dense["world"], dense["attn_tp_size"]) == (8, 4)


def test_the_round_trip_reads_a_users_deprecated_spelling_as_the_engine_resolves_it() -> None:
    """A command pasted before sglang 0.5.23: `--dp-size 16 --enable-dp-attention` resolves to attn_dp_size 16,
    dp_size 1 (handle_deprecated_dp_attention), so it parses to the same knobs as `--attn-dp-size 16`; under a
    DeepSeek DSA prefill-CP layout `--dp-size 2` alone is attention DP 2 as well (context_parallel_attn_dp_size);
    with --attn-dp-size given, --enable-dp-attention adds nothing."""
    v32 = load_model("deepseek-v3.2")
    new = ["--tp-size", "16", "--attn-dp-size", "16", "--ep-size", "16", "--moe-dense-tp-size", "1"]
    old = ["--tp-size", "16", "--dp-size", "16", "--enable-dp-attention", "--ep-size", "16", "--moe-dense-tp-size", "1"]
    assert sglang_dp(_flags(old), v32) == sglang_dp(_flags(new), v32) == (1, 16)
    launch = {"engine": "sglang", "files": {}}
    assert parse_launch({**launch, "nodes": [{"argv": old}]}, v32) == \
        parse_launch({**launch, "nodes": [{"argv": new}]}, v32)
    dsa_cp = ["--tp-size", "8", "--dp-size", "2", "--attn-cp-size", "2", "--enable-prefill-cp"]
    assert sglang_dp(_flags(dsa_cp), v32) == (1, 2)
    assert sglang_dp(_flags([*new, "--enable-dp-attention"]), v32) == (1, 16)
    # a dense model's --dp-size alone stays replicas: 2 engines of --tp-size 4
    assert sglang_dp(_flags(["--tp-size", "4", "--dp-size", "2"]), load_model("llama-3.1-70b")) == (2, 1)
