"""The seed's 3.4 adjustments in the engine's terms (stop 51): the KV warning's four actions (KVP / CP, KV offload,
moe_chunk), KV offload flags pasted into a command read and named as not priced, and the memory violation's
"more parallelism or a smaller batch" naming the engine's batch cap."""
from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from solver.cli.main import main
from solver.launch.check_command import command_deployment
from solver.rank.kv_split import kv_share_warning
from solver.rank.review import batch_cap_argument
from solver.specs.framework import load_framework

LLAMA = "meta-llama/Llama-3.3-70B-Instruct"
VLLM_TP8 = f"vllm serve {LLAMA} --tensor-parallel-size 8 --max-model-len 40000 --max-num-seqs 4"
SGLANG_TP8 = f"python -m sglang.launch_server --model-path {LLAMA} --tp 8 --context-length 40000 --max-running-requests 4"


def _warning(name: str, moe: bool = False) -> str:
    fw = load_framework(name)
    return kv_share_warning(fw.cp_replicates_kv_cache, fw.kv_offload, fw.moe_chunk, moe)


def test_kv_share_warning_names_the_engines_kv_offload_flag_and_what_its_host_tier_holds():
    # vLLM 0.34.0 config/vllm.py:1078-1106 (the OffloadingConnector), SGLang 0.5.23 srt/mem_cache/unified_radix_cache.py
    # :1820-1826 (load_back of evicted blocks): a prefix tier, not room for the running batch
    vllm, sglang = _warning("vllm"), _warning("sglang")
    assert "KV offload to host (--kv-offloading-size: GiB of host memory in all" in vllm
    assert "KV offload to host (--enable-hierarchical-cache: per rank, --hicache-ratio" in sglang
    assert all("not the running batch's KV" in w for w in (vllm, sglang))


def test_kv_share_warning_says_an_engine_without_kv_offload_has_none():
    assert "KV offload to host: this engine's profile gives none" in _warning("trtllm")


def test_kv_share_warning_offers_moe_chunk_for_a_moe_model_in_the_engines_terms():
    # cann-recipes' moe_chunk (verified-configs.md: R1 long sequence 512) is named, not priced; vLLM 0.34.0 runs a
    # forward's tokens through the MoE at once (fused_moe/modular_kernel.py:1414-1428, M_chunk = M_full)
    assert "reducing moe_chunk in the recipe's model YAML (named, not priced)" in _warning("cann-recipes", True)
    assert "reducing moe_chunk: this engine runs a forward's tokens through the MoE at once" in _warning("vllm", True)
    assert "moe_chunk" not in _warning("cann-recipes", False)


def test_check_reads_pasted_kv_offload_flags_and_names_them_not_priced():
    for plain, flags in ((VLLM_TP8, " --kv-offloading-size 200 --kv-offloading-backend native"),
                         (SGLANG_TP8, " --enable-hierarchical-cache --hicache-ratio 2")):
        r, dep = command_deployment(plain + flags, "h100_sxm", isl=32000, osl=2000)
        r0, dep0 = command_deployment(plain, "h100_sxm", isl=32000, osl=2000)
        assert not set(r.not_read) & set(flags.split())  # read, not "never printed"
        note = [n for n in r.notes if "KV offload to host memory" in n]
        assert len(note) == 1 and "not priced" in note[0]
        assert dep.model_dump() == dep0.model_dump()  # the deployment priced is the one without them


def test_memory_over_the_limit_names_the_seeds_actions_and_the_engines_batch_cap(tmp_path):
    assert {n: batch_cap_argument(load_framework(n)) for n in ("vllm", "sglang", "trtllm", "cann-recipes")} == \
        {"vllm": "--max-num-seqs", "sglang": "--max-running-requests", "trtllm": "--max_batch_size",
         "cann-recipes": "batch_size"}
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump({
        "model": "llama-3.1-70b", "hardware": "h200_sxm", "world_size": 8, "framework": "sglang",
        "parallel_config": {k: 8 for k in ("attn_tp_size", "dense_tp_size", "embed_tp_size", "lmhead_tp_size")},
        "workload": {"phase": "decode", "batch": 120, "seq_len": 32768}}))
    out = json.loads(CliRunner().invoke(main, ["check", str(path), "--format", "json"]).stdout)
    over = [v for v in out["violations"]["B"] if v.startswith("memory per rank")]
    assert over and over[0].endswith("(seed 3.4: increase the parallelism (more cards, or a KV split: kvp_size / "
                                     "cp_size) or reduce the batch (--max-running-requests))")
