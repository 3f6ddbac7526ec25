"""`check --command` on commands as engineers paste them (stop 47): site settings, the model by flag, the program on
Atlas, an engine without a parser record, TensorRT-LLM's options file, an MTP depth given twice, parser spellings."""
from __future__ import annotations

import pytest

from solver import api
from solver.errors import InputError
from solver.launch.check_command import command_deployment
from solver.launch.engine_flags import engine_flags
from solver.launch.read_command import read_command
from solver.specs.framework import list_frameworks, load_framework
from solver.specs.hardware_catalog import load_hardware

DSV3 = "deepseek-ai/DeepSeek-V3"
H200 = load_hardware("h200_sxm")
# a vLLM head node of DP 16 over two 8-GPU nodes, with the site's own address and ports
DP16_HEAD = (f"vllm serve {DSV3} --data-parallel-size 16 --data-parallel-size-local 8 --enable-expert-parallel "
             "--data-parallel-address 10.0.0.1 --max-num-seqs 8 --host 0.0.0.0 --port 8001")
TRT = f"trtllm-serve {DSV3} --tp_size 8 --ep_size 8 --max_batch_size 8"


def test_a_site_port_other_than_the_launchs_is_read_as_the_sites():
    """--data-parallel-rpc-port 13399 (the launch prints 13345) is the site's, compared with nothing: the command
    reads as the same configuration as with the launch's port, and the site flags are listed, not 'not read'."""
    mine = read_command(DP16_HEAD + " --data-parallel-rpc-port 13399", H200)
    launch = read_command(DP16_HEAD + " --data-parallel-rpc-port 13345", H200)
    assert (mine.world, mine.parallel_config) == (launch.world, launch.parallel_config) == (16, mine.parallel_config)
    assert mine.site == {"--data-parallel-address": "10.0.0.1", "--host": "0.0.0.0", "--port": "8001",
                         "--data-parallel-rpc-port": "13399"}
    assert not set(mine.site) & set(mine.not_read) and not set(mine.site) & set(mine.read)


def test_a_worker_nodes_rank_and_headless_switch_are_the_sites():
    r = read_command(DP16_HEAD.replace("--host 0.0.0.0 --port 8001", "") + " --data-parallel-start-rank 8 --headless",
                     H200)
    assert r.world == 16 and {"--data-parallel-start-rank", "--headless"} <= set(r.site)


def test_site_flags_are_no_settings_the_launch_is_said_to_differ_in():
    r, _ = command_deployment(DP16_HEAD + " --data-parallel-rpc-port 13399", "h200_sxm", isl=1024, osl=1024)
    assert not [n for n in r.notes if n.startswith(("--data-parallel-rpc-port", "--data-parallel-address"))]


@pytest.mark.parametrize("name", [n for n in list_frameworks() if load_framework(n).launch is not None])
def test_every_site_flag_is_one_the_engines_parser_takes(name):
    """A profile's site_flags are its engine's own flags where the parser is recorded (no misspelt port flag that
    would never match), or flags its launch prints."""
    fw = load_framework(name)
    record = engine_flags().get(name, {}).get("flags")
    printed = {a.flag for a in fw.launch.args}
    for flag in fw.launch.site_flags:
        assert flag in (record if record is not None else printed), flag


def test_vllm_serve_takes_the_model_by_model_flag_as_by_its_position():
    by_flag = read_command(f"vllm serve --model {DSV3} --tensor-parallel-size 8 --max-num-seqs 64", H200)
    by_place = read_command(f"vllm serve {DSV3} --tensor-parallel-size 8 --max-num-seqs 64", H200)
    assert (by_flag.model, by_flag.parallel_config) == (by_place.model, by_place.parallel_config)
    assert "--model" not in by_flag.not_read


def test_the_model_given_both_ways_is_refused():
    """vLLM 0.23.0's parser moves --model to the positional's place: a positional model beside it is one too many."""
    with pytest.raises(InputError, match="the model is given twice"):
        read_command(f"vllm serve {DSV3} --model deepseek-ai/DeepSeek-R1 -tp 8", H200)


def test_the_api_server_module_is_read_as_vllm_with_the_model_by_flag():
    r = read_command(f"python -m vllm.entrypoints.openai.api_server --model {DSV3} --tensor-parallel-size 8 "
                     "--max-num-seqs 64", H200)
    assert (r.framework, r.model, r.world) == ("vllm", DSV3, 8)


def test_the_api_server_module_ignores_a_positional_model_so_it_is_refused():
    with pytest.raises(InputError, match="serves the model given by --model only"):
        read_command(f"python3 -m vllm.entrypoints.openai.api_server {DSV3} -tp 8", H200)


def test_vllm_serve_on_atlas_reads_as_the_profile_made_for_its_vendor():
    """On an Ascend die `vllm serve` runs vllm-ascend (vLLM's profile runs on nvidia/amd): read as it, with no note
    of another reading; naming vllm there is refused, naming the profiles that run on huawei devices."""
    cmd = "vllm serve Qwen/Qwen3-235B-A22B --tensor-parallel-size 16 --enable-expert-parallel --max-num-seqs 16"
    r = read_command(cmd, load_hardware("atlas_a3"))
    assert r.framework == "vllm-ascend"
    assert not any("--framework vllm" in n for n in r.notes)
    with pytest.raises(InputError, match=r"^--framework: vllm runs on nvidia/amd devices; atlas_a3 is huawei: "
                                         r"the profiles for huawei devices are .*vllm-ascend"):
        read_command(cmd, load_hardware("atlas_a3"), framework="vllm")


def test_an_engine_without_a_parser_record_says_its_unknown_flags_are_not_refused():
    r = read_command(f"python3 -m atom.entrypoints.openai_server --model {DSV3} -tp 8 --max-num-seqs 64 "
                     "--enfroce-eager", load_hardware("mi300x"))
    assert r.not_read == ["--enfroce-eager"]
    assert any("parser is not recorded" in n and "not refused" in n for n in r.notes)


def test_an_engine_with_a_parser_record_says_nothing_of_the_kind():
    r = read_command(f"vllm serve {DSV3} -tp 8 --enforce-eager", H200)
    assert not any("parser is not recorded" in n for n in r.notes)


def test_trtllm_with_an_options_file_not_on_disk_names_the_file(tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(InputError, match=f"--extra_llm_api_options {missing}: not in the text nor a file on disk"):
        read_command(f"{TRT} --extra_llm_api_options {missing}", H200)


def test_trtllm_with_an_unreadable_options_file_names_the_file(tmp_path):
    binary = tmp_path / "extra.yaml"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(InputError, match=f"--extra_llm_api_options {binary}: cannot be read"):
        read_command(f"{TRT} --extra_llm_api_options {binary}", H200)


def test_trtllm_options_written_in_the_text_are_read():
    text = ("cat > extra.yaml <<'EOF'\nenable_attention_dp: true\nmoe_expert_parallel_size: 8\n"
            f"moe_tensor_parallel_size: 1\nEOF\n{TRT} --extra_llm_api_options extra.yaml")
    r = read_command(text, H200)
    assert r.world == 8 and r.parallel_config["attn_tp_size"] == 1 and r.parallel_config["moe_tp_size"] == 1


MTP2 = f"vllm serve {DSV3} -tp 8 --max-num-seqs 64 --speculative-config '{{\"method\":\"mtp\",\"num_speculative_tokens\":2}}'"


def test_an_mtp_depth_given_against_the_commands_is_refused():
    with pytest.raises(InputError, match="mtp: 0, while the command runs MTP depth 2"):
        api.check(command=MTP2, hardware="h200_sxm", isl=1024, osl=1024, mtp=0)


def test_an_mtp_depth_given_to_a_command_without_drafts_is_refused():
    with pytest.raises(InputError, match="--mtp: 1, while the command runs MTP depth 0"):
        command_deployment(f"vllm serve {DSV3} -tp 8 --max-num-seqs 64", "h200_sxm", isl=1024, osl=1024, mtp=1)


def test_an_mtp_depth_equal_to_the_commands_or_left_out_reads_the_commands():
    _, same = command_deployment(MTP2, "h200_sxm", isl=1024, osl=1024, mtp=2)
    _, left = command_deployment(MTP2, "h200_sxm", isl=1024, osl=1024)
    assert same.mtp == left.mtp == 2


def test_sglangs_draft_token_count_is_not_read_as_the_depth():
    """--speculative-num-draft-tokens is the depth + 1: the depth is read from --speculative-num-steps."""
    r = read_command(f"python3 -m sglang.launch_server --model-path {DSV3} --tp-size 8 --speculative-algorithm NEXTN "
                     "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4", H200)
    assert r.mtp == 3


def test_a_unique_prefix_of_a_recorded_flag_is_read_as_that_flag():
    """argparse takes `--tp 8` as `--tp-size 8` (SGLang's parser leaves abbreviations on)."""
    short = read_command(f"python3 -m sglang.launch_server --model-path {DSV3} --tp 8", H200)
    full = read_command(f"python3 -m sglang.launch_server --model-path {DSV3} --tp-size 8", H200)
    assert (short.world, short.parallel_config) == (full.world, full.parallel_config)


def test_an_ambiguous_prefix_is_refused_naming_a_few_it_begins():
    with pytest.raises(InputError, match=r"--enable-dp: ambiguous .*--enable-dp-attention"):
        read_command(f"python3 -m sglang.launch_server --model-path {DSV3} --tp 8 --enable-dp", H200)


def test_sglangs_deprecated_dp_attention_spelling_reads_as_attn_dp_size():
    old = read_command(f"python3 -m sglang.launch_server --model-path {DSV3} --tp 8 --dp 8 --enable-dp-attention "
                       "--max-running-requests 64", H200)
    new = read_command(f"python3 -m sglang.launch_server --model-path {DSV3} --tp-size 8 --attn-dp-size 8 "
                       "--max-running-requests 64", H200)
    assert (old.world, old.parallel_config) == (new.world, new.parallel_config)
    assert old.parallel_config["attn_tp_size"] == 1
    assert any("read as --attn-dp-size 8" in n for n in old.notes)


def test_a_pasted_multi_line_command_with_env_and_equals_reads():
    text = ("CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 vllm serve deepseek-ai/DeepSeek-V3 \\\n  --tensor-parallel-size=8 \\\n"
            "  --max-num-seqs=64 --trust-remote-code")
    r = read_command(text, H200)
    assert (r.world, r.parallel_config["attn_tp_size"], r.concurrency_cap) == (8, 8, 64)


def test_vllms_parser_reads_underscores_in_a_flags_name_as_dashes():
    """`--tensor_parallel_size 8 --max_num_seqs=64` is vLLM's `--tensor-parallel-size 8 --max-num-seqs=64`."""
    r = read_command(f"vllm serve {DSV3} --tensor_parallel_size 8 --max_num_seqs=64", H200)
    assert (r.world, r.parallel_config["attn_tp_size"], r.concurrency_cap) == (8, 8, 64)


def test_sglangs_parser_takes_no_underscore_spelling():
    with pytest.raises(InputError, match="--tp_size: sglang .* has no such flag"):
        read_command(f"python3 -m sglang.launch_server --model-path {DSV3} --tp_size 8", H200)
