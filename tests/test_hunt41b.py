"""Rules found deploying the dense catalog (Llama-3.3-70B and kin) on 8 H100 / H200 with the NVIDIA engines."""
import yaml

from solver.launch.emit import LaunchInputs, emit_launch
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig


def _tp8_extra(max_model_len: int) -> dict:
    """TRT-LLM's extra LLM-API document for Llama-3.3-70B, TP8 on 8 H100, 64 requests."""
    pc = ParallelConfig(world_size=8, attn_tp_size=8, dense_tp_size=8, moe_tp_size=1, embed_tp_size=8,
                        lmhead_tp_size=8)
    out = emit_launch(load_framework("trtllm"), load_model("llama-3.3-70b"), load_hardware("h100_sxm"), pc,
                      LaunchInputs(batch=64, max_model_len=max_model_len))
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
