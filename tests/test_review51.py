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
