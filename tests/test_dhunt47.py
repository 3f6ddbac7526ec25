"""Rules a user deploying disaggregated serving meets (stop 47's hunt of `--serving disagg`): the commands read
their inputs as the aggregated ones do, and each sentence of the answer says the reason that holds."""
from __future__ import annotations

from solver.capacity.disagg import recommend_disagg, sweep_disagg


def test_disagg_sweep_and_recommend_read_a_comma_list_of_hardware() -> None:
    """`--hardware h200_sxm,b200_sxm` (the help's `a,b`) is two hardware under `--serving disagg` as it is
    aggregated, not one unknown name."""
    df = sweep_disagg("qwen3-30b-a3b", ["h200_sxm,b200_sxm"], "2", ["throughput"], isl=2048, osl=1024)
    assert list(df["hardware"]) == ["h200_sxm", "b200_sxm"]
    rec = recommend_disagg("qwen3-30b-a3b", ["h200_sxm,b200_sxm"], target_output_tokens_per_s=1000.0,
                           isl=2048, osl=1024, cards="2")
    assert [o["hardware"] for o in rec.options] == ["h200_sxm", "b200_sxm"]
