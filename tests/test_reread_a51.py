"""Stop 51's reread of launch/ and specs/: the rules the mends there keep."""
from __future__ import annotations

from solver.launch.check_command import command_deployment


def test_a_command_without_its_cap_flag_runs_the_engines_default_cap() -> None:
    # vLLM's --max-num-seqs left out on an 80 GiB device: the engine's 1,024 (profile default_running_cap)
    r, dep = command_deployment("vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 8", "h100_sxm",
                                cards=8, concurrency=2000, isl=1024, osl=256)
    assert dep.running_cap == 1024
    assert any(n.startswith("--max-num-seqs: not given; vllm sets it to 1,024") for n in r.notes)
