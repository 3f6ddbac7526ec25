"""The seed's Layer 3 (split attention by sequence) as --explain words it, read from what the layer kinds keep:
a window bounds the KV only where no layer's cache grows with the whole sequence (State.window)."""
from __future__ import annotations

from solver.rank.reason import decision_tree_reason
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.scenario import Scenario


def test_a_window_beside_a_compressed_cache_does_not_bound_the_kv() -> None:
    """DeepSeek-V4-Pro's CSA layers keep 128 raw tokens and the whole sequence compressed 1:4 or 1:128: its KV
    grows with the sequence, so 64K+ takes the seed's long-sequence branch (it was told 'every attention layer
    local (window 128): the KV stops growing at the window')."""
    v4 = load_model("deepseek-v4-pro")
    assert v4.kv_window_bound is None
    reason = decision_tree_reason(ParallelConfig(world_size=8, attn_tp_size=8, moe_tp_size=1), v4,
                                  Scenario(kind="balanced", isl=65536, osl=1024), load_hardware("mi355x"))
    assert "every attention layer local" not in reason and "64K+" in reason
    assert ("CSA 128 x 512 1:128 w128, CSA 128 x 512 1:4 w128 top1024: a bounded window beside a cache that grows "
            "with the sequence") in reason
