"""The Python API's arguments as a user scripts them: numpy / pandas values and pathlib paths where ints and names are
expected, each bad argument an InputError under its keyword (never an AttributeError or TypeError from inside),
tables read back or refused, and the recommendation's and the plots' inputs and outputs typed."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from solver import api
from solver.capacity.inputs import parse_cards, parse_seq_lens
from solver.capacity.plots import plot_sweep
from solver.capacity.table import read_table, write_table
from solver.cli.main import main
from solver.errors import InputError

MODEL = "qwen3-8b"  # small and dense: one solve is a fraction of a second
ROOT = Path(__file__).resolve().parent.parent
SMALL = dict(isl=1024, osl=128)


def _field(call) -> str:
    with pytest.raises(InputError) as err:
        call()
    return err.value.field


def _configs(cands) -> list:
    return [c.planned.config for c in cands]


def test_a_numpy_integer_is_taken_where_an_int_is() -> None:
    """A card count read from a DataFrame cell is a numpy integer: the same solve as the int 2."""
    assert _configs(api.solve(MODEL, "h100_sxm", np.int64(2), top=np.int32(2))) == \
        _configs(api.solve(MODEL, "h100_sxm", 2, top=2))


def test_a_pathlib_path_names_hardware_and_model_as_their_strings_do() -> None:
    by_path = api.solve(ROOT / "models" / "Qwen--Qwen3-8B.json", ROOT / "hardware" / "h100_sxm.yaml", 1)
    assert _configs(by_path) == _configs(api.solve(str(ROOT / "models" / "Qwen--Qwen3-8B.json"),
                                                   str(ROOT / "hardware" / "h100_sxm.yaml"), 1))


@pytest.mark.parametrize("key, value", [("allow_cross_node", "no"), ("explain_binding", None),
                                        ("allow_cross_node", 1)])
def test_a_boolean_argument_is_true_or_false_not_any_truthy_value(key: str, value) -> None:
    """"no" is truthy: taken as given it would allow cross-node placements the caller meant to forbid."""
    assert _field(lambda: api.solve(MODEL, "h100_sxm", 1, **{key: value})) == key


@pytest.mark.parametrize("fn, kwargs, key", [
    (api.solve, dict(references="x"), "references"),
    (api.sweep, dict(progress=5), "progress"),
    (api.recommend, dict(progress="x", target_output_tokens_per_s=1e3), "progress"),
    (api.recommend, dict(prices=5, target_output_tokens_per_s=1e3), "prices"),
    (api.recommend, dict(prices={"h100_sxm": -1.0}, target_output_tokens_per_s=1e3), "prices"),
    (api.sweep, dict(weight_dtype={"h100_sxm": 5}), "weight_dtype"),
    (api.sweep, dict(scenarios=5), "scenarios"),
    (api.sweep, dict(seq_lens=5), "seq_lens"),
])
def test_a_bad_argument_is_refused_under_its_keyword_before_any_solve(fn, kwargs, key: str) -> None:
    """Each was an AttributeError / TypeError from deep inside (progress=5 only after every solve had run), or,
    for a refused price, the command line's --price."""
    cards = {} if fn is api.solve else {"cards": [1]}
    args = (MODEL, "h100_sxm", 1) if fn is api.solve else (MODEL, "h100_sxm")
    assert _field(lambda: fn(*args, **cards, **kwargs)) == key


def test_explain_solution_candidates_must_be_a_list_of_candidates() -> None:
    cands = api.solve(MODEL, "h100_sxm", 1)
    assert _field(lambda: api.explain_solution(MODEL, "h100_sxm", 1, "balanced", cands[0], candidates=5)) == \
        "candidates"


def test_a_float_card_count_is_refused_not_truncated() -> None:
    """[1.5] was swept as 1 card."""
    with pytest.raises(InputError, match="1.5"):
        parse_cards([1.5])
    assert parse_cards([np.int64(2), 1]) == [1, 2]
    assert _field(lambda: api.sweep(MODEL, "h100_sxm", [1.5])) == "cards"


def test_a_sequence_length_pair_holds_integers() -> None:
    with pytest.raises(InputError, match="integers"):
        parse_seq_lens([(1024.5, 128)], 128)
    assert parse_seq_lens([(np.int64(1024), 128), np.int64(2048)], 64) == [(1024, 128), (2048, 64)]


def test_a_hardware_list_may_be_a_pandas_series_or_hold_paths() -> None:
    as_list = api.sweep(MODEL, ["h100_sxm"], [1], "throughput", **SMALL)
    for hardware in (pd.Series(["h100_sxm"]), np.array(["h100_sxm"]), [ROOT / "hardware" / "h100_sxm.yaml"]):
        pd.testing.assert_frame_equal(api.sweep(MODEL, hardware, [1], "throughput", **SMALL), as_list)


def test_the_api_sweep_is_the_cli_sweep(tmp_path: Path) -> None:
    out = tmp_path / "s.csv"
    res = CliRunner().invoke(main, ["sweep", MODEL, "--hardware", "h100_sxm", "--cards", "1,2", "--scenarios",
                                    "throughput", "--isl", "1024", "--osl", "128", "--out", str(out)])
    assert res.exit_code == 0, res.output
    pd.testing.assert_frame_equal(read_table(out), api.sweep(MODEL, "h100_sxm", [1, 2], "throughput", **SMALL))


def test_read_table_refuses_a_missing_unreadable_or_foreign_file_under_path(tmp_path: Path) -> None:
    (tmp_path / "junk.json").write_text("{not json")
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")  # read as a sweep, every column was empty
    for name, problem in (("none.csv", "cannot read"), ("junk.json", "cannot read"),
                          ("other.csv", "lacks the columns hardware, cards"), ("x.txt", "not a format")):
        with pytest.raises(InputError, match=problem) as err:
            read_table(tmp_path / name)
        assert err.value.field == "path"


def test_a_table_written_reads_back_equal_in_every_format(tmp_path: Path) -> None:
    df = api.sweep(MODEL, "h100_sxm", [1], "throughput", **SMALL)
    for ext in ("csv", "json", "parquet"):
        pd.testing.assert_frame_equal(read_table(write_table(df, tmp_path / f"t.{ext}")), df)


def test_a_recommendations_costs_are_float_columns_nan_without_prices() -> None:
    """Without prices each cost was None in an object column: no arithmetic, no comparison with a priced run."""
    rec = api.recommend(MODEL, "h100_sxm", target_output_tokens_per_s=5000, cards=[1, 2], **SMALL)
    frame = rec.to_frame()
    for col in ("price_per_card_hour", "cost_per_hour", "cost_per_million_output_tokens",
                "cost_per_million_output_tokens_at_capacity"):
        assert frame[col].dtype == "float64" and frame[col].isna().all()
    priced = api.recommend(MODEL, "h100_sxm", target_output_tokens_per_s=5000, cards=[1, 2],
                           prices={"h100_sxm": np.float64(2.0)}, **SMALL).to_frame()
    # cost per hour = copies x cards x price per card-hour
    best = priced[priced["recommended"]].iloc[0]
    assert math.isclose(best["cost_per_hour"], best["copies"] * best["cards"] * 2.0)


def test_plot_sweep_refuses_what_is_not_a_sweep_under_df_and_a_bad_extension_under_path(tmp_path: Path) -> None:
    df = api.sweep(MODEL, "h100_sxm", [1], "throughput", **SMALL)
    for bad in (None, [1, 2], pd.DataFrame({"a": [1]}), df.iloc[:0]):
        assert _field(lambda: plot_sweep(bad)) == "df"
    assert _field(lambda: plot_sweep(df, tmp_path / "a.jpg")) == "path"
    plot_sweep(df, tmp_path / "a.svg")
    assert (tmp_path / "a.svg").stat().st_size > 0


def _refusal(fn, *args, **kwargs) -> InputError:
    with pytest.raises(InputError) as exc:
        fn(*args, **kwargs)
    return exc.value


@pytest.mark.parametrize("cards", ["8", 8.0, True, None, [8], 0, -1, 10**9])
def test_an_api_card_count_that_is_not_an_integer_in_range_is_refused_under_cards(cards) -> None:
    """"8", 8.0 and True are not counts (a str crashed on `<`, True passed as 1); 0, -1 and 10**9 lie outside
    [1, MAX_CARDS = 65,536]. The keyword is `cards`, not the command line's --cards."""
    err = _refusal(api.solve, "qwen3-8b", "h100_sxm", cards)
    assert err.field == "cards"


def test_an_api_top_below_one_is_refused_not_an_empty_list() -> None:
    """top=0 returned [] (no candidate asked for, none shown): the command line's --top is in [1, 10]."""
    assert _refusal(api.solve, "qwen3-8b", "h100_sxm", 1, top=0).field == "top"
    assert _refusal(api.solve, "qwen3-8b", "h100_sxm", 1, top="3").field == "top"


def test_an_unknown_method_is_refused_not_searched_with_cpsat() -> None:
    """method="foo" ran the CP-SAT search (the planner branches on == "exhaustive" only)."""
    err = _refusal(api.solve, "qwen3-8b", "h100_sxm", 1, method="foo")
    assert str(err) == "method: unknown method 'foo'; known: cpsat, exhaustive"


def test_a_keyword_no_api_function_takes_is_refused_under_its_name_with_the_close_one() -> None:
    """solve(topp=2) raised run_solve()'s TypeError; sweep(foo=1) named build_plan()."""
    err = _refusal(api.solve, "qwen3-8b", "h100_sxm", 1, topp=2)
    assert (err.field, err.problem) == ("topp", "not an argument of solve(); did you mean top?")
    assert _refusal(api.sweep, "qwen3-8b", "h100_sxm", [1], isll=10).problem.startswith(
        "not an argument of sweep(); did you mean isl")
    assert "recommend()" in _refusal(api.recommend, "qwen3-8b", "h100_sxm", bogus=1).problem


def test_a_refusal_the_runner_words_with_a_flag_names_the_api_keyword() -> None:
    """The dtype readers and the capacity layer speak the command line's flags (--kv-dtype, --max-concurrency);
    through the API the same refusal names the keyword the caller wrote."""
    assert _refusal(api.solve, "qwen3-8b", "h100_sxm", 1, kv_dtype="fp9").field == "kv_dtype"
    assert _refusal(api.sweep, "qwen3-8b", "h100_sxm", [1], kv_dtype={"h200_sxm": "fp8"}).field == "kv_dtype"
    assert _refusal(api.sweep, "qwen3-8b", "h100_sxm", [1], ttft_ms=-1).field == "ttft_ms"
    err = _refusal(api.recommend, "qwen3-8b", "h100_sxm")
    assert err.field == "target_output_tokens_per_s/target_requests_per_s"


@pytest.mark.parametrize("kwargs, field", [
    ({"target_output_tokens_per_s": "100"}, "target_output_tokens_per_s"),
    ({"target_output_tokens_per_s": 1, "osl": "3"}, "osl"),
    ({"target_output_tokens_per_s": 1, "max_concurrency": 0}, "max_concurrency"),
    ({"target_output_tokens_per_s": float("nan")}, "target_output_tokens_per_s"),
])
def test_recommend_numbers_of_the_wrong_type_or_range_are_refused_under_their_keyword(kwargs, field) -> None:
    """A str target crashed in math.isfinite; max_concurrency=0 was read as 'not given' (`or` the default)."""
    assert _refusal(api.recommend, "qwen3-8b", "h100_sxm", **kwargs).field == field


def test_hardware_must_be_a_name_or_for_sweep_a_list_of_names() -> None:
    """solve(hardware=[...]) died in str.lower; sweep(hardware=5) in iter()."""
    assert _refusal(api.solve, "qwen3-8b", ["h100_sxm"], 1).field == "hardware"
    assert _refusal(api.sweep, "qwen3-8b", 5, [1]).field == "hardware"
    assert _refusal(api.sweep, "qwen3-8b", ["h100_sxm", "h100_sxm"], [1]).problem == "given twice: h100_sxm"


def test_a_model_must_be_a_name_or_a_path_not_a_config_dict() -> None:
    """No docstring offers a config dict; it died in pathlib."""
    err = _refusal(api.solve, {"model_type": "llama"}, "h100_sxm", 1)
    assert err.field == "model" and "catalog name or a path" in err.problem


def test_api_objects_of_the_wrong_kind_are_refused_under_their_keyword() -> None:
    """params={} was silently replaced by the defaults (`params or SolverParams()`), a dict scenario died on
    .phase, explain_solution(cand=None) on .planned."""
    assert _refusal(api.sweep, "qwen3-8b", "h100_sxm", [1], params={"time_limit_s": 1}).field == "params"
    assert _refusal(api.solve, "qwen3-8b", "h100_sxm", 1, {"kind": "latency"}).field == "scenario"
    assert _refusal(api.explain_solution, "qwen3-8b", "h100_sxm", 1, api.Scenario(), None).field == "cand"
    assert _refusal(api.run_disagg, "qwen3-8b", "h100_sxm", "8", api.Scenario()).field == "cards"


def test_a_scenario_may_be_given_by_its_kind_name() -> None:
    """sweep takes kinds or Scenario objects; solve and the runners take the same (an unknown kind is refused)."""
    assert _refusal(api.solve, "qwen3-8b", "h100_sxm", 1, "fast").field == "scenario"
    cands = api.solve("qwen3-8b", "h100_sxm", 1, "latency", top=1)
    assert len(cands) == 1 and type(cands[0]).__name__ == "Candidate"


def test_the_api_functions_keep_their_names_and_documents() -> None:
    assert [f.__name__ for f in (api.solve, api.sweep, api.recommend, api.run_solve)] == [
        "solve", "sweep", "recommend", "run_solve"]
    assert "df.attrs" in api.sweep.__doc__ and "wall_s" in api.sweep.__doc__


def test_download_without_a_network_fails_in_one_line_at_once(monkeypatch) -> None:
    """`inspect org/name --download` without a network retried for ~30 s, logging each try; one connect to the
    hub's endpoint fails first (an unresolvable HF_ENDPOINT stands for no network here)."""
    import time

    from huggingface_hub import constants

    from solver.specs.model_catalog import resolve_model_file

    monkeypatch.setattr(constants, "ENDPOINT", "https://hub.invalid")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    start = time.perf_counter()
    err = _refusal(resolve_model_file, "some-org/some-model-not-cached", download=True)
    assert time.perf_counter() - start < 10
    assert err.field == "--download" and err.problem.startswith("cannot reach https://hub.invalid")
