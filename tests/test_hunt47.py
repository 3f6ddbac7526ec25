"""Stop 47's user-level hunt: one test per rule it found broken."""
from __future__ import annotations

import pytest

from solver.rank.reason import decision_tree_reason
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.scenario import Scenario


@pytest.fixture(scope="module")
def oss():
    return load_model("gpt-oss-120b")


@pytest.fixture(scope="module")
def h100():
    return load_hardware("h100_sxm")


SCEN = Scenario(kind="balanced", isl=1024, osl=1024)


def test_a_moe_stage_of_one_rank_claims_no_ep_against_tp_choice(oss, h100):
    """gpt-oss-120b on one H100 said "EP and TP compared; chose EP (128 experts per rank)": one rank has neither
    EP nor MoE TP, so the reason says the rank holds all 128 experts instead (each stage's rank under PP)."""
    one = decision_tree_reason(ParallelConfig(world_size=1), oss, SCEN, h100)
    assert "EP and TP compared" not in one
    assert "the one rank holds all 128 experts of its layers" in one
    staged = decision_tree_reason(ParallelConfig(world_size=2, pp_size=2), oss, SCEN, h100)
    assert "each stage's rank holds all 128 experts" in staged and "EP and TP compared" not in staged


def test_a_moe_stage_of_several_ranks_still_says_its_ep_choice(oss, h100):
    """Two ranks in one stage: EP2 (64 experts a rank) is a choice against MoE TP2, and the reason says so."""
    two = decision_tree_reason(ParallelConfig(world_size=2), oss, SCEN, h100)
    assert "EP and TP compared; chose EP (64 experts per rank)" in two


@pytest.mark.parametrize("framework", ["sglang", "vllm"])
def test_memory_cache_line_under_pp_is_the_reported_stages(framework):
    """`memory ... --pp 2` reports the largest stage, yet its cache line said the whole model's state a request on
    one rank (Qwen3.5-122B-A10B, SGLang, TP4 x PP2 on 8 MI355X, 64 x 32K: 38.41 MB, 362.39 MB held, against the
    breakdown's 11.60 GB / 64 = 181 MB). The line now speaks for the stage: held x batch = the breakdown's state,
    and a request's state is the TP8 rank's (the stage holds half the layers on twice the heads)."""
    import json

    from click.testing import CliRunner

    from solver.cli.main import main

    def mem(*knobs: str) -> dict:
        r = CliRunner().invoke(main, ["memory", "qwen3.5-122b-a10b", "--hardware", "mi355x", "--cards", "8",
                                      "--framework", framework, "--batch", "64", "--seq-len", "32768",
                                      "--format", "json", *knobs])
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)

    pp = mem("--pp", "2", "--attn-tp", "4", "--dense-tp", "4", "--moe-tp", "4", "--embed-tp", "4",
             "--lmhead-tp", "4")
    held = pp["cache"]["state"]["held_bytes"] * 64 / 1e9
    assert held == pytest.approx(pp["breakdown"]["constant_state"], rel=1e-6)
    tp8 = mem("--attn-tp", "8", "--dense-tp", "8", "--moe-tp", "8", "--embed-tp", "8", "--lmhead-tp", "8")
    assert pp["cache"]["state"]["bytes"] == pytest.approx(tp8["cache"]["state"]["bytes"], rel=1e-6)


def test_memory_table_under_pp_names_the_stage_it_reports():
    """Under PP `memory` reports the largest stage; the table now says which (the JSON's notes did, the table
    not): Llama-3.3-70B PP4 on 8 H100, stage 0 (the embedding's) of 4."""
    from click.testing import CliRunner

    from solver.cli.main import main

    args = ["memory", "llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "8", "--batch", "64", "--seq-len", "2048"]
    r = CliRunner().invoke(main, [*args, "--pp", "4"])
    assert r.exit_code == 0, r.output
    assert "pipeline stage 0 of 4 (the largest), total" in r.output
    flat = CliRunner().invoke(main, [*args, "--attn-tp", "8", "--dense-tp", "8", "--embed-tp", "8", "--lmhead-tp", "8"])
    assert "pipeline stage" not in flat.output


def test_estimate_under_pp_names_the_stage_its_memory_is():
    """`estimate --pp 4`'s memory row is the largest stage's: the table and the JSON say which."""
    import json

    from click.testing import CliRunner

    from solver.cli.main import main

    args = ["estimate", "llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "8", "--pp", "4", "--phase", "decode",
            "--batch", "64", "--seq-len", "2048"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert "memory per rank (pipeline stage 0 of 4, the largest)" in r.output
    data = json.loads(CliRunner().invoke(main, [*args, "--format", "json"]).stdout)
    assert data["memory"]["pipeline_stage"] == 0
