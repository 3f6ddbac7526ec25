"""A user's own files and values, one rule each: a hardware YAML, an engine profile, a model config.json, a
deployment file, a calibration-style CSV and a profiler trace written by hand are read as written or refused in
one line naming the field; nothing given is dropped or replaced by a default without a word."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from conftest import FACTS, REPO
from solver.cli.main import main
from solver.errors import InputError

CSV = FACTS / "calibration" / "measured_agg_calibration.csv"


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def one_error_line(r, needle: str, code: int = 2) -> str:
    assert r.exit_code == code, (r.exit_code, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in r.stderr, r.stderr
    assert needle in lines[0], lines[0]
    return lines[0]


def _yaml(tmp_path: Path, name: str, data) -> str:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(p)


def _hardware(tmp_path: Path, **changes) -> str:
    data = yaml.safe_load((REPO / "hardware" / "h100_sxm.yaml").read_text())
    data.update({"name": "my_h100", **changes})  # other figures under the catalog's name are refused
    return _yaml(tmp_path, "hw.yaml", data)


def _profile(tmp_path: Path, change) -> str:
    data = yaml.safe_load((REPO / "solver" / "frameworks" / "vllm.yaml").read_text())
    change(data)
    return _yaml(tmp_path, "fw.yaml", data)


def _config(tmp_path: Path, name: str, change) -> str:
    data = json.loads((REPO / "models" / name).read_text())
    change(data)
    p = tmp_path / "config.json"
    p.write_text(json.dumps(data))
    return str(p)


def _memory(hardware: str = "h100_sxm", model: str = "llama-3.1-8b"):
    return run("memory", model, "--hardware", hardware, "--cards", "8", "--attn-tp", "8", "--dense-tp", "8",
               "--batch", "4", "--seq-len", "4096")


# ------------------------------------------------------------------------------------------------- hardware


@pytest.mark.parametrize("field, value", [("memory_bytes", 80), ("reserved_bytes", 3)])
def test_a_memory_figure_below_one_mib_is_refused_as_written_in_the_wrong_unit(tmp_path, field, value):
    # 80 for an 80 GB card: read as bytes it was refused as "reserved_bytes must be below memory_bytes", and a
    # 3 GB reserve of 3 bytes was accepted
    line = one_error_line(_memory(_hardware(tmp_path, **{field: value})), f"{field}: below 1 MiB")
    assert "in bytes" in line
    assert _memory(_hardware(tmp_path, reserved_bytes=0)).exit_code == 0  # no reserve at all stays legal


def test_a_source_naming_no_field_of_the_hardware_file_is_refused(tmp_path):
    data = yaml.safe_load((REPO / "hardware" / "h100_sxm.yaml").read_text())
    one_error_line(_memory(_hardware(tmp_path, sources={**data["sources"], "memory_byte": "datasheet"})),
                   "sources.memory_byte: names no field")
    one_error_line(_memory(_hardware(tmp_path, sources={"peak_flops.fp4": "datasheet"})),  # h100 has no fp4 peak
                   "sources.peak_flops.fp4")


# ------------------------------------------------------------------------------------------ engine profiles


def test_a_profile_feature_outside_the_known_names_is_refused(tmp_path):
    # a misspelt redundant_experts would have turned the planner's expert copies off without a word
    fw = _profile(tmp_path, lambda d: d["features"].__setitem__("redundant_expert",
                                                                d["features"].pop("redundant_experts")))
    one_error_line(run("memory", "qwen3-30b-a3b", "--hardware", "h100_sxm", "--cards", "8", "--framework", fw,
                       "--batch", "1", "--seq-len", "128"), "features.redundant_expert")


@pytest.mark.parametrize("change, needle", [
    (lambda d: d["rules"].append({"id": "X.always", "require": "attn_tp_size + 1", "message": "m", "source": "s"}),
     "rule X.always: require: 'attn_tp_size + 1' is a number, not a condition"),
    (lambda d: d["rules"].append({"id": "X.when", "when": "min(world, 8)", "require": "world > 0", "message": "m",
                                  "source": "s"}),
     "rule X.when: when: 'min(world, 8)' is a number"),
    (lambda d: d["launch"]["args"].append({"flag": "--foo", "value": "world", "when": "pp_size"}),
     "when: 'pp_size' is a number"),
])
def test_a_rule_or_launch_condition_that_is_a_number_is_refused(tmp_path, change, needle):
    # a number holds whenever it is non-zero: the rule would never bind, the flag always print
    one_error_line(run("memory", "llama-3.1-8b", "--hardware", "h100_sxm", "--cards", "8", "--batch", "1",
                       "--seq-len", "128", "--framework", _profile(tmp_path, change)), needle)


def test_a_division_by_the_constant_zero_in_a_rule_is_refused_when_the_profile_is_read(tmp_path):
    fw = _profile(tmp_path, lambda d: d["rules"].append(
        {"id": "X.zero", "require": "world // 0 == 1", "message": "m", "source": "s"}))
    from solver.specs.framework import load_framework

    with pytest.raises(InputError, match="rule X.zero: require: .*division or modulo by the constant 0"):
        load_framework(fw)


def test_a_rule_that_cannot_be_evaluated_names_its_id(tmp_path):
    fw = _profile(tmp_path, lambda d: d["rules"].append(
        {"id": "X.odd", "require": "world // (attn_tp_size - 1) > 0", "message": "m", "source": "s"}))
    # was "error: expression '...': division or modulo by zero", naming no rule and no profile
    one_error_line(run("memory", "llama-3.1-8b", "--hardware", "h100_sxm", "--cards", "8", "--framework", fw,
                       "--batch", "1", "--seq-len", "128"), "framework rule X.odd: require: ")


# --------------------------------------------------------------------------------------------- model configs


@pytest.mark.parametrize("name, typo, field", [
    ("meta-llama--Meta-Llama-3.1-8B.json", "num_key_value_head", "num_key_value_heads"),
    ("Qwen--Qwen3-30B-A3B.json", "num_expert", "num_experts"),
])
def test_a_config_field_one_edit_from_a_field_the_reader_looks_for_is_refused_as_misspelt(tmp_path, name, typo, field):
    # read as written, Llama-3.1-8B had 32 KV heads (MHA) and Qwen3-30B-A3B no experts (a 6144-wide dense FFN)
    cfg = _config(tmp_path, name, lambda d: d.__setitem__(typo, d.pop(field)))
    one_error_line(run("inspect", cfg), f"{typo}: not a field shardplan reads; did you mean {field}?")


def test_an_unknown_torch_dtype_is_refused(tmp_path):
    # was read as bf16 whatever it said
    cfg = _config(tmp_path, "meta-llama--Meta-Llama-3.1-8B.json", lambda d: d.__setitem__("torch_dtype", "bfloat61"))
    one_error_line(run("inspect", cfg), "torch_dtype: unknown dtype 'bfloat61'")
    half = _config(tmp_path, "meta-llama--Meta-Llama-3.1-8B.json", lambda d: d.__setitem__("torch_dtype", "half"))
    assert run("inspect", half).exit_code == 0


def test_a_config_without_a_vocabulary_size_names_vocab_size(tmp_path):
    # it named padded_vocab_size, ChatGLM's spelling, which the config never used
    cfg = _config(tmp_path, "meta-llama--Meta-Llama-3.1-8B.json", lambda d: d.pop("vocab_size"))
    one_error_line(run("inspect", cfg), "vocab_size: missing")
    assert "padded" not in run("inspect", cfg).stderr


# ----------------------------------------------------------------------------------------- command-line values


@pytest.mark.parametrize("value, needle", [
    ("=fp8", "--kv-dtype: no hardware name before '='"),
    ("h1000=fp8", "--kv-dtype: h1000 is not one of the hardware given"),
])
def test_a_per_hardware_value_naming_no_hardware_given_is_refused_under_its_flag(value, needle):
    # both were "error: hardware: unknown hardware ..." naming no flag
    one_error_line(run("sweep", "llama-3.1-8b", "--hardware", "h100_sxm", "--cards", "8", "--kv-dtype", value), needle)


@pytest.mark.parametrize("args, needle", [
    (("solve", "llama-3.1-8b", "--hardware", "h100_sxm", "--cards", "8", "--framework", "{dir}"),
     "framework: {dir}: a folder, not a profile YAML"),
    (("estimate", "--from-csv", "{dir}", "--out", "-"), "--from-csv: {dir}: a folder, not a CSV file"),
])
def test_a_folder_given_where_a_file_belongs_is_named_a_folder(tmp_path, args, needle):
    # were "unknown framework '/tmp/...'" and "file not found"
    one_error_line(run(*(a.format(dir=tmp_path) for a in args)), needle.format(dir=tmp_path))


def test_an_empty_step_marker_is_refused(tmp_path):
    # every annotation name starts with '': each CPU op would have been read as a step
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": [dict(K, ts=0, dur=5)]}))
    one_error_line(run("calibrate", str(trace), "--step-marker", ""), "--step-marker: must not be empty")


# ------------------------------------------------------------------------------------------- deployment files


def _deployment(tmp_path: Path, **extra) -> str:
    data = {"model": "llama-3.1-8b", "hardware": "h100_sxm", "framework": "vllm", "world_size": 8,
            "parallel_config": {"attn_tp_size": 8, "dense_tp_size": 8, "embed_tp_size": 8, "lmhead_tp_size": 8},
            "workload": {"isl": 4096, "osl": 256, "concurrency": 16}}
    data.update(extra)
    return _yaml(tmp_path, "dep.yaml", data)


@pytest.mark.parametrize("extra, key", [
    ({"quant": {"weights": "fp9"}}, "quant.weights: unknown number format 'fp9'"),
    ({"quant": {"kv_cache": "fp4"}}, "quant.kv_cache: 'fp4' is not a KV-cache format"),
    ({"weight_dtype": "fp9"}, "weight_dtype: unknown number format 'fp9'"),
])
@pytest.mark.parametrize("command", ["check", "launch"])
def test_a_deployment_files_number_format_is_refused_under_the_files_key(tmp_path, extra, key, command):
    # check named --weight-dtype / --kv-dtype, flags it does not have; launch named weight_dtype or the engine
    dep = _deployment(tmp_path, **extra)
    one_error_line(run(command, dep), f"{dep}: {key}")


def test_a_deployment_files_knob_that_does_not_divide_the_world_is_refused_under_the_files_key(tmp_path):
    # launch said "--attn-tp: 3 does not divide the world size 8", a flag launch does not have
    dep = _deployment(tmp_path, parallel_config={"attn_tp_size": 3})
    one_error_line(run("launch", dep), f"{dep}: parallel_config.attn_tp_size: 3 does not divide the world size 8")


@pytest.mark.parametrize("command", ["check", "launch"])
@pytest.mark.parametrize("key, flag", [("model", "--model"), ("hardware", "--hardware")])
def test_an_unknown_name_in_a_deployment_file_is_named_under_the_files_key_or_the_flag_given(tmp_path, command,
                                                                                            key, flag):
    # both said "model: unknown model ...", whether the name came from the file or from --model
    extra = ["--engine", "vllm"] if command == "launch" else []
    dep = _deployment(tmp_path, **{key: "no-such-name"})
    one_error_line(run(command, dep, *extra), f"{dep}: {key}: unknown {key} 'no-such-name'")
    one_error_line(run(command, _deployment(tmp_path), *extra, flag, "no-such-name"),
                   f"{flag}: unknown {key} 'no-such-name'")


def test_an_unknown_framework_in_a_deployment_file_is_named_under_the_files_key(tmp_path):
    dep = _deployment(tmp_path, framework="vllmm")
    one_error_line(run("check", dep), f"{dep}: framework: unknown framework 'vllmm'")
    one_error_line(run("check", _deployment(tmp_path), "--framework", "vllmm"), "--framework: unknown framework")


@pytest.mark.parametrize("engine", ["generic", "vllm", "trtllm"])
def test_a_deployment_the_model_cannot_run_is_refused_at_launch_for_the_model_not_the_engine(tmp_path, engine):
    # said "--engine generic: cannot express redundant_experts 0: [A.experts_divisible_moe_ep] ...": a knob the
    # user never set, blamed on an engine, where EP 12 (12 cards / moe_tp 1) does not divide the 128 experts
    dep = _deployment(tmp_path, model="qwen3-30b-a3b", world_size=12, framework=engine,
                      parallel_config={"attn_tp_size": 1, "moe_tp_size": 1})
    one_error_line(run("launch", dep), f"{dep}: parallel_config: not runnable on Qwen3-30B-A3B: num_experts 128 % "
                                       "moe_ep_size 12 != 0")


@pytest.mark.parametrize("knobs, needle", [
    ({"attn_tp_size": 8, "pp_size": 0}, "parallel_config.pp_size: must be in [1, 65,536], got 0"),
    ({"attn_tp_size": 8, "redundant_experts": -1}, "parallel_config.redundant_experts: must be in [0, 65,536]"),
    ({"attn_tp_size": 8, "cpsize": 2}, "parallel_config: unknown key(s) cpsize; did you mean cp_size?"),
])
def test_a_check_across_a_files_fields_names_the_field_not_the_files_root(tmp_path, knobs, needle):
    # said "FILE: (root): parallel_config.pp_size: ...": a check across fields was reported under pydantic's root
    dep = _deployment(tmp_path, parallel_config=knobs)
    line = one_error_line(run("check", dep), f"{dep}: {needle}")
    assert "(root)" not in line


@pytest.mark.parametrize("change, needle", [
    (lambda d: d["knobs"].append(d["knobs"][0]), "knobs: attn_tp_size listed twice"),
    (lambda d: d["rules"].append(d["rules"][0]), "id used twice"),
    (lambda d: d.update(knobs=[k for k in d["knobs"] if k != "kvp_size"]),
     "kvp_splits_attention_weights: set without kvp_size among the knobs"),
])
def test_a_profiles_check_across_its_fields_names_the_field_not_the_files_root(tmp_path, change, needle):
    fw = _profile(tmp_path, change)
    line = one_error_line(run("estimate", "llama-3.1-8b", "--hardware", "h100_sxm", "--cards", "1", "--isl", "128",
                              "--osl", "128", "--concurrency", "1", "--framework", fw), f"{fw}: ")
    assert needle in line and "(root)" not in line, line


# ------------------------------------------------------------------------------------------- CSV rows


def _csv(tmp_path: Path, header: str, *rows: str) -> str:
    p = tmp_path / "in.csv"
    p.write_text("\n".join((header, *rows)) + "\n")
    return str(p)


def _row_error(path: str) -> str:
    r = run("estimate", "--from-csv", path, "--out", "-")
    return one_error_line(r, "--from-csv: none of the 1 rows could be evaluated")


@pytest.mark.skipif(not CSV.is_file(), reason="calibration CSV absent")
@pytest.mark.parametrize("old, new, needle", [
    (",64.0,8.0,", ",1e400,8.0,", "concurrency: must be an integer in [1, 1,048,576], got '1e400'"),
    (",1024,8192,", ",1e300,8192,", "isl: must be an integer in [1, 16,777,216], got '1e300'"),
    (",1024,8192,", ",nan,8192,", "isl: is blank (it says 'nan') (required)"),
])
def test_a_csv_cell_that_is_infinite_or_past_the_commands_caps_is_a_row_error(tmp_path, old, new, needle):
    # 1e400 was "OverflowError: cannot convert float infinity to integer"; an ISL of 1e300 gave TTFT inf, TPOT nan
    header, row = CSV.read_text().splitlines()[:2]
    assert old in row
    assert needle in _row_error(_csv(tmp_path, header, row.replace(old, new, 1)))


@pytest.mark.skipif(not CSV.is_file(), reason="calibration CSV absent")
def test_a_csv_row_with_more_or_fewer_cells_than_columns_is_a_row_error(tmp_path):
    # the extra cells were dropped unread; a short row said "concurrency: is blank"
    header, row = CSV.read_text().splitlines()[:2]
    n = len(header.split(","))
    assert f"line 2: {n + 2} cells for {n} columns" in _row_error(_csv(tmp_path, header, row + ",x,y"))
    assert f"line 2: 10 cells for {n} columns" in _row_error(_csv(tmp_path, header, ",".join(row.split(",")[:10])))


@pytest.mark.skipif(not CSV.is_file(), reason="calibration CSV absent")
def test_a_csv_column_given_twice_is_refused(tmp_path):
    # the reader kept the last `tp` and dropped the first
    header, row = CSV.read_text().splitlines()[:2]
    one_error_line(run("estimate", "--from-csv", _csv(tmp_path, header + ",tp", row + ",4"), "--out", "-"),
                   "column(s) 'tp' given twice")


# ----------------------------------------------------------------------------------------------- traces


def _trace(tmp_path: Path, events: list, **top) -> str:
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"traceEvents": events, **top}))
    return str(p)


K = {"ph": "X", "cat": "kernel", "name": "ampere_gemm", "pid": 1, "tid": 7}


@pytest.mark.parametrize("bad, needle", [
    (dict(K, ts=10, dur=-5), "complete event 'ampere_gemm' with no usable dur (dur=-5)"),
    (dict(K, ts=10, dur="abc"), "no usable dur (dur='abc')"),
    (dict(K, dur=5), "no usable ts (ts=missing)"),
    (7, "int value, not an event object"),
    ({"ph": "i", "name": "[memory]", "args": {"Total Allocated": -5, "Device Type": 1}},
     "[memory] event with Total Allocated=-5"),
])
def test_a_trace_event_read_past_is_named_in_a_note(tmp_path, bad, needle):
    # each was skipped without a word (a negative memory total set the peak to -5 bytes)
    r = run("calibrate", _trace(tmp_path, [dict(K, ts=0, dur=5), bad]), "--format", "json")
    assert r.exit_code == 0, r.stderr
    assert "t.json: 1 event left out (first: event 1: " in r.stderr and needle in r.stderr
    assert json.loads(r.stdout)["peak_memory_gb"] is None


@pytest.mark.parametrize("info, needle", [
    ({"rank": -1, "world_size": 4}, "distributedInfo.rank: must be an integer >= 0, got -1"),
    ({"rank": 0, "world_size": "x"}, "distributedInfo.world_size: must be an integer >= 1, got 'x'"),
    ({"rank": 4, "world_size": 4}, "distributedInfo.rank: 4 but world_size is 4"),
])
def test_a_distributed_info_that_is_not_a_rank_of_the_world_is_refused(tmp_path, info, needle):
    # rank -1 was reported as rank -1; a world_size of 'x' was read past
    one_error_line(run("calibrate", _trace(tmp_path, [dict(K, ts=0, dur=5)], distributedInfo=info)), needle)


def test_another_runs_config_that_is_missing_is_named_under_run(tmp_path):
    # was "--config: file not found", the flag of the first run's config
    trace = _trace(tmp_path, [dict(K, ts=0, dur=5)])
    cfg = _yaml(tmp_path, "cfg.yaml", {"phase": "prefill", "batch": 2, "seq_len": 4096, "world_size": 1})
    one_error_line(run("calibrate", trace, "--config", cfg, "--model", "llama-3.1-8b", "--hardware", "h100_sxm",
                       "--recalibrate", str(tmp_path / "out.yaml"), "--run", trace, str(tmp_path / "nosuch.yaml")),
                   "--run: file not found")


def test_a_misspelt_field_is_named_with_the_field_it_stands_for(tmp_path) -> None:
    """An unknown field that is a misspelling of one the schema has at the same place comes first, as 'not a
    field; did you mean ...?', and the missing field it stands for is not named again (nested ones too)."""
    import yaml as _yaml

    from solver.specs.hardware_catalog import load_hardware as _load

    base = _yaml.safe_load((REPO / "hardware" / "h100_sxm.yaml").read_text())
    top = dict(base)
    top["ranks_per_nodes"] = top.pop("ranks_per_node")
    nested = _yaml.safe_load((REPO / "hardware" / "h100_sxm.yaml").read_text())
    nested["tiers"]["intra_node"]["latency_sec"] = nested["tiers"]["intra_node"].pop("latency_s")
    for data, line in ((top, "ranks_per_nodes: not a field; did you mean ranks_per_node?"),
                       (nested, "tiers.intra_node.latency_sec: not a field; did you mean latency_s?")):
        f = tmp_path / "dev.yaml"
        f.write_text(_yaml.safe_dump(data))
        with pytest.raises(InputError) as e:
            _load(str(f))
        assert str(e.value).endswith(line), str(e.value)


def test_a_users_device_file_is_named_by_its_name_in_the_solve_title(tmp_path) -> None:
    data = yaml.safe_load((REPO / "hardware" / "h100_sxm.yaml").read_text())
    data["name"] = "my_h100"
    f = tmp_path / "dev.yaml"
    f.write_text(yaml.safe_dump(data))
    r = CliRunner().invoke(main, ["solve", "llama-3.1-8b", "--hardware", str(f), "--cards", "1"])
    assert r.exit_code == 0, r.stderr
    assert f"llama-3.1-8b on 1 x my_h100 ({f}) (balanced)" in " ".join(r.stdout.split())  # rich wraps the title
