"""DeepSeek-V3.2 on Atlas A3 at scale, as the Ascend team asks it: one test per rule. Figures hand-computed from
DeepSeek-V3.2's config (256 routed experts of 3 x 7168 x 2048 weights, 58 MoE layers) and the A3 file (bf16 and
int8 rates, int4 weight-only, no fp8)."""
from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from solver.errors import InputError
from solver.estimate.memory_options import MemoryOptions
from solver.estimate.params import count_params
from solver.estimate.serving import Workload
from solver.estimate.weights import module_weight_bytes
from solver.rank.review import review
from solver.rank.reason import decision_tree_reason
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision
from solver.specs.reference import list_references, deployment_data
from solver.specs.scenario import Scenario


@pytest.fixture(scope="module")
def v32():
    return load_model("deepseek-v3.2")


@pytest.fixture(scope="module")
def a3():
    return load_hardware("atlas_a3")


def _v32_d16():
    return next(r for r in list_references() if r.id == "v32-d16")


def test_a_w4a8c8_reference_runs_w4a8_with_an_int8_kv_cache(v32, a3):
    """references/v32-d16.yaml is W4A8C8 (weights int4, activations int8, KV int8): its GEMMs run at A3's int8
    rate on int4 weights, not weight-only W4A16 at bf16; its KV holds 1 byte an element (int: the element bytes,
    beside any per-head scales the int8 format carries, which an MLA latent does not read)."""
    prec = _v32_d16().precision(v32, a3)
    assert prec.fmt("experts").name == "int4"
    assert prec.gemm_dtype("experts") == "int8"
    assert prec.gemm_dtype("attention") == "int8"
    assert int(prec.kv_bytes) == 1


def test_check_reads_a_w4a8c8_reference_as_w4a8():
    """`check references/v32-d16.yaml` reads the reference as a deployment file: its weights are spelled w4a8, so
    the file carries the activations the reference names."""
    assert deployment_data(_v32_d16())["quant"] == {"weights": "w4a8", "kv_cache": "int8"}


def test_w4afp8_on_a_device_without_fp8_is_refused_naming_the_flag(v32, a3):
    """A3 has bf16 and int8 rates only: w4afp8 names fp8 activations it cannot compute; the one line names the
    flag the user gave (--weight-dtype), not a flag the command does not have."""
    with pytest.raises(InputError) as err:
        resolve_precision(v32, a3, "w4afp8")
    assert err.value.field == "--weight-dtype"
    assert "no fp8" in str(err.value)


def test_w4a8_is_how_the_help_asks_for_the_w4a8_recipe():
    from solver.cli.main import main as cli

    out = CliRunner().invoke(cli, ["solve", "--help"], terminal_width=200).output
    assert "w4a8 (int4 weights, 8-bit activations" in " ".join(out.split())


def _vllm_ascend_placement(n_expert: int, ep_size: int, n_redundant: int) -> list[np.ndarray]:
    """vllm-ascend 0.23.0.post1 eplb/core/eplb_utils.py generate_global_placement, the loop as written there."""
    groups = np.array_split(np.arange(n_expert), ep_size)
    for i in range(n_redundant):
        j = i % ep_size + 1
        if len(groups[-j]) == 0:
            groups[-j] = np.append(groups[-j], j)
        else:
            groups[-j] = np.append(groups[-j], (groups[-j][-1] + 1) % n_expert)
    return groups


def test_vllm_ascend_places_copies_only_below_twice_the_experts(v32, a3):
    """256 experts on EP768 need 512 copies (1 a rank); the built-in placement gives the 512 ranks with no expert
    ids 1..512, and expert 256 and up do not exist (expert_map[local_placement] fails at start-up). EP384 with 128
    copies places ids 1..128: it starts. C.eplb_placement_within_experts says so."""
    assert max(int(g.max()) for g in _vllm_ascend_placement(256, 768, 512)) == 512
    assert max(int(g.max()) for g in _vllm_ascend_placement(256, 384, 128)) == 255
    fw = load_framework("vllm-ascend")
    prec = resolve_precision(v32, a3, "int8")
    wl = Workload("decode", batch=768, seq_len=4352)
    bad = review(v32, a3, fw, ParallelConfig(world_size=768, redundant_experts=512), prec, wl)
    assert any("EPLB placement" in v for v in bad.violations["C"])
    ok = review(v32, a3, fw, ParallelConfig(world_size=384, redundant_experts=128), prec, wl)
    assert not any("EPLB placement" in v for v in ok.violations["C"])


def test_memory_holds_one_expert_a_rank_at_ep768(v32, a3):
    """EP768 with 512 copies: (256 + 512) / 768 = 1 expert a rank, 58 layers x 3 x 7168 x 2048 = 2.554e9 params,
    int8 (1 byte, plus its scales): about 2.55 GB, against 256 / 768 of the experts without copies."""
    prec = resolve_precision(v32, a3, "int8")
    routed = next(m for m in count_params(v32).modules if m.name == "routed_experts")
    one = routed.params / 256 * prec.fmt("experts").bytes_per_param
    held = module_weight_bytes(routed, v32, ParallelConfig(world_size=768, redundant_experts=512), prec,
                               MemoryOptions())
    assert held == pytest.approx(one)
    assert routed.params / 256 == pytest.approx(58 * 3 * 7168 * 2048, rel=0.02)


def test_the_reason_says_why_the_copies_are_there(v32, a3):
    """EP768 on 256 experts: the reason names the 512 copies, that EP768 divides 768 slots, and what they cost."""
    pc = ParallelConfig(world_size=768, redundant_experts=512)
    reason = decision_tree_reason(pc, v32, Scenario(kind="balanced", isl=4096, osl=256), a3)
    assert "1 expert per rank; 256 experts + 512 redundant copies, so that EP768 divides them" in reason
    plain = decision_tree_reason(ParallelConfig(world_size=64), v32, Scenario(kind="balanced", isl=4096, osl=256), a3)
    assert "(4 experts per rank)" in plain
