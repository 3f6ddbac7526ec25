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
