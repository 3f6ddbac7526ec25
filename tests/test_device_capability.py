"""The device's capability family (Hardware.capability): data in each device file, read by rules as on_<capability>
flags (rule_env) and by the engine facts limited to one, vLLM's decode indexer logits bound on SM100 among them."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from solver.estimate.activations import activation_peak_terms, decode_logits_bound
from solver.estimate.compute import factors_for
from solver.estimate.memory import memory_per_rank
from solver.estimate.memory_options import MemoryOptions, device_options, engine_options, framework_options
from solver.specs.framework import load_framework
from solver.specs.profile_facts import IndexerDecodeBound
from solver.specs.hardware import CAPABILITY_PLATFORM, Hardware
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision
from solver.specs.profile_rules import Rule
from solver.specs.rule_env import device_facts, rule_env, unstated_platform_note

GIB = 1024 ** 3
CTX = 131072  # a 128K context
SEQS = 8192.0  # decoding sequences: 8192 x 131072 x 4 B = 4 GiB of indexer logits, twice vLLM's decode bound

def _tp8(**extra: int) -> ParallelConfig:
    return ParallelConfig(world_size=8, attn_tp_size=8, dense_tp_size=8, moe_tp_size=8, embed_tp_size=8,
                          lmhead_tp_size=8, **extra)

def test_catalog_devices_state_their_capability_family_with_a_source():
    """CUDA families are the compute capability's major version: B300's 10.3 is sm100, L40S's 8.9 is sm80."""
    want = {"a100_sxm": "sm80", "l40s": "sm80", "h100_sxm": "sm90", "h200_sxm": "sm90", "b200_sxm": "sm100",
            "b300_sxm": "sm100", "gb300": "sm100", "rtx_pro_6000_blackwell": "sm120", "mi300x": "gfx942",
            "mi355x": "gfx950", "atlas_a2": "ascend910b", "atlas_a3": "ascend910c"}
    for name, capability in want.items():
        hw = load_hardware(name)
        assert hw.capability == capability, name
        assert hw.sources.get("capability"), name

def test_a_capability_off_its_platform_is_refused():
    """gfx942 is a ROCm target: a device file saying it on cuda names the field and both platforms."""
    data = load_hardware("mi300x").model_dump()
    data.update(platform="cuda")
    with pytest.raises(ValueError, match="capability gfx942 runs on platform rocm, the file states cuda"):
        Hardware.model_validate(data, strict=False)
    assert CAPABILITY_PLATFORM["gfx942"] == "rocm"

def test_rules_read_the_capability_as_on_flags():
    """B300 (10.3) reads on_sm100 true and on_sm90 false, as a rule's environment gives them."""
    env = rule_env({}, world=8, batch=1, mtp=0, num_attention_heads=128, num_key_value_heads=128,
                   n_routed_experts=256, has_mla=True, has_dsa=True, o_proj_dim=16384,
                   **device_facts(load_hardware("b300_sxm")))
    assert env["on_sm100"] is True and env["on_sm90"] is False and env["on_cuda"] is True

def test_a_rule_may_read_a_capability_flag():
    """A profile rule limited to SM100 compiles (on_sm100 is a rule name) and holds only there."""
    rule = Rule(id="C.sm100_only", when="on_sm100", require="attn_tp_size <= 4", message="m", source="s")
    assert rule.names == {"on_sm100", "attn_tp_size"}

def test_an_unstated_capability_notes_the_rules_it_leaves_unapplied():
    """A user's device with a platform but no capability reads every on_<capability> false: the note names the
    rule limited to one and the field that would apply it."""
    fw = load_framework("vllm")
    rule = Rule(id="C.sm100_only", when="on_sm100", require="attn_tp_size <= 4", message="m", source="s")
    fw = fw.model_copy(update={"rules": [*fw.rules, rule]})
    hw = load_hardware("b200_sxm").model_copy(update={"capability": None})
    note = unstated_platform_note(hw, fw)
    assert note is not None and "states no capability" in note and "C.sm100_only" in note
    assert "set `capability:`" in note
    assert unstated_platform_note(load_hardware("b200_sxm"), fw) is None

def test_vllm_bounds_decode_logits_on_sm100_in_the_planners_options():
    """vLLM 0.34.0 chunks decode logits to 2 GiB on SM100 (no DCP / PCP, top-k 2048): DeepSeek-V3.2 decoding
    8,192 sequences at 128K holds 8192 x 131072 x 4 = 4,294,967,296 bytes of logits on H200 (SM90), and pieces
    of 2 GiB / (131072 x 4 B) = 4096 rows = 2,147,483,648 bytes on B200: 2,147,483,648 bytes less."""
    fw, m = load_framework("vllm"), load_model("deepseek-v3.2")
    held = {}
    for name in ("h200_sxm", "b200_sxm"):
        hw = load_hardware(name)
        opts = engine_options(MemoryOptions(prefill_chunk=16), factors_for(hw, fw.efficiency_for(hw)))
        held[name] = activation_peak_terms(m, _tp8(), opts, CTX, SEQS)["attn_tp_size"]
    assert held["h200_sxm"] - held["b200_sxm"] == SEQS * CTX * 4 - 2 * GIB == 2_147_483_648

def test_memory_per_rank_bounds_decode_logits_by_its_device():
    """memory_per_rank gives the options of a profile (which know no device) its device's flags: the same
    2,147,483,648 bytes less on B200 than on H200 as the planner's options (8192 x 131072 x 4 - 2 GiB)."""
    fw, m = load_framework("vllm"), load_model("deepseek-v3.2")
    opts = framework_options(fw, MemoryOptions(prefill_chunk=16))
    act = {}
    for name in ("h200_sxm", "b200_sxm"):
        hw = load_hardware(name)
        act[name] = memory_per_rank(m, hw, _tp8(), resolve_precision(m, hw), SEQS, CTX, opts).activation_bytes
    assert act["h200_sxm"] - act["b200_sxm"] == 2_147_483_648

def test_the_decode_bound_needs_a_whole_context_rank():
    """With DCP (kvp_size 2) or PCP (cp_size 2) vLLM does not chunk the decode logits: no bound on B200."""
    fw, m, hw = load_framework("vllm"), load_model("deepseek-v3.2"), load_hardware("b200_sxm")
    opts = device_options(framework_options(fw), hw)
    assert decode_logits_bound(m, _tp8(), opts) == 2 * GIB
    assert decode_logits_bound(m, _tp8().model_copy(update={"kvp_size": 2}), opts) is None
    assert decode_logits_bound(m, _tp8().model_copy(update={"cp_size": 2}), opts) is None

def test_the_decode_bound_needs_a_topk_its_kernel_takes():
    """vLLM chunks only top-k 512, 1024 or 2048: an indexer of top-k 4096 keeps its whole decode matrix."""
    opts = device_options(framework_options(load_framework("vllm")), load_hardware("b200_sxm"))

    def model(topk: int) -> SimpleNamespace:
        block = SimpleNamespace(indexer=SimpleNamespace(topk=topk))
        return SimpleNamespace(layer_groups=[(SimpleNamespace(blocks=[block]), 61)])

    assert decode_logits_bound(model(512), _tp8(), opts) == 2 * GIB  # type: ignore[arg-type]
    assert decode_logits_bound(model(4096), _tp8(), opts) is None  # type: ignore[arg-type]

def test_a_decode_bound_reads_only_its_names():
    """A bound's condition reading a knob it cannot see (attn_tp_size) is refused, naming what it may read."""
    with pytest.raises(ValueError, match="when: reads attn_tp_size"):
        IndexerDecodeBound(max_bytes=1.0, when="attn_tp_size == 1")
