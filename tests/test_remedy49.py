"""A remedy is data on the infeasibility: each option's text and the flag changes it stands for, the sentence written
in one place, and the readers (recommend, a sweep row) qualifying it without searching its text; the disaggregated
remedies are checked as the aggregated ones are; a user's factors file is looked up as the shipped factors are."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from solver.capacity.recommend import no_fit_note
from solver.capacity.sweep import REMEDIES, build_plan, solve_task
from solver.cli.main import main as cli
from solver.errors import Change, InfeasibleError, Remedies, Remedy, remedies
from solver.plan.points import SolverParams
from solver.plan.disagg import plan_disagg
from solver.plan.solve import plan
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario


def _run(argv: list[str]) -> tuple[int, str]:
    res = CliRunner(env={"COLUMNS": "400"}).invoke(cli, argv, catch_exceptions=False)
    return res.exit_code, res.output


def _applied(argv: list[str], changes: tuple[Change, ...]) -> list[str]:
    """argv with each change made: the flag set to its value, removed (None) or given as a switch (True)."""
    out = list(argv)
    for c in changes:
        if c.flag in out:
            i = out.index(c.flag)
            del out[i:i + (1 if out[i + 1:i + 2] == [] or out[i + 1].startswith("--") else 2)]
        if c.value is True:
            out.append(c.flag)
        elif c.value is not None:
            out += [c.flag, str(c.value)]
    return out


def _infeasible(model: str, hw: str, fw: str, cards: int, **scenario) -> InfeasibleError:
    spec, h = load_model(model), load_hardware(hw)
    with pytest.raises(InfeasibleError) as err:
        plan(spec, h, resolve_precision(spec, h, None, None, None), load_framework(fw), cards,
             Scenario(kind="throughput", **scenario), SolverParams(time_limit_s=3))
    return err.value


# qwen3.6-35b-a3b's bf16 weights (70.2 GB) on one 65 GB Atlas A2 card, TPOT 12 ms: two remedies with values
QWEN_ON_ONE_A2 = dict(model="qwen3.6-35b-a3b", hw="atlas_a2", fw="sglang", cards=1, isl=8192, osl=1024, tpot_ms=12.0)
QWEN_ARGV = ["solve", "qwen3.6-35b-a3b", "--hardware", "atlas_a2", "--isl", "8192", "--osl", "1024", "--framework",
             "sglang", "--cards", "1", "--tpot-ms", "12", "--time-limit", "3"]


def test_the_remedy_sentence_is_written_from_its_options_in_one_place() -> None:
    r = remedies(Remedy("24 cards fit", (Change("--cards", 24),)), "smaller weights (--weight-dtype fp8)", None)
    assert r.text() == "what would fit: 24 cards fit; smaller weights (--weight-dtype fp8)"
    assert r.text(" (on 16 cards)") == ("what would fit (on 16 cards): 24 cards fit; smaller weights "
                                        "(--weight-dtype fp8)")
    assert remedies("raise --time-limit", lead=None).text(" (ignored)") == "raise --time-limit"
    assert Remedies().text() is None and not Remedies()
    err = InfeasibleError("no feasible parallel_config", ["B.memory_per_rank"], r)
    assert str(err) == f"no feasible parallel_config; {r.text()}" and err.remedy == r.text()
    assert [c.option for c in (Change("--cards", 24), Change("--allow-cross-node", True), Change("--ttft-ms", None))] \
        == ["--cards 24", "--allow-cross-node", "no --ttft-ms"]


def test_an_infeasible_plan_carries_each_remedy_value_as_a_change_it_names() -> None:
    err = _infeasible(**QWEN_ON_ONE_A2)
    with_values = [r for r in err.remedies.options if r.changes]
    assert len(with_values) >= 2
    for r in with_values:  # the value a change carries is the one its text names
        assert all(f"{c.value}" in r.text.replace(",", "") for c in r.changes if c.value is not None), r
    assert Change("--cards", 2) in with_values[0].changes and Change("--tpot-ms", None) in with_values[0].changes


def test_each_remedy_change_applied_makes_the_request_feasible() -> None:
    err = _infeasible(**QWEN_ON_ONE_A2)
    assert _run(QWEN_ARGV)[0] == 1
    for r in err.remedies.options:
        for way in r.ways:  # each alternative a remedy offers, on its own
            code, out = _run(_applied(QWEN_ARGV, way))
            assert code == 0, (r, way, out[-300:])


def test_recommend_qualifies_the_planner_remedies_as_data_not_by_searching_their_text() -> None:
    fit = remedies(Remedy("24 cards fit", (Change("--cards", 24),)))
    # terms that happen to quote the phrase are left alone: the qualifier goes on the remedies' lead only
    note = no_fit_note("configuration", 16, "B.memory_per_rank", "weights exceed (what would fit: quoted)", fit)
    assert note == ("no configuration fits or meets the SLA up to 16 cards (binding: B.memory_per_rank); weights "
                    "exceed (what would fit: quoted); what would fit (a configuration on 16 cards, the load target "
                    "aside): 24 cards fit")
    assert no_fit_note("configuration", 16, "time limit", None, remedies("raise --time-limit", lead=None)) == (
        "no configuration fits or meets the SLA up to 16 cards (binding: time limit); raise --time-limit")


def test_an_infeasible_sweep_row_keeps_what_binds_and_the_remedies_apart() -> None:
    (t,) = build_plan("qwen3.6-35b-a3b", "atlas_a2", 1, "throughput", isl=8192, osl=1024, tpot_ms=12.0,
                      framework="sglang", params=SolverParams(time_limit_s=3)).tasks
    (row,) = solve_task(t)
    head, fit = row[REMEDIES]
    assert not row["feasible"] and isinstance(fit, Remedies) and fit.options
    assert row["note"] == f"{head}; {fit.text()}" and "exceed" in head


# Llama-3.1-405B in bf16 on 8 A100s, disaggregated: no decode worker of 16 to 32 ranks fits with TP inside a node
LLAMA_ON_8_A100 = ["solve", "llama-3.1-405b", "--hardware", "a100_sxm", "--cards", "8", "--serving", "disagg", "--isl",
                   "4096", "--osl", "256", "--framework", "vllm", "--time-limit", "3"]


def _disagg_infeasible(model: str, hw: str, fw: str, cards: int, **scenario) -> InfeasibleError:
    spec, h = load_model(model), load_hardware(hw)
    with pytest.raises(InfeasibleError) as err:
        plan_disagg(spec, h, resolve_precision(spec, h, None, None, None), load_framework(fw), cards,
                    Scenario(kind="throughput", **scenario), SolverParams(time_limit_s=3))
    return err.value


@pytest.mark.slow
def test_a_disaggregated_cross_node_hint_is_the_cards_the_planner_found_with_the_flag_and_works() -> None:
    err = _disagg_infeasible("llama-3.1-405b", "a100_sxm", "vllm", 8, isl=4096, osl=256)
    assert "(try --allow-cross-node)" not in str(err)
    (wide,) = [r for r in err.remedies.options if Change("--allow-cross-node", True) in r.changes]
    assert wide.text.startswith("32 cards with --allow-cross-node (a prefill worker of 16 ranks and a decode worker")
    assert _run(_applied(LLAMA_ON_8_A100, wide.changes))[0] == 0


@pytest.mark.slow
def test_a_looser_sla_is_no_disaggregated_remedy_where_no_deployment_serves_the_load_without_the_slas() -> None:
    # Nemotron-Super-49B on 16 H800s, 512 requests of 32K: without the SLAs the pools still hold 96 at most
    err = _disagg_infeasible("nemotron-super-49b", "h800", "generic", 16, isl=32768, osl=512, ttft_ms=800.0,
                             tpot_ms=12.0, concurrency=512)
    assert err.binding == ["concurrency"] and "a looser SLA" not in str(err)
    assert all(c.flag != "--tpot-ms" or c.value is not None for r in err.remedies.options for c in r.changes)


# ------------------------------------------------------------------------------------------------ user factors

def _gemm(hw: str, pairs: dict | None) -> float:
    from solver.specs.fitted import UserFactors, using_user_factors

    with using_user_factors(UserFactors.of("F.yaml", pairs) if pairs else None):
        return load_framework("vllm").efficiency_for(load_hardware(hw))["gemm"]


def test_a_users_fit_is_looked_up_by_fitted_as_as_the_shipped_fit_is() -> None:
    # h800 carries h100_sxm's shipped factors; a user's h100_sxm pair prices it the same way
    assert _gemm("h800", None) == _gemm("h100_sxm", None)
    mine = {"vllm": {"h100_sxm": {"gemm": 0.9}}}
    assert _gemm("h800", mine) == _gemm("h100_sxm", mine) != _gemm("h800", None)


def test_a_users_fit_of_the_variant_itself_comes_before_its_fitted_as_pair() -> None:
    both = {"vllm": {"h100_sxm": {"gemm": 0.9}, "h800": {"gemm": 0.8}}}
    assert _gemm("h800", both) == _gemm("h800", {"vllm": {"h800": {"gemm": 0.8}}}) != _gemm("h100_sxm", both)


def test_a_factors_pair_of_a_catalog_device_spelt_otherwise_is_refused_naming_the_field(tmp_path) -> None:
    f = tmp_path / "f.yaml"
    f.write_text("factors:\n  vllm:\n    H100-SXM:\n      gemm: 0.9\n")
    code, out = _run(["estimate", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--framework", "vllm",
                      "--factors", str(f)])
    assert code == 2 and out.strip().splitlines()[-1] == (
        f"error: --factors {f}: factors.vllm.H100-SXM: the catalog device is spelt h100_sxm; a pair is looked up "
        "by the device's exact name")
    f.write_text("factors:\n  vllm:\n    my_gpu:\n      gemm: 0.9\n")  # a device file of your own: kept
    assert _run(["estimate", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--framework", "vllm",
                 "--isl", "1024", "--osl", "128", "--concurrency", "1", "--factors", str(f)])[0] == 0
