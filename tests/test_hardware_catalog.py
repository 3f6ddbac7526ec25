"""The hardware catalog: every shipped YAML validates and carries its sources; names and paths resolve."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from solver.catalog import catalog_dir
from solver.errors import InputError
from solver.specs.hardware import Hardware, load_hardware_file
from solver.specs.hardware_catalog import list_hardware, load_hardware

EXPECTED = {
    "a100_sxm", "h100_sxm", "h200_sxm", "h800", "b200_sxm", "b300_sxm", "gb200", "gb300",
    "mi300x", "mi325x", "mi355x", "atlas_a2", "atlas_a3", "h20", "l40s", "rtx_pro_6000_blackwell",
}
CATALOG_FILES = sorted(catalog_dir("hardware").glob("*.yaml"))


def _user_yaml(tmp_path: Path, **overrides: Any) -> Path:
    """A user's hardware file: the shipped H200 with some fields replaced (None deletes the field)."""
    data = yaml.safe_load((catalog_dir("hardware") / "h200_sxm.yaml").read_text())
    data["name"] = "my_h200"
    for key, value in overrides.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path = tmp_path / "my_h200.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("path", CATALOG_FILES, ids=lambda p: p.stem)
def test_every_catalog_file_validates(path: Path) -> None:
    hw = load_hardware_file(path)
    assert isinstance(hw, Hardware)
    assert hw.name == path.stem  # the file name is the catalog name
    assert hw.tier_for_group(hw.ranks_per_node) == "intra_node"


def test_catalog_lists_every_device() -> None:
    assert set(list_hardware()) == EXPECTED
    assert list_hardware() == sorted(list_hardware())


@pytest.mark.parametrize("given, name", [("h200-sxm", "h200_sxm"), ("atlas-a3", "atlas_a3"), ("H200_SXM", "h200_sxm")])
def test_names_with_dashes_resolve(given: str, name: str) -> None:
    hw = load_hardware(given)
    assert hw.name == name
    assert hw is load_hardware(name)  # names are cached


def test_unknown_name_suggests_close_names() -> None:
    with pytest.raises(InputError) as err:
        load_hardware("h200")
    assert err.value.field == "hardware"
    assert "unknown hardware 'h200'; close names:" in str(err.value)
    assert "h200_sxm" in err.value.problem
    with pytest.raises(InputError, match=r"unknown hardware 'xyz'; known: a100_sxm, "):
        load_hardware("xyz")


def test_user_yaml_path_works(tmp_path: Path) -> None:
    path = _user_yaml(tmp_path, memory_bytes=100 * 2**30)
    hw = load_hardware(str(path))
    assert hw.name == "my_h200"
    assert hw.memory_bytes == 100 * 2**30


def test_malformed_yaml_raises_input_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: broken\npeak_flops: {bf16: 1.0e+12\n")
    with pytest.raises(InputError) as err:
        load_hardware(str(path))
    assert str(path) in err.value.field
    assert "not valid YAML" in err.value.problem


def test_missing_memory_bytes_raises_input_error_naming_the_field(tmp_path: Path) -> None:
    path = _user_yaml(tmp_path, memory_bytes=None)
    with pytest.raises(InputError) as err:
        load_hardware(str(path))
    assert err.value.field == f"{path}: memory_bytes"


def test_negative_bandwidth_raises_input_error_naming_the_field(tmp_path: Path) -> None:
    tiers = yaml.safe_load((catalog_dir("hardware") / "h200_sxm.yaml").read_text())["tiers"]
    tiers["intra_node"]["bandwidth_Bps"] = -450e9
    with pytest.raises(InputError) as err:
        load_hardware(str(_user_yaml(tmp_path, tiers=tiers)))
    assert err.value.field.endswith("tiers.intra_node.bandwidth_Bps")
    with pytest.raises(InputError) as err:
        load_hardware(str(_user_yaml(tmp_path, hbm_bandwidth_Bps=-1.0)))
    assert err.value.field.endswith("hbm_bandwidth_Bps")


def test_atlas_a2_caps_experts_per_rank_at_24_and_a3_does_not() -> None:
    assert load_hardware("atlas_a2").max_experts_per_rank == 24
    assert load_hardware("atlas_a3").max_experts_per_rank is None


@pytest.mark.parametrize("name", ["atlas_a2", "atlas_a3"])
def test_atlas_has_no_fp8(name: str) -> None:
    hw = load_hardware(name)
    assert not hw.supports("fp8")
    assert hw.supports("int8")  # W8A8 on Ascend is INT8


def test_16_ranks_on_8_rank_nodes_cross_to_inter_node_on_h200() -> None:
    hw = load_hardware("h200_sxm")
    assert hw.tier_for_group(8) == "intra_node"
    assert hw.tier_for_group(16) == "inter_node"
    assert hw.tier_for_group(2, stride=8) == "inter_node"  # a strided pair straddles two nodes


def test_16_ranks_on_atlas_a3_stay_intra_node() -> None:
    assert load_hardware("atlas_a3").tier_for_group(16) == "intra_node"


def test_gb200_64_ranks_are_scale_up_and_144_beyond_the_rack() -> None:
    hw = load_hardware("gb200")
    assert hw.tier_for_group(4) == "intra_node"
    assert hw.tier_for_group(64) == "scale_up"
    assert hw.tier_for_group(144) == "inter_rack"


def test_sparse_attention_head_pad_by_architecture() -> None:
    pads = {name: load_hardware(name).sparse_attention_head_pad for name in list_hardware()}
    assert {n for n, p in pads.items() if p == 64} == {"h100_sxm", "h200_sxm", "h800", "h20"}  # SM90
    assert {n for n, p in pads.items() if p == 128} == {"b200_sxm", "b300_sxm", "gb200", "gb300"}


@pytest.mark.parametrize("path", CATALOG_FILES, ids=lambda p: p.stem)
def test_every_yaml_names_a_source_for_memory_bandwidth_and_each_peak_flops_dtype(path: Path) -> None:
    hw = load_hardware_file(path)
    required = ["memory_bytes", "hbm_bandwidth_Bps"] + [f"peak_flops.{dtype}" for dtype in hw.peak_flops]
    missing = [key for key in required if not hw.sources.get(key, "").strip()]
    assert not missing, f"{path.name} lacks sources for {missing}"


@pytest.mark.parametrize("path", CATALOG_FILES, ids=lambda p: p.stem)
def test_every_source_key_names_a_field_that_is_set(path: Path) -> None:
    # A typo in a source key would silently leave a figure unsourced.
    data = yaml.safe_load(path.read_text())
    for key in data["sources"]:
        node: Any = data
        for part in key.split("."):
            assert isinstance(node, dict) and part in node, f"{path.name}: source key {key!r} names no field"
            node = node[part]


def test_a_family_name_lists_every_entry_it_starts_then_near_spellings() -> None:
    from solver.specs.model_catalog import resolve_model_file

    with pytest.raises(InputError) as err:
        resolve_model_file("qwen3.5")  # three Qwen3.5 models: each is named, once, before any near spelling
    names = err.value.problem.split("close names: ")[1].split(", ")
    assert names[:3] == ["qwen3.5-122b", "qwen3.5-35b", "qwen3.5-9b"]
    with pytest.raises(InputError) as err:
        resolve_model_file("deepsek-v3")  # a typo: the near spelling, not the entry's shortest alias
    assert err.value.problem.split("close names: ")[1].startswith("deepseek-v3")
    with pytest.raises(InputError, match=r"close names: atlas_a2, atlas_a3"):
        load_hardware("atlas")


def test_figures_on_a_device_no_calibration_row_measured_say_so(tmp_path: Path) -> None:
    """A device of a calibrated vendor without rows of its own (an L40S, a user's copy of the H200) is priced on
    its file's efficiencies and the vendor's shared factors: the answer says so; a measured device does not."""
    from click.testing import CliRunner

    from solver.cli.main import main

    def notes(hardware: str) -> str:
        r = CliRunner().invoke(main, ["solve", "qwen3-8b", "--hardware", hardware, "--cards", "1"])
        assert r.exit_code == 0, r.stderr
        return r.stderr

    assert "the calibration rows measured no l40s: its figures use its file's efficiencies" in notes("l40s")
    assert "the calibration rows measured no my_h200:" in notes(str(_user_yaml(tmp_path)))
    assert "calibration rows measured no" not in notes("h200_sxm")


@pytest.mark.parametrize("path", CATALOG_FILES, ids=lambda p: p.stem)
def test_every_catalog_memory_is_whole_mebibytes_not_decimal_gigabytes(path: Path) -> None:
    """Vendors' "192 GB" of HBM is 192 GiB (DRAM is binary-sized; ROCm reports an MI300X at 191.98 GiB): read
    as 192e9 bytes it was 7% short, so the MI3xx and Atlas dies held less KV and fitted less than they do."""
    assert load_hardware_file(path).memory_bytes % 2**20 == 0


@pytest.mark.parametrize("name", ["a100_sxm", "h100_sxm", "h200_sxm", "h800", "h20", "l40s", "b200_sxm", "gb200",
                                  "mi300x", "mi325x", "mi355x", "atlas_a2", "atlas_a3"])
def test_a_device_whose_datasheet_gives_an_int8_rate_runs_int8(name: str) -> None:
    """W8A8-INT8 checkpoints run on INT8 tensor cores (Hopper, Ada, Blackwell B200/GB200, MI3xx): a device file
    without the rate refused --weight-dtype int8 as 'no int8 support'."""
    hw = load_hardware(name)
    assert hw.supports("int8") and hw.flops("int8") >= hw.flops("bf16")
