"""Stop 50's items left open, closed: the Python API's worker counts, dtype names at the pydantic boundary, a
remedy's alternatives each with its own changes, a checkpoint's held format named once, an engine switch's value
the engine would not parse."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from solver import api
from solver.cli.main import main
from solver.errors import InputError

# one disaggregated case, small enough for the default suite: Qwen3-8B 1P2D on 4 H100s
DISAGG = ["qwen3-8b", "--hardware", "h100_sxm", "--cards", "4", "--isl", "1024", "--osl", "128"]


def test_api_solve_with_worker_counts_answers_as_the_command_line() -> None:
    from solver.report.disagg_view import render

    r = CliRunner().invoke(main, ["solve", *DISAGG, "--serving", "disagg", "--prefill-workers", "1",
                                  "--decode-workers", "2", "--format", "json"])
    assert r.exit_code == 0, r.output
    rep = api.solve("qwen3-8b", "h100_sxm", 4, isl=1024, osl=128, serving="disagg", prefill_workers=1,
                    decode_workers=2)
    assert render(rep, "json") == r.stdout
    assert '"ratio": "1P2D"' in r.stdout


@pytest.mark.parametrize("fn, args", [("solve", ("qwen3-8b", "h100_sxm", 4)),
                                      ("sweep", ("qwen3-8b", "h100_sxm", "4")),
                                      ("recommend", ("qwen3-8b", "h100_sxm"))])
def test_api_worker_counts_are_given_only_with_disaggregated_serving(fn: str, args: tuple) -> None:
    extra = {"target_output_tokens_per_s": 1000.0} if fn == "recommend" else {}
    with pytest.raises(InputError) as err:
        getattr(api, fn)(*args, decode_workers=2, **extra)
    assert (err.value.field, err.value.problem) == ("decode_workers", "fixes a pool's worker count: only with "
                                                                      "serving disagg")


@pytest.mark.parametrize("count", [0, 1.5, True, 65_537])
def test_api_worker_count_is_a_whole_number_of_workers_as_the_command_line_reads_it(count: object) -> None:
    with pytest.raises(InputError) as err:
        api.solve("qwen3-8b", "h100_sxm", 4, serving="disagg", prefill_workers=count)
    assert err.value.field == "prefill_workers"
    assert "a pool's worker count is a whole number in [1, 65,536]" in err.value.problem


def _dep_file(tmp_path, **quant: str):
    path = tmp_path / "dep.yaml"
    path.write_text("model: llama-3.1-8b\nhardware: h100_sxm\nframework: sglang\nworld_size: 1\n"
                    "workload: {isl: 1024, osl: 128, concurrency: 8}\n"
                    f"quant: {{{', '.join(f'{k}: {v}' for k, v in quant.items())}}}\n")
    return path


def test_api_dtype_names_in_any_case_are_the_catalog_s_as_on_the_command_line() -> None:
    """kv_dtype="FP8" under SGLang plans as "fp8" does (the command line's DTYPE rule, dtypes.given_dtype)."""
    upper = api.solve("llama-3.1-8b", "h100_sxm", 1, framework="sglang", kv_dtype="FP8", weight_dtype="Fp8")
    lower = api.solve("llama-3.1-8b", "h100_sxm", 1, framework="sglang", kv_dtype="fp8", weight_dtype="fp8")
    assert upper.as_dict() == lower.as_dict()


def test_api_per_hardware_dtype_names_in_any_case_keep_the_hardware_name() -> None:
    from solver.api import _check

    got = _check({"kv_dtype": {"H100_SXM": "FP8"}, "weight_dtype": ["atlas_a3=INT8"]}, True, True)
    assert (got["kv_dtype"], got["weight_dtype"]) == ({"H100_SXM": "fp8"}, ["atlas_a3=int8"])


def test_deployment_file_dtype_names_in_any_case_are_the_catalog_s(tmp_path) -> None:
    from solver.specs.deployment import load_deployment

    dep = load_deployment(_dep_file(tmp_path, weights="FP8", kv_cache="Fp8", moe_weights="W4A8"))
    assert (dep.quant.weights, dep.quant.kv_cache, dep.quant.moe_weights) == ("fp8", "fp8", "w4a8")
    r = CliRunner().invoke(main, ["check", str(_dep_file(tmp_path, weights="FP8", kv_cache="FP8"))])
    assert r.exit_code == 0, r.output


def test_a_kv_dtype_that_is_no_number_format_is_refused_as_such_not_as_an_engine_spelling() -> None:
    with pytest.raises(InputError) as err:
        api.solve("llama-3.1-8b", "h100_sxm", 1, framework="sglang", kv_dtype="FP9")
    assert (err.value.field, err.value.problem.split(";")[0]) == ("kv_dtype", "unknown number format 'fp9'")


def test_check_names_a_checkpoints_unrunnable_format_once_with_the_groups_that_hold_it(tmp_path) -> None:
    """Llama-3.1-8B with ModelOpt's W4A8_AWQ under vLLM on MI300X: attention and dense hold the same w4afp8, which
    vLLM runs on CUDA only: one class C line naming both groups (before: one line per group)."""
    import json
    import shutil

    from solver.catalog import catalog_dir

    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    shutil.copy(catalog_dir("models") / "meta-llama--Meta-Llama-3.1-8B.json", ckpt / "config.json")
    (ckpt / "hf_quant_config.json").write_text(json.dumps(
        {"producer": {"name": "modelopt", "version": "0.29.0"},
         "quantization": {"quant_algo": "W4A8_AWQ", "group_size": 128, "exclude_modules": ["lm_head"]}}))
    res = CliRunner().invoke(main, ["check", "--command", f"vllm serve {ckpt} --tensor-parallel-size 1", "--hardware",
                                    "mi300x", "--isl", "1000", "--osl", "200", "--concurrency", "8"])
    lines = [line for line in res.output.splitlines() if "w4afp8" in line]
    assert res.exit_code == 1 and len(lines) == 1, res.output
    assert "C (framework): quantization_config (attention, dense): weight dtype w4afp8" in lines[0]


@pytest.mark.parametrize("value, said", [
    ("2", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=2, which sglang does not parse (it takes true, 1, yes, y for "
          "on, false, 0, no, n for off, in any case) and so keeps its default, off"),
    ("false", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=false, which sglang reads as off (on: true, 1, yes, y)")])
def test_a_past_context_switch_at_a_value_the_engine_does_not_parse_is_named_so_with_the_values_it_takes(
        value: str, said: str) -> None:
    """SGLang's EnvBool parses true/1/yes/y and false/0/no/n; another value warns and keeps the default, False
    (sglang 0.5.23 environ.py:67-85, :143-150): a length past the model's context is refused in one line saying so."""
    cmd = (f"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN={value} python -m sglang.launch_server --model-path "
           "Qwen/Qwen3-8B --tp 1 --context-length 200000")
    r = CliRunner().invoke(main, ["check", "--command", cmd, "--hardware", "h200_sxm", "--isl", "4096", "--osl", "512",
                                  "--concurrency", "8"])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and said in r.output, r.output


# ------------------------------------------------------------------ a remedy's alternatives, each with its changes

QWEN_2048 = ["solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "2", "--serving", "disagg", "--isl", "4096",
             "--osl", "256", "--concurrency", "2048", "--time-limit", "3"]


def _infeasible_disagg(**kw):
    from solver.errors import InfeasibleError

    args = dict(isl=4096, osl=256, concurrency=2048, serving="disagg", params=api.SolverParams(time_limit_s=3))
    with pytest.raises(InfeasibleError) as err:
        api.solve("qwen3-8b", "h100_sxm", 2, **{**args, **kw})
    return err.value


def _applied(argv: list[str], changes) -> list[str]:
    out = list(argv)
    for c in changes:
        i = out.index(c.flag) if c.flag in out else None
        if i is not None:
            del out[i:i + 2]
        out += [c.flag, str(c.value)]
    return out


def test_a_remedy_offering_two_alternatives_carries_each_ones_changes_and_each_plans() -> None:
    """Qwen3-8B on 2 H100s disaggregated at --concurrency 2048: "--concurrency 64, or 63 cards (...)"; before, its
    changes were the first alternative's only."""
    from solver.errors import Change

    err = _infeasible_disagg()
    (fit,) = err.remedies.options
    assert fit.text.startswith("--concurrency 64, or 63 cards (31 prefill worker(s) of 1 ranks")
    assert fit.ways == ((Change("--concurrency", 64),), (Change("--cards", 63),))
    for way in fit.ways:
        r = CliRunner().invoke(main, _applied(QWEN_2048, way))
        assert r.exit_code == 0, (way, r.output[-300:])


def test_more_cards_is_stated_as_what_binds_not_offered_where_no_larger_size_serves_the_load(monkeypatch) -> None:
    """Where the fewest-cards search finds no size that serves a given concurrency (no SLA), "more cards" names no
    value that works: the message says no larger size serves it, and the remedy is the concurrency alone."""
    from solver.errors import Change
    from solver.plan import disagg_remedies

    monkeypatch.setattr(disagg_remedies, "_fewest_cards", lambda *a, **k: None)
    err = _infeasible_disagg()
    assert "nor do the pools' worker sizes, rate-matched, on more cards" in err.message
    assert "more cards" not in (err.remedy or "") and [r.ways for r in err.remedies.options] == [
        ((Change("--concurrency", 64),),)]


def test_pools_the_kv_transfer_cannot_pair_offer_aggregated_serving_as_a_flag_that_plans(tmp_path) -> None:
    """A profile whose pair check no pools meet: the check is what binds (the sizes planned said with it), and
    "--serving agg" is offered with its change where the planner finds an aggregated configuration on the cards;
    before, "pools that meet ..., or aggregated serving" named no value."""
    from pathlib import Path

    import solver
    from solver.errors import Change, InfeasibleError

    text = (Path(solver.__file__).parent / "frameworks" / "vllm.yaml").read_text()
    rule = "require: prefill_cp_size == 1 or prefill_kvp_size > 1 or decode_kvp_size == 1"
    assert rule in text
    fw = tmp_path / "vllm_nopair.yaml"
    fw.write_text(text.replace(rule, "require: prefill_pp_size == 0"))
    with pytest.raises(InfeasibleError) as err:
        api.solve("qwen3-8b", "h100_sxm", 4, isl=1024, osl=128, framework=str(fw), serving="disagg")
    assert "pools that meet prefill_pp_size == 0 are none of those planned" in err.value.message
    (agg,) = err.value.remedies.options
    assert agg.ways == ((Change("--serving", "agg"),),)
    r = CliRunner().invoke(main, ["solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "4", "--isl", "1024",
                                  "--osl", "128", "--framework", str(fw), "--serving", "agg"])
    assert r.exit_code == 0, r.output[-300:]


def test_launchable_sizes_are_alternatives_each_with_its_card_count() -> None:
    """'10 (2 nodes x 5) or 12 (2 nodes x 6) ranks spread evenly ...': each size its own --cards (before: 10's)."""
    from solver.errors import Change, InfeasibleError

    with pytest.raises(InfeasibleError) as err:
        api.solve("llama-3.3-70b", "h100_sxm", 11, framework="vllm", isl=1024, osl=1024,
                  params=api.SolverParams(time_limit_s=3))
    spread = [r for r in err.value.remedies.options if "ranks spread evenly" in r.text]
    assert [r.ways for r in spread] == [((Change("--cards", 10),), (Change("--cards", 12),))]


def test_the_fewest_cards_search_lists_only_the_pairs_it_may_evaluate(monkeypatch) -> None:
    """At --concurrency 100000 Qwen3-8B's 1-rank decode workers need 1,563+ of them: the search walks each decode
    and prefill point's y in order and merges the walks, so it prices the cards of about MAX_EVALUATED pairs plus
    one per walk, not every y (before: every y from the fewest decode workers to twice that, for every point), and
    answers as the full sorted list did (3,083 cards: 1,520 prefill and 1,563 decode workers of 1 rank)."""
    from solver.plan import disagg_remedies

    calls = []
    real = disagg_remedies.cards_for
    monkeypatch.setattr(disagg_remedies, "cards_for", lambda *a: calls.append(a) or real(*a))
    err = _infeasible_disagg(concurrency=100_000, framework="vllm")
    assert "what would fit: --concurrency 64, or 3083 cards (1520 prefill worker(s) of 1 ranks and 1563 decode " \
           "worker(s) of 1)" in str(err)
    assert len(calls) < 5_000, len(calls)
