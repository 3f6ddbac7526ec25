"""What `memory` and `solve` say about a hybrid model's constant state under each engine's allocation, for
NVIDIA-Nemotron-3-Nano-30B-A3B on one H100 at 5120 tokens: 6 attention layers of 1024 B a token (2 KV heads x 128
x 2 B x K,V) and 23 Mamba2 layers of 2 134 016 B state (SSM 64 heads x 64 x 128 x 4 B fp32 = 2 097 152 B, conv
3 x (4096 + 2 x 8 x 128) x 2 B = 36 864 B): 49 082 368 B a request."""
from __future__ import annotations

from solver.estimate.memory_options import MemoryOptions
from solver.estimate.request_state import state_pool_binds
from solver.one_config import memory_config
from solver.report.model_view import cache_line
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

NANO_STATE = 23 * (64 * 64 * 128 * 4 + 3 * (4096 + 2 * 8 * 128) * 2)  # 49 082 368 B


def _state(framework: str, hardware: str = "h100_sxm", model: str = "nemotron-3-nano", seq_len: int = 5120,
           cards: int = 1, mtp: int = 0, **knobs) -> tuple[dict, str]:
    res = memory_config(model, hardware, cards, knobs, 8, seq_len, mtp, None, None, framework, None, None, None)
    cache = res.as_dict()["cache"]
    return cache["state"], cache_line(cache, res.parallel_config)


def test_memory_names_the_state_pool_as_binding_where_slots_cost_more_than_kv():
    """SGLang: 3 slots a request in a pool of 9/19 of the cache memory: 3 x 49 082 368 / (9/19) = 310.9 MB of
    cache against the KV's 6 x 5120 x 1024 / (10/19) = 59.8 MB: the state pool binds; 147 247 104 B held."""
    st, line = _state("sglang")
    assert st["bytes"] == NANO_STATE
    assert round(st["held_bytes"]) == 3 * NANO_STATE == 147_247_104
    assert (st["form"], st["slots"], st["binds"]) == ("pool", 3, "state")
    assert "constant state 49.08 MB a request, 3 slots in a state pool of 47.4%" in line
    assert line.endswith("147.25 MB held; the state pool binds the batch")


def test_memory_names_the_kv_pool_as_binding_at_long_context():
    """Qwen3.5-35B-A3B at TP2, 200 000 tokens: KV 10 layers x 200 000 x 1024 B = 2.048 GB / (10/19) = 3.89 GB
    of cache against the state's 3 x 30 x 1 073 152 B / (9/19) = 203.9 MB: the KV pool binds."""
    st, line = _state("sglang", model="qwen3.5-35b-a3b", seq_len=200_000, cards=2, attn_tp_size=2, dense_tp_size=2,
                      moe_tp_size=2, embed_tp_size=2, lmhead_tp_size=2)
    assert st["bytes"] == 30 * 1_073_152 and st["binds"] == "kv"
    assert line.endswith("the KV pool binds the batch, state slots left idle")


def test_memory_shows_the_padding_of_state_pages_in_a_shared_pool():
    """vLLM: block 16 x ceil(2 134 016 / (16 x 1024)) = 2096 tokens, page 2096 x 1024 = 2 146 304 B; 6 attention
    and 23 state layers group by 6: 4 state groups x 3 pages x 6 tensors x 2 146 304 B = 154 533 888 B held,
    154 533 888 - 3 x 49 082 368 = 7 286 784 B of it padding."""
    st, line = _state("vllm")
    assert (st["form"], st["pages"]) == ("pages", 3)
    assert st["held_bytes"] == 154_533_888 and st["padding_bytes"] == 7_286_784
    assert "held in 3 page(s) per state layer group of the shared KV pool: 154.53 MB, 7.29 MB of it padding" in line


def test_memory_without_an_engine_layout_says_the_state_alone():
    """generic keeps the seed's form: the state as the model holds it, no pool or pages."""
    st, line = _state("generic")
    assert st == {"bytes": NANO_STATE, "held_bytes": NANO_STATE}
    assert line.endswith("constant state 49.08 MB a request")


def test_state_pool_binds_only_under_an_engine_with_a_state_pool():
    model = load_model("nemotron-3-nano")
    prec = resolve_precision(model, load_hardware("h100_sxm"))
    pc = make_parallel_config(1)
    for name, expected in (("sglang", True), ("vllm", None), ("generic", None)):
        layout = MemoryOptions(hybrid_state=load_framework(name).hybrid_state).cache_layout
        assert state_pool_binds(model, pc, prec, 5120, layout=layout) is expected, name


def test_solve_held_note_names_the_state_pool_where_it_stops_the_requests():
    """#1's held count is 'memory' in general, 'memory: the engine's state pool binds' where SGLang's slots cost
    more than the KV (the first test's 310.9 MB against 59.8 MB)."""
    from solver.estimate.memory_options import framework_options
    from solver.plan.config_edge import _memory_bound

    model = load_model("nemotron-3-nano")
    prec = resolve_precision(model, load_hardware("h100_sxm"))
    pc = make_parallel_config(1)
    bound = {name: _memory_bound(model, pc, prec, 5120, 0, framework_options(load_framework(name), MemoryOptions()))
             for name in ("sglang", "vllm")}
    assert bound == {"sglang": "memory: the engine's state pool binds", "vllm": "memory"}


def test_memory_counts_the_draft_slots_it_sized_the_batch_with():
    """Qwen3.5-35B-A3B at TP2 under SGLang with MTP 2: 3 slots + 1 a draft token (2) + 1 while drafting = 6 slots
    of 30 x 1 073 152 = 32 194 560 B: 193 167 360 B held (the memory the batch was sized with)."""
    st, line = _state("sglang", model="qwen3.5-35b-a3b", cards=2, mtp=2, attn_tp_size=2, dense_tp_size=2,
                      moe_tp_size=2, embed_tp_size=2, lmhead_tp_size=2)
    assert st["slots"] == 6 and round(st["held_bytes"]) == 6 * 32_194_560 == 193_167_360


def test_kv_share_warning_counts_the_growing_cache_not_the_constant_state():
    """Seed 3.4 (KV above half the memory left after weights: consider KVP / CP) reads the KV and indexer keys,
    which those knobs split; Nemotron-3-Nano under vLLM at 57 x 5120 tokens: KV 2.20 GB against 8.81 GB of state
    pages: the share is kv / (limit - weights) alone."""
    res = memory_config("nemotron-3-nano", "h100_sxm", 1, {}, 57, 5120, 0, None, None, "vllm", None, None, None)
    rep = res.report
    avail = rep.limit_bytes - rep.weights_total
    assert rep.state_bytes > rep.kv_cache_bytes > 0 and rep.indexer_cache_bytes == 0
    assert rep.kv_share_of_available == rep.kv_cache_bytes / avail < 0.5 < rep.cache_total / avail
