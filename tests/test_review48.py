"""Stop 48's review: the rules the review found broken or unheld, one test each."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from solver.cli.main import main

HEADER = ("id,backend,backend_version,model,system,precision,gemm_quant_mode,moe_quant_mode,isl,osl,concurrency,tp,pp,"
          "attention_dp,moe_tp,moe_ep,ttft_ms,tpot_ms")


def test_a_measured_row_of_a_model_its_engine_has_no_model_for_is_refused(tmp_path: Path) -> None:
    """unserved_model_types: every command refuses the pairing, `estimate --from-csv` (and the fit that reads rows
    the same way) included: the row's error names the rule instead of pricing a model the engine cannot load."""
    csv = tmp_path / "rows.csv"
    csv.write_text(f"{HEADER}\nx,vllm,0.34.0,MiniMaxAI/MiniMax-M1,h200_sxm,,,,1024,128,8,8,1,,8,1,193.5,21.3\n")
    res = CliRunner().invoke(main, ["estimate", "--from-csv", str(csv), "--out", "-"])
    assert res.exit_code == 2, res.output
    assert "backend: vllm has no model for MiniMax-M1" in res.output


@pytest.mark.parametrize(("hardware", "offered", "not_offered"), [
    ("h200_sxm", "trtllm", "vllm-ascend"), ("atlas_a3", "vllm-ascend", "trtllm")])
def test_the_profiles_offered_for_an_unserved_model_run_on_the_device(hardware: str, offered: str,
                                                                       not_offered: str) -> None:
    """The refusal offers engines that serve the model on this device (as check_vendor's offers), not an Ascend
    profile for an H200."""
    res = CliRunner().invoke(main, ["memory", "minimax-m1", "--hardware", hardware, "--cards", "16",
                                    "--framework", "vllm" if hardware == "h200_sxm" else "sglang",
                                    "--attn-tp", "8", "--batch", "1", "--seq-len", "1024"])
    assert res.exit_code == 2, res.output
    line = res.output.split("do not refuse it", 1)[1]
    assert offered in line and not_offered not in line, res.output


def test_a_feature_refusing_model_types_names_the_knob_it_keeps_at_1() -> None:
    """Feature.refused_model_types is read through the knob the feature sets (FrameworkProfile.refusing_feature):
    on a feature without one (those FEATURE_KNOBS names aside: pipeline_parallel's pp_size, redundant_experts) the
    list would refuse nothing, so the profile is refused naming the field."""
    from pydantic import ValidationError

    from solver.specs.framework import FrameworkProfile, load_framework

    data = load_framework("cann-recipes").model_dump()
    data["features"]["attention_ffn_disaggregation"]["refused_model_types"] = ["longcat_flash"]
    with pytest.raises(ValidationError, match="features.attention_ffn_disaggregation.refused_model_types: set on a "
                                              "feature with no knob"):
        FrameworkProfile.model_validate(data)
    data = load_framework("sglang").model_dump()  # redundant_experts sets the knob of its name: read, so kept
    data["features"]["redundant_experts"]["refused_model_types"] = ["longcat_flash"]
    FrameworkProfile.model_validate(data)


def test_check_names_the_ranks_the_stage_domain_rule_judged_under_a_dp_major_engine(tmp_path: Path) -> None:
    """B.pp_stage_whole_domains under vLLM's DP-major rank order judges one DP engine's share of a stage (16 ranks
    of TP16 x PP3 x DP3 on 144 GB200), and `check`'s warning names those ranks, as its node warning does, not the
    stage's 48."""
    import json

    import yaml

    path = tmp_path / "pp3.yaml"
    path.write_text(yaml.safe_dump({
        "model": "llama-3.3-70b", "hardware": "gb200", "framework": "vllm", "world_size": 144,
        "parallel_config": {"pp_size": 3, "attn_tp_size": 16, "dense_tp_size": 16, "embed_tp_size": 16,
                            "lmhead_tp_size": 16},
        "workload": {"isl": 4096, "osl": 256, "concurrency": 256}}))
    warnings = json.loads(CliRunner().invoke(main, ["check", str(path), "--format", "json"]).stdout)["warnings"]["B"]
    [said] = [w for w in warnings if "scale-up domains nor a part of one" in w]
    assert said.startswith("each DP engine's share of a stage (16 ranks"), said


def test_a_pipeline_split_never_drops_layers_that_are_not_whole_blocks():
    """model_rules.stage_sizes splits whole blocks of ModelSpec.stage_unit layers; a stack that is not whole
    blocks is an internal contradiction, refused rather than split with its remainder left out."""
    import pytest

    from solver.specs.model_rules import stage_sizes
    assert sum(stage_sizes(56, 8, 2)) == 56
    with pytest.raises(ValueError):
        stage_sizes(57, 8, 2)
