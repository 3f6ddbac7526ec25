"""Stop 50's fuzz findings, one test per rule: what benchmarks/fuzz.py (seeds 923-926, the group "new" of
tests/fuzz_cases.py) found on the stop's merged inputs, fixed at their home."""
from __future__ import annotations

import pytest
import yaml
from click.testing import CliRunner

from deployment_files import values_under
from solver.cli.main import main

QUICK = ["llama-3.1-8b", "--hardware", "h100_sxm", "--cards", "1"]


@pytest.mark.parametrize("cmd,extra", [("estimate", ["--isl", "1024", "--osl", "128", "--concurrency", "8"]),
                                       ("memory", ["--batch", "1", "--seq-len", "1024"])])
@pytest.mark.parametrize("kv", ["bf16", "fp8", "int8"])
def test_a_chosen_kv_dtype_is_written_as_yaml(cmd: str, extra: list[str], kv: str) -> None:
    """`--kv-dtype X --format yaml` writes the KV element's bytes as a plain int (when they were an int subclass
    carrying int8's scales, yaml's safe dumper refused them: an internal error, exit 3); the scales are a field of
    the KV format now (dtypes.KVFormat)."""
    r = CliRunner().invoke(main, [cmd, *QUICK, *extra, "--kv-dtype", kv, "--format", "yaml"])
    assert r.exit_code == 0, r.output
    doc = yaml.safe_load(r.output[r.output.index("\n", r.output.rindex("note:")) if "note:" in r.output else 0:])
    found = [v for v in values_under(doc, "kv_bytes")]
    assert found and all(type(v) is int for v in found) and found[0] == (2 if kv == "bf16" else 1)


def _modelopt_folder(tmp_path, quantization: dict) -> str:
    import json
    from pathlib import Path

    cfg = json.loads((Path(__file__).resolve().parents[1] / "models" / "meta-llama--Meta-Llama-3.1-8B.json").read_text())
    cfg.pop("quantization_config", None)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "hf_quant_config.json").write_text(json.dumps({"producer": {"name": "modelopt"},
                                                                "quantization": quantization}))
    return str(tmp_path)


@pytest.mark.parametrize("kv,bytes_", [("FP8", 1), ("INT8", 2)])
def test_only_a_modelopt_fp8_kv_scheme_is_what_kv_dtype_auto_runs(tmp_path, kv: str, bytes_: int) -> None:
    """vLLM's auto maps ModelOpt's kv_cache_quant_algo fp8 and serves any other at the model dtype
    (utils/torch_utils.py:90-93, 500-510); SGLang's takes FP8 only (kv_cache_dtype.py:52-58): an INT8 scheme was
    priced at 8 bits as what auto runs."""
    folder = _modelopt_folder(tmp_path, {"quant_algo": "FP8", "kv_cache_quant_algo": kv, "exclude_modules": ["lm_head"]})
    for fw in ("vllm", "sglang"):
        r = CliRunner().invoke(main, ["estimate", folder, "--hardware", "h100_sxm", "--cards", "1", "--framework", fw,
                                      "--isl", "1024", "--osl", "128", "--concurrency", "8", "--format", "json"])
        assert r.exit_code == 0, r.output
        assert f'"kv_bytes": {bytes_}' in r.output


@pytest.mark.parametrize("quantization,field", [({"quant_algo": 8}, "quantization.quant_algo"),
                                                ({"quant_algo": "W4A16_AWQ", "group_size": "128"},
                                                 "quantization.group_size"),
                                                ({"quant_algo": "FP8", "exclude_modules": "lm_head"},
                                                 "quantization.exclude_modules")])
def test_a_bad_field_of_hf_quant_config_json_is_named_in_that_file(tmp_path, quantization: dict, field: str) -> None:
    """The folder's config.json carries no quantization_config (ModelOpt <= 0.29 writes it beside): an error
    naming `config.json: quantization_config.<field>` sent the user to a file without it."""
    folder = _modelopt_folder(tmp_path, quantization)
    r = CliRunner().invoke(main, ["memory", folder, "--hardware", "h100_sxm", "--cards", "1", "--batch", "1",
                                  "--seq-len", "1024"])
    assert r.exit_code == 2, r.output
    assert r.output.startswith(f"error: {tmp_path / 'hf_quant_config.json'}: {field}: "), r.output
    assert len(r.output.strip().splitlines()) == 1


def test_a_bad_producer_name_is_named_as_the_field_it_is(tmp_path) -> None:
    """The quant_method of a file beside config.json is its producer.name (model_catalog.with_quant_config_beside)."""
    import json

    folder = _modelopt_folder(tmp_path, {"quant_algo": "FP8"})
    (tmp_path / "hf_quant_config.json").write_text(json.dumps({"producer": {"name": "bogus"},
                                                                "quantization": {"quant_algo": "FP8"}}))
    r = CliRunner().invoke(main, ["memory", folder, "--hardware", "h100_sxm", "--cards", "1", "--batch", "1",
                                  "--seq-len", "1024"])
    assert r.exit_code == 2 and "hf_quant_config.json: producer.name: " in r.output, r.output


@pytest.mark.parametrize("extra", [{"derived": {"a": 1}}, {"derived": {"attn_dp_size": 3}, "attn_dp_size": 2}])
def test_a_deployment_file_writing_derived_is_refused(tmp_path, extra: dict) -> None:
    """`derived` is the model's field for the attn_dp_size / moe_ep_size a file states, not a key of the file: an
    unknown name in it was dropped, and a size it gave was overwritten by the one stated (both exit 1 as read)."""
    dep = {"model": "qwen3-30b-a3b", "hardware": "h100_sxm", "world_size": 8,
           "parallel_config": {"attn_tp_size": 4, "moe_tp_size": 1},
           "workload": {"phase": "decode", "batch": 16, "seq_len": 2048}, **extra}
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump(dep))
    r = CliRunner().invoke(main, ["check", str(path)])
    assert r.exit_code == 2 and r.output.startswith(f"error: {path}: derived: not a deployment key"), r.output


@pytest.mark.parametrize("fw,hw,spelt", [("trtllm", "h100_sxm", "dtype: fp8"), ("atom", "mi300x", "--kv_cache_dtype fp8"),
                                         ("vllm", "h100_sxm", "--kv-cache-dtype fp8_e4m3")])
def test_another_name_of_a_kv_format_takes_the_formats_spelling(fw: str, hw: str, spelt: str) -> None:
    """fp8_e4m3 is fp8 (dtypes' aliases): an engine whose map lists fp8 alone (trtllm, atom) refused
    `--kv-dtype fp8_e4m3` as having no spelling for it; one that lists the name itself (vllm) keeps it."""
    r = CliRunner().invoke(main, ["solve", "llama-3.1-8b", "--hardware", hw, "--cards", "1", "--framework", fw, "--isl",
                                  "1024", "--osl", "128", "--max-concurrency", "8", "--time-limit", "1", "--kv-dtype",
                                  "fp8_e4m3", "--format", "launch"])
    assert r.exit_code == 0, r.output
    assert spelt in r.output


def _check_cmd(command: str) -> "object":
    return CliRunner().invoke(main, ["check", "--command", command, "--hardware", "h200_sxm", "--isl", "2048", "--osl",
                                     "256", "--concurrency", "16"])


@pytest.mark.parametrize("value", ["32k", "32K", "auto", "-1"])
def test_vllm_reads_a_model_length_written_its_way(value: str) -> None:
    """vLLM 0.34.0 parses --max-model-len with human_readable_int_or_auto (engine/arg_utils.py:403-405,
    utils/argparse_utils.py:30-95): 32k, 32K, auto and -1 start the engine; the check refused them as no int."""
    r = _check_cmd(f"vllm serve Qwen/Qwen3-8B -tp 1 --max-model-len {value}")
    assert r.exit_code == 0, r.output


def test_a_model_length_written_its_way_is_read_as_its_number() -> None:
    """64K is 65,536 (powers of 1,024 upper-case): past Qwen3-8B's 40,960 without the switch it is refused as the
    number written out is."""
    r = _check_cmd("vllm serve Qwen/Qwen3-8B -tp 1 --max-model-len 64K")
    assert r.exit_code == 2 and "--max-model-len 65,536 exceeds" in r.output, r.output


@pytest.mark.parametrize("command", ["vllm serve Qwen/Qwen3-8B -tp 1 --max-model-len 2.5K",
                                     "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp-size 1 "
                                     "--context-length 32k"])
def test_a_length_its_parser_does_not_take_is_refused(command: str) -> None:
    """No decimals with a binary suffix (argparse_utils.py:61-71); SGLang's --context-length is a plain int."""
    r = _check_cmd(command)
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
