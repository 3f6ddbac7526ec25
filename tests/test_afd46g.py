"""Attention-FFN disaggregation (estimate.afd, specs.afd): the ping-pong step, each side's memory, the transfers,
the refusals, and `check` of the verified lc-afd deployment as it ran."""
from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from solver.catalog import catalog_dir
from solver.cli.main import main
from solver.estimate.afd import SideTimes, afd_makespan, afd_memory, copies_per_token, ffn_modules, hand_offs
from solver.specs.config.read import parse_model_config
from solver.specs.hardware_catalog import load_hardware
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision

LC_AFD = str(catalog_dir("references") / "lc-afd.yaml")


def _tiny():
    """Qwen3-30B-A3B's config shrunk: 2 layers of (attention, MoE), hidden 64, 4 heads / 2 KV heads of 16,
    8 experts of 32 (top 2), vocabulary 1000."""
    cfg = json.loads((catalog_dir("models") / "Qwen--Qwen3-30B-A3B.json").read_text())
    cfg.update(hidden_size=64, num_hidden_layers=2, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
               num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=1000, intermediate_size=128)
    return parse_model_config(cfg, "tiny")


def _sides(a, f, t=0.0, embed=0.0, head=0.0):
    return SideTimes(attention_s=a, ffn_s=f, to_ffn_s=t, to_attention_s=t, embed_s=embed, head_s=head)


def test_slower_side_paces_the_step_and_slack_hides_the_transfer():
    """A = 1, F = 3, T = 0.5 each way, 4 hand-offs, 2 micro-batches: per hand-off P = max(2A, 2F, A+F+2T) =
    max(2, 6, 5) = 6, so the FFN side never idles once it starts at A + T_af = 1.5; it works 2 x 4 x 3 = 24,
    ending at 25.5, and the last result returns at 26 = 4 x 6 + A + T_af + T_fa. Without transfers the same
    step is 1 + 24 = 25: only the fill's two transfers are exposed (slack |A - F| = 2 >= 2T hides the rest)."""
    assert afd_makespan(_sides(1, 3, 0.5), 4, 2) == pytest.approx(26)
    assert afd_makespan(_sides(1, 3), 4, 2) == pytest.approx(25)


def test_equal_sides_expose_the_transfer_each_hand_off():
    """A = F = 1, T = 0.5, 3 hand-offs, 2 micro-batches: P = max(2, 2, A + F + 2T = 3) = 3 (no slack to hide a
    transfer: 2T - |A - F| = 1 exposed per hand-off); step = 3 x 3 + A (the second micro-batch's offset) = 10."""
    assert afd_makespan(_sides(1, 1, 0.5), 3, 2) == pytest.approx(10)


def test_embedding_leads_and_lm_head_trails_on_the_attention_side():
    """A = F = 1, no transfer, 1 hand-off, 2 micro-batches, embedding 0.5 and LM head 0.25 per micro-batch:
    attention (embedding first) of micro-batch 0 runs [0, 1.5], of 1 [1.5, 3]; FFN [1.5, 2.5] and [3, 4]; the
    LM head of 0 [3, 3.25] (after the attention side frees), of 1 [4, 4.25]."""
    assert afd_makespan(_sides(1, 1, embed=0.5, head=0.25), 1, 2) == pytest.approx(4.25)


def test_one_micro_batch_serialises_the_sides():
    """1 micro-batch: nothing overlaps, step = H x (A + T + F + T) = 2 x (1 + 0.5 + 3 + 0.5) = 10."""
    assert afd_makespan(_sides(1, 3, 0.5), 2, 1) == pytest.approx(10)


def test_ffn_side_holds_the_ffn_blocks_and_the_router_stays_with_the_sender():
    """The tiny model's FFN blocks are its MoEs: the routed experts go to the FFN side, the router (which the
    sending attention rank needs to address each token) stays; one hand-off per attention layer (2)."""
    m = _tiny()
    assert ffn_modules(m) == frozenset({"routed_experts"})
    assert hand_offs(m) == 2


def test_memory_per_side():
    """World 8 = 4 attention + 4 FFN ranks, bf16, batch 8 at 100 tokens. FFN rank: 8 experts / EP 4 = 2 experts x
    3 x 64 x 32 x 2 B x 2 layers = 49,152 B, no KV. Attention rank: 8 / 4 replicas = 2 sequences x 100 tokens x
    (K + V: 2 x 2 heads x 16 x 2 B) x 2 layers = 51,200 B of KV, and no expert weights."""
    m = _tiny()
    hw = load_hardware("atlas_a3")
    mem = afd_memory(m, hw, ParallelConfig(world_size=8), resolve_precision(m, hw, None, None, None), 8, 100)
    assert mem.ffn.weights_bytes == {"routed_experts": 49_152}
    assert mem.ffn.kv_cache_bytes == 0
    assert mem.attention.kv_cache_bytes == 51_200
    assert "routed_experts" not in mem.attention.weights_bytes and "router" in mem.attention.weights_bytes


def test_activation_terms_split_by_side_and_lose_none():
    """Each side keeps the activation terms of its own blocks (the FFN side the MoE's, sized by moe_tp_size; the
    attention side the mixer's and the logits'): the larger of the two is the half-world rank's whole peak."""
    from solver.estimate.activations import activation_peak_of
    from solver.estimate.memory import memory_per_rank
    from solver.estimate.memory_options import MemoryOptions, device_options

    m = _tiny()
    hw = load_hardware("atlas_a3")
    prec = resolve_precision(m, hw, None, None, None)
    mem = afd_memory(m, hw, ParallelConfig(world_size=8), prec, 8, 100)
    half = memory_per_rank(m, hw, ParallelConfig(world_size=4), prec, 8, 100)
    opts = device_options(MemoryOptions(), hw)
    assert mem.ffn.activation_bytes == activation_peak_of(m, ParallelConfig(world_size=4), opts, 100, 2,
                                                          ("moe_tp_size",))
    assert max(mem.attention.activation_bytes, mem.ffn.activation_bytes) == half.activation_bytes


def test_bytes_per_token_each_way():
    """Per token per step: 2 MoE layers x top 2 x MoE TP 1 x width 64 x 2 B (bf16 activations) = 512 B to the
    FFN side and 512 B back; with 8-bit activations the send is 1 B a value: 256 B, the return stays bf16."""
    m = _tiny()
    assert copies_per_token(m, ParallelConfig(world_size=4), False) == (512, 512)
    assert copies_per_token(m, ParallelConfig(world_size=4), True) == (256, 512)


def _check(tmp_path, **change):
    """`check` of lc-afd as a deployment file with `change` made (parallel_config: the knobs it changes)."""
    from solver.specs.reference import Reference, deployment_data

    dep = deployment_data(Reference(**yaml.safe_load(open(LC_AFD))))
    knobs = change.pop("parallel_config", {})
    dep = {**dep, **change, "parallel_config": {**dep["parallel_config"], **knobs}}
    path = tmp_path / "afd.yaml"
    path.write_text(yaml.safe_dump(dep))
    return CliRunner().invoke(main, ["check", str(path), "--format", "json"])


def test_check_estimates_lc_afd_as_it_ran():
    """`check references/lc-afd.yaml`: valid, a decode TPOT, throughput per rank over all 128 ranks (both
    halves), and the notes give each side's memory and the step's parts."""
    r = CliRunner().invoke(main, ["check", LC_AFD, "--format", "json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    d = json.loads(r.stdout)
    e = d["estimation"]
    assert d["valid"] and e["memory_feasible"] and e["tpot_ms"] > 0
    assert e["output_tokens_per_s_per_rank"] == pytest.approx(e["output_tokens_per_s"] / 128, rel=1e-3)
    assert e["output_tokens_per_s"] == pytest.approx(256 / (e["tpot_ms"] / 1e3), rel=1e-3)
    assert any("64 attention ranks + 64 FFN ranks" in n for n in d["notes"])
    assert any(n.startswith("AFD decode step") for n in d["notes"])


def test_afd_on_a_framework_without_it_is_refused(tmp_path):
    r = _check(tmp_path, framework="vllm-ascend")
    assert r.exit_code == 2
    assert "afd: framework vllm-ascend does not run attention-FFN disaggregation" in r.stderr


def test_tp_not_dividing_half_the_world_is_refused(tmp_path):
    """lmhead_tp_size 128 divides the world (128) but not a half (64): cann-recipes' AFD rule."""
    r = _check(tmp_path, parallel_config={"lmhead_tp_size": 128})
    assert r.exit_code == 2
    assert ("parallel_config.lmhead_tp_size: [C.afd_tp_divides_half_world] with attention-FFN disaggregation every "
            "TP size must divide half the world size: lmhead_tp_size 128 of 64") in r.stderr


def test_afd_prefill_is_refused(tmp_path):
    r = _check(tmp_path, workload={"phase": "prefill", "batch": 64, "seq_len": 4096})
    assert r.exit_code == 2
    assert "afd: attention-FFN disaggregation is estimated for a decode workload only" in r.stderr


def test_afd_launch_is_refused(tmp_path):
    r = CliRunner().invoke(main, ["launch", LC_AFD, "--engine", "cann-recipes"])
    assert r.exit_code == 2
    assert "afd: launch does not write attention-FFN disaggregated commands" in r.stderr


ESTIMATE = ["estimate", "longcat-flash", "--hardware", "atlas_a3", "--cards", "128", "--framework", "cann-recipes",
            "--dense-tp", "8", "--lmhead-tp", "16", "--oproj-tp", "8", "--phase", "decode", "--batch", "256",
            "--isl", "4608", "--osl", "128", "--weight-dtype", "int8", "--kv-dtype", "bf16"]


def test_estimate_afd_gives_checks_estimate_of_the_same_deployment():
    """`estimate --afd` with lc-afd's knobs and workload prints what `check references/lc-afd.yaml` estimates:
    the same TPOT, over all 128 cards, its knobs one half's (attention DP and MoE EP 64)."""
    r = CliRunner().invoke(main, [*ESTIMATE, "--afd", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    c = json.loads(CliRunner().invoke(main, ["check", LC_AFD, "--format", "json"]).stdout)["estimation"]
    assert d["afd"] and d["cards"] == 128
    assert (d["parallel_config"]["attn_dp_size"], d["parallel_config"]["moe_ep_size"]) == (64, 64)
    assert d["tpot_ms"] == pytest.approx(c["tpot_ms"], rel=1e-4)


def test_estimate_afd_refusal_names_the_flag():
    argv = [*ESTIMATE, "--afd"]
    argv[argv.index("--lmhead-tp") + 1] = "128"  # in place: an option given twice is refused (stop 48)
    r = CliRunner().invoke(main, argv)
    assert r.exit_code == 2
    assert "--lmhead-tp: [C.afd_tp_divides_half_world]" in r.stderr
