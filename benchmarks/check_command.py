"""Time of `check --command`: reading an engine command back to its parallel_config (read_command: the forward search
over the configurations the profile admits at each world size the command's numbers allow) and the whole check
(the reading, the review and estimate, the planner's suggestion), median of 3 after one warm-up run.

    python benchmarks/check_command.py
"""
from __future__ import annotations

import statistics
import time

from solver.launch.check_command import GIVEN_AS, command_deployment
from solver.launch.read_command import read_command
from solver.one_config import check_deployment
from solver.specs.hardware_catalog import load_hardware

DSV3 = "deepseek-ai/DeepSeek-V3"
COMMANDS = {
    "vllm 8 cards (DP8 + EP)": f"vllm serve {DSV3} --data-parallel-size 8 --enable-expert-parallel --max-num-seqs 8",
    "vllm 8 cards (TP8)": f"vllm serve {DSV3} --tensor-parallel-size 8 --max-num-seqs 64",
    # the head node's command of a 64-rank deployment: TP8 engines, one a node, 8 of them, experts over all 64
    "vllm 64 cards (TP8 x DP8 + EP, head node)": f"vllm serve {DSV3} --tensor-parallel-size 8 --data-parallel-size 8 "
    "--enable-expert-parallel --data-parallel-size-local 1 --data-parallel-address 10.0.0.1 "
    "--data-parallel-rpc-port 13345 --max-num-seqs 64",
}


def _median(fn, n: int = 3) -> float:
    fn()  # warm-up: catalog and profile loads
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    hw = load_hardware("h200_sxm")
    for name, cmd in COMMANDS.items():
        try:
            r = read_command(cmd, hw)
        except Exception as exc:  # a command the profile does not print: said, not timed
            print(f"{name}: {exc}")
            continue
        read_s = _median(lambda: read_command(cmd, hw))
        def whole() -> None:
            read, dep = command_deployment(cmd, "h200_sxm", isl=1024, osl=1024)
            check_deployment(dep, read.model, "h200_sxm", read.world, read.framework, None, GIVEN_AS)

        check_s = _median(whole)
        print(f"{name}: world {r.world}, read {read_s:.3f} s, whole check {check_s:.3f} s (median of 3)")


if __name__ == "__main__":
    main()
