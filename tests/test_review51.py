"""Stop 51's review: the rules its changes got wrong, each pinned (benchmarks/README.md "Stop 51: the review")."""
from __future__ import annotations

import json

from click.testing import CliRunner

from solver.cli.main import main


def _b_warnings(cmd: str, hardware: str = "l40s") -> list[str]:
    r = CliRunner().invoke(main, ["check", "--command", cmd, "--hardware", hardware, "--isl", "1024", "--osl", "512",
                                  "--concurrency", "64", "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["warnings"]["B"]


def test_switch_to_ep_spells_document_keys_as_the_launch_writes_them_and_leaves_out_their_expression_defaults() -> None:
    """TensorRT-LLM's options-file keys: a boolean is written true (not 1), and a key at the default the profile
    gives as an expression of the configuration (moe_tensor_parallel_size: world // moe_ep_size;
    moe_expert_parallel_size: --ep_size's) is left out, as the launch leaves it out."""
    w = next(w for w in _b_warnings("trtllm-serve Qwen/Qwen3-30B-A3B --tp_size 8") if "switch to EP" in w)
    said = w.split("as trtllm's launch spells it: ")[1]
    assert said == "--ep_size 8, --extra_llm_api_options: enable_attention_dp true"


def test_a_kv_format_some_spelling_of_its_flag_reads_is_not_said_to_be_unread() -> None:
    """vLLM's --kv-cache-dtype has a narrower map for a DSA model than for others; a value the wider one spells
    (fp8_e5m2) is read by the estimate (an 8-bit cache, as `fp8`), so check must not also call it "not read, the
    engine's default" -- the value outside every spelling (ATOM's fp8_e4m3) still is."""
    def lines(model: str, hardware: str, fw: str, cmd: str) -> list[str]:
        r = CliRunner().invoke(main, ["check", "--model", model, "--hardware", hardware, "--framework", fw, "--isl",
                                      "4096", "--osl", "256", "--command", cmd, "--format", "json"])
        assert r.exit_code == 0, r.output
        return [n for n in json.dumps(json.loads(r.stdout)).split('"') if "none of the values" in n]

    assert lines("deepseek-ai/DeepSeek-V3.2", "h200_sxm", "vllm",
                 "vllm serve x --tensor-parallel-size 8 --kv-cache-dtype fp8_e5m2 --max-num-seqs 16") == []
    assert len(lines("meta-llama/Meta-Llama-3.1-70B", "mi300x", "atom", "python3 -m atom.entrypoints.openai_server "
                     "--model x -tp 8 --kv_cache_dtype fp8_e4m3 --max-num-seqs 16 --max-model-len 4352")) == 1


def test_an_options_file_named_but_not_at_hand_is_not_said_to_lack_recorded_defaults(tmp_path, monkeypatch) -> None:
    """TensorRT-LLM's options file named on the command but not found: its keys (pipeline_parallel_size,
    enable_attention_dp, ...) all have a default recorded, so the refusal says the file's text decides them."""
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, ["check", "--command", "trtllm-serve meta-llama/Llama-3.3-70B-Instruct --tp_size 8 "
                                  "--extra_llm_api_options missing.yaml", "--hardware", "h100_sxm", "--isl", "4096",
                                  "--osl", "256"])
    assert r.exit_code == 2
    assert "its text decides them" in r.output and "no default recorded" not in r.output
