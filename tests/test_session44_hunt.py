"""Rules found broken by trying this session's features as a user (--prefix-hit through check, the answers' JSON
and notes, the disaggregated sweep); one rule per test, expectations by hand."""
from __future__ import annotations

import pytest
import yaml
from click.testing import CliRunner

from solver import api
from solver.cli.main import main
from solver.errors import InputError
from solver.estimate.serving import Workload
from solver.estimate.workload import prefix_hit_note
from solver.report.candidates import candidate_workload
from solver.report.estimate_view import workload_data
from solver.specs.deployment import WorkloadSpec
from solver.specs.scenario import Scenario

# Qwen3-32B on 8 x H200 at TP8 (generic profile): small and quick to estimate
TP8 = {"attn_tp_size": 8, "dense_tp_size": 8, "embed_tp_size": 8, "lmhead_tp_size": 8}
SERVING = {"isl": 4096, "osl": 512, "concurrency": 32}


def _deployment(tmp_path, workload: dict) -> str:
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump({"model": "qwen3-32b", "hardware": "h200_sxm", "world_size": 8,
                                    "parallel_config": TP8, "workload": workload}))
    return str(path)


def test_estimate_json_workload_names_the_hit_rate_it_assumed():
    """The JSON's workload states every workload input the figures read: prefix_hit 0.5 beside isl/osl/concurrency
    (as mtp sits there); at no hit the key is absent, so F = 0 writes what no flag writes."""
    hit = Workload("serving", isl=4096, osl=512, concurrency=32, prefix_hit=0.5)
    assert workload_data(hit) == {"kind": "serving", "isl": 4096, "osl": 512, "concurrency": 32, "prefix_hit": 0.5}
    assert "prefix_hit" not in workload_data(Workload("serving", isl=4096, osl=512, concurrency=32))


def test_solve_yaml_candidate_workload_carries_the_hit_rate():
    """solve's deployment file is what check and launch read back: a candidate priced at a 75% hit says so in its
    workload (serving and prefill); no key at no hit."""
    sc = Scenario(isl=4096, osl=512, prefix_hit=0.75)
    assert candidate_workload(sc, 32) == {"isl": 4096, "osl": 512, "concurrency": 32, "prefix_hit": 0.75}
    pre = Scenario(isl=4096, osl=512, phase="prefill", prefix_hit=0.75)
    assert candidate_workload(pre, 2) == {"phase": "prefill", "batch": 2, "seq_len": 4096, "prefix_hit": 0.75}
    assert "prefix_hit" not in candidate_workload(Scenario(isl=4096, osl=512), 32)


def test_check_of_a_deployment_file_prices_its_hit_rate_as_estimate_does(tmp_path):
    """A deployment file's workload.prefix_hit 0.5 gives check the TTFT estimate gives at --prefix-hit 0.5 (the
    same config and workload), below the no-hit TTFT, and check notes the hit once."""
    est = api.estimate("qwen3-32b", "h200_sxm", 8, prefix_hit=0.5, **SERVING, **TP8).estimate
    none = api.estimate("qwen3-32b", "h200_sxm", 8, **SERVING, **TP8).estimate
    r = api.check(config=_deployment(tmp_path, {**SERVING, "prefix_hit": 0.5}))
    assert r.review.estimate.ttft_s == pytest.approx(est.ttft_s, rel=1e-12)
    assert r.review.estimate.ttft_s < none.ttft_s
    assert r.review.notes.count(prefix_hit_note(0.5)) == 1


def test_check_keywords_take_the_hit_rate_as_estimate_does():
    """api.check with keywords reads prefix_hit (text "0.5" read as estimate reads it) to the same TTFT."""
    est = api.estimate("qwen3-32b", "h200_sxm", 8, prefix_hit=0.5, **SERVING, **TP8).estimate
    r = api.check("qwen3-32b", "h200_sxm", 8, prefix_hit="0.5", **SERVING, **TP8)
    assert r.review.estimate.ttft_s == pytest.approx(est.ttft_s, rel=1e-12)


@pytest.mark.parametrize("value", [1, 1.0, -0.1])
def test_deployment_hit_outside_zero_to_one_is_refused(value):
    """The file's key follows --prefix-hit's rule: a fraction in [0, 1)."""
    with pytest.raises(ValueError, match="prefix_hit"):
        WorkloadSpec(**SERVING, prefix_hit=value)


def test_deployment_decode_refuses_a_hit_it_would_not_read():
    """A decode step prefills no prompt: a hit rate beside it would be dropped unread."""
    with pytest.raises(ValueError, match="decode step prefills no prompt"):
        WorkloadSpec(phase="decode", batch=8, seq_len=1024, prefix_hit=0.5)


@pytest.mark.parametrize("hit, cached, computed", [
    (0.5, "50%", "50%"),
    (0.999, "99.9%", "0.1%"),      # 0.1% computed, not "the other 0%"
    (0.004, "0.4%", "99.6%"),
    (0.9995, "99.95%", "0.05%"),
    (1e-9, "<0.001%", ">99.999%"),  # no whole-percent share reads 0% or 100% unless it is one
])
def test_hit_note_share_reads_neither_none_nor_all_unless_it_is(hit, cached, computed):
    note = prefix_hit_note(hit)
    assert note.startswith(f"prefix cache: {cached} of each prompt's tokens assumed cached")
    assert f"a prefill computes the other {computed}," in note


def test_disaggregated_sweep_notes_the_hit_rate_once():
    """sweep --serving disagg --prefix-hit 0.5 says the hit it planned at on stderr, once (as the aggregated
    sweep and the disaggregated solve and recommend do); F = 0 says nothing of it."""
    args = ["sweep", "qwen3-30b-a3b", "--hardware", "h200_sxm", "--cards", "4", "--isl", "4096", "--osl", "512",
            "--serving", "disagg", "--scenarios", "throughput", "--format", "json"]
    hit = CliRunner().invoke(main, [*args, "--prefix-hit", "0.5"])
    assert hit.exit_code == 0, hit.output
    assert hit.stderr.count("note: prefix cache: 50% of each prompt's tokens assumed cached") == 1
    assert "disaggregated: the prefill pool computes only the uncached tokens" in hit.stderr
    none = CliRunner().invoke(main, [*args, "--prefix-hit", "0"])
    assert "prefix cache" not in none.stderr


@pytest.mark.parametrize("model, field, value", [
    ("deepseek-ai--DeepSeek-V3.2.json", "index_topk", 2048),     # DeepseekV32Config index_topk: int = 2048
    ("deepseek-ai--DeepSeek-V3.2.json", "index_n_heads", 64),    # DeepseekV32Config index_n_heads: int = 64
    ("zai-org--GLM-5.json", "index_topk", 2048),                 # GlmMoeDsaConfig index_topk: int = 2048
    ("zai-org--GLM-5.json", "index_n_heads", 32),                # GlmMoeDsaConfig index_n_heads: int = 32
])
def test_dsa_indexer_field_left_out_is_read_at_its_class_default_with_a_note(tmp_path, model, field, value):
    """A DSA config without an indexer size is read at its transformers class's default (5.25.0), as every other
    field its class fills, and says so once: not taken silently from a default in the reader's code."""
    import json
    from pathlib import Path

    from solver.specs.model_catalog import load_model

    cfg = json.loads((Path(__file__).resolve().parents[1] / "models" / model).read_text())
    del cfg[field]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    spec = load_model(str(tmp_path / "config.json"))
    assert getattr(spec, field) == value
    notes = [n for n in spec.warnings if n.startswith(f"{field} absent from config.json")]
    assert len(notes) == 1 and f"default {value} (transformers 5.25.0" in notes[0]


def test_disaggregated_recommendation_json_carries_the_input_notes(tmp_path):
    """recommend --serving disagg --format json keeps what reading the inputs noted (a Qwen3 config without
    num_hidden_layers: read at Qwen3Config's default 32) in its notes, once, beside the hit it assumed, as the
    aggregated answer's JSON does; stderr does not repeat them."""
    import json
    from pathlib import Path

    cfg = json.loads((Path(__file__).resolve().parents[1] / "models" / "Qwen--Qwen3-8B.json").read_text())
    del cfg["num_hidden_layers"]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = CliRunner().invoke(main, ["recommend", str(tmp_path / "config.json"), "--hardware", "h200_sxm", "--isl",
                                  "4096", "--osl", "512", "--serving", "disagg", "--prefix-hit", "0.5",
                                  "--target-output-tokens-per-s", "2000", "--cards", "2,4", "--format", "json"])
    assert r.exit_code == 0, r.output
    notes = json.loads(r.stdout)["notes"]
    absent = [n for n in notes if n.startswith("num_hidden_layers absent from config.json")]
    assert len(absent) == 1 and "Qwen3Config's default 32" in absent[0]
    assert sum(n.startswith("prefix cache: 50%") for n in notes) == 1
    assert "num_hidden_layers absent" not in r.stderr


@pytest.mark.parametrize("command", ["sweep", "recommend"])
def test_an_empty_text_hit_rate_is_refused_not_read_as_none(command):
    """prefix_hit "" is no fraction: sweep and recommend refuse it as estimate and solve do (before, `"" or None`
    left it at no hit, silently)."""
    with pytest.raises(InputError, match="prefix_hit: a prefix-cache hit rate is a fraction in"):
        if command == "sweep":
            api.sweep("qwen3-8b", "h200_sxm", [1], isl=2048, osl=256, prefix_hit="")
        else:
            api.recommend("qwen3-8b", "h200_sxm", target_output_tokens_per_s=2000, isl=2048, osl=256, cards="1",
                          prefix_hit="")


def test_check_of_a_file_refuses_a_hit_rate_keyword_the_file_would_override(tmp_path):
    """With config=, the workload is the file's: a prefix_hit keyword beside it (even "") is refused, not dropped;
    0 is no keyword given."""
    path = _deployment(tmp_path, SERVING)
    with pytest.raises(InputError, match="prefix_hit: given by the file"):
        api.check(config=path, prefix_hit="")
    assert api.check(config=path, prefix_hit=0).valid


def test_a_negative_zero_hit_reads_as_no_hit():
    """--prefix-hit -0 is F = 0: the sweep's prefix_hit column writes 0.0, not -0.0 (F = 0 writes what no flag
    writes), in the scenario, estimate's check and a deployment file alike."""
    import math

    from solver.specs.scenario import prefix_hit_of

    assert math.copysign(1, Scenario(prefix_hit=-0.0).prefix_hit) == 1
    assert math.copysign(1, prefix_hit_of(-0.0)) == 1
    assert math.copysign(1, WorkloadSpec(**SERVING, prefix_hit=-0.0).prefix_hit) == 1
    args = ["sweep", "qwen3-8b", "--hardware", "h200_sxm", "--cards", "1", "--isl", "2048", "--osl", "256",
            "--scenarios", "throughput"]
    assert CliRunner().invoke(main, [*args, "--prefix-hit", "-0"]).stdout == CliRunner().invoke(main, args).stdout
