"""The Python API and the catalogs tried as a user would (round 39): one test per rule."""
from __future__ import annotations

import pytest

from solver import api
from solver.errors import InputError


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
