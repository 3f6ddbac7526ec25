"""A user's own device (hardware YAML) and engine (framework profile YAML), written as docs/bring-your-own.md says:
each rule of reading them, with hand-computed expectations."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from solver.cli.main import main
from solver.errors import InputError
from solver.specs.framework import FrameworkProfile, load_framework
from solver.specs.hardware import EPKernel, Efficiency, Hardware, Tier
from solver.specs.hardware_catalog import load_hardware
from solver.specs.launch_spec import DisaggLaunch, Feature, FormatRequire, LaunchArg, LaunchDocument, LaunchSpec, PairCheck
from solver.specs.profile_facts import MaxContext
from solver.specs.profile_rules import Rule
from solver.specs.profile_serving import (FrameworkEfficiency, FrameworkScheduler, FrameworkServing,
                                          GraphBatchRange, TokenBudgetTier)

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "bring-your-own.md"
SCHEMAS = (Hardware, Tier, Efficiency, EPKernel, FrameworkProfile, Feature, Rule, FrameworkEfficiency,
           FrameworkScheduler, TokenBudgetTier, FrameworkServing, GraphBatchRange, LaunchSpec, LaunchArg,
           FormatRequire, LaunchDocument, DisaggLaunch, PairCheck, MaxContext)

# a cloud instance of 4 PCIe cards per node, 48 GiB and 0.864 TB/s each: every required field, written by hand
PCIE4 = {
    "name": "my_pcie4", "description": "4 PCIe accelerators per node", "vendor": "nvidia", "platform": "cuda",
    "memory_bytes": 48 * 2**30, "hbm_bandwidth_Bps": 0.864e12, "peak_flops": {"bf16": 362e12, "fp8": 733e12},
    "ranks_per_node": 4, "scale_up_domain": 4,
    "tiers": {"intra_node": {"bandwidth_Bps": 32e9, "latency_s": 15e-6, "efficiency": 0.8, "span_ranks": 4,
                             "peer_access": False},
              "inter_node": {"bandwidth_Bps": 12.5e9, "latency_s": 25e-6, "efficiency": 0.8, "span_ranks": 1024}},
    "efficiency": {"gemm": 0.7, "attention": 0.6, "hbm": 0.8, "kernel_overhead_s": 4e-6},
    "reserved_bytes": 3758096384,
}


def _write(tmp_path: Path, name: str, data: dict) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def _vllm_copy(**edits: object) -> dict:
    data = yaml.safe_load((ROOT / "solver" / "frameworks" / "vllm.yaml").read_text())
    data.update(edits)
    return data


def _documented_fields() -> dict[str, set[str]]:
    """Each schema section of the doc (a heading naming the class as `(`Class`)`) -> the fields its table rows name."""
    out: dict[str, set[str]] = {}
    current = None
    for line in DOC.read_text().splitlines():
        head = re.match(r"^#+ .*\(`(\w+)`\)", line)
        if head:
            current = head.group(1)
            out[current] = set()
        elif current and (row := re.match(r"^\| `(\w+)` \|", line)):
            out[current].add(row.group(1))
    return out


def test_every_schema_field_is_documented_and_every_documented_field_is_read():
    """The doc's table for each model lists exactly the model's fields: one it lacks is a field a user cannot learn
    of, one it adds is a field the code would refuse."""
    documented = _documented_fields()
    for model in SCHEMAS:
        assert documented.get(model.__name__) == set(model.model_fields), model.__name__


def _decode_ms(tmp_path: Path, hbm_Bps: float) -> float:
    path = _write(tmp_path, f"dev_{hbm_Bps:g}.yaml", {**PCIE4, "name": f"dev_{int(hbm_Bps / 1e9)}",
                                                       "hbm_bandwidth_Bps": hbm_Bps})
    res = CliRunner().invoke(main, ["estimate", "qwen3-8b", "--hardware", path, "--cards", "1", "--phase", "decode",
                                    "--batch", "1", "--seq-len", "2048", "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["tpot_ms"]


def test_a_memory_bound_decode_step_scales_with_one_over_hbm_bandwidth(tmp_path):
    """Decode at batch 1 reads every weight but the embedding table (a lookup) and the KV once, so
    t(B) = bytes / (B x 0.8) + fixed kernel costs. qwen3-8b: per layer q 4096^2 + k, v 2 x 4096 x 1024 + o 4096^2 +
    MLP 3 x 4096 x 12288 = 192.9M parameters, x 36 layers = 6.945e9, + lm_head 151,936 x 4096 = 0.622e9: 7.567e9 x
    2 bytes = 15.13 GB; KV 2048 tokens x 36 layers x 2 x 1024 x 2 bytes = 0.30 GB; 15.44 GB in all. So
    t(B) - t(2B) = 15.44e9 / (2 x 0.864e12 x 0.8) = 11.17 ms, and that difference halves again from 2B to 4B."""
    b = 0.864e12
    t1, t2, t4 = (_decode_ms(tmp_path, b * k) for k in (1, 2, 4))
    assert (t1 - t2) / (t2 - t4) == pytest.approx(2.0, rel=1e-3)
    assert t1 - t2 == pytest.approx(15.44e9 / (2 * b * 0.8) * 1e3, rel=0.01)


@pytest.mark.parametrize("name", ["", "my accel", "a=b", "x,y"])
def test_a_device_name_the_outputs_and_per_hardware_options_cannot_carry_is_refused(tmp_path, name):
    path = _write(tmp_path, "dev.yaml", {**PCIE4, "name": name})
    with pytest.raises(InputError, match=r"dev\.yaml: name: a device name of letters"):
        load_hardware(path)


def test_a_user_file_with_a_catalog_name_and_other_figures_is_refused(tmp_path):
    """Factors are fitted per device name: h100_sxm.yaml with its 3.35e12 B/s doubled would carry the H100's
    calibration; the same file unchanged is the catalog device."""
    shipped = yaml.safe_load((ROOT / "hardware" / "h100_sxm.yaml").read_text())
    same = _write(tmp_path, "same.yaml", shipped)
    assert load_hardware(same) == load_hardware("h100_sxm")
    edited = _write(tmp_path, "edited.yaml", {**shipped, "hbm_bandwidth_Bps": 6.7e12})
    with pytest.raises(InputError, match=r"edited\.yaml: name: h100_sxm is the catalog's device.*hbm_bandwidth_Bps"):
        load_hardware(edited)
    renamed = _write(tmp_path, "renamed.yaml", {**shipped, "name": "my_h100_2x", "hbm_bandwidth_Bps": 6.7e12})
    assert load_hardware(renamed).hbm_bandwidth_Bps == 6.7e12


def test_a_renamed_device_variant_carries_the_catalog_devices_calibration_only_with_fitted_as(tmp_path):
    """Fitted factors are keyed by device name: vllm x h100_sxm has its own fit. A copy of h100_sxm.yaml with 1.5x
    its memory under a name of its own takes the nvidia devices' shared factors; with `fitted_as: h100_sxm` it
    takes the H100's own, as the catalog device does (memory enters no fitted factor); a fitted_as the catalog lacks
    is refused."""
    shipped = yaml.safe_load((ROOT / "hardware" / "h100_sxm.yaml").read_text())
    roomy = {**shipped, "name": "my_h100_120g", "memory_bytes": int(shipped["memory_bytes"] * 1.5)}
    vllm = load_framework("vllm")
    own = vllm.efficiency_for(load_hardware("h100_sxm"))
    carried = load_hardware(_write(tmp_path, "carried.yaml", {**roomy, "fitted_as": "h100_sxm"}))
    plain = load_hardware(_write(tmp_path, "plain.yaml", roomy))
    assert carried.fitted_name == "h100_sxm" and plain.fitted_name == "my_h100_120g"
    assert vllm.efficiency_for(carried) == own
    assert vllm.efficiency_for(plain) != own
    with pytest.raises(InputError, match=r"bad\.yaml: fitted_as: 'h100' is no catalog device"):
        load_hardware(_write(tmp_path, "bad.yaml", {**roomy, "fitted_as": "h100"}))


def test_a_device_fitted_as_a_catalog_name_spelt_otherwise_carries_its_calibration(tmp_path):
    """`fitted_as: H100-SXM` names the catalog's h100_sxm as `--hardware H100-SXM` does, so it carries vllm x
    h100_sxm's fit, not the shared factors a name the fit never saw would get."""
    shipped = yaml.safe_load((ROOT / "hardware" / "h100_sxm.yaml").read_text())
    roomy = {**shipped, "name": "my_h100_120g", "memory_bytes": int(shipped["memory_bytes"] * 1.5)}
    carried = load_hardware(_write(tmp_path, "carried.yaml", {**roomy, "fitted_as": "H100-SXM"}))
    assert carried.fitted_name == "h100_sxm"
    vllm = load_framework("vllm")
    assert vllm.efficiency_for(carried) == vllm.efficiency_for(load_hardware("h100_sxm"))


def test_a_vendor_that_misspells_a_catalog_vendor_is_refused_and_a_new_vendor_is_taken(tmp_path):
    with pytest.raises(InputError, match=r"vendor: 'nvdia' is no catalog vendor; did you mean nvidia\?"):
        load_hardware(_write(tmp_path, "typo.yaml", {**PCIE4, "vendor": "nvdia"}))
    assert load_hardware(_write(tmp_path, "gaudi.yaml", {**PCIE4, "name": "my_gaudi", "vendor": "intel"})).vendor \
        == "intel"


def test_a_profile_vendor_that_misspells_a_catalog_vendor_is_refused(tmp_path):
    path = _write(tmp_path, "fw.yaml", _vllm_copy(name="my-vllm", vendors=["nvidia", "amdd"]))
    with pytest.raises(InputError, match=r"fw\.yaml: vendors\.1: 'amdd' is no catalog vendor; did you mean amd\?"):
        load_framework(path)


def test_a_renamed_engine_copy_carries_the_engines_calibration_only_with_fitted_as(tmp_path):
    """Fitted factors are keyed by profile name: vllm x h100_sxm has its own fit, `my-vllm` none."""
    vllm = load_framework("vllm").efficiency_for(load_hardware("h100_sxm"))
    h100 = load_hardware("h100_sxm")
    fork = load_framework(_write(tmp_path, "fork.yaml", _vllm_copy(name="my-vllm", fitted_as="vllm")))
    assert fork.efficiency_for(h100) == vllm
    plain = load_framework(_write(tmp_path, "plain.yaml", _vllm_copy(name="my-vllm")))
    assert plain.efficiency_for(h100) != vllm
    with pytest.raises(InputError, match=r"fitted_as: 'vlm' has no fitted factors; fitted engines: .*vllm"):
        load_framework(_write(tmp_path, "bad.yaml", _vllm_copy(name="my-vllm", fitted_as="vlm")))


def test_a_copied_engine_with_another_token_budget_changes_the_budget_and_the_pool_it_leaves(tmp_path):
    """vLLM's budget on an 80 GiB card is its 70 GiB tier's 8192; the fork's tier says 16384. The efficiency
    figures differ in token_budget alone, and the command in --max-num-batched-tokens and in the KV pool the
    larger prefill chunk's activations leave (--kv-cache-memory-bytes, smaller) alone."""
    scheduler = {**_vllm_copy()["scheduler"], "token_budget_tiers": [{"min_memory_gib": 70, "tokens": 16384}]}
    path = _write(tmp_path, "fork.yaml", _vllm_copy(name="my-vllm", fitted_as="vllm", scheduler=scheduler))
    h100 = load_hardware("h100_sxm")
    mine, theirs = load_framework(path).efficiency_for(h100), load_framework("vllm").efficiency_for(h100)
    assert {k for k in mine if mine[k] != theirs[k]} == {"token_budget"}
    assert (mine["token_budget"], theirs["token_budget"]) == (16384, 8192)
    deployment = _write(tmp_path, "dep.yaml", {
        "model": "qwen3-8b", "hardware": "h100_sxm", "framework": "vllm", "world_size": 2, "attn_tp_size": 2,
        "dense_tp_size": 2, "embed_tp_size": 2, "lmhead_tp_size": 2,
        "workload": {"phase": "decode", "batch": 32, "seq_len": 4608}})
    commands = []
    for engine in ("vllm", path):
        res = CliRunner().invoke(main, ["launch", deployment, "--engine", engine])
        assert res.exit_code == 0, res.output
        commands.append([line for line in res.stdout.splitlines() if line.startswith("vllm serve")][0].split())
    changed = [(a, b) for a, b in zip(*commands) if a != b]
    assert changed[0] == ("8192", "16384") and len(changed) == 2 and int(changed[1][1]) < int(changed[1][0])
    assert commands[0][commands[0].index("8192") - 1] == "--max-num-batched-tokens"
    assert commands[0][commands[0].index(changed[1][0]) - 1] == "--kv-cache-memory-bytes"


def test_two_budget_tiers_at_one_memory_threshold_are_refused(tmp_path):
    scheduler = {"token_budget": 2048, "token_budget_tiers": [{"min_memory_gib": 70, "tokens": 8192},
                                                              {"min_memory_gib": 70, "tokens": 4096}]}
    with pytest.raises(InputError, match=r"scheduler\.token_budget_tiers\.1\.min_memory_gib: 70 GiB given twice"):
        load_framework(_write(tmp_path, "fw.yaml", _vllm_copy(name="my-vllm", scheduler=scheduler)))


@pytest.mark.parametrize("word", ["A100", ""])
def test_a_device_word_that_the_lower_cased_name_never_or_always_matches_is_refused(tmp_path, word):
    scheduler = {"token_budget": 2048, "token_budget_by_device_name": {word: 2048}}
    with pytest.raises(InputError, match=r"scheduler\.token_budget_by_device_name\..*non-empty lower-case word"):
        load_framework(_write(tmp_path, "fw.yaml", _vllm_copy(name="my-vllm", scheduler=scheduler)))


def test_the_pipeline_parallel_feature_agrees_with_the_pp_size_knob(tmp_path):
    """The planner plans stages through pp_size alone: a fork that drops the knob but keeps the feature
    supported would say PP runs where it is never planned."""
    knobs = [k for k in _vllm_copy()["knobs"] if k != "pp_size"]
    with pytest.raises(InputError, match=r"features\.pipeline_parallel\.supported: true, but pp_size is not among"):
        load_framework(_write(tmp_path, "fw.yaml", _vllm_copy(name="my-vllm", knobs=knobs)))


def test_a_one_shot_limit_past_the_custom_all_reduce_range_is_refused(tmp_path):
    """A vLLM build without the custom all-reduce: both byte limits 0 and the per-ranks map left as vLLM's
    ({2: 8 MiB, ...}) would keep a one-shot limit no kernel reads; emptied, the profile loads."""
    serving = {**_vllm_copy()["serving"], "allreduce_oneshot_max_bytes": 0, "allreduce_custom_max_bytes": 0}
    with pytest.raises(InputError, match=r"allreduce_oneshot_max_bytes_by_ranks: 2: 8388608 needs .* at most "
                                         r"allreduce_custom_max_bytes \(0"):
        load_framework(_write(tmp_path, "partial.yaml", _vllm_copy(name="my-vllm", serving=serving)))
    off = load_framework(_write(tmp_path, "off.yaml", _vllm_copy(
        name="my-vllm", serving={**serving, "allreduce_oneshot_max_bytes_by_ranks": {}})))
    factors = off.serving_factors("nvidia")
    assert (factors["allreduce_custom_max_bytes"], factors["allreduce_oneshot_max_bytes_by_ranks"]) == (0.0, ())


def test_a_hardware_file_that_is_not_there_is_named_under_the_field_that_gave_it(tmp_path):
    """As a profile path is (`framework: file not found`): a deployment file's `hardware:` names its own key."""
    with pytest.raises(InputError, match=r"^hardware: file not found: .*nothere\.yaml$"):
        load_hardware(str(tmp_path / "nothere.yaml"))
    deployment = _write(tmp_path, "dep.yaml", {
        "model": "qwen3-8b", "hardware": str(tmp_path / "nothere.yaml"), "framework": "generic", "world_size": 1,
        "workload": {"phase": "decode", "batch": 1, "seq_len": 128}})
    res = CliRunner().invoke(main, ["check", deployment])
    assert res.exit_code == 2
    assert f"{deployment}: hardware: file not found: " in res.stderr


def _notes(path: str) -> list[str]:
    res = CliRunner().invoke(main, ["estimate", "qwen3-8b", "--hardware", path, "--cards", "1", "--phase", "decode",
                                    "--batch", "1", "--seq-len", "128", "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["notes"]


def test_an_uncalibrated_device_note_names_the_efficiencies_given_without_a_source(tmp_path):
    """PCIE4 gives no `sources`: its four efficiencies are assumptions, and the note names them; one that sources
    all four is pointed to its sources."""
    bare = [n for n in _notes(_write(tmp_path, "bare.yaml", PCIE4)) if "calibration rows measured no" in n]
    assert len(bare) == 1 and ("no source given for efficiency.gemm, efficiency.attention, efficiency.hbm, "
                               "efficiency.kernel_overhead_s: assumptions until measured") in bare[0]
    sourced = {**PCIE4, "sources": {f"efficiency.{k}": "assumption: as H100" for k in Efficiency.model_fields}}
    said = [n for n in _notes(_write(tmp_path, "sourced.yaml", sourced)) if "calibration rows measured no" in n]
    assert len(said) == 1 and "its sources say which are assumptions" in said[0]
