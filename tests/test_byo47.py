"""Stop 47's user-level hunt: a team bringing its own model config, device file, engine profile and measurements.
One test per rule found broken and fixed (benchmarks/README.md, "Stop 47: bringing your own ...")."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.errors import InputError
from solver.specs.config.read import parse_model_config

ROOT = Path(__file__).resolve().parent.parent
QWEN3_8B = ROOT / "models" / "Qwen--Qwen3-8B.json"


def test_a_refused_value_the_config_left_out_names_the_default_it_was_read_at() -> None:
    # a Qwen3-style 14B (40 heads) without num_key_value_heads: Qwen3Config's default 32 does not divide 40; the
    # refusal says the 32 is the class's default, not a value the user wrote
    cfg = json.loads(QWEN3_8B.read_text())
    cfg.update(hidden_size=5120, num_attention_heads=40, num_hidden_layers=40, intermediate_size=17408)
    del cfg["num_key_value_heads"]
    with pytest.raises(InputError) as e:
        parse_model_config(cfg, "byo14b")
    assert e.value.field == "byo14b: num_key_value_heads"
    assert "32 must divide num_attention_heads (40)" in e.value.problem
    assert "absent from config.json, read at Qwen3Config's default 32" in e.value.problem


def test_a_refused_value_the_config_wrote_names_no_default() -> None:
    cfg = json.loads(QWEN3_8B.read_text())
    cfg.update(num_key_value_heads=7)
    with pytest.raises(InputError) as e:
        parse_model_config(cfg, "byo")
    assert e.value.problem == "7 must divide num_attention_heads (32)"


def _device(tmp_path: Path, memory: str) -> Path:
    text = (ROOT / "hardware" / "h100_sxm.yaml").read_text().replace("name: h100_sxm", "name: byo_card")
    lines = [f"memory_bytes: {memory}" if line.startswith("memory_bytes:") else line for line in text.splitlines()]
    path = tmp_path / "byo_card.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("written", ["96e9", "96.0e9", "9.6e+10", "9.6E+10"])
def test_a_byte_count_in_exponent_form_reads_as_its_integer_whatever_the_exponent_sign(tmp_path: Path,
                                                                                      written: str) -> None:
    # 9.6e+10 (PyYAML's own float form, what yaml.safe_dump writes for 96e9) was refused "should be a valid integer"
    from solver.specs.hardware import load_hardware_file

    assert load_hardware_file(_device(tmp_path, written)).memory_bytes == 96_000_000_000


def test_a_fractional_byte_count_in_exponent_form_is_still_refused(tmp_path: Path) -> None:
    from solver.specs.hardware import load_hardware_file

    with pytest.raises(InputError) as e:
        load_hardware_file(_device(tmp_path, "9.65e-1"))
    assert "memory_bytes" in str(e.value)


_HEADER = ("id,backend,backend_version,model,system,precision,gemm_quant_mode,moe_quant_mode,isl,osl,concurrency,tp,pp,"
           "attention_dp,moe_tp,moe_ep,ttft_ms,tpot_ms")


def _csv_notes(tmp_path: Path, *cells: str) -> list[str]:
    from solver.cli.estimate_cmd import run_csv

    src = tmp_path / "mine.csv"
    src.write_text("\n".join([_HEADER] + [f"r{i},vllm,0.23.0,Qwen/Qwen3-32B,h100_sxm,bf16,bf16,bf16,2048,512,16,4,1,1,"
                                         f"1,1,{c}" for i, c in enumerate(cells)]) + "\n")
    # the measured cells' notes (the run's other notes, the error medians and unread label columns, aside)
    return [n for n in run_csv(str(src), str(tmp_path / "out.csv"), None)[2] if n.startswith(("ttft_ms", "tpot_ms"))]


def test_a_measured_time_a_thousand_times_below_its_prediction_is_named_as_seconds_in_an_ms_column(
        tmp_path: Path) -> None:
    notes = _csv_notes(tmp_path, "0.35,0.022", "350,22")
    assert any(n.startswith("ttft_ms is below 1/100 of the prediction in 1 evaluated row(s) (first: line 2, 0.35")
               and "seconds written in a milliseconds column?" in n for n in notes)
    assert any(n.startswith("tpot_ms is below 1/100 of the prediction in 1 evaluated row(s)") for n in notes)


def test_a_measured_cell_that_is_no_number_is_named(tmp_path: Path) -> None:
    notes = _csv_notes(tmp_path, "abc,22")
    assert notes == ["ttft_ms is no number in 1 evaluated row(s) (first: line 2, 'abc'): the output carries it beside "
                     "the prediction, and no comparison can read it"]


def test_measured_cells_in_ms_as_the_calibration_csv_writes_them_get_no_note(tmp_path: Path) -> None:
    assert _csv_notes(tmp_path, "350,22", ",") == []


def test_a_config_without_model_type_says_no_family_defaults_apply() -> None:
    # before: read by convention with no word, where a config of an unknown model_type is told so
    cfg = json.loads((ROOT / "models" / "deepseek-ai--DeepSeek-V3.json").read_text())
    del cfg["model_type"]
    spec = parse_model_config(cfg, "byo")
    assert ("model_type: absent, so no family's defaults apply; sizes read from the config's own fields by "
            "convention") in spec.warnings


def test_a_config_of_a_known_model_type_gets_no_such_note() -> None:
    spec = parse_model_config(json.loads(QWEN3_8B.read_text()), "byo")
    assert not any("model_type" in w for w in spec.warnings)


# the key as the file writes it (the first tier's line is intra_node's) -> the field the refusal names
@pytest.mark.parametrize(("key", "field"), [("hbm_bandwidth_Bps", "hbm_bandwidth_Bps"),
                                            ("    bandwidth_Bps", "tiers.intra_node.bandwidth_Bps")])
def test_a_bandwidth_written_in_tb_or_gb_per_second_is_refused_naming_the_unit(tmp_path: Path, key: str,
                                                                               field: str) -> None:
    from solver.specs.hardware import load_hardware_file

    text = (ROOT / "hardware" / "h100_sxm.yaml").read_text().replace("name: h100_sxm", "name: byo_card")
    lines = text.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith(key + ":"))
    lines[at] = f"{key}: 3.35"
    path = tmp_path / "byo_card.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as e:
        load_hardware_file(path)
    assert f"{field}: below 1 MB/s: the field is in bytes per second" in str(e.value)
