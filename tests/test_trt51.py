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
