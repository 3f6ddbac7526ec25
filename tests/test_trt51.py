"""A user-level hunt of TensorRT-LLM users (stop 51): trtllm-serve commands and options files as engineers write
them, read back by `check --command`, and the launch solve prints for them."""
from __future__ import annotations

import yaml

from solver.launch.read_command import read_command
from solver.specs.hardware_catalog import load_hardware

H100 = load_hardware("h100_sxm")
LLAMA = "meta-llama/Llama-3.3-70B-Instruct"


def test_an_options_key_the_profile_never_writes_is_named_not_read():
    """kv_cache_config.enable_block_reuse, cuda_graph_config.batch_sizes and print_iter_log in the options file were
    dropped unseen: each is named as not read, beside the keys that are."""
    text = ("cat > extra.yaml <<'EOF'\nkv_cache_config:\n  free_gpu_memory_fraction: 0.85\n  enable_block_reuse: false\n"
            "cuda_graph_config:\n  batch_sizes: [1, 2, 4, 8]\nprint_iter_log: true\nenable_attention_dp: false\nEOF\n"
            f"trtllm-serve {LLAMA} --tp_size 8 --max_batch_size 8 --extra_llm_api_options extra.yaml")
    r = read_command(text, H100)
    assert r.world == 8 and r.parallel_config["attn_tp_size"] == 8
    assert r.not_read == ["--extra_llm_api_options kv_cache_config.enable_block_reuse",
                          "--extra_llm_api_options cuda_graph_config.batch_sizes",
                          "--extra_llm_api_options print_iter_log"]


def test_a_trtllm_command_without_its_options_file_reads_as_the_engines_defaults():
    """`trtllm-serve Llama-3.3-70B --tp_size 8`, the plainest TP8 command, was refused ("no default recorded" for
    enable_attention_dp, pipeline_parallel_size, ...): a key left out is the engine's default, so it reads as TP8."""
    r = read_command(f"trtllm-serve {LLAMA} --tp_size 8 --max_batch_size 64", H100)
    assert r.world == 8 and r.parallel_config["attn_tp_size"] == 8 and r.parallel_config["pp_size"] == 1


def test_trtllm_moe_tp_left_out_is_tp_over_the_ep_size():
    """The recipe form `--tp_size 8 --ep_size 8` with `enable_attention_dp: true` alone in the options file was
    refused for leaving moe_tensor_parallel_size / moe_expert_parallel_size out; the rule moe_tp x moe_ep == TP
    gives MoE TP 1 (EP 8), and --ep_size 4 gives MoE TP 2 x EP 4."""
    for ep, moe_tp in ((8, 1), (4, 2)):
        text = (f"cat > extra.yaml <<'EOF'\nenable_attention_dp: true\nEOF\ntrtllm-serve deepseek-ai/DeepSeek-R1 "
                f"--tp_size 8 --ep_size {ep} --max_batch_size 8 --extra_llm_api_options extra.yaml")
        r = read_command(text, load_hardware("b200_sxm"))
        assert (r.world, r.parallel_config["attn_tp_size"], r.parallel_config["moe_tp_size"]) == (8, 1, moe_tp)


def test_trtllm_launch_leaves_out_options_at_the_engines_default():
    """The launch wrote `enable_attention_dp: false` and the MoE split twice (--ep_size and the file's
    moe_expert_parallel_size / moe_tensor_parallel_size, the latter an unverified key): what equals the engine's
    default is left out, its unverified-key note with it, and the command still reads back as planned."""
    from solver.launch.emit import LaunchInputs, emit_launch
    from solver.specs.model_catalog import load_model
    from solver.specs.framework import load_framework
    from solver.specs.parallel import ParallelConfig

    fw, hw, model = load_framework("trtllm"), load_hardware("b200_sxm"), load_model("deepseek-ai/DeepSeek-R1")
    pc = ParallelConfig(world_size=8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8,
                        moe_tp_size=2)
    launch = emit_launch(fw, model, hw, pc, LaunchInputs(batch=8, max_model_len=4096))
    extra = yaml.safe_load(launch["files"]["extra_llm_api_options.yaml"])
    assert not {"enable_attention_dp", "moe_tensor_parallel_size", "moe_expert_parallel_size"} & set(extra)
    assert "--ep_size 4" in " ".join(launch["nodes"][0]["argv"])
    assert not any("moe_tensor_parallel_size" in n for n in launch.get("notes", []))


def test_trtllm_ep_size_left_out_is_moe_tp_over_the_whole_tp():
    """gpt-oss-120b `--tp_size 8` with `enable_attention_dp: true` and no --ep_size (MoE TP8, the engine's split when
    EP is not set) was refused for leaving --ep_size out; it reads as attention DP8 + MoE TP8, and the launch of
    that configuration no longer writes `--ep_size 1`."""
    from solver.launch.emit import LaunchInputs, emit_launch
    from solver.specs.framework import load_framework
    from solver.specs.model_catalog import load_model
    from solver.specs.parallel import ParallelConfig

    text = ("cat > extra.yaml <<'EOF'\nenable_attention_dp: true\nEOF\ntrtllm-serve openai/gpt-oss-120b --tp_size 8 "
            "--max_batch_size 128 --extra_llm_api_options extra.yaml")
    r = read_command(text, load_hardware("h200_sxm"))
    assert (r.world, r.parallel_config["attn_tp_size"], r.parallel_config["moe_tp_size"]) == (8, 1, 8)
    pc = ParallelConfig(world_size=8, moe_tp_size=8)
    launch = emit_launch(load_framework("trtllm"), load_model("openai/gpt-oss-120b"), load_hardware("h200_sxm"), pc,
                         LaunchInputs(batch=8, max_model_len=2048))
    assert "--ep_size" not in launch["nodes"][0]["argv"]


def test_a_command_spelling_a_configuration_the_engine_refuses_names_the_rule():
    """`enable_attention_dp: true` on Llama-3.3-70B was refused as 'no configuration ... prints these parallel
    flags' alone: the line now names the rule the configuration they spell breaks."""
    import pytest

    from solver.errors import InputError

    text = (f"cat > extra.yaml <<'EOF'\nenable_attention_dp: true\nEOF\ntrtllm-serve {LLAMA} --tp_size 8 "
            "--extra_llm_api_options extra.yaml")
    with pytest.raises(InputError, match=r"the configuration they spell breaks \[C\.attention_dp_moe_only\]: a dense "
                                         r"model runs TP over all ranks") as exc:
        read_command(text, H100)
    assert "\n" not in exc.value.problem
